//! Live updates on several replicas, on DynamoDB Local: the same subscriptions and writes
//! as the live updates run, spread over 1 replica (which reads the table's stream itself)
//! and over 4 sharing the change stream's relay through a Redis server the run starts
//! (`redis-server`, which `scripts/bench` installs). Measured beside each other: events
//! delivered per second against those expected, write-to-event p50/p99, and the calls to
//! DynamoDB Streams per second over all replicas, with how many replicas made them.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use itemgraph::store::dynamo::{DynamoOptions, DynamoStore};
use itemgraph::store::Store;

use crate::live::{open_on_server, spawn_subscriber, write_tickets, Tally, ORGS};
use crate::server::{Backend, Server};
use crate::stats::Percentiles;

#[derive(Debug, Clone, Serialize)]
pub struct ReplicasReport {
    pub replicas: usize,
    /// Whether the replicas shared the relay (else each read the stream).
    pub relay: bool,
    pub subscriptions: usize,
    pub writes: u64,
    pub write_seconds: f64,
    pub expected_events: u64,
    pub delivered_events: u64,
    pub events_per_second: f64,
    pub latency_ms: Percentiles,
    /// `GetRecords` calls a second over every replica, during the writes.
    pub get_records_per_second: f64,
    /// Replicas that called `GetRecords` during the writes.
    pub stream_readers: usize,
    pub errors: u64,
}

/// A Redis server of the run's own on a free loopback port, killed when dropped.
struct Redis {
    _child: tokio::process::Child,
    url: String,
}

async fn start_redis() -> anyhow::Result<Redis> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = tokio::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting redis-server (scripts/bench installs it)")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        anyhow::ensure!(Instant::now() < deadline, "redis-server did not listen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(Redis {
        _child: child,
        url: format!("redis://127.0.0.1:{port}"),
    })
}

/// `GetRecords` calls each server has made (`itemgraph_stream_calls_total`).
async fn get_records(client: &reqwest::Client, servers: &[Server]) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::new();
    for s in servers {
        let base = s.url.trim_end_matches("/graphql");
        let text = client
            .get(format!("{base}/metrics"))
            .send()
            .await?
            .text()
            .await?;
        out.push(
            text.lines()
                .filter(|l| {
                    l.starts_with("itemgraph_stream_calls_total") && l.contains("GetRecords")
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum(),
        );
    }
    Ok(out)
}

/// One run per replica count in `counts` (1 reads the stream itself; more share the relay).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    server_exe: &Path,
    work: &Path,
    endpoint: &str,
    counts: &[usize],
    subscriptions: usize,
    seconds: f64,
    writes_per_second: f64,
    secret: &str,
) -> anyhow::Result<Vec<ReplicasReport>> {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let mut reports = Vec::new();
    for &replicas in counts {
        let table = format!("bench-replicas-{replicas}-{}", std::process::id());
        let store = DynamoStore::connect(
            DynamoOptions {
                table: table.clone(),
                endpoint: Some(endpoint.to_owned()),
                region: Some("us-east-1".into()),
                operation_timeout: Duration::from_secs(120),
                operation_attempt_timeout: Duration::from_secs(60),
                stream: false,
                ..DynamoOptions::default()
            },
            itemgraph::chart::builtin().table_schema(),
        )
        .await;
        store.create_table().await?;
        itemgraph::chart::data::load(
            &store,
            &itemgraph::chart::builtin(),
            itemgraph::chart::data::builtin_demo(),
        )
        .await?;
        store.enable_stream().await?;
        let relay = if replicas > 1 {
            Some(start_redis().await?)
        } else {
            None
        };
        let mut servers = Vec::new();
        for i in 0..replicas {
            let per = (subscriptions / replicas + 256).to_string();
            let mut extra = vec!["--max-connections", &per, "--max-subscriptions", &per];
            if let Some(redis) = &relay {
                extra.extend(["--relay-url", redis.url.as_str()]);
            }
            servers.push(
                Server::start_with(
                    server_exe,
                    Backend::DynamoDb {
                        endpoint,
                        table: &table,
                    },
                    secret,
                    work.join(format!("replicas-{replicas}-{i}.log")),
                    &extra,
                )
                .await?,
            );
        }
        let client = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(0)
            .build()?;
        let origin = Instant::now();
        let tally = Arc::new(Tally::default());
        let mut tasks = Vec::with_capacity(subscriptions);
        for i in 0..subscriptions {
            let url = servers[i % replicas].url.clone();
            let org = ORGS[i % ORGS.len()];
            tasks.push(spawn_subscriber(
                client.clone(),
                url,
                org,
                origin,
                tally.clone(),
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let mut open = 0;
            for s in &servers {
                open += open_on_server(&client, s.url.trim_end_matches("/graphql")).await?;
            }
            if open >= subscriptions {
                break;
            }
            let failed = tally.errors.load(std::sync::atomic::Ordering::Relaxed);
            anyhow::ensure!(
                failed == 0,
                "{failed} of {subscriptions} subscriptions could not be opened: {}",
                tally.why.lock().unwrap().clone().unwrap_or_default()
            );
            anyhow::ensure!(
                Instant::now() < deadline,
                "{open} of {subscriptions} subscriptions open after 2 minutes"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let calls_before = get_records(&client, &servers).await?;
        let started = Instant::now();
        let (writes, expected) = write_tickets(
            &client,
            &servers[0].url,
            origin,
            seconds,
            writes_per_second,
            subscriptions,
        )
        .await?;
        let write_seconds = started.elapsed().as_secs_f64();
        let calls_after = get_records(&client, &servers).await?;
        tally.settle(expected).await;
        let delivered = tally.delivered.load(Ordering::Relaxed);
        tally.stopping.store(true, Ordering::Relaxed);
        for s in servers {
            s.stop().await?;
        }
        for t in tasks {
            let _ = t.await;
        }
        let made: Vec<f64> = calls_after
            .iter()
            .zip(&calls_before)
            .map(|(a, b)| a - b)
            .collect();
        let mut samples = std::mem::take(&mut *tally.samples.lock().unwrap());
        let report = ReplicasReport {
            replicas,
            relay: relay.is_some(),
            subscriptions,
            writes,
            write_seconds,
            expected_events: expected,
            delivered_events: delivered,
            events_per_second: delivered as f64 / write_seconds,
            latency_ms: Percentiles::of(&mut samples),
            get_records_per_second: made.iter().sum::<f64>() / write_seconds,
            stream_readers: made.iter().filter(|c| **c > 0.0).count(),
            errors: tally.errors.load(Ordering::Relaxed),
        };
        eprintln!(
            "  {replicas} replica(s){}: {:.0} events/s of {} expected, p50 {:.1} ms, p99 {:.1} ms, {:.1} GetRecords/s from {} reader(s)",
            if report.relay { " with the relay" } else { "" },
            report.events_per_second,
            report.expected_events,
            report.latency_ms.p50,
            report.latency_ms.p99,
            report.get_records_per_second,
            report.stream_readers
        );
        reports.push(report);
        drop(relay);
        let _ = store.delete_table().await;
    }
    Ok(reports)
}
