//! Live updates under load, on the embedded engine: `--subscriptions` subscriptions held
//! open on one server (Server-Sent Events, one connection each, spread over the demo's
//! organizations) while a writer creates tickets at a steady rate. Measured: how long the
//! subscriptions took to open, the events delivered per second against those expected,
//! the time from sending a write to receiving its event (the ticket's title carries the
//! send time), and the server's resident memory before and with the subscriptions.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

use crate::server::{Backend, Server};
use crate::stats::Percentiles;

/// The organizations of the demo data the subscriptions and writes spread over.
pub const ORGS: [&str; 3] = ["acme", "globex", "initech"];

#[derive(Debug, Clone, Serialize)]
pub struct LiveReport {
    pub subscriptions: usize,
    /// From the first subscription sent to the server reporting all of them open.
    pub open_seconds: f64,
    pub writes: u64,
    pub write_seconds: f64,
    /// Events the writes should produce: each write, once per subscription of its
    /// organization.
    pub expected_events: u64,
    pub delivered_events: u64,
    pub events_per_second: f64,
    /// From sending the write to receiving its event, over every delivery.
    pub latency_ms: Percentiles,
    pub rss_before_mib: f64,
    pub rss_with_subscriptions_mib: f64,
    pub peak_rss_mib: f64,
    /// Subscriptions that ended or failed before the end.
    pub errors: u64,
}

fn micros_now(origin: Instant) -> u64 {
    origin.elapsed().as_micros() as u64
}

/// Open subscriptions the server reports (`itemgraph_subscriptions_open`).
pub async fn open_on_server(client: &reqwest::Client, base: &str) -> anyhow::Result<usize> {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("itemgraph_subscriptions_open "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(0.0) as usize)
}

pub async fn run(
    server_exe: &Path,
    work: &Path,
    subscriptions: usize,
    seconds: f64,
    writes_per_second: f64,
    secret: &str,
) -> anyhow::Result<LiveReport> {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let file = work.join("live.redb");
    let _ = std::fs::remove_file(&file);
    {
        let store = EmbeddedStore::open(
            &file,
            "itemgraph",
            itemgraph::chart::builtin().table_schema(),
        )?;
        store.create_table().await?;
        itemgraph::chart::data::load(
            &store,
            &itemgraph::chart::builtin(),
            itemgraph::chart::data::builtin_demo(),
        )
        .await?;
    }
    let server = Server::start_with(
        server_exe,
        Backend::Embedded { data: &file },
        secret,
        work.join("live-server.log"),
        &[
            "--max-connections",
            &(subscriptions + 256).to_string(),
            "--max-subscriptions",
            &(subscriptions + 16).to_string(),
        ],
    )
    .await?;
    let url = server.url.clone();
    let base = url.trim_end_matches("/graphql").to_owned();
    let (rss_before, _) = server.memory_kib()?;
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(0)
        .build()?;

    let origin = Instant::now();
    let tally = Arc::new(Tally::default());
    let opened = Instant::now();
    let mut tasks = Vec::with_capacity(subscriptions);
    for i in 0..subscriptions {
        let org = ORGS[i % ORGS.len()];
        tasks.push(spawn_subscriber(
            client.clone(),
            url.clone(),
            org,
            origin,
            tally.clone(),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while open_on_server(&client, &base).await? < subscriptions {
        // A subscription that could not be opened never will be: said at once, with why.
        let failed = tally.errors.load(Ordering::Relaxed);
        anyhow::ensure!(
            failed == 0,
            "{failed} of {subscriptions} subscriptions could not be opened ({OPEN_ATTEMPTS} attempts each): {}",
            tally.why.lock().unwrap().clone().unwrap_or_default()
        );
        anyhow::ensure!(
            Instant::now() < deadline,
            "the server did not report {subscriptions} open subscriptions within 2 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let open_seconds = opened.elapsed().as_secs_f64();
    let (_, rss_with) = server.memory_kib()?;

    // The writer: one ticket at a time, at the rate asked, across the organizations.
    let started = Instant::now();
    let (writes, expected) = write_tickets(
        &client,
        &url,
        origin,
        seconds,
        writes_per_second,
        subscriptions,
    )
    .await?;
    let write_seconds = started.elapsed().as_secs_f64();
    tally.settle(expected).await;
    let delivered_events = tally.delivered.load(Ordering::Relaxed);
    let (peak, _) = server.memory_kib()?;
    tally.stopping.store(true, Ordering::Relaxed);
    server.stop().await?;
    for t in tasks {
        let _ = t.await;
    }
    let mut all = std::mem::take(&mut *tally.samples.lock().unwrap());
    let mib = |kib: u64| kib as f64 / 1024.0;
    let _ = std::fs::remove_file(&file);
    Ok(LiveReport {
        subscriptions,
        open_seconds,
        writes,
        write_seconds,
        expected_events: expected,
        delivered_events,
        events_per_second: delivered_events as f64 / write_seconds,
        latency_ms: Percentiles::of(&mut all),
        rss_before_mib: mib(rss_before),
        rss_with_subscriptions_mib: mib(rss_with),
        peak_rss_mib: mib(peak),
        errors: tally.errors.load(Ordering::Relaxed),
    })
}

/// What every subscription of a run adds to.
#[derive(Default)]
pub struct Tally {
    pub delivered: AtomicU64,
    pub errors: AtomicU64,
    /// Set before the servers stop, which ends every subscription: no error then.
    pub stopping: AtomicBool,
    /// Write-to-event times, µs.
    pub samples: Mutex<Vec<u32>>,
    /// Why the last subscription that could not be opened was not.
    pub why: Mutex<Option<String>>,
}

/// Attempts at opening one subscription before it counts as an error.
const OPEN_ATTEMPTS: u32 = 5;

impl Tally {
    /// Waits up to 10 s for stragglers, until `expected` events came.
    pub async fn settle(&self, expected: u64) {
        let settle = Instant::now();
        while self.delivered.load(Ordering::Relaxed) < expected
            && settle.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// One subscription over Server-Sent Events to `org`'s ticket events on `url`, counting
/// each event and its write-to-event time (the ticket's title carries the send time).
pub fn spawn_subscriber(
    client: reqwest::Client,
    url: String,
    org: &'static str,
    origin: Instant,
    tally: Arc<Tally>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let body = json!({
            "query": "subscription($org: String!) { ticketEvents(org: $org) { kind ticket { title } } }",
            "variables": { "org": org },
        });
        // Opened as a client does: a refused or dropped attempt is tried again, a few
        // times, before it counts as an error (with why, for the report).
        let mut why = String::new();
        let mut opened = None;
        for attempt in 0..OPEN_ATTEMPTS {
            match client
                .post(&url)
                .header("accept", "text/event-stream")
                .json(&body)
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => {
                    opened = Some(r);
                    break;
                }
                Ok(r) => why = format!("status {}", r.status()),
                Err(e) => why = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(200 * (u64::from(attempt) + 1))).await;
        }
        let Some(mut resp) = opened else {
            tally.errors.fetch_add(1, Ordering::Relaxed);
            *tally.why.lock().unwrap() = Some(why);
            return;
        };
        let mut buf = String::new();
        let mut mine = Vec::new();
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                _ => {
                    if !tally.stopping.load(Ordering::Relaxed) {
                        tally.errors.fetch_add(1, Ordering::Relaxed);
                    }
                    break;
                }
            };
            let now = micros_now(origin);
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let Some(data) = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data:"))
                    .filter(|_| block.contains("event: next") || block.contains("event:next"))
                else {
                    continue;
                };
                let v: Value = serde_json::from_str(data.trim()).unwrap_or_default();
                match v["data"]["ticketEvents"]["ticket"]["title"]
                    .as_str()
                    .and_then(|t| t.strip_prefix("bench-"))
                    .and_then(|t| t.parse::<u64>().ok())
                {
                    Some(sent) => {
                        tally.delivered.fetch_add(1, Ordering::Relaxed);
                        mine.push(u32::try_from(now.saturating_sub(sent)).unwrap_or(u32::MAX));
                    }
                    None => {
                        tally.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            if mine.len() >= 4096 {
                tally.samples.lock().unwrap().append(&mut mine);
            }
        }
        tally.samples.lock().unwrap().append(&mut mine);
    })
}

/// Creates one ticket at a time at `writes_per_second` for `seconds`, round the
/// organizations, through `url`; the writes made and the events they should produce for
/// `subscriptions` spread over the organizations.
pub async fn write_tickets(
    client: &reqwest::Client,
    url: &str,
    origin: Instant,
    seconds: f64,
    writes_per_second: f64,
    subscriptions: usize,
) -> anyhow::Result<(u64, u64)> {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / writes_per_second));
    let started = Instant::now();
    let mut writes = 0u64;
    let mut expected = 0u64;
    while started.elapsed().as_secs_f64() < seconds {
        tick.tick().await;
        let org = ORGS[writes as usize % ORGS.len()];
        let requester = match org {
            "acme" => "wile-e-coyote",
            "globex" => "hank-scorpio",
            _ => "bill-lumbergh",
        };
        let sent = micros_now(origin);
        let r: Value = client
            .post(url)
            .json(&json!({
                "query": "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }",
                "variables": { "input": { "org": org, "requester": requester, "title": format!("bench-{sent}"), "body": "Load.", "priority": "LOW" } },
            }))
            .send()
            .await?
            .json()
            .await?;
        anyhow::ensure!(r.get("errors").is_none(), "a write failed: {r}");
        writes += 1;
        expected += (0..subscriptions)
            .filter(|i| ORGS[i % ORGS.len()] == org)
            .count() as u64;
    }
    Ok((writes, expected))
}
