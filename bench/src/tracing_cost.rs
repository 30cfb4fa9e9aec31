//! What OpenTelemetry tracing costs, on the embedded engine: the full mix at the highest
//! concurrency on one server each with tracing off, on with 1 % of traces sampled, and on
//! with every trace (each twice: in that order, then the reverse), the two last exporting over OTLP/HTTP to a receiver in this process
//! (it reads each export whole and answers 200, as a collector does, without decoding).
//! The runs alternate in that order on the same data file; each reports its throughput,
//! latency and server CPU per operation, and the spans the server counted exported and
//! dropped (`itemgraph_trace_spans_total`).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

use crate::dataset::Seeding;
use crate::driver::{self, Target, Window};
use crate::server::{Backend, Server};
use crate::shapes::Mix;
use crate::stats::RunStats;

#[derive(Debug, Serialize)]
pub struct TracingRun {
    /// `off`, `1%`, `100%`.
    pub sampling: String,
    pub concurrency: usize,
    pub stats: RunStats,
    pub server_cpu_ms_per_op: f64,
    pub spans_exported: f64,
    pub spans_dropped: f64,
    /// Export requests the receiver took, and their bytes.
    pub otlp_posts: u64,
    pub otlp_bytes: u64,
}

#[derive(Default)]
struct Received {
    posts: AtomicU64,
    bytes: AtomicU64,
}

/// An OTLP/HTTP receiver on loopback; its traces URL.
async fn receiver(received: Arc<Received>) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1/traces", listener.local_addr()?);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let received = received.clone();
            async move {
                received.posts.fetch_add(1, Ordering::Relaxed);
                received
                    .bytes
                    .fetch_add(body.len() as u64, Ordering::Relaxed);
                // An empty ExportTraceServiceResponse.
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(url)
}

/// `itemgraph_trace_spans_total` by outcome, exported and dropped.
async fn spans(client: &reqwest::Client, graphql_url: &str) -> (f64, f64) {
    let base = graphql_url.trim_end_matches("/graphql");
    let Ok(text) = async {
        client
            .get(format!("{base}/metrics"))
            .send()
            .await?
            .text()
            .await
    }
    .await
    else {
        return (0.0, 0.0);
    };
    let mut exported = 0.0;
    let mut dropped = 0.0;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("itemgraph_trace_spans_total{outcome=\"") else {
            continue;
        };
        let Some((outcome, value)) = rest.split_once("\"}") else {
            continue;
        };
        let value: f64 = value.trim().parse().unwrap_or(0.0);
        if outcome == "exported" {
            exported += value;
        } else {
            dropped += value;
        }
    }
    (exported, dropped)
}

#[allow(clippy::too_many_arguments)]
pub async fn run(
    exe: &Path,
    data: &Path,
    log_dir: &Path,
    target: &Target,
    concurrency: usize,
    window: Window,
    seed: u64,
    cursor_secret: &str,
) -> anyhow::Result<Vec<TracingRun>> {
    // A data file of its own, seeded with the data set.
    let _ = std::fs::remove_file(data);
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(
        data,
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
    )?);
    target
        .dataset
        .seed(store.clone(), Seeding::Transactions)
        .await?;
    drop(store);
    let received = Arc::new(Received::default());
    let url = receiver(received.clone()).await?;
    // Exported at least every second (the default is 5 s; under load a batch fills long
    // before either), so the run's last spans are counted a moment after it.
    let on = [
        "--otlp-traces-endpoint",
        &url,
        "--otel-bsp-schedule-delay",
        "1000",
    ];
    let off: Vec<&str> = Vec::new();
    let one = [&on[..], &["--otel-traces-sampler-arg", "0.01"]].concat();
    let all = on.to_vec();
    // Each setting twice, in an order and its reverse, so a drift over the runs (a cache
    // warming, the data growing) falls on every setting alike.
    let settings = [
        ("off", &off),
        ("1%", &one),
        ("100%", &all),
        ("100%", &all),
        ("1%", &one),
        ("off", &off),
    ];
    let mut runs = Vec::new();
    for (i, (sampling, extra)) in settings.into_iter().enumerate() {
        let log = log_dir.join(format!(
            "server-tracing-{i}-{}.log",
            sampling.replace('%', "pct")
        ));
        let server =
            Server::start_with(exe, Backend::Embedded { data }, cursor_secret, log, extra).await?;
        let target = Arc::new(Target {
            client: target.client.clone(),
            url: server.url.clone(),
            dataset: target.dataset.clone(),
            deep_cursors: target.deep_cursors.clone(),
        });
        let posts = received.posts.load(Ordering::Relaxed);
        let bytes = received.bytes.load(Ordering::Relaxed);
        let cpu = server.cpu_time().unwrap_or_default();
        let stats = driver::run(target.clone(), Mix::Full, concurrency, window, seed).await?;
        let cpu = server.cpu_time().unwrap_or_default().saturating_sub(cpu);
        let measured_share = stats.seconds / (window.warmup.as_secs_f64() + stats.seconds);
        if sampling != "off" {
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
        let (spans_exported, spans_dropped) = spans(&target.client, &server.url).await;
        eprintln!(
            "  full mix, concurrency {concurrency}, tracing {sampling}: {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms, {} errors; {spans_exported:.0} spans exported, {spans_dropped:.0} dropped",
            stats.ops_per_sec, stats.latency_ms.p50, stats.latency_ms.p99, stats.errors
        );
        runs.push(TracingRun {
            sampling: sampling.to_owned(),
            concurrency,
            server_cpu_ms_per_op: cpu.as_secs_f64() * 1000.0 * measured_share
                / stats.ops.max(1) as f64,
            stats,
            spans_exported,
            spans_dropped,
            otlp_posts: received.posts.load(Ordering::Relaxed) - posts,
            otlp_bytes: received.bytes.load(Ordering::Relaxed) - bytes,
        });
        server.stop().await?;
    }
    let _ = std::fs::remove_file(data);
    Ok(runs)
}
