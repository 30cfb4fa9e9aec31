//! Helpers shared by the integration tests. Each test binary uses only some of them.
#![allow(dead_code)]

pub mod changes;
pub mod demo;
pub mod dynamo_local;
pub mod engines;
pub mod graphql;
pub mod hooked_stream;
pub mod jwks;
pub mod otlp;
pub mod records;
pub mod redis;
pub mod server;
pub mod sse;
pub mod stalled;
pub mod writes;

/// Runs every case of a chart's suite once per engine, as `embedded::case` and
/// `dynamodb::case`, each on a fresh API of the chart `$chart()` returns holding its
/// samples ([`graphql::Api::chart`]): `before` (a fn of the suite) runs first, `after` last
/// (`check` clean, say), then the API is finished.
///
/// `on_both_engines_of!(chart, before = seed, after = clean; a, b)`; both are optional.
#[macro_export]
macro_rules! on_both_engines_of {
    ($chart:ident, before = $before:ident, after = $after:ident; $($case:ident),* $(,)?) => {
        $crate::on_both_engines_of!(@each $chart, super::$before, super::$after; $($case),*);
    };
    ($chart:ident, before = $before:ident; $($case:ident),* $(,)?) => {
        $crate::on_both_engines_of!(@each $chart, super::$before, $crate::common::graphql::nothing; $($case),*);
    };
    ($chart:ident, after = $after:ident; $($case:ident),* $(,)?) => {
        $crate::on_both_engines_of!(@each $chart, $crate::common::graphql::nothing, super::$after; $($case),*);
    };
    ($chart:ident; $($case:ident),* $(,)?) => {
        $crate::on_both_engines_of!(@each $chart, $crate::common::graphql::nothing, $crate::common::graphql::nothing; $($case),*);
    };
    (@each $chart:ident, $before:path, $after:path; $($case:ident),*) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $case() {
                    let api = $crate::common::graphql::Api::chart(super::$chart(), None)
                        .await
                        .expect("the embedded engine");
                    $before(&api).await;
                    super::$case(&api).await;
                    $after(&api).await;
                    api.finish().await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $case() {
                    let Some(api) =
                        $crate::common::graphql::Api::chart(super::$chart(), Some(stringify!($case))).await
                    else {
                        return;
                    };
                    $before(&api).await;
                    super::$case(&api).await;
                    $after(&api).await;
                    api.finish().await;
                }
            )*
        }
    };
}

/// Runs every case of a suite once per engine, as `embedded::case` and `dynamodb::case`
/// (DynamoDB Local; skipped with a loud line when it cannot start). Each case is an `async
/// fn` of the module that invokes this, given what its suite works on:
///
/// - `on_every_engine!(a, b)`: a fresh demo API (`&Api`), finished after the case;
/// - `on_every_engine!(threads = 2: a, b)`: the same on a multi-threaded runtime;
/// - `on_every_engine!(shared api, threads = 4: a, b)`: an `Arc<Api>` the case may hand to
///   tasks it spawns, every request ended before the API is finished;
/// - `on_every_engine!(store: a, b)`: a fresh empty table (`&impl Store`), dropped after;
/// - `on_every_engine!(streaming store: a, b)`: the same with the table's stream on.
#[macro_export]
macro_rules! on_every_engine {
    (store: $($case:ident),* $(,)?) => {
        $crate::on_every_engine!(@each [tokio::test] store
            $crate::common::engines::embedded(), $crate::common::engines::dynamodb;
            $($case),*);
    };
    (streaming store: $($case:ident),* $(,)?) => {
        $crate::on_every_engine!(@each [tokio::test] store
            $crate::common::engines::embedded(), $crate::common::engines::dynamodb_streaming;
            $($case),*);
    };
    (threads = $n:literal: $($case:ident),* $(,)?) => {
        $crate::on_every_engine!(@each
            [tokio::test(flavor = "multi_thread", worker_threads = $n)] api
            $crate::common::graphql::Api::embedded(), $crate::common::graphql::Api::dynamodb;
            $($case),*);
    };
    (shared api, threads = $n:literal: $($case:ident),* $(,)?) => {
        $crate::on_every_engine!(@each
            [tokio::test(flavor = "multi_thread", worker_threads = $n)] shared
            $crate::common::graphql::Api::embedded(), $crate::common::graphql::Api::dynamodb;
            $($case),*);
    };
    ($($case:ident),* $(,)?) => {
        $crate::on_every_engine!(@each [tokio::test] api
            $crate::common::graphql::Api::embedded(), $crate::common::graphql::Api::dynamodb;
            $($case),*);
    };
    (@each [$test:meta] $how:ident $embedded:expr, $dynamodb:path; $($case:ident),*) => {
        mod embedded {
            $(
                #[$test]
                async fn $case() {
                    let engine = $embedded.await;
                    $crate::on_every_engine!(@run $how super::$case, engine);
                }
            )*
        }
        mod dynamodb {
            $(
                #[$test]
                async fn $case() {
                    let Some(engine) = $dynamodb(stringify!($case)).await else {
                        return;
                    };
                    $crate::on_every_engine!(@run $how super::$case, engine);
                }
            )*
        }
    };
    (@run store $case:path, $store:ident) => {
        $case(&$store).await;
        let _ = itemgraph::store::Store::delete_table(&$store).await;
    };
    (@run api $case:path, $api:ident) => {
        $case(&$api).await;
        $api.finish().await;
    };
    (@run shared $case:path, $api:ident) => {
        let api = std::sync::Arc::new($api);
        $case(api.clone()).await;
        std::sync::Arc::into_inner(api)
            .expect("every request ended")
            .finish()
            .await;
    };
}
