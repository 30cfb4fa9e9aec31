//! The SDK client: how it is configured ([`DynamoOptions`]: endpoint, region, credentials,
//! timeouts, retries) and the interceptor on it (retries counted; a write's unanswered
//! attempts noted so its final error says the outcome is unknown).

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::credentials::CredentialsProviderChain;
use aws_config::meta::region::RegionProviderChain;
use aws_config::profile::{ProfileFileCredentialsProvider, ProfileFileRegionProvider};
use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::RequestAttempts;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

use crate::metrics;
use crate::store::{call_stats, retry_conflicts, StoreResult, TableSchema};

use super::{stream, wire, DynamoEngine, DynamoStore};
use crate::store::validated::Validated;

/// Where requests are signed for when neither the options nor the environment name a region:
/// DynamoDB Local accepts any region, and a real deployment always configures one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// How to reach DynamoDB. Every field has a default that works against the real service
/// with the standard AWS configuration chain; tests and local runs set `endpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoOptions {
    /// The table every request addresses.
    pub table: String,
    /// An endpoint override (DynamoDB Local, a test stack). `None` uses the region's
    /// public endpoint, or `AWS_ENDPOINT_URL*` when the environment sets one.
    pub endpoint: Option<String>,
    /// Overrides the region found by the configuration chain.
    pub region: Option<String>,
    /// Bounds TCP/TLS connection setup, so an unreachable endpoint fails fast.
    pub connect_timeout: Duration,
    /// Bounds a whole call including retries: the most a resolver can wait on the store.
    pub operation_timeout: Duration,
    /// Bounds one attempt, so a stalled connection is retried instead of eating the budget.
    pub operation_attempt_timeout: Duration,
    /// Attempts per call with the SDK's standard retry mode (throttling, 5xx, timeouts).
    pub max_attempts: u32,
    /// Whether `create_table` turns the table's stream on (subscriptions need it).
    pub stream: bool,
}

impl DynamoOptions {
    /// DynamoDB connects in milliseconds within a region; past this a connection attempt
    /// is lost (a dropped SYN, a dead host) and a new attempt does better than waiting.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
    /// One attempt: far above DynamoDB's latency even for a 1 MB page, so only a stalled
    /// connection reaches it.
    pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);
    /// The whole call, retries included: half the default request deadline (10 s), so a
    /// store that does not answer fails the fields that need it with `UNAVAILABLE` while
    /// the rest of the response still resolves, instead of the deadline cancelling the
    /// whole request.
    pub const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(5);
    /// The SDK's standard mode default.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
}

impl Default for DynamoOptions {
    fn default() -> Self {
        DynamoOptions {
            table: "itemgraph".into(),
            endpoint: None,
            region: None,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            operation_timeout: Self::DEFAULT_OPERATION_TIMEOUT,
            operation_attempt_timeout: Self::DEFAULT_ATTEMPT_TIMEOUT,
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            stream: true,
        }
    }
}

impl DynamoStore {
    /// Builds a client from the standard AWS configuration chain plus `opts`.
    ///
    /// With an endpoint override, credentials and region come only from the environment and
    /// the profile files, then fall back to static dummy values: DynamoDB Local accepts any
    /// credentials, and the rest of the chain (container and instance metadata) would probe
    /// the network for seconds before giving up on a developer machine or in CI.
    pub async fn connect(opts: DynamoOptions, schema: TableSchema) -> Self {
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(opts.connect_timeout)
            .operation_timeout(opts.operation_timeout)
            .operation_attempt_timeout(opts.operation_attempt_timeout)
            .build();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(RetryConfig::standard().with_max_attempts(opts.max_attempts.max(1)))
            .timeout_config(timeouts)
            // The SDK's stalled-stream protection watches every response body's throughput
            // with a timer of its own (5 % of the server's CPU at concurrency 64, measured);
            // DynamoDB's bodies are small JSON, and the attempt timeout above already ends
            // a stalled one and retries it.
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
        let fallback_region = Region::from_static(DEFAULT_REGION);
        loader = match (&opts.region, &opts.endpoint) {
            (Some(region), _) => loader.region(Region::new(region.clone())),
            (None, Some(_)) => loader.region(
                RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
                    .or_else(ProfileFileRegionProvider::builder().build())
                    .or_else(fallback_region),
            ),
            (None, None) => {
                loader.region(RegionProviderChain::default_provider().or_else(fallback_region))
            }
        };
        if let Some(endpoint) = &opts.endpoint {
            let credentials = CredentialsProviderChain::first_try(
                "Environment",
                EnvironmentVariableCredentialsProvider::new(),
            )
            .or_else("Profile", ProfileFileCredentialsProvider::builder().build())
            .or_else(
                "EndpointOverrideDummy",
                // DynamoDB Local (2.x and later) accepts only letters and digits in a key id.
                Credentials::new("itemgraphlocal", "itemgraphlocal", None, None, "itemgraph"),
            );
            loader = loader
                .endpoint_url(endpoint)
                .credentials_provider(credentials);
        }
        let config = loader.load().await;
        let streams = aws_sdk_dynamodbstreams::Client::new(&config);
        let mut client = aws_sdk_dynamodb::config::Builder::from(&config);
        if let Some(endpoint) = &opts.endpoint {
            client = client.endpoint_resolver(FixedEndpoint::new(endpoint));
        }
        let client = Client::from_conf(client.build());
        let mut store = Self::from_client(client, opts.table, schema).with_streams(streams);
        store.create_stream = opts.stream;
        store
    }

    /// The same store following the table's stream through `streams` (a client for the
    /// same account, region and endpoint).
    pub fn with_streams(mut self, streams: aws_sdk_dynamodbstreams::Client) -> Self {
        self.changes = Some(Arc::new(stream::DynamoChanges {
            client: self.client.clone(),
            streams,
            table: self.table.clone(),
            schema: self.schema.clone(),
            arn: tokio::sync::Mutex::new(None),
        }));
        self
    }

    /// Wraps a client configured elsewhere (tests, or an application that shares one),
    /// adding the interceptor that counts its retries, and sending through its HTTP client
    /// (the SDK's default when it has none) wrapped in the items tap ([`wire`]).
    pub fn from_client(client: Client, table: String, schema: TableSchema) -> Self {
        let http = client
            .config()
            .http_client()
            .unwrap_or_else(wire::default_http_client);
        let config = client
            .config()
            .to_builder()
            .interceptor(RetryCounter)
            .http_client(wire::ItemsTap::new(http))
            .build();
        Validated::new(DynamoEngine {
            client: Client::from_conf(config),
            table,
            schema,
            changes: None,
            create_stream: true,
            family: Arc::default(),
        })
    }

    /// The same store with `tables` (each name and schema) reached on its client beside its
    /// own table, each through [`Store::sibling`] (following its own stream where this
    /// store follows its), all by the calls over several tables.
    pub fn with_siblings(mut self, tables: Vec<(String, TableSchema)>) -> Self {
        let own = DynamoEngine {
            family: Arc::default(),
            ..(*self).clone()
        };
        let streams = self.changes.as_ref().map(|c| c.streams.clone());
        let mut family = vec![own.clone()];
        for (table, schema) in tables {
            if family.iter().any(|m| m.table == table) {
                continue;
            }
            let mut member = DynamoEngine {
                table,
                schema,
                changes: None,
                ..own.clone()
            };
            if let Some(streams) = &streams {
                member.changes = Some(Arc::new(stream::DynamoChanges {
                    client: member.client.clone(),
                    streams: streams.clone(),
                    table: member.table.clone(),
                    schema: member.schema.clone(),
                    arn: tokio::sync::Mutex::new(None),
                }));
            }
            family.push(member);
        }
        self.family = Arc::new(family);
        self
    }

    /// The raw SDK client: the contract tests send requests that bypass validation to prove
    /// DynamoDB rejects them too.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// The endpoint of a client configured with an endpoint URL (DynamoDB Local, a test
/// stack), given to every call without evaluating the SDK's endpoint rules, whose answer
/// with an endpoint URL is that URL for every operation. The SDK's resolver keeps one
/// answer, for one set of parameters, and the parameters of a batch or a transaction (a
/// list of tables) differ from a single-table call's, so under a mix of both it evaluated
/// its rules again on most calls. FIPS and dual-stack, which the rules refuse beside an
/// endpoint URL, are still theirs to refuse.
#[derive(Debug)]
pub(super) struct FixedEndpoint {
    endpoint: aws_smithy_types::endpoint::Endpoint,
    rules: aws_sdk_dynamodb::config::endpoint::DefaultResolver,
}

impl FixedEndpoint {
    pub(super) fn new(url: &str) -> Self {
        FixedEndpoint {
            endpoint: aws_smithy_types::endpoint::Endpoint::builder()
                .url(url.to_owned())
                .build(),
            rules: aws_sdk_dynamodb::config::endpoint::DefaultResolver::new(),
        }
    }
}

impl aws_sdk_dynamodb::config::endpoint::ResolveEndpoint for FixedEndpoint {
    fn resolve_endpoint<'a>(
        &'a self,
        params: &'a aws_sdk_dynamodb::config::endpoint::Params,
    ) -> aws_sdk_dynamodb::config::endpoint::EndpointFuture<'a> {
        if params.use_fips() == Some(true) || params.use_dual_stack() == Some(true) {
            return self.rules.resolve_endpoint(params);
        }
        aws_sdk_dynamodb::config::endpoint::EndpointFuture::ready(Ok(self.endpoint.clone()))
    }
}

/// Sends one write: again while it only conflicted with concurrent writes
/// ([`retry_conflicts`]: DynamoDB did not apply it), noting across all its sends whether an
/// attempt went unanswered ([`UNANSWERED`]), which settles the final error
/// ([`crate::store::StoreError::after_unanswered_attempt`]).
pub(super) async fn send_write<T, F, Fut>(op: &'static str, send: F) -> StoreResult<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    UNANSWERED
        .scope(Cell::new(false), async {
            retry_conflicts(op, &send)
                .await
                .map_err(|e| e.after_unanswered_attempt(UNANSWERED.with(Cell::get)))
        })
        .await
}

tokio::task_local! {
    /// For the write [`send_write`] is sending, whether any of the SDK's attempts failed
    /// without DynamoDB's answer (no response: a timed-out attempt or a broken connection;
    /// or a 5xx, which DynamoDB documents as "may have succeeded"). Such an attempt may have
    /// been applied, so a later attempt's throttling must not tell the caller that nothing
    /// was written. Set by [`RetryCounter`], the client's interceptor: an interceptor given
    /// to each call instead (`customize()`) layers the client's whole configuration anew on
    /// every send.
    static UNANSWERED: Cell<bool>;
}

/// Notes a write's unanswered attempts ([`UNANSWERED`]), and counts the SDK's retries in
/// [`metrics::DYNAMODB_RETRIES`]: the SDK numbers each attempt
/// in the config bag before the attempt starts, so an attempt past the first is a retry
/// (throttling, a 5xx, a timed-out attempt). Each retry is also reported to the call's
/// figures ([`call_stats::report_retry`]), as throttled when the attempt before it was
/// answered 400: the only 400s the SDK sends again are DynamoDB's throttling codes.
#[derive(Debug)]
pub(super) struct RetryCounter;

/// The status of the call's last answered attempt, kept in the call's config bag.
#[derive(Debug, Clone, Copy)]
struct LastStatus(u16);

impl Storable for LastStatus {
    type Storer = StoreReplace<Self>;
}

impl Intercept for RetryCounter {
    fn name(&self) -> &'static str {
        "itemgraph::RetryCounter"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let attempt = cfg.load::<RequestAttempts>().map_or(1, |a| a.attempts());
        if attempt > 1 {
            let op = cfg.load::<Metadata>().map_or("unknown", |m| m.name());
            metrics::record_retry(op, "sdk");
            let throttled = cfg.load::<LastStatus>().is_some_and(|s| s.0 == 400);
            call_stats::report_retry(throttled);
        }
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let status = context.response().map_or(0, |r| r.status().as_u16());
        cfg.interceptor_state().store_put(LastStatus(status));
        let failed = context.output_or_error().is_some_and(|o| o.is_err());
        let unanswered = context
            .response()
            .is_none_or(|r| r.status().is_server_error());
        if failed && unanswered {
            // Outside a write's send_write (a read), there is nothing to note.
            let _ = UNANSWERED.try_with(|u| u.set(true));
        }
        Ok(())
    }
}
