//! One busy organization against the per-item write limit: the embedded engine under
//! `--faults item-wcu=N` (each item takes N write units a second, as one item on AWS takes
//! about 1 000), writes only (`createTicket`), closed-loop workers (each its own
//! requester), first all in one organization, then spread over every organization of a
//! data set of its own. Each create bumps one of its organization's counter shards; the
//! report says how close one organization comes to the spread writes, as writes a second,
//! the refusals clients saw (`THROTTLED`, `CONTENTION`) and the latency, and the ratio of
//! the two runs' throughput.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

use crate::dataset::{Dataset, DatasetSpec, Seeding};
use crate::server::{Backend, Server};
use crate::stats::Percentiles;

const CREATE: &str = "mutation CreateTicket($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }";

#[derive(Debug, Serialize)]
pub struct HotOrgRun {
    /// Organizations the writes went to.
    pub organizations: usize,
    pub concurrency: usize,
    pub seconds: f64,
    /// Creates answered without error, and per second.
    pub writes: u64,
    pub writes_per_sec: f64,
    /// Refusals by `extensions.code` (retryable ones expected past the limit).
    pub refused: BTreeMap<String, u64>,
    pub latency_ms: Percentiles,
}

#[derive(Debug, Serialize)]
pub struct HotOrgReport {
    pub item_wcu: f64,
    pub runs: Vec<HotOrgRun>,
    /// Writes a second in one organization over writes a second spread over all.
    pub one_over_many: f64,
    /// Refusals other than `THROTTLED` and `CONTENTION`: errors of the benchmark.
    pub unexpected: u64,
}

#[allow(clippy::too_many_arguments)]
pub async fn run(
    exe: &Path,
    work: &Path,
    log_dir: &Path,
    client: &reqwest::Client,
    orgs: usize,
    concurrency: usize,
    duration: Duration,
    item_wcu: f64,
    seed: u64,
    cursor_secret: &str,
) -> anyhow::Result<HotOrgReport> {
    // One requester per worker, as the spread run has (each worker's writes go to another
    // organization, each with its own users): the busy organization's limit is then its
    // own, not one user's (a user's counters are one item too; `docs/DATA_MODEL.md`).
    let mut spec = DatasetSpec::main(seed, orgs, 2);
    spec.users_per_org = spec.users_per_org.max(concurrency);
    let ds = Arc::new(Dataset::generate(spec)?);
    let data = work.join("hot-org.redb");
    let _ = std::fs::remove_file(&data);
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(
        &data,
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
    )?);
    let seeded = ds.seed(store.clone(), Seeding::Transactions).await?;
    drop(store);
    eprintln!(
        "  seeded {} organizations ({} items) in {seeded:.1} s",
        ds.orgs.len(),
        ds.item_count()
    );
    let faults = format!("item-wcu={item_wcu}");
    let server = Server::start_with(
        exe,
        Backend::Embedded { data: &data },
        cursor_secret,
        log_dir.join("server-hot-org.log"),
        &["--faults", &faults],
    )
    .await?;
    let mut runs = Vec::new();
    for spread in [1, ds.orgs.len()] {
        let r = drive(client, &server.url, &ds, spread, concurrency, duration).await;
        eprintln!(
            "  writes only, concurrency {concurrency}, {} organization(s), item-wcu={item_wcu}: {:.0} writes/s, refused {:?}, p50 {:.2} ms, p99 {:.2} ms",
            r.organizations, r.writes_per_sec, r.refused, r.latency_ms.p50, r.latency_ms.p99
        );
        runs.push(r);
        // The items' units come back before the next run.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    server.stop().await?;
    let _ = std::fs::remove_file(&data);
    let one_over_many = runs[0].writes_per_sec / runs[1].writes_per_sec.max(f64::MIN_POSITIVE);
    let unexpected = runs
        .iter()
        .flat_map(|r| &r.refused)
        .filter(|(code, _)| !matches!(code.as_str(), "THROTTLED" | "CONTENTION"))
        .map(|(_, n)| n)
        .sum();
    Ok(HotOrgReport {
        item_wcu,
        runs,
        one_over_many,
        unexpected,
    })
}

/// `concurrency` writers creating tickets for `duration`, worker `w`'s `k`-th write in
/// organization `(w + k × concurrency) mod spread`.
async fn drive(
    client: &reqwest::Client,
    url: &str,
    ds: &Arc<Dataset>,
    spread: usize,
    concurrency: usize,
    duration: Duration,
) -> HotOrgRun {
    let end = Instant::now() + duration;
    let writes = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|w| {
            let (client, url, ds) = (client.clone(), url.to_owned(), ds.clone());
            let (writes, refused) = (writes.clone(), refused.clone());
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut k = 0usize;
                while Instant::now() < end {
                    let org = &ds.orgs[(w + k * concurrency) % spread];
                    k += 1;
                    let body = json!({ "query": CREATE, "variables": { "input": {
                        "org": org.slug.as_str(),
                        "requester": org.users[w % org.users.len()].as_str(),
                        "title": format!("Hot organization ticket {k} of worker {w}"),
                        "body": "Created by itemgraph-bench.",
                        "priority": "LOW",
                    }}});
                    let sent = Instant::now();
                    let answer = async {
                        client
                            .post(&url)
                            .json(&body)
                            .send()
                            .await?
                            .json::<Value>()
                            .await
                    }
                    .await;
                    samples.push(sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                    let codes: Vec<String> = match &answer {
                        Ok(v) => v["errors"]
                            .as_array()
                            .map(|errors| {
                                errors
                                    .iter()
                                    .map(|e| {
                                        e["extensions"]["code"]
                                            .as_str()
                                            .unwrap_or("NONE")
                                            .to_owned()
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                        Err(_) => vec!["HTTP".to_owned()],
                    };
                    if codes.is_empty() {
                        writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        let mut refused = refused.lock().unwrap_or_else(|p| p.into_inner());
                        for code in codes {
                            *refused.entry(code).or_default() += 1;
                        }
                    }
                }
                samples
            })
        })
        .collect();
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.unwrap_or_default());
    }
    let seconds = started.elapsed().as_secs_f64();
    let writes = writes.load(Ordering::Relaxed);
    let refused = refused.lock().unwrap_or_else(|p| p.into_inner()).clone();
    HotOrgRun {
        organizations: spread,
        concurrency,
        seconds,
        writes,
        writes_per_sec: writes as f64 / seconds,
        refused,
        latency_ms: Percentiles::of(&mut samples),
    }
}
