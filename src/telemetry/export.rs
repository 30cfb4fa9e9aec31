//! The span processor between the tracer and the OTLP exporter: every span that ends
//! sampled goes into a queue bounded twice, in spans (`OTEL_BSP_MAX_QUEUE_SIZE`) and in
//! bytes (`--otel-bsp-max-queue-bytes`: names, attributes and trace state, each cut to a
//! bounded length first), and one task exports the queue in batches (`OTEL_BSP_*`). A
//! collector that is down or slow never slows a request nor grows the server: the request
//! path only tries to enqueue, a full queue drops the span at once, every span is counted
//! by what became of it ([`crate::metrics::TRACE_SPANS`]), and a stop waits for the last
//! export no longer than `--otel-shutdown-timeout`.
//!
//! Written here rather than taken from `opentelemetry_sdk`: its `BatchSpanProcessor`
//! drops spans as this one does but keeps the count to itself (a log line at shutdown),
//! and the issue of a dropped span must reach the metrics an operator watches; it also
//! bounds its queue in spans only, whatever each one carries.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::{SpanContext, TraceState};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{truncated, MAX_TRACE_STATE_BYTES};
use crate::metrics::record_trace_spans;

/// Longest span name exported; a longer one is cut at a character boundary.
pub const MAX_SPAN_NAME_BYTES: usize = 256;
/// Longest string attribute value exported (each string of an array too); cut likewise.
pub const MAX_ATTRIBUTE_VALUE_BYTES: usize = 1024;
/// Longest a stop is ever given, whatever it is asked (an `Instant` plus a huge
/// `Duration` would overflow).
const LONGEST_STOP: Duration = Duration::from_secs(600);

/// The batch span processor's settings, as `OTEL_BSP_*` names them, and the server's own
/// bounds in bytes and on a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSettings {
    /// Spans held waiting for export at most (`OTEL_BSP_MAX_QUEUE_SIZE`); more are dropped.
    pub max_queue_size: usize,
    /// Bytes of spans (an estimate: names, attributes, trace state, an allowance per span)
    /// held waiting for export or being exported at most (`--otel-bsp-max-queue-bytes`); a
    /// span that would pass it is dropped.
    pub max_queue_bytes: usize,
    /// Longest wait from a span's end to its export (`OTEL_BSP_SCHEDULE_DELAY`).
    pub schedule_delay: Duration,
    /// Most spans in one export (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub max_export_batch_size: usize,
    /// Longest one export may take before its spans count as lost
    /// (`OTEL_BSP_EXPORT_TIMEOUT`).
    pub export_timeout: Duration,
    /// Longest a stop waits for the last spans' export (`--otel-shutdown-timeout`); what
    /// is not exported by then is dropped.
    pub shutdown_timeout: Duration,
}

impl BatchSettings {
    /// The OpenTelemetry specification's defaults, and the server's own for the two bounds
    /// the specification does not name.
    pub const DEFAULT: BatchSettings = BatchSettings {
        max_queue_size: 2048,
        max_queue_bytes: 8 * 1024 * 1024,
        schedule_delay: Duration::from_millis(5000),
        max_export_batch_size: 512,
        export_timeout: Duration::from_millis(30_000),
        shutdown_timeout: Duration::from_millis(5000),
    };
}

enum Control {
    /// Export everything queued now, then answer.
    Flush(oneshot::Sender<()>),
    /// Export everything queued until the deadline, drop the rest, answer, and stop.
    Shutdown(oneshot::Sender<()>, Instant),
}

/// A span waiting for export, with its weight (released once its export is over).
struct Queued {
    span: SpanData,
    weight: usize,
}

/// The processor the tracer provider holds; its task runs on the runtime it was made on.
#[derive(Debug)]
pub struct BoundedBatch {
    spans: mpsc::Sender<Queued>,
    control: mpsc::Sender<Control>,
    stopped: Arc<AtomicBool>,
    /// The weight of the spans queued, batched or being exported.
    held: Arc<AtomicUsize>,
    max_bytes: usize,
}

/// What flushes and stops the exporting task from outside the tracer provider.
#[derive(Debug, Clone)]
pub struct ExportHandle {
    control: mpsc::Sender<Control>,
    stopped: Arc<AtomicBool>,
    shutdown_timeout: Duration,
}

impl BoundedBatch {
    /// The processor, and the task (spawned on the current runtime) that exports for it.
    pub fn start<E: SpanExporter + 'static>(
        exporter: E,
        settings: BatchSettings,
    ) -> (BoundedBatch, ExportHandle) {
        let (spans, queue) = mpsc::channel(settings.max_queue_size.max(1));
        let (control, orders) = mpsc::channel(4);
        let stopped = Arc::new(AtomicBool::new(false));
        let held = Arc::new(AtomicUsize::new(0));
        tokio::spawn(export_loop(exporter, settings, queue, orders, held.clone()));
        let handle = ExportHandle {
            control: control.clone(),
            stopped: stopped.clone(),
            shutdown_timeout: settings.shutdown_timeout,
        };
        (
            BoundedBatch {
                spans,
                control,
                stopped,
                held,
                max_bytes: settings.max_queue_bytes,
            },
            handle,
        )
    }
}

impl ExportHandle {
    /// Exports every span ended so far; returns when that export is done (or failed).
    pub async fn flush(&self) {
        self.order(Control::Flush).await;
    }

    /// Exports every span ended so far, for `--otel-shutdown-timeout` at most, and stops:
    /// spans ending later are dropped (counted as `shutdown`), and so is what the deadline
    /// leaves. Returns by the deadline even if the task is still inside an export begun
    /// before the stop (that one is bounded only by `OTEL_BSP_EXPORT_TIMEOUT`).
    pub async fn shutdown(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let deadline = Instant::now() + self.shutdown_timeout.min(LONGEST_STOP);
        let _ = tokio::time::timeout_at(
            deadline,
            self.order(move |done| Control::Shutdown(done, deadline)),
        )
        .await;
    }

    async fn order(&self, order: impl FnOnce(oneshot::Sender<()>) -> Control) {
        let (done, finished) = oneshot::channel();
        if self.control.send(order(done)).await.is_ok() {
            let _ = finished.await;
        }
    }
}

impl SpanProcessor for BoundedBatch {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, mut span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.stopped.load(Ordering::Relaxed) {
            record_trace_spans("shutdown", 1);
            return;
        }
        bound_strings(&mut span);
        let weight = weight(&span);
        // Reserved before it is queued, released when its export is over: the bytes held
        // never pass the bound (under contention a span may be refused a little early).
        if self.held.fetch_add(weight, Ordering::Relaxed) + weight > self.max_bytes {
            self.held.fetch_sub(weight, Ordering::Relaxed);
            record_trace_spans("queue_full", 1);
            return;
        }
        match self.spans.try_send(Queued { span, weight }) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(queued)) => {
                self.held.fetch_sub(queued.weight, Ordering::Relaxed);
                record_trace_spans("queue_full", 1);
            }
            Err(mpsc::error::TrySendError::Closed(queued)) => {
                self.held.fetch_sub(queued.weight, Ordering::Relaxed);
                record_trace_spans("shutdown", 1);
            }
        }
    }

    /// Asks for an export of what is queued without waiting for it (this is called from
    /// synchronous code; [`ExportHandle::flush`] waits).
    fn force_flush(&self) -> OTelSdkResult {
        let (done, _) = oneshot::channel();
        let _ = self.control.try_send(Control::Flush(done));
        Ok(())
    }

    /// Stops taking spans and asks the task to export what it holds within `timeout`; the
    /// server's own shutdown waits for that through [`ExportHandle::shutdown`].
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            let (done, _) = oneshot::channel();
            let deadline = Instant::now() + timeout.min(LONGEST_STOP);
            let _ = self.control.try_send(Control::Shutdown(done, deadline));
        }
        Ok(())
    }
}

/// Cuts the span's name and string values (its events' and links' too) to their bounds.
fn bound_strings(span: &mut SpanData) {
    fn cut(s: &mut StringValue) {
        if s.as_str().len() > MAX_ATTRIBUTE_VALUE_BYTES {
            *s = truncated(s.as_str(), MAX_ATTRIBUTE_VALUE_BYTES)
                .to_owned()
                .into();
        }
    }
    fn bound(attributes: &mut [KeyValue]) {
        for kv in attributes {
            match &mut kv.value {
                Value::String(s) => cut(s),
                Value::Array(Array::String(values)) => values.iter_mut().for_each(cut),
                _ => {}
            }
        }
    }
    if span.name.len() > MAX_SPAN_NAME_BYTES {
        span.name = truncated(&span.name, MAX_SPAN_NAME_BYTES).to_owned().into();
    }
    bound(&mut span.attributes);
    for event in &mut span.events.events {
        if event.name.len() > MAX_SPAN_NAME_BYTES {
            event.name = truncated(&event.name, MAX_SPAN_NAME_BYTES)
                .to_owned()
                .into();
        }
        bound(&mut event.attributes);
    }
    for link in &mut span.links.links {
        bound(&mut link.attributes);
    }
}

/// What a span weighs against `--otel-bsp-max-queue-bytes`: its strings, its trace state
/// (at its bound, [`MAX_TRACE_STATE_BYTES`], rather than built to be measured), and an
/// allowance per span and per entry for ids, times, numbers and the encoding's framing.
/// An estimate, not the encoded size; it grows with everything a caller can make large.
fn weight(span: &SpanData) -> usize {
    const SPAN: usize = 128;
    const ENTRY: usize = 16;
    fn value(v: &Value) -> usize {
        match v {
            Value::String(s) => s.as_str().len(),
            Value::Array(Array::String(a)) => a.iter().map(|s| ENTRY + s.as_str().len()).sum(),
            Value::Array(Array::Bool(a)) => a.len(),
            Value::Array(Array::I64(a)) => 8 * a.len(),
            Value::Array(Array::F64(a)) => 8 * a.len(),
            _ => 8,
        }
    }
    fn attributes(kvs: &[KeyValue]) -> usize {
        kvs.iter()
            .map(|kv| ENTRY + kv.key.as_str().len() + value(&kv.value))
            .sum()
    }
    fn trace_state(sc: &SpanContext) -> usize {
        if *sc.trace_state() == TraceState::NONE {
            0
        } else {
            MAX_TRACE_STATE_BYTES
        }
    }
    let events: usize = span
        .events
        .iter()
        .map(|e| ENTRY + e.name.len() + attributes(&e.attributes))
        .sum();
    let links: usize = span
        .links
        .iter()
        .map(|l| ENTRY + trace_state(&l.span_context) + attributes(&l.attributes))
        .sum();
    SPAN + span.name.len()
        + trace_state(&span.span_context)
        + attributes(&span.attributes)
        + events
        + links
}

async fn export_loop<E: SpanExporter>(
    exporter: E,
    settings: BatchSettings,
    mut queue: mpsc::Receiver<Queued>,
    mut orders: mpsc::Receiver<Control>,
    held: Arc<AtomicUsize>,
) {
    let exporter = Exporter {
        inner: exporter,
        settings,
        failing: AtomicBool::new(false),
        held,
    };
    let max = settings.max_export_batch_size.max(1);
    let mut batch = Vec::with_capacity(max);
    loop {
        // The first span of a batch, or an order.
        tokio::select! {
            got = queue.recv_many(&mut batch, max) => if got == 0 { return },
            order = orders.recv() => {
                let Some(order) = order else { return };
                if drain(&exporter, &mut queue, &mut batch, order).await {
                    return;
                }
                continue;
            }
        }
        // The rest of it: until it is full or the schedule delay has passed.
        let deadline = Instant::now() + settings.schedule_delay;
        while batch.len() < max {
            let room = max - batch.len();
            tokio::select! {
                got = queue.recv_many(&mut batch, room) => if got == 0 { break },
                () = tokio::time::sleep_until(deadline) => break,
                order = orders.recv() => {
                    let Some(order) = order else { break };
                    if drain(&exporter, &mut queue, &mut batch, order).await {
                        return;
                    }
                }
            }
        }
        exporter.export(std::mem::take(&mut batch), None).await;
    }
}

/// Exports `batch` and everything queued, in batches (before a stop's deadline, past which
/// they are dropped); answers the order. Whether to stop.
async fn drain<E: SpanExporter>(
    exporter: &Exporter<E>,
    queue: &mut mpsc::Receiver<Queued>,
    batch: &mut Vec<Queued>,
    order: Control,
) -> bool {
    let deadline = match &order {
        Control::Flush(_) => None,
        Control::Shutdown(_, at) => Some(*at),
    };
    let max = exporter.settings.max_export_batch_size.max(1);
    while let Ok(span) = queue.try_recv() {
        batch.push(span);
        if batch.len() >= max {
            exporter.export(std::mem::take(batch), deadline).await;
        }
    }
    if !batch.is_empty() {
        exporter.export(std::mem::take(batch), deadline).await;
    }
    match order {
        Control::Flush(done) => {
            let _ = done.send(());
            false
        }
        Control::Shutdown(done, _) => {
            let _ = exporter.inner.shutdown();
            let _ = done.send(());
            true
        }
    }
}

/// The exporter, with whether its last export failed: the log says when exports start
/// failing and when they recover, once each, rather than once per batch.
struct Exporter<E> {
    inner: E,
    settings: BatchSettings,
    failing: AtomicBool,
    /// The processor's count of bytes held: a batch's weight is released once its export
    /// is over.
    held: Arc<AtomicUsize>,
}

impl<E: SpanExporter> Exporter<E> {
    /// Exports `batch` within `OTEL_BSP_EXPORT_TIMEOUT`, and before `deadline` (a stop's)
    /// when given: past it the batch is dropped unsent, counted as `shutdown`. The batch's
    /// weight is released either way.
    async fn export(&self, batch: Vec<Queued>, deadline: Option<Instant>) {
        let n = batch.len();
        if n == 0 {
            return;
        }
        let weight: usize = batch.iter().map(|q| q.weight).sum();
        let spans: Vec<SpanData> = batch.into_iter().map(|q| q.span).collect();
        let timeout = match deadline {
            Some(at) => self
                .settings
                .export_timeout
                .min(at.saturating_duration_since(Instant::now())),
            None => self.settings.export_timeout,
        };
        if timeout.is_zero() {
            self.held.fetch_sub(weight, Ordering::Relaxed);
            record_trace_spans("shutdown", n);
            return;
        }
        let failure = match tokio::time::timeout(timeout, self.inner.export(spans)).await {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error.to_string()),
            Err(_) if timeout < self.settings.export_timeout => Some(format!(
                "no answer before the stop's deadline ({:?}, ITEMGRAPH_OTEL_SHUTDOWN_TIMEOUT)",
                self.settings.shutdown_timeout
            )),
            Err(_) => Some(format!(
                "no answer within {:?} (OTEL_BSP_EXPORT_TIMEOUT)",
                self.settings.export_timeout
            )),
        };
        self.held.fetch_sub(weight, Ordering::Relaxed);
        match failure {
            None => {
                record_trace_spans("exported", n);
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("OTLP exports succeed again");
                }
            }
            Some(error) => {
                record_trace_spans("export_failed", n);
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        %error,
                        "OTLP export failed: spans are dropped (counted in \
                         itemgraph_trace_spans_total) until the collector answers"
                    );
                } else {
                    tracing::debug!(%error, spans = n, "OTLP export failed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
    use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
    use std::sync::Mutex;

    /// An exporter that keeps what it is given, or never answers.
    #[derive(Debug, Clone, Default)]
    struct Kept {
        spans: Arc<Mutex<Vec<SpanData>>>,
        hung: bool,
    }

    impl SpanExporter for Kept {
        fn export(
            &self,
            batch: Vec<SpanData>,
        ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            let hung = self.hung;
            if !hung {
                self.spans.lock().unwrap().extend(batch);
            }
            async move {
                if hung {
                    std::future::pending::<()>().await;
                }
                Ok(())
            }
        }
    }

    /// Nothing leaves until flushed; 20 000 bytes held at most.
    const HELD: BatchSettings = BatchSettings {
        max_queue_size: 1000,
        max_export_batch_size: 1000,
        max_queue_bytes: 20_000,
        schedule_delay: Duration::from_secs(3600),
        ..BatchSettings::DEFAULT
    };

    fn traced(exporter: Kept, settings: BatchSettings) -> (SdkTracerProvider, ExportHandle) {
        let (processor, handle) = BoundedBatch::start(exporter, settings);
        let provider = SdkTracerProvider::builder()
            .with_sampler(Sampler::AlwaysOn)
            .with_span_processor(processor)
            .build();
        (provider, handle)
    }

    fn end(provider: &SdkTracerProvider, name: String, attributes: Vec<KeyValue>) {
        let tracer = provider.tracer("test");
        tracer
            .span_builder(name)
            .with_attributes(attributes)
            .start(&tracer)
            .end();
    }

    /// Four values of 1 000 bytes: about 4 200 bytes with the name and the allowances.
    fn four_kb() -> Vec<KeyValue> {
        (0..4)
            .map(|i| KeyValue::new(format!("v{i}"), "x".repeat(1000)))
            .collect()
    }

    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes_and_frees_them_once_exported() {
        let kept = Kept::default();
        let (provider, handle) = traced(kept.clone(), HELD);
        // Four fit in 20 000 bytes, the rest are dropped, though the queue has room for
        // 1 000 spans.
        for _ in 0..10 {
            end(&provider, "s".into(), four_kb());
        }
        handle.flush().await;
        assert_eq!(kept.spans.lock().unwrap().len(), 4);
        // Exported, their bytes are free again.
        for _ in 0..4 {
            end(&provider, "s".into(), four_kb());
        }
        handle.flush().await;
        assert_eq!(kept.spans.lock().unwrap().len(), 8);
    }

    #[tokio::test]
    async fn names_and_values_are_cut_at_a_character_boundary() {
        let kept = Kept::default();
        let (provider, handle) = traced(kept.clone(), HELD);
        end(
            &provider,
            "n".repeat(10_000),
            vec![
                KeyValue::new("v", "é".repeat(10_000)),
                KeyValue::new(
                    "a",
                    Value::Array(Array::String(vec!["z".repeat(5000).into()])),
                ),
            ],
        );
        handle.flush().await;
        let spans = kept.spans.lock().unwrap();
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].name.len(), MAX_SPAN_NAME_BYTES);
        let Value::String(v) = &spans[0].attributes[0].value else {
            panic!("{:?}", spans[0].attributes)
        };
        assert_eq!(v.as_str().len(), MAX_ATTRIBUTE_VALUE_BYTES);
        let Value::Array(Array::String(a)) = &spans[0].attributes[1].value else {
            panic!("{:?}", spans[0].attributes)
        };
        assert_eq!(a[0].as_str().len(), MAX_ATTRIBUTE_VALUE_BYTES);
    }

    #[tokio::test]
    async fn a_stop_gives_a_hung_exporter_its_timeout_and_no_more() {
        let hung = Kept {
            hung: true,
            ..Kept::default()
        };
        let settings = BatchSettings {
            max_export_batch_size: 1,
            max_queue_size: 10,
            shutdown_timeout: Duration::from_millis(200),
            ..HELD
        };
        let (provider, handle) = traced(hung, settings);
        for i in 0..5 {
            end(&provider, format!("s{i}"), Vec::new());
        }
        // The task takes the first span into an export that never ends.
        tokio::task::yield_now().await;
        let started = std::time::Instant::now();
        handle.shutdown().await;
        // Without the deadline: 5 × OTEL_BSP_EXPORT_TIMEOUT (30 s).
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}
