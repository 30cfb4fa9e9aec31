//! The HTTP load driver: closed-loop workers, each sending its next operation as soon as
//! the previous answer is read and checked. Every response body is checked: GraphQL
//! reports errors inside a 200, so a response counts as an error when the status is not
//! 200, the body is not JSON, `errors` is present, or `data` is null.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::dataset::Dataset;
use crate::shapes::{Mix, Shape, Worker};
use crate::stats::{Latencies, RunStats};

/// What every worker of a run shares.
pub struct Target {
    pub client: reqwest::Client,
    pub url: String,
    pub dataset: Arc<Dataset>,
    pub deep_cursors: Arc<Vec<String>>,
}

/// An HTTP client for the whole benchmark: keep-alive connections, enough idle ones for
/// every worker, no Nagle delay.
pub fn client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?)
}

/// The parts of a response a read needs checked; the rest of the body is skipped unparsed.
#[derive(Deserialize)]
struct ReadResponse {
    #[serde(default)]
    data: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    errors: Option<Vec<Value>>,
}

/// The outcome of one operation: `Err` carries why it counts as an error.
async fn send(t: &Target, shape: Shape, variables: Value, trace: bool) -> Result<Value, String> {
    let body = json!({ "query": shape.document(), "variables": variables });
    let mut req = t
        .client
        .post(&t.url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).map_err(|e| e.to_string())?);
    if trace {
        req = req.header("x-itemgraph-trace", "1");
    }
    let resp = req.send().await.map_err(|e| format!("HTTP: {e}"))?;
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| format!("HTTP body: {e}"))?;
    if status != reqwest::StatusCode::OK {
        return Err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        ));
    }
    if shape.is_read() && !trace {
        // Reads: check without building the whole document.
        let r: ReadResponse =
            serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))?;
        if let Some(errors) = r.errors.filter(|e| !e.is_empty()) {
            return Err(format!("GraphQL errors: {}", Value::Array(errors)));
        }
        if r.data.is_none() {
            return Err("no data".into());
        }
        return Ok(Value::Null);
    }
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(errors) = v.get("errors").filter(|e| !e.is_null()) {
        return Err(format!("GraphQL errors: {errors}"));
    }
    if v.get("data").is_none_or(Value::is_null) {
        return Err("no data".into());
    }
    Ok(v)
}

/// Sends one operation of each shape with `x-itemgraph-trace: 1` and returns the
/// `extensions.dynamodb.requestCount` each cost. Runs as worker `worker` (its own
/// organization for writes).
pub async fn trace_counts(
    t: &Target,
    worker: usize,
    seed: u64,
) -> anyhow::Result<BTreeMap<Shape, u64>> {
    let mut w = Worker::new(worker, seed, Mix::Full);
    let mut counts = BTreeMap::new();
    // createTicket goes before updateTicket, which updates the ticket it created.
    for shape in Shape::ALL {
        let vars = w.variables(shape, &t.dataset, &t.deep_cursors);
        let v = send(t, shape, vars, true)
            .await
            .map_err(|e| anyhow::anyhow!("{}: {e}", shape.name()))?;
        w.record_write(shape, &v["data"]);
        let n = v["extensions"]["dynamodb"]["requestCount"]
            .as_u64()
            .with_context(|| format!("{}: no extensions.dynamodb.requestCount", shape.name()))?;
        counts.insert(shape, n);
    }
    Ok(counts)
}

/// One measured run: `concurrency` workers for `duration`, after `warmup` unmeasured.
pub async fn run(
    t: Arc<Target>,
    mix: Mix,
    concurrency: usize,
    warmup: Duration,
    duration: Duration,
    seed: u64,
) -> anyhow::Result<RunStats> {
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + duration;
    let mut tasks = Vec::with_capacity(concurrency);
    for index in 0..concurrency {
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let mut w = Worker::new(index, seed, mix);
            let mut lat = Latencies::default();
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                let shape = w.next_shape();
                let vars = w.variables(shape, &t.dataset, &t.deep_cursors);
                let sent = Instant::now();
                let outcome = send(&t, shape, vars, false).await;
                let took = sent.elapsed();
                if let Ok(v) = &outcome {
                    w.record_write(shape, &v["data"]);
                }
                if sent >= measure_from && sent < end {
                    lat.record(shape, took, outcome.err());
                }
            }
            lat
        }));
    }
    let mut all = Latencies::default();
    for task in tasks {
        all.merge(task.await.context("a worker panicked")?);
    }
    Ok(all.summarize(duration.as_secs_f64()))
}

/// Hostile documents sent alongside a measured run (`--hostile`), each with the code it
/// must be refused with: a list nested 2 000 deep, fragments doubling 30 levels deep,
/// 20 000 tokens, a chain of 1 000 fragments.
fn hostile_documents() -> Vec<(String, &'static str)> {
    let deep = format!(
        "{{ organization(slug: {}\"acme\"{}) {{ name }} }}",
        "[".repeat(2_000),
        "]".repeat(2_000)
    );
    let mut doubling = String::from("{ ...F0 }\n");
    for i in 0..30 {
        let body = if i < 29 {
            format!("...F{n} ...F{n}", n = i + 1)
        } else {
            "__typename".to_owned()
        };
        doubling.push_str(&format!("fragment F{i} on Query {{ {body} }}\n"));
    }
    let tokens = format!("{{ {} }}", "__typename ".repeat(20_000));
    let mut chain = String::from("{ ...C0 }\n");
    for i in 0..1_000 {
        let next = if i < 999 {
            format!("...C{}", i + 1)
        } else {
            "__typename".to_owned()
        };
        chain.push_str(&format!("fragment C{i} on Query {{ {next} }}\n"));
    }
    vec![
        (deep, "NESTING_TOO_DEEP"),
        (doubling, "TOO_MANY_FIELDS"),
        (tokens, "TOO_MANY_TOKENS"),
        (chain, "NESTING_TOO_DEEP"),
    ]
}

/// What the hostile clients of a run sent, and how many answers were not the refusal
/// their document must get.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct HostileLoad {
    pub clients: usize,
    pub requests: u64,
    pub unexpected: u64,
}

/// `clients` tasks sending hostile documents back to back until `until`.
pub async fn hostile(t: Arc<Target>, clients: usize, until: Instant) -> HostileLoad {
    let documents = Arc::new(hostile_documents());
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (t, documents) = (t.clone(), documents.clone());
            tokio::spawn(async move {
                let (mut requests, mut unexpected) = (0u64, 0u64);
                let mut i = c;
                while Instant::now() < until {
                    let (doc, code) = &documents[i % documents.len()];
                    i += 1;
                    requests += 1;
                    let answered = t
                        .client
                        .post(&t.url)
                        .json(&json!({ "query": doc }))
                        .send()
                        .await;
                    let ok = match answered {
                        Ok(resp) => resp.json::<Value>().await.is_ok_and(|v| {
                            v["errors"][0]["extensions"]["code"].as_str() == Some(code)
                        }),
                        Err(_) => false,
                    };
                    unexpected += u64::from(!ok);
                }
                (requests, unexpected)
            })
        })
        .collect();
    let mut load = HostileLoad {
        clients,
        ..HostileLoad::default()
    };
    for task in tasks {
        if let Ok((r, u)) = task.await {
            load.requests += r;
            load.unexpected += u;
        }
    }
    load
}
