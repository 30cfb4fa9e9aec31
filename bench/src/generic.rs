//! The built-in chart's reads on the generic path (`graphql::charted`, the API a chart is
//! served with) beside the hand-written schema, in-process, in one sitting: each read shape
//! of the mix run alone, one request at a time, on the embedded engine holding the data
//! set, the two schemas taking turns. What each costs in CPU per operation, with the
//! answers compared first. No HTTP and no second process: the difference is the schema's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use itemgraph::auth::Access;
use itemgraph::graphql::{self, CursorCodec, ItemgraphSchema};
use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::Store;

use crate::dataset::{Dataset, Seeding};
use crate::server::cpu_time_of;
use crate::shapes::{Mix, Shape, Worker};

/// One shape's figures: CPU per operation on each path.
pub struct Row {
    pub shape: Shape,
    pub hand_us: f64,
    pub generic_us: f64,
}

/// Rounds of each schema per shape, taking turns, so a drift of the machine falls on both.
const ROUNDS: usize = 3;

pub async fn run(
    ds: &Dataset,
    deep: &[String],
    seconds: f64,
    secret: &str,
) -> anyhow::Result<Vec<Row>> {
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::in_memory(
        "itemgraph",
        itemgraph::keys::table_schema(),
    )?);
    ds.seed(store.clone(), Seeding::Puts(64)).await?;
    let hand = graphql::derived_schema();
    let generic = graphql::chart_schema(itemgraph::chart::builtin(), &graphql::Limits::default())
        .map_err(|e| anyhow::anyhow!("the built-in chart's schema: {}", e.0))?;
    let codec = CursorCodec::new(secret.as_bytes().to_vec());
    let mut rows = Vec::new();
    for shape in Shape::ALL.into_iter().filter(|s| s.is_read()) {
        // The same operations on both, and the same answers.
        let mut worker = Worker::new(0, 7, Mix::Reads);
        for _ in 0..20 {
            let vars = worker.variables(shape, ds, deep);
            let a = once(&hand, &store, &codec, shape, vars.clone()).await;
            let b = once(&generic, &store, &codec, shape, vars).await;
            anyhow::ensure!(
                a["data"] == b["data"] && a.get("errors").is_none(),
                "{}: the generic path answers otherwise:\n{a}\n{b}",
                shape.name()
            );
        }
        let (mut hand_cpu, mut hand_ops, mut gen_cpu, mut gen_ops) =
            (Duration::ZERO, 0u64, Duration::ZERO, 0u64);
        for _ in 0..ROUNDS {
            let (c, n) = measure(&hand, &store, &codec, shape, ds, deep, seconds).await?;
            hand_cpu += c;
            hand_ops += n;
            let (c, n) = measure(&generic, &store, &codec, shape, ds, deep, seconds).await?;
            gen_cpu += c;
            gen_ops += n;
        }
        let per = |c: Duration, n: u64| c.as_secs_f64() * 1e6 / n.max(1) as f64;
        let row = Row {
            shape,
            hand_us: per(hand_cpu, hand_ops),
            generic_us: per(gen_cpu, gen_ops),
        };
        eprintln!(
            "itemgraph-bench: generic path, {}: {:.1} µs hand-written, {:.1} µs generic ({:.2}×)",
            shape.name(),
            row.hand_us,
            row.generic_us,
            row.generic_us / row.hand_us
        );
        rows.push(row);
    }
    Ok(rows)
}

async fn once(
    schema: &ItemgraphSchema,
    store: &Arc<dyn Store>,
    codec: &CursorCodec,
    shape: Shape,
    vars: Value,
) -> Value {
    let request = async_graphql::Request::new(shape.document())
        .variables(async_graphql::Variables::from_json(vars));
    let resp = graphql::execute(
        schema,
        store.clone(),
        codec.clone(),
        Access::Unrestricted,
        request,
        false,
    )
    .await;
    serde_json::to_value(&resp).unwrap_or_default()
}

/// Runs `shape` one request at a time for `seconds`: the process's CPU time and the
/// operations done.
async fn measure(
    schema: &ItemgraphSchema,
    store: &Arc<dyn Store>,
    codec: &CursorCodec,
    shape: Shape,
    ds: &Dataset,
    deep: &[String],
    seconds: f64,
) -> anyhow::Result<(Duration, u64)> {
    let mut worker = Worker::new(1, 11, Mix::Reads);
    let cpu = || cpu_time_of("/proc/self/stat").context("this process's CPU time");
    let start_cpu = cpu()?;
    let started = Instant::now();
    let mut ops = 0;
    while started.elapsed().as_secs_f64() < seconds {
        let vars = worker.variables(shape, ds, deep);
        let _ = once(schema, store, codec, shape, vars).await;
        ops += 1;
    }
    Ok((cpu()? - start_cpu, ops))
}

/// The figures as a Markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| shape | hand-written, µs CPU per op | generic, µs CPU per op | generic / hand-written |\n|---|---:|---:|---:|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| `{}` | {:.1} | {:.1} | {:.2}× |\n",
            r.shape.name(),
            r.hand_us,
            r.generic_us,
            r.generic_us / r.hand_us
        ));
    }
    out
}
