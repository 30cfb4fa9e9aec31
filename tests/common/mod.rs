//! Helpers shared by the integration tests. Each test binary uses only some of them.
#![allow(dead_code)]

pub mod changes;
pub mod dynamo_local;
pub mod engines;
pub mod graphql;
pub mod hooked_stream;
pub mod jwks;
pub mod otlp;
pub mod redis;
pub mod server;
pub mod sse;
pub mod stalled;

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
