//! The span processor between the tracer and the OTLP exporter: every span that ends
//! sampled goes into a bounded queue, and one task exports the queue in batches
//! (`OTEL_BSP_*`). A collector that is down or slow never slows a request nor grows the
//! server: the request path only tries to enqueue, a full queue drops the span at once,
//! and every span is counted by what became of it ([`crate::metrics::TRACE_SPANS`]).
//!
//! Written here rather than taken from `opentelemetry_sdk`: its `BatchSpanProcessor`
//! drops spans as this one does but keeps the count to itself (a log line at shutdown),
//! and the issue of a dropped span must reach the metrics an operator watches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::{mpsc, oneshot};

use crate::metrics::record_trace_spans;

/// The batch span processor's settings, as `OTEL_BSP_*` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSettings {
    /// Spans held waiting for export at most (`OTEL_BSP_MAX_QUEUE_SIZE`); more are dropped.
    pub max_queue_size: usize,
    /// Longest wait from a span's end to its export (`OTEL_BSP_SCHEDULE_DELAY`).
    pub schedule_delay: Duration,
    /// Most spans in one export (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub max_export_batch_size: usize,
    /// Longest one export may take before its spans count as lost
    /// (`OTEL_BSP_EXPORT_TIMEOUT`).
    pub export_timeout: Duration,
}

impl BatchSettings {
    /// The OpenTelemetry specification's defaults.
    pub const DEFAULT: BatchSettings = BatchSettings {
        max_queue_size: 2048,
        schedule_delay: Duration::from_millis(5000),
        max_export_batch_size: 512,
        export_timeout: Duration::from_millis(30_000),
    };
}

enum Control {
    /// Export everything queued now, then answer.
    Flush(oneshot::Sender<()>),
    /// Export everything queued now, answer, and stop.
    Shutdown(oneshot::Sender<()>),
}

/// The processor the tracer provider holds; its task runs on the runtime it was made on.
#[derive(Debug)]
pub struct BoundedBatch {
    spans: mpsc::Sender<SpanData>,
    control: mpsc::Sender<Control>,
    stopped: Arc<AtomicBool>,
}

/// What flushes and stops the exporting task from outside the tracer provider.
#[derive(Debug, Clone)]
pub struct ExportHandle {
    control: mpsc::Sender<Control>,
    stopped: Arc<AtomicBool>,
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
        tokio::spawn(export_loop(exporter, settings, queue, orders));
        let handle = ExportHandle {
            control: control.clone(),
            stopped: stopped.clone(),
        };
        (
            BoundedBatch {
                spans,
                control,
                stopped,
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

    /// Exports every span ended so far and stops: spans ending later are dropped (and
    /// counted as `shutdown`).
    pub async fn shutdown(&self) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            self.order(Control::Shutdown).await;
        }
    }

    async fn order(&self, order: fn(oneshot::Sender<()>) -> Control) {
        let (done, finished) = oneshot::channel();
        if self.control.send(order(done)).await.is_ok() {
            let _ = finished.await;
        }
    }
}

impl SpanProcessor for BoundedBatch {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.stopped.load(Ordering::Relaxed) {
            record_trace_spans("shutdown", 1);
            return;
        }
        match self.spans.try_send(span) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => record_trace_spans("queue_full", 1),
            Err(mpsc::error::TrySendError::Closed(_)) => record_trace_spans("shutdown", 1),
        }
    }

    /// Asks for an export of what is queued without waiting for it (this is called from
    /// synchronous code; [`ExportHandle::flush`] waits).
    fn force_flush(&self) -> OTelSdkResult {
        let (done, _) = oneshot::channel();
        let _ = self.control.try_send(Control::Flush(done));
        Ok(())
    }

    /// Stops taking spans and asks the task to export what it holds; the server's own
    /// shutdown waits for that through [`ExportHandle::shutdown`].
    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            let (done, _) = oneshot::channel();
            let _ = self.control.try_send(Control::Shutdown(done));
        }
        Ok(())
    }
}

async fn export_loop<E: SpanExporter>(
    exporter: E,
    settings: BatchSettings,
    mut queue: mpsc::Receiver<SpanData>,
    mut orders: mpsc::Receiver<Control>,
) {
    let exporter = Exporter {
        inner: exporter,
        settings,
        failing: AtomicBool::new(false),
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
        let deadline = tokio::time::Instant::now() + settings.schedule_delay;
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
        exporter.export(std::mem::take(&mut batch)).await;
    }
}

/// Exports `batch` and everything queued, in batches; answers the order. Whether to stop.
async fn drain<E: SpanExporter>(
    exporter: &Exporter<E>,
    queue: &mut mpsc::Receiver<SpanData>,
    batch: &mut Vec<SpanData>,
    order: Control,
) -> bool {
    let max = exporter.settings.max_export_batch_size.max(1);
    while let Ok(span) = queue.try_recv() {
        batch.push(span);
        if batch.len() >= max {
            exporter.export(std::mem::take(batch)).await;
        }
    }
    if !batch.is_empty() {
        exporter.export(std::mem::take(batch)).await;
    }
    match order {
        Control::Flush(done) => {
            let _ = done.send(());
            false
        }
        Control::Shutdown(done) => {
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
}

impl<E: SpanExporter> Exporter<E> {
    async fn export(&self, batch: Vec<SpanData>) {
        let n = batch.len();
        if n == 0 {
            return;
        }
        let failure = match tokio::time::timeout(
            self.settings.export_timeout,
            self.inner.export(batch),
        )
        .await
        {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error.to_string()),
            Err(_) => Some(format!(
                "no answer within {:?} (OTEL_BSP_EXPORT_TIMEOUT)",
                self.settings.export_timeout
            )),
        };
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
