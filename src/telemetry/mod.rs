//! OpenTelemetry traces, exported over OTLP to the collector a team already runs (Jaeger,
//! Grafana Tempo, Honeycomb, AWS X-Ray through the ADOT collector).
//!
//! Off unless an OTLP endpoint is configured (`config::TelemetryArgs`); then every HTTP
//! request gets a server span that continues a trusted caller's W3C `traceparent` and
//! links anyone else's ([`ParentTrust`]), and below it:
//! - the GraphQL request (`graphql.operation.name`, `graphql.operation.type`, the
//!   document's hash, never the variables): [`crate::graphql::execute`], and one per event
//!   of a subscription;
//! - each DataLoader batch ([`crate::graphql::loaders`]) and each connection page
//!   (`crate::graphql`);
//! - each DynamoDB call, with the database and AWS SDK conventions' attributes
//!   ([`crate::store::metered`]).
//!
//! The spans travel in OpenTelemetry's own [`Context`], attached to each future as it is
//! polled ([`within`]); the context also carries the [`Telemetry`] that made it, so code
//! deep in a request starts a child span ([`child`]) without being handed anything, and
//! does nothing at all (no attribute built) when the request is not traced or not
//! sampled. Spans leave through [`export::BoundedBatch`]: bounded in spans and bytes, never
//! blocking.
//!
//! What a client chooses is cut before it becomes a span: its `tracestate`
//! ([`MAX_TRACE_STATE_BYTES`]), the path of a request ([`MAX_URL_PATH_BYTES`]; a path no
//! route matches is not recorded at all), an operation's name
//! ([`MAX_OPERATION_NAME_BYTES`]), and, whatever the call site, every span name and string
//! attribute ([`export::MAX_SPAN_NAME_BYTES`], [`export::MAX_ATTRIBUTE_VALUE_BYTES`]).

pub mod export;

use std::borrow::Cow;
use std::sync::Arc;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    FutureExt as _, Link, SpanContext, SpanKind, Status, TraceContextExt, TraceState, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter as _};
use opentelemetry_sdk::Resource;

pub use export::{BatchSettings, ExportHandle};

/// The W3C Trace Context request header naming the caller's span.
pub const TRACEPARENT_HEADER: &str = "traceparent";
/// The W3C Trace Context request header carrying vendors' state along a trace.
const TRACESTATE_HEADER: &str = "tracestate";
/// Longest `traceparent` read (version 00 is 55 characters; a later version may add
/// fields); a longer one is ignored, as if absent.
const MAX_TRACEPARENT_BYTES: usize = 512;
/// Most of a caller's `tracestate` carried on: the 512 characters W3C Trace Context asks
/// every participant to propagate. Members over [`MAX_TRACE_STATE_MEMBER_BYTES`] go first,
/// then members from the end (the specification's order of truncation).
pub const MAX_TRACE_STATE_BYTES: usize = 512;
/// Longest `tracestate` list-member kept (W3C Trace Context: longer ones are the first
/// dropped when the list is cut).
const MAX_TRACE_STATE_MEMBER_BYTES: usize = 128;
/// Longest `url.path` recorded on a server span.
pub const MAX_URL_PATH_BYTES: usize = 256;
/// Longest operation name put in a span's name and `graphql.operation.name`.
pub const MAX_OPERATION_NAME_BYTES: usize = 128;

/// Whose `traceparent` may decide that a request is traced (`--otel-trust-parent`). An
/// untrusted caller's request starts a new trace, kept or not by the sampler as any new
/// one, whose server span links to the caller's span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ParentTrust {
    /// The caller of `/graphql` whose bearer token is valid (checked with the keys at
    /// hand; a JWKS is never fetched for it). With auth off, nobody.
    #[default]
    Authenticated,
    /// Every caller: for a server only a proxy that sets or strips `traceparent` reaches.
    All,
    /// No caller.
    #[value(name = "none")]
    Nobody,
}

/// The response header that names the request's trace, W3C Trace Context Level 2's
/// `traceresponse`: `00-<trace id>-<server span id>-<flags>`, flags `01` when sampled.
pub const TRACE_RESPONSE_HEADER: &str = "traceresponse";

/// The span attribute naming the caller's organization, set only with
/// `--otel-record-organization` (it is tenant data).
pub const ORGANIZATION_ATTRIBUTE: &str = "itemgraph.organization";

/// How spans are encoded on the wire (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireProtocol {
    /// `http/protobuf`, the specification's default.
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

/// Which traces are kept (`OTEL_TRACES_SAMPLER`), with `ratio` its argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerSetting {
    AlwaysOn,
    AlwaysOff,
    TraceIdRatio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedTraceIdRatio(f64),
}

impl SamplerSetting {
    fn sampler(self) -> Sampler {
        let parent_based = |root| Sampler::ParentBased(Box::new(root));
        match self {
            SamplerSetting::AlwaysOn => Sampler::AlwaysOn,
            SamplerSetting::AlwaysOff => Sampler::AlwaysOff,
            SamplerSetting::TraceIdRatio(r) => Sampler::TraceIdRatioBased(r),
            SamplerSetting::ParentBasedAlwaysOn => parent_based(Sampler::AlwaysOn),
            SamplerSetting::ParentBasedAlwaysOff => parent_based(Sampler::AlwaysOff),
            SamplerSetting::ParentBasedTraceIdRatio(r) => {
                parent_based(Sampler::TraceIdRatioBased(r))
            }
        }
    }
}

/// Everything tracing needs, read from the command line and the `OTEL_*` variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where spans are posted: the traces URL itself (`…/v1/traces`).
    pub traces_endpoint: String,
    pub protocol: WireProtocol,
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, in order.
    pub resource_attributes: Vec<(String, String)>,
    pub sampler: SamplerSetting,
    pub batch: BatchSettings,
    /// Whether the request span names the caller's organization.
    pub record_organization: bool,
    /// Whose `traceparent` is continued (`--otel-trust-parent`).
    pub parent_trust: ParentTrust,
}

/// The tracer of a serving process, with its exporter. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tracer: SdkTracer,
    provider: SdkTracerProvider,
    export: ExportHandle,
    propagator: TraceContextPropagator,
    record_organization: bool,
    parent_trust: ParentTrust,
}

impl Telemetry {
    /// Builds the exporter and the tracer; the exporting task runs on the current runtime.
    /// Nothing is sent until a span ends.
    pub fn start(settings: &Settings) -> anyhow::Result<Telemetry> {
        let protocol = match settings.protocol {
            WireProtocol::HttpProtobuf => Protocol::HttpBinary,
            WireProtocol::HttpJson => Protocol::HttpJson,
        };
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(settings.traces_endpoint.clone())
            .build()
            .map_err(|e| anyhow::anyhow!("the OTLP exporter: {e}"))?;
        let resource = Resource::builder_empty()
            .with_attributes(
                settings
                    .resource_attributes
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .with_attributes([
                KeyValue::new("service.name", settings.service_name.clone()),
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("telemetry.sdk.name", "opentelemetry"),
                KeyValue::new("telemetry.sdk.language", "rust"),
            ])
            .build();
        exporter.set_resource(&resource);
        let (processor, export) = export::BoundedBatch::start(exporter, settings.batch);
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_sampler(settings.sampler.sampler())
            .with_span_processor(processor)
            .build();
        let tracer = provider.tracer("itemgraph");
        Ok(Telemetry {
            inner: Arc::new(Inner {
                tracer,
                provider,
                export,
                propagator: TraceContextPropagator::new(),
                record_organization: settings.record_organization,
                parent_trust: settings.parent_trust,
            }),
        })
    }

    /// Exports every span ended so far; returns when that is done (or has failed).
    pub async fn flush(&self) {
        self.inner.export.flush().await;
    }

    /// Exports what is left, for `--otel-shutdown-timeout` at most, and stops; spans
    /// ending later, or not exported by then, are dropped (counted as `shutdown`).
    pub async fn shutdown(&self) {
        self.inner.export.shutdown().await;
        let _ = self.inner.provider.shutdown();
    }

    /// Whether request spans name the caller's organization.
    pub fn records_organization(&self) -> bool {
        self.inner.record_organization
    }

    /// Whose `traceparent` is followed (`--otel-trust-parent`).
    pub fn parent_trust(&self) -> ParentTrust {
        self.inner.parent_trust
    }

    /// The context of an incoming HTTP request: a server span named `name`. A valid
    /// `traceparent` is continued when `trusted` (with its `tracestate`, cut to
    /// [`MAX_TRACE_STATE_BYTES`]); an untrusted one starts a new trace, sampled as any new
    /// one, whose server span links to the caller's span (without its `tracestate`).
    pub fn server_context(
        &self,
        name: String,
        headers: &axum::http::HeaderMap,
        trusted: bool,
        attributes: Vec<KeyValue>,
    ) -> Context {
        let extracted = self
            .inner
            .propagator
            .extract_with_context(&Context::new(), &Inbound::new(headers, trusted));
        let mut builder = self
            .inner
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes);
        let parent = {
            let span = extracted.span();
            let caller = span.span_context();
            if trusted || !caller.is_valid() {
                None
            } else {
                // A new trace: the SDK's sampler sees no parent and applies the operator's
                // root sampler to a trace id of its own making.
                builder = builder.with_links(vec![Link::with_context(SpanContext::new(
                    caller.trace_id(),
                    caller.span_id(),
                    caller.trace_flags(),
                    true,
                    TraceState::NONE,
                ))]);
                Some(Context::new())
            }
        };
        let parent = parent.unwrap_or(extracted);
        let span = builder.start_with_context(&self.inner.tracer, &parent);
        parent.with_span(span).with_value(self.clone())
    }
}

/// The request's headers as the propagator reads them, with what a caller can make large
/// cut first: an over-long `traceparent` is ignored, and `tracestate` is read only for a
/// trusted caller with a `traceparent`, kept to [`MAX_TRACE_STATE_BYTES`].
struct Inbound<'a> {
    headers: &'a axum::http::HeaderMap,
    trace_state: Option<String>,
}

impl<'a> Inbound<'a> {
    fn new(headers: &'a axum::http::HeaderMap, trusted: bool) -> Self {
        let trace_state = if trusted && headers.contains_key(TRACEPARENT_HEADER) {
            headers
                .get(TRACESTATE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(bounded_trace_state)
        } else {
            None
        };
        Inbound {
            headers,
            trace_state,
        }
    }
}

impl Extractor for Inbound<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        if key == TRACESTATE_HEADER {
            return self.trace_state.as_deref();
        }
        let value = self.headers.get(key)?.to_str().ok()?;
        (key != TRACEPARENT_HEADER || value.len() <= MAX_TRACEPARENT_BYTES).then_some(value)
    }

    fn keys(&self) -> Vec<&str> {
        self.headers.keys().map(|k| k.as_str()).collect()
    }
}

/// A `tracestate` value cut to what W3C Trace Context asks to propagate: list-members of
/// more than [`MAX_TRACE_STATE_MEMBER_BYTES`] are dropped first, then members from the end,
/// until the rest fits [`MAX_TRACE_STATE_BYTES`]. (The SDK then keeps at most 32 members
/// and refuses an invalid list whole, as before.)
fn bounded_trace_state(value: &str) -> String {
    let mut kept = String::new();
    for member in value.split(',').map(|m| m.trim_matches([' ', '\t'])) {
        if member.is_empty() || member.len() > MAX_TRACE_STATE_MEMBER_BYTES {
            continue;
        }
        let comma = usize::from(!kept.is_empty());
        if kept.len() + comma + member.len() > MAX_TRACE_STATE_BYTES {
            break;
        }
        if comma == 1 {
            kept.push(',');
        }
        kept.push_str(member);
    }
    kept
}

/// `s` cut to at most `max` bytes, at a character boundary (`str::floor_char_boundary` is
/// newer than the crate's `rust-version`).
pub fn truncated(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The `traceresponse` value for a context's span, if it has a valid one.
pub fn trace_response(cx: &Context) -> Option<String> {
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// Whether the current context belongs to a traced request whose trace is sampled: only
/// then is a child worth building. (Its span may have ended: a subscription's events are
/// children of the request that opened it, long answered.)
pub fn recording() -> bool {
    Context::map_current(|cx| cx.get::<Telemetry>().is_some() && sampled(cx))
}

fn sampled(cx: &Context) -> bool {
    cx.span().span_context().is_sampled()
}

/// A child of the current span, started now, in a context of its own; `None` (and
/// `attributes` never called) when the request is not traced or not sampled.
pub fn child(
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    attributes: impl FnOnce() -> Vec<KeyValue>,
) -> Option<Context> {
    // Looked at in place: an untraced request pays for no copy of its context.
    Context::map_current(|cx| {
        let telemetry = cx.get::<Telemetry>()?;
        if !sampled(cx) {
            return None;
        }
        let tracer = &telemetry.inner.tracer;
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(tracer, cx);
        Some(cx.with_span(span))
    })
}

/// Runs `fut` in `cx` (each poll sees it as the current context), or as it is.
pub async fn within<F: std::future::Future>(cx: Option<&Context>, fut: F) -> F::Output {
    match cx {
        Some(cx) => fut.with_context(cx.clone()).await,
        None => fut.await,
    }
}

/// Ends the span of `cx`, with `attributes` added and, when `error` names a failure
/// (its code), an error status.
pub fn end(cx: &Context, attributes: Vec<KeyValue>, error: Option<Cow<'static, str>>) {
    let span = cx.span();
    span.set_attributes(attributes);
    if let Some(code) = error {
        span.set_attribute(KeyValue::new("error.type", code.clone()));
        span.set_status(Status::error(code));
    }
    span.end();
}

/// Adds attributes to the current span, and renames it when `name` is given; nothing
/// (and `attributes` never called) when it is not recording.
pub fn annotate(name: Option<String>, attributes: impl FnOnce() -> Vec<KeyValue>) {
    Context::map_current(|cx| {
        if cx.get::<Telemetry>().is_none() || !cx.span().is_recording() {
            return;
        }
        let span = cx.span();
        if let Some(name) = name {
            span.update_name(name);
        }
        span.set_attributes(attributes());
    });
}

/// The current context, to carry into work that outlives the poll that started it (a
/// WebSocket's task, an event stream's body).
pub fn current() -> Context {
    Context::current()
}

/// Runs `fut` in `cx`, whatever polls it.
pub fn attach<F>(cx: Context, fut: F) -> opentelemetry::context::WithContext<F> {
    fut.with_context(cx)
}

/// The span of the event a subscription is resolving now: started by the subscription's
/// resolver when a change becomes an event ([`EventSlot::begin`]), ended by
/// [`per_event`] when that event's response leaves, so the reads that resolving it makes
/// are its children.
#[derive(Clone, Default)]
pub struct EventSlot(Arc<std::sync::Mutex<Option<Context>>>);

impl EventSlot {
    /// Starts the span of the event being resolved (nothing when not traced).
    pub fn begin(
        &self,
        name: impl Into<Cow<'static, str>>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) {
        if let Some(cx) = child(name, SpanKind::Internal, attributes) {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(cx);
        }
    }

    fn current(&self) -> Option<Context> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn take(&self) -> Option<Context> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A subscription's responses, each polled in the context of the event being resolved
/// (else in `base`, the context of the request that opened it); when a response leaves,
/// `finish` ends its event's span.
pub fn per_event<S>(
    base: Context,
    slot: EventSlot,
    inner: S,
    finish: impl Fn(&Context, &S::Item) + Send + 'static,
) -> impl futures::Stream<Item = S::Item> + Send
where
    S: futures::Stream + Send + 'static,
{
    let mut inner = Box::pin(inner);
    futures::stream::poll_fn(move |task| {
        let polled = {
            let _attached = slot.current().unwrap_or_else(|| base.clone()).attach();
            inner.as_mut().poll_next(task)
        };
        if let std::task::Poll::Ready(Some(item)) = &polled {
            if let Some(event) = slot.take() {
                finish(&event, item);
            }
        }
        polled
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_are_the_specifications() {
        let described = |s: SamplerSetting| format!("{:?}", s.sampler());
        assert_eq!(
            described(SamplerSetting::ParentBasedTraceIdRatio(0.01)),
            "ParentBased(TraceIdRatioBased(0.01))"
        );
        assert_eq!(described(SamplerSetting::AlwaysOff), "AlwaysOff");
    }

    #[test]
    fn a_tracestate_keeps_what_w3c_asks_to_propagate() {
        assert_eq!(bounded_trace_state("a=1, b=2"), "a=1,b=2");
        assert_eq!(bounded_trace_state(""), "");
        let header = std::iter::once("a=1".to_owned())
            .chain([format!("big={}", "x".repeat(200))])
            .chain((0..9).map(|i| format!("m{i}={}", "y".repeat(95))))
            .collect::<Vec<_>>()
            .join(",");
        let kept = bounded_trace_state(&header);
        assert!(kept.len() <= MAX_TRACE_STATE_BYTES);
        assert!(kept.starts_with("a=1,m0="), "{kept}");
        assert!(!kept.contains("big="));
        // 3 + 5 × 99 = 498: a sixth member of 98 would pass 512.
        assert_eq!(kept.split(',').count(), 6);
    }

    #[test]
    fn cut_at_a_character_boundary() {
        assert_eq!(truncated("héllo", 2), "h");
        assert_eq!(truncated("héllo", 3), "hé");
        assert_eq!(truncated("abc", 10), "abc");
        assert_eq!(truncated("abc", 0), "");
    }

    #[test]
    fn an_over_long_traceparent_is_not_read_and_tracestate_only_when_trusted() {
        use axum::http::{HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        headers.insert(TRACEPARENT_HEADER, HeaderValue::from_static(parent));
        headers.insert(TRACESTATE_HEADER, HeaderValue::from_static("a=1"));
        assert_eq!(
            Inbound::new(&headers, true).get(TRACEPARENT_HEADER),
            Some(parent)
        );
        assert_eq!(
            Inbound::new(&headers, true).get(TRACESTATE_HEADER),
            Some("a=1")
        );
        assert_eq!(Inbound::new(&headers, false).get(TRACESTATE_HEADER), None);
        let long = format!("{parent}-{}", "0".repeat(MAX_TRACEPARENT_BYTES));
        headers.insert(TRACEPARENT_HEADER, HeaderValue::try_from(long).unwrap());
        assert_eq!(Inbound::new(&headers, true).get(TRACEPARENT_HEADER), None);
    }

    #[test]
    fn outside_a_traced_request_nothing_is_built() {
        assert!(!recording());
        assert!(child("x", SpanKind::Internal, || unreachable!()).is_none());
    }
}
