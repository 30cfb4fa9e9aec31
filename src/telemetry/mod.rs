//! OpenTelemetry traces, exported over OTLP to the collector a team already runs (Jaeger,
//! Grafana Tempo, Honeycomb, AWS X-Ray through the ADOT collector).
//!
//! Off unless an OTLP endpoint is configured (`config::TelemetryArgs`); then every HTTP
//! request gets a server span that continues the caller's W3C `traceparent`, and below it:
//! - the GraphQL request (`graphql.operation.name`, `graphql.operation.type`, the
//!   document's hash, never the variables): [`crate::graphql::execute`], and one per event
//!   of a subscription;
//! - each DataLoader batch ([`crate::graphql::loaders`]) and each connection page
//!   (`crate::collections::page`);
//! - each DynamoDB call, with the database and AWS SDK conventions' attributes
//!   ([`crate::store::metered`]).
//!
//! The spans travel in OpenTelemetry's own [`Context`], attached to each future as it is
//! polled ([`within`]); the context also carries the [`Telemetry`] that made it, so code
//! deep in a request starts a child span ([`child`]) without being handed anything, and
//! does nothing at all (no attribute built) when the request is not traced or not
//! sampled. Spans leave through [`export::BoundedBatch`]: bounded, never blocking.

pub mod export;

use std::borrow::Cow;
use std::sync::Arc;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    FutureExt as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter as _};
use opentelemetry_sdk::Resource;

pub use export::{BatchSettings, ExportHandle};

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
            }),
        })
    }

    /// Exports every span ended so far; returns when that is done (or has failed).
    pub async fn flush(&self) {
        self.inner.export.flush().await;
    }

    /// Exports what is left and stops; spans ending later are dropped.
    pub async fn shutdown(&self) {
        self.inner.export.shutdown().await;
        let _ = self.inner.provider.shutdown();
    }

    /// Whether request spans name the caller's organization.
    pub fn records_organization(&self) -> bool {
        self.inner.record_organization
    }

    /// The context of an incoming HTTP request: a server span named `name`, continuing
    /// the trace of the caller's `traceparent` (and `tracestate`) when it sent a valid one.
    pub fn server_context(
        &self,
        name: String,
        headers: &axum::http::HeaderMap,
        attributes: Vec<KeyValue>,
    ) -> Context {
        let parent = self
            .inner
            .propagator
            .extract(&opentelemetry_http::HeaderExtractor(headers));
        let span = self
            .inner
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&self.inner.tracer, &parent);
        parent.with_span(span).with_value(self.clone())
    }
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
    fn outside_a_traced_request_nothing_is_built() {
        assert!(!recording());
        assert!(child("x", SpanKind::Internal, || unreachable!()).is_none());
    }
}
