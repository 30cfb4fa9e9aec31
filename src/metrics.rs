//! Prometheus metrics: the names of every series, the process-wide recorder, and the small
//! functions the rest of the crate calls to record.
//!
//! The recorder is installed once per process ([`install`]) by the first router built
//! with metrics on; `GET /metrics` renders it ([`render`]). Until then (and in a process
//! that never serves, such as `itemgraph seed`), every `record_*` function is a no-op, so
//! callers never check whether metrics are on.
//!
//! Series (all prefixed `itemgraph_`):
//!
//! | series | type | labels |
//! |---|---|---|
//! | [`GRAPHQL_REQUESTS`] | counter | `operation`, `type`, `outcome` |
//! | [`GRAPHQL_REQUEST_DURATION`] | histogram (s) | `operation`, `type` |
//! | [`GRAPHQL_ERRORS`] | counter | `code` |
//! | [`STORE_CALLS`] | counter | `op`, `index`, `outcome` |
//! | [`STORE_CALL_DURATION`] | histogram (s) | `op` |
//! | [`DYNAMODB_RETRIES`] | counter | `op`, `reason` |
//! | [`DYNAMODB_CONSUMED_CAPACITY`] | histogram (capacity units) | `op`, `table`, `index` |
//! | [`SUBSCRIPTIONS`] | gauge | |
//! | [`STREAM_CHANGES`] | counter | |
//! | [`STREAM_ERRORS`] | counter | |
//! | [`STREAM_CALLS`] | counter | `op` |
//! | [`EVENTS_DELIVERED`] | counter | |
//! | [`RELAY_HOLDER`] | gauge | |
//! | [`RELAY_EPOCH`] | gauge | |
//! | [`RELAY_APPENDED`] | counter | |
//! | [`RELAY_FOLLOWED`] | counter | |
//! | [`RELAY_LAG`] | gauge (s) | |
//! | [`WEBSOCKET_CLOSES`] | counter | `code` |
//! | [`RELAY_UNREADABLE`] | counter | |
//! | [`JWKS_REFRESHES`] | counter | `outcome` |
//! | [`JWKS_KEYS_SKIPPED`] | counter | |
//! | [`TRACE_SPANS`] | counter | `outcome` |
//!
//! Label values are bounded: operation names are chosen by clients, so only well-formed
//! names, and only the first [`MAX_OPERATION_NAMES`] of them, become label values (see
//! [`operation_label`]); every other label takes its values from fixed sets in this crate
//! (error codes, port operations, the table's index names).
//!
//! It knows nothing of GraphQL or of the store: callers hand it plain values. The
//! GraphQL side (`crate::graphql::request_metrics`) classifies operations and errors;
//! the store side (`crate::store::metered`) names the outcome of each call.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// GraphQL requests that reached the schema, by `operation` (see [`operation_label`]),
/// `type` (`query`, `mutation`, `subscription`; `unknown` when the document did not parse
/// or named no such operation) and `outcome`: `ok` (no error), `partial` (data with some
/// errors), `error` (no data: refused before execution, or every root field failed),
/// `timeout` (cancelled at the deadline). Requests refused by HTTP itself (malformed body,
/// missing token) never reach the schema: they count in [`GRAPHQL_ERRORS`] only.
pub const GRAPHQL_REQUESTS: &str = "itemgraph_graphql_requests_total";
/// Time from the schema receiving a request to its response, by `operation` and `type`.
pub const GRAPHQL_REQUEST_DURATION: &str = "itemgraph_graphql_request_duration_seconds";
/// Errors sent to clients, by `code` (`extensions.code`), one per error: a response with
/// three `NOT_FOUND` errors counts three. HTTP-level refusals (`BAD_REQUEST`,
/// `UNAUTHENTICATED`, a panic's `INTERNAL`) count here too.
pub const GRAPHQL_ERRORS: &str = "itemgraph_graphql_errors_total";
/// Calls through the store port, by `op` (the DynamoDB operation: `GetItem`, `Query`,
/// `BatchGetItem` (one page), `TransactWriteItems` …), `index` (the secondary index a
/// Query read, `none` for the table) and `outcome` (`ok`, or the failure: see
/// `crate::store::metered::store_outcome`). On the DynamoDB engine one call is one SDK operation, its retries
/// included.
pub const STORE_CALLS: &str = "itemgraph_store_calls_total";
/// Duration of one store call, by `op`, retries and backoff included.
pub const STORE_CALL_DURATION: &str = "itemgraph_store_call_duration_seconds";
/// GraphQL subscriptions open in this process (every transport).
pub const SUBSCRIPTIONS: &str = "itemgraph_subscriptions_open";
/// Changes of the design's entities read from the table's change stream by this
/// process's reader.
pub const STREAM_CHANGES: &str = "itemgraph_stream_changes_total";
/// Calls to DynamoDB Streams by this process, by `op` (`GetRecords`, `GetShardIterator`,
/// `DescribeStream`): what the stream's limit of 5 `GetRecords` a second per shard, for
/// all readers together, is measured against.
pub const STREAM_CALLS: &str = "itemgraph_stream_calls_total";
/// Failed calls of the change stream's reader (each retried after a pause).
pub const STREAM_ERRORS: &str = "itemgraph_stream_errors_total";
/// Subscription events sent to clients.
pub const EVENTS_DELIVERED: &str = "itemgraph_subscription_events_total";
/// 1 while this replica holds the relay lease (reads the change stream into the relay
/// log), 0 otherwise.
pub const RELAY_HOLDER: &str = "itemgraph_relay_holder";
/// The relay lease's epoch as this replica last saw it: one more at every takeover.
pub const RELAY_EPOCH: &str = "itemgraph_relay_epoch";
/// Entries this replica appended to the relay log while holding the lease.
pub const RELAY_APPENDED: &str = "itemgraph_relay_appended_total";
/// Relay entries this replica's hub received from the log.
pub const RELAY_FOLLOWED: &str = "itemgraph_relay_followed_total";
/// How far behind the table's writes the last relay entry this replica received was:
/// the entry's arrival less the change's time in the stream (whole seconds on DynamoDB).
pub const RELAY_LAG: &str = "itemgraph_relay_lag_seconds";
/// Relay entries this replica's hub could not read (a later version wrote them) and
/// skipped, each telling the subscribers of its organization to refetch.
pub const RELAY_UNREADABLE: &str = "itemgraph_relay_unreadable_total";
/// DynamoDB requests sent again, by `op` and `reason`: `sdk` (an attempt of the SDK's
/// retry policy after the first: throttling, 5xx, timeouts) or `transaction_conflict`
/// (TransactWriteItems cancelled only by a concurrent write, sent again by the engine).
pub const DYNAMODB_RETRIES: &str = "itemgraph_dynamodb_retries_total";
/// Capacity units DynamoDB reports a request consumed (`ReturnConsumedCapacity`), one
/// observation per request and per table or index it touched, by `op`, `table` and
/// `index` (`none` for the table itself). A histogram because units are fractional
/// (0.5 for an eventually consistent read): its `_sum` is the total consumed, and
/// `rate(…_sum[5m])` the units per second. Absent when the endpoint reports nothing.
pub const DYNAMODB_CONSUMED_CAPACITY: &str = "itemgraph_dynamodb_consumed_capacity_units";

/// The `index` label of a call on the table itself.
pub const NO_INDEX: &str = "none";
/// WebSockets ended, counted once the connection is gone, by the close code the server
/// gave (`3008` silent, `1008` not reading, `1001` shutdown, …) or `client` when the
/// client closed it.
pub const WEBSOCKET_CLOSES: &str = "itemgraph_websocket_closes_total";
/// Fetches of the identity provider's JWKS, by `outcome`: `ok`, or `error` (the last good
/// set kept).
pub const JWKS_REFRESHES: &str = "itemgraph_jwks_refresh_total";
/// Keys of a fetched JWKS that were skipped because this server cannot read them (a key
/// type or curve it does not know, a malformed key), while the set's other keys are used.
pub const JWKS_KEYS_SKIPPED: &str = "itemgraph_jwks_keys_skipped_total";
/// OpenTelemetry spans that ended sampled, by `outcome`: `exported` (the collector took
/// them), `queue_full` (dropped at once: the export queue was full, in spans or in bytes,
/// so the collector is down or slower than the server), `export_failed` (the collector
/// refused them, did not answer in time, or could not be reached), `shutdown` (ended after
/// the exporter stopped, or not exported by the stop's deadline).
pub const TRACE_SPANS: &str = "itemgraph_trace_spans_total";

/// Most distinct operation names kept as label values per process; later ones count
/// as `other`. Operation names are client-chosen, and every value is a series forever.
pub const MAX_OPERATION_NAMES: usize = 200;
/// Longest operation name kept as a label value.
pub const MAX_OPERATION_NAME_LEN: usize = 64;

/// Histogram buckets for latencies, in seconds: a store call on the same network takes a
/// few milliseconds, a request a few calls, and the deadline is seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Buckets for the capacity one request consumes: half a unit (a small eventually
/// consistent read) up to a full page of large items.
const CAPACITY_BUCKETS: &[f64] = &[0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// How often histogram samples are folded into their buckets when nobody scrapes: the
/// recorder buffers raw samples until then, so without it memory grows unscraped.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the Prometheus recorder as the process's `metrics` recorder, once; later calls
/// return the same handle. `None` when another recorder was installed first (an
/// application embedding this crate with its own): then `/metrics` says so, and the
/// series go to that recorder.
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(DYNAMODB_CONSUMED_CAPACITY.into()),
                        CAPACITY_BUCKETS,
                    )
                })
                .and_then(|b| b.install_recorder());
            match installed {
                Ok(handle) => {
                    describe();
                    spawn_upkeep(handle.clone());
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed; /metrics is off");
                    None
                }
            }
        })
        .as_ref()
}

/// The current metrics in the Prometheus text format; `None` when no recorder of ours is
/// installed.
pub fn render() -> Option<String> {
    HANDLE.get().and_then(Option::as_ref).map(|h| h.render())
}

/// A thread rather than a task: it must outlive whichever runtime installed the recorder
/// (tests run one runtime per test).
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_INTERVAL);
            handle.run_upkeep();
        });
    if let Err(error) = spawned {
        // Scrapes still fold the samples in; only an unscraped process grows.
        tracing::warn!(%error, "cannot start the metrics upkeep thread");
    }
}

/// The `# HELP` lines.
fn describe() {
    use ::metrics::{describe_counter, describe_histogram, Unit};
    describe_counter!(
        GRAPHQL_REQUESTS,
        Unit::Count,
        "GraphQL requests by operation name, operation type and outcome"
    );
    describe_histogram!(
        GRAPHQL_REQUEST_DURATION,
        Unit::Seconds,
        "GraphQL request duration by operation name and type"
    );
    describe_counter!(
        GRAPHQL_ERRORS,
        Unit::Count,
        "Errors sent to clients by extensions.code"
    );
    describe_counter!(
        STORE_CALLS,
        Unit::Count,
        "Store calls by DynamoDB operation, index and outcome"
    );
    describe_histogram!(
        STORE_CALL_DURATION,
        Unit::Seconds,
        "Store call duration by DynamoDB operation, retries included"
    );
    describe_counter!(
        DYNAMODB_RETRIES,
        Unit::Count,
        "DynamoDB requests sent again, by operation and reason"
    );
    describe_counter!(
        JWKS_REFRESHES,
        Unit::Count,
        "Fetches of the identity provider's JWKS by outcome (error: the last good set kept)"
    );
    describe_counter!(
        WEBSOCKET_CLOSES,
        Unit::Count,
        "WebSockets ended, once the connection is gone, by the server's close code (or client)"
    );
    describe_counter!(
        JWKS_KEYS_SKIPPED,
        Unit::Count,
        "Keys of a fetched JWKS skipped as unreadable (unknown type or curve, malformed)"
    );
    describe_counter!(
        TRACE_SPANS,
        Unit::Count,
        "OpenTelemetry spans by outcome: exported, or dropped (queue_full, export_failed, shutdown)"
    );
    describe_histogram!(
        DYNAMODB_CONSUMED_CAPACITY,
        "Capacity units DynamoDB reported consumed per request, by operation, table and index"
    );
}

// --- recording ---------------------------------------------------------------------------

/// One fetch of the JWKS (`ok` false: it failed, or held no usable key).
pub fn record_jwks_refresh(ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    ::metrics::counter!(JWKS_REFRESHES, "outcome" => outcome).increment(1);
}

/// A WebSocket's connection is gone: `code` the close code the server gave, or `client`.
pub fn record_websocket_close(code: &'static str) {
    ::metrics::counter!(WEBSOCKET_CLOSES, "code" => code).increment(1);
}

/// `keys` keys of a fetched JWKS skipped as unreadable.
pub fn record_jwks_keys_skipped(keys: usize) {
    ::metrics::counter!(JWKS_KEYS_SKIPPED).increment(keys as u64);
}

/// `spans` OpenTelemetry spans that met `outcome` (see [`TRACE_SPANS`]).
pub fn record_trace_spans(outcome: &'static str, spans: usize) {
    ::metrics::counter!(TRACE_SPANS, "outcome" => outcome).increment(spans as u64);
}

/// One error sent to a client, by its `extensions.code`.
pub fn record_error(code: &str) {
    ::metrics::counter!(GRAPHQL_ERRORS, "code" => code.to_owned()).increment(1);
}

/// One GraphQL request: `operation` must come from [`operation_label`].
pub fn record_request(operation: &str, kind: &'static str, outcome: &'static str, took: Duration) {
    ::metrics::counter!(
        GRAPHQL_REQUESTS,
        "operation" => operation.to_owned(),
        "type" => kind,
        "outcome" => outcome,
    )
    .increment(1);
    ::metrics::histogram!(
        GRAPHQL_REQUEST_DURATION,
        "operation" => operation.to_owned(),
        "type" => kind,
    )
    .record(took.as_secs_f64());
}

/// One store call; `index` is `None` for the table.
pub fn record_store_call(
    op: &'static str,
    index: Option<&str>,
    outcome: &'static str,
    took: Duration,
) {
    ::metrics::counter!(
        STORE_CALLS,
        "op" => op,
        "index" => index.unwrap_or(NO_INDEX).to_owned(),
        "outcome" => outcome,
    )
    .increment(1);
    ::metrics::histogram!(STORE_CALL_DURATION, "op" => op).record(took.as_secs_f64());
}

/// One DynamoDB request sent again (see [`DYNAMODB_RETRIES`] for the reasons).
pub fn record_retry(op: &str, reason: &'static str) {
    ::metrics::counter!(DYNAMODB_RETRIES, "op" => op.to_owned(), "reason" => reason).increment(1);
}

/// How many subscriptions are open now.
pub fn record_subscriptions(open: usize) {
    ::metrics::gauge!(SUBSCRIPTIONS).set(open as f64);
}

/// One change read from the stream.
pub fn record_stream_change() {
    ::metrics::counter!(STREAM_CHANGES).increment(1);
}

/// Whether this replica holds the relay lease now, and at which epoch.
pub fn record_relay_holder(holding: bool, epoch: u64) {
    ::metrics::gauge!(RELAY_HOLDER).set(if holding { 1.0 } else { 0.0 });
    if holding {
        record_relay_epoch(epoch);
    }
}

/// The relay lease's epoch as last seen.
pub fn record_relay_epoch(epoch: u64) {
    ::metrics::gauge!(RELAY_EPOCH).set(epoch as f64);
}

/// `n` entries appended to the relay log.
pub fn record_relayed(n: usize) {
    ::metrics::counter!(RELAY_APPENDED).increment(n as u64);
}

/// One relay entry received, `lag` after its change was made.
pub fn record_relay_followed(lag: Duration) {
    ::metrics::counter!(RELAY_FOLLOWED).increment(1);
    ::metrics::gauge!(RELAY_LAG).set(lag.as_secs_f64());
}

/// One relay entry this replica could not read, skipped.
pub fn record_relay_unreadable() {
    ::metrics::counter!(RELAY_UNREADABLE).increment(1);
}

/// One call to DynamoDB Streams.
pub fn record_stream_call(op: &'static str) {
    ::metrics::counter!(STREAM_CALLS, "op" => op).increment(1);
}

/// One failed call of the stream's reader.
pub fn record_stream_error() {
    ::metrics::counter!(STREAM_ERRORS).increment(1);
}

/// One event sent to a subscriber.
pub fn record_event_delivered() {
    ::metrics::counter!(EVENTS_DELIVERED).increment(1);
}

/// Capacity DynamoDB reported for one request on `table` or one of its indexes.
pub fn record_consumed_capacity(op: &'static str, table: &str, index: Option<&str>, units: f64) {
    ::metrics::histogram!(
        DYNAMODB_CONSUMED_CAPACITY,
        "op" => op,
        "table" => table.to_owned(),
        "index" => index.unwrap_or(NO_INDEX).to_owned(),
    )
    .record(units);
}

/// Operation names already given a label value. A std Mutex is fine: held only to look up
/// or insert, never across an await.
static OPERATION_NAMES: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// The `operation` label for a client's operation name: `anonymous` without one; the name
/// itself when it is a GraphQL name (`[_A-Za-z][_0-9A-Za-z]*`) of at most
/// [`MAX_OPERATION_NAME_LEN`] characters and one of the first [`MAX_OPERATION_NAMES`]
/// names seen; `other` for anything else, so no client can grow the series without bound.
pub fn operation_label(name: Option<&str>) -> String {
    let Some(name) = name else {
        return "anonymous".into();
    };
    let well_formed = name.len() <= MAX_OPERATION_NAME_LEN
        && name
            .chars()
            .next()
            .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    if !well_formed {
        return "other".into();
    }
    let mut seen = OPERATION_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if seen.contains(name) {
        return name.to_owned();
    }
    if seen.len() < MAX_OPERATION_NAMES {
        seen.insert(name.to_owned());
        return name.to_owned();
    }
    "other".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_labels_are_bounded_in_charset_length_and_number() {
        assert_eq!(operation_label(None), "anonymous");
        assert_eq!(operation_label(Some("OrgUsers")), "OrgUsers");
        assert_eq!(operation_label(Some("_private_2")), "_private_2");
        for bad in ["", "2fast", "a-b", "a b", "ünï", "x\"y", "a\nb"] {
            assert_eq!(operation_label(Some(bad)), "other", "{bad:?}");
        }
        let long = "a".repeat(MAX_OPERATION_NAME_LEN + 1);
        assert_eq!(operation_label(Some(&long)), "other");
        let at_limit = "b".repeat(MAX_OPERATION_NAME_LEN);
        assert_eq!(operation_label(Some(&at_limit)), at_limit);

        // Fill the set up to the cap: new names then become `other`, known ones stay.
        for i in 0..MAX_OPERATION_NAMES {
            operation_label(Some(&format!("Op{i}")));
        }
        assert_eq!(operation_label(Some("OneTooMany")), "other");
        assert_eq!(operation_label(Some("OrgUsers")), "OrgUsers");
        assert_eq!(operation_label(Some("Op0")), "Op0");
    }
}
