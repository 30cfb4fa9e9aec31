//! Scaling: the latency of a first page and of a deep page of one item collection (a
//! user's tickets, one GSI1 partition) as the collection grows, on the embedded engine.
//! Each size gets a fresh store holding that one collection and a fresh server; pages are
//! read one at a time (concurrency 1), so the figure is the page's own cost.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::{json, Value};

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

use crate::dataset::{Dataset, DatasetSpec, Seeding};
use crate::server::{Backend, Server};
use crate::shapes::{deep_cursors, Shape};
use crate::stats::Percentiles;

const FIRST_PAGE: &str = "query FirstPage($org: String!, $username: String!) { user(org: \
    $org, username: $username) { username tickets(first: 20) { nodes { ticketId title status \
    createdAt } pageInfo { hasNextPage endCursor } } } }";

/// One collection size.
#[derive(Debug, Clone, Serialize)]
pub struct ScalePoint {
    pub items: usize,
    pub seed_seconds: f64,
    pub first_page_ms: Percentiles,
    pub deep_page_ms: Percentiles,
    pub errors: u64,
}

/// Every size, and the growth from the smallest to the largest.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    pub points: Vec<ScalePoint>,
    /// p50 at the largest size over p50 at the smallest.
    pub first_page_growth: f64,
    pub deep_page_growth: f64,
}

pub async fn run(
    server_exe: &Path,
    work: &Path,
    sizes: &[usize],
    seconds: f64,
    seed: u64,
    secret: &str,
) -> anyhow::Result<Scaling> {
    let client = crate::driver::client()?;
    let mut points = Vec::new();
    for &n in sizes {
        let ds = Dataset::generate(DatasetSpec::collection(seed, n))?;
        let file = work.join(format!("scale-{n}.redb"));
        let _ = std::fs::remove_file(&file);
        let seed_seconds = {
            let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(
                &file,
                "itemgraph",
                itemgraph::chart::builtin().table_schema(),
            )?);
            ds.seed(store, Seeding::Transactions).await?
        };
        eprintln!("  scaling: {n} items seeded in {seed_seconds:.1} s");
        let server = Server::start(
            server_exe,
            Backend::Embedded { data: &file },
            secret,
            work.join(format!("server-scale-{n}.log")),
        )
        .await?;
        let org = &ds.orgs[0];
        let cursor = deep_cursors(&ds, secret).swap_remove(0);
        let vars = json!({ "org": org.slug.as_str(), "username": org.heavy.as_str() });
        let deep_vars =
            json!({ "org": org.slug.as_str(), "username": org.heavy.as_str(), "after": cursor });
        let (first, e1) = measure(&client, &server.url, FIRST_PAGE, &vars, seconds).await?;
        let (deep, e2) = measure(
            &client,
            &server.url,
            Shape::DeepPage.document(),
            &deep_vars,
            seconds,
        )
        .await?;
        server.stop().await?;
        let _ = std::fs::remove_file(&file);
        eprintln!(
            "  scaling: {n} items: first page p50 {:.3} ms, deep page p50 {:.3} ms",
            first.p50, deep.p50
        );
        points.push(ScalePoint {
            items: n,
            seed_seconds,
            first_page_ms: first,
            deep_page_ms: deep,
            errors: e1 + e2,
        });
    }
    let growth = |f: fn(&ScalePoint) -> f64| match (points.first(), points.last()) {
        (Some(a), Some(b)) if f(a) > 0.0 => f(b) / f(a),
        _ => 0.0,
    };
    Ok(Scaling {
        first_page_growth: growth(|p| p.first_page_ms.p50),
        deep_page_growth: growth(|p| p.deep_page_ms.p50),
        points,
    })
}

/// Sends `document` back to back for `seconds` (after a quarter second unmeasured) and
/// returns its latency and how many answers were errors or short pages.
async fn measure(
    client: &reqwest::Client,
    url: &str,
    document: &str,
    variables: &Value,
    seconds: f64,
) -> anyhow::Result<(Percentiles, u64)> {
    let body = serde_json::to_vec(&json!({ "query": document, "variables": variables }))?;
    let warm_until = Instant::now() + Duration::from_millis(250);
    let end = warm_until + Duration::from_secs_f64(seconds);
    let mut samples = Vec::new();
    let mut errors = 0;
    loop {
        let sent = Instant::now();
        if sent >= end {
            break;
        }
        let resp = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .context("sending a page")?;
        let v: Value = resp.json().await.context("reading a page")?;
        let took = sent.elapsed();
        let nodes = v["data"]["user"]["tickets"]["nodes"]
            .as_array()
            .map_or(0, Vec::len);
        if sent >= warm_until {
            samples.push(took.as_micros().min(u128::from(u32::MAX)) as u32);
            if v.get("errors").is_some() || nodes != crate::dataset::PAGE {
                errors += 1;
            }
        }
    }
    Ok((Percentiles::of(&mut samples), errors))
}
