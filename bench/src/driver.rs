//! The HTTP load driver: closed-loop workers, each sending its next operation as soon as
//! the previous answer is read and checked. Every response body is checked: GraphQL
//! reports errors inside a 200, so a response counts as an error when the status is not
//! 200, the body is not JSON, `errors` is present, or `data` is null.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
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

/// When a run measures: for `duration` after `warmup` unmeasured. With `min_ops` (the
/// smoke run's), it measures on past that until at least so many operations were
/// answered, so a run on a slow or loaded machine still measures some (an operation that
/// takes the whole window would leave none); it fails at `deadline` after its start
/// rather than run on without end.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub warmup: Duration,
    pub duration: Duration,
    pub min_ops: u64,
    pub deadline: Duration,
}

impl Window {
    /// The window's clock, started now, for the workers of one run to share.
    pub fn start(self) -> Clock {
        let start = Instant::now();
        let measure_from = start + self.warmup;
        Clock {
            window: self,
            measure_from,
            end: measure_from + self.duration,
            deadline: start + self.deadline,
            measured: AtomicU64::new(0),
            reached: OnceLock::new(),
        }
    }
}

/// A run's [`Window`] as it goes: what its workers ask before each operation.
pub struct Clock {
    window: Window,
    measure_from: Instant,
    end: Instant,
    deadline: Instant,
    /// Operations measured and answered so far.
    measured: AtomicU64,
    /// When the `min_ops`th of them was answered.
    reached: OnceLock<Instant>,
}

impl Clock {
    /// Whether a worker sends another operation: the window is open, or the run is still
    /// short of its operations and within its deadline.
    pub fn goes_on(&self) -> bool {
        let now = Instant::now();
        now < self.end || (self.short() && now < self.deadline)
    }

    /// Whether an operation sent at `sent` is measured: sent after the warmup, inside the
    /// window or past it while the run is short of its operations.
    pub fn measures(&self, sent: Instant) -> bool {
        sent >= self.measure_from && (sent < self.end || self.short())
    }

    /// Counts one measured operation, answered.
    pub fn answered(&self) {
        let n = self.measured.fetch_add(1, Ordering::Relaxed) + 1;
        if n == self.window.min_ops {
            let _ = self.reached.set(Instant::now());
        }
    }

    fn short(&self) -> bool {
        self.measured.load(Ordering::Relaxed) < self.window.min_ops
    }

    /// The seconds `what` measured: the window's, or up to the answer that made its
    /// operations when it ran on past the window; an error naming it when it ended short
    /// of them.
    pub fn seconds(&self, what: &str) -> anyhow::Result<f64> {
        let measured = self.measured.load(Ordering::Relaxed);
        anyhow::ensure!(
            measured >= self.window.min_ops,
            "{what}: {measured} of the {} operations it must measure were answered in its {:.0} s deadline (the machine too loaded, or the server stalled)",
            self.window.min_ops,
            self.window.deadline.as_secs_f64()
        );
        Ok(match self.reached.get() {
            Some(at) if *at > self.end => at.duration_since(self.measure_from).as_secs_f64(),
            _ => self.window.duration.as_secs_f64(),
        })
    }
}

/// One measured run: `concurrency` workers through `window`.
pub async fn run(
    t: Arc<Target>,
    mix: Mix,
    concurrency: usize,
    window: Window,
    seed: u64,
) -> anyhow::Result<RunStats> {
    let clock = Arc::new(window.start());
    let mut tasks = Vec::with_capacity(concurrency);
    for index in 0..concurrency {
        let (t, clock) = (t.clone(), clock.clone());
        tasks.push(tokio::spawn(async move {
            let mut w = Worker::new(index, seed, mix);
            let mut lat = Latencies::default();
            while clock.goes_on() {
                let shape = w.next_shape();
                let vars = w.variables(shape, &t.dataset, &t.deep_cursors);
                let sent = Instant::now();
                let measured = clock.measures(sent);
                let outcome = send(&t, shape, vars, false).await;
                let took = sent.elapsed();
                if let Ok(v) = &outcome {
                    w.record_write(shape, &v["data"]);
                }
                if measured {
                    lat.record(shape, took, outcome.err());
                    clock.answered();
                }
            }
            lat
        }));
    }
    let mut all = Latencies::default();
    for task in tasks {
        all.merge(task.await.context("a worker panicked")?);
    }
    let seconds = clock.seconds(&format!("the {mix:?} mix at concurrency {concurrency}"))?;
    Ok(all.summarize(seconds))
}

/// Hostile documents sent alongside a measured run (`--hostile`, with the live surfaces'
/// cases of [`hostile_live_case`] and one [`non_reading_socket`]), each with the code it
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

/// The live surfaces' hostile cases, one per turn of a hostile client beside the
/// documents: a cross-origin WebSocket upgrade and a cross-origin event stream (403: the
/// bench serves with auth off, where no other origin is let in), and a subscription of 30
/// aliased root fields over an event stream (`GRAPHQL_VALIDATION_FAILED`).
async fn hostile_live_case(t: &Target, turn: usize) -> bool {
    let evil = "https://evil.example";
    match turn % 3 {
        0 => t
            .client
            .get(&t.url)
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("sec-websocket-protocol", "graphql-transport-ws")
            .header("origin", evil)
            .send()
            .await
            .is_ok_and(|r| r.status() == 403),
        1 => t
            .client
            .post(&t.url)
            .header("accept", "text/event-stream")
            .header("origin", evil)
            .json(&json!({ "query": "{ __typename }" }))
            .send()
            .await
            .is_ok_and(|r| r.status() == 403),
        _ => {
            let fields: String = (0..30)
                .map(|i| format!("a{i}: ticketEvents(org: \"acme\") {{ kind }} "))
                .collect();
            match t
                .client
                .post(&t.url)
                .header("accept", "text/event-stream")
                .json(&json!({ "query": format!("subscription {{ {fields} }}") }))
                .send()
                .await
            {
                Ok(r) => r
                    .text()
                    .await
                    .is_ok_and(|body| body.contains("GRAPHQL_VALIDATION_FAILED")),
                Err(_) => false,
            }
        }
    }
}

/// A WebSocket client that asks 400 introspection queries and never reads (a small
/// receive buffer): the server must disconnect it (`--send-timeout-ms`). Whether it did:
/// the server counts it, and the socket, drained then, reaches its end.
async fn non_reading_socket(t: &Target, until: Instant) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(addr) = t
        .url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
    else {
        return false;
    };
    let attempt = async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_recv_buffer_size(4096)?;
        let mut stream = socket.connect(addr).await?;
        stream
            .write_all(
                format!(
                    "GET /graphql HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
                     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                     Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
                )
                .as_bytes(),
            )
            .await?;
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            if stream.read(&mut b).await? == 0 {
                return Ok::<bool, std::io::Error>(false);
            }
            head.push(b[0]);
        }
        // Masked text frames, as a client sends them.
        let frame = |text: &str| {
            let payload = text.as_bytes();
            let mut f = vec![0x81u8];
            if payload.len() < 126 {
                f.push(0x80 | payload.len() as u8);
            } else {
                f.push(0x80 | 126);
                f.extend((payload.len() as u16).to_be_bytes());
            }
            f.extend([0u8; 4]);
            f.extend_from_slice(payload);
            f
        };
        stream
            .write_all(&frame(r#"{"type":"connection_init"}"#))
            .await?;
        let query = "{ __schema { types { name description fields { name description type { name kind } } } } }";
        // Paced, so each runs before the next comes (at most so many run at once on a
        // socket, `--max-subscriptions-per-connection`): 400 answers of about 26 KB, more
        // than the server's queue and the kernel's buffers hold.
        for i in 0..400 {
            let m =
                json!({ "id": i.to_string(), "type": "subscribe", "payload": { "query": query } });
            if stream.write_all(&frame(&m.to_string())).await.is_err() {
                // Disconnected already (why, the server's metrics tell).
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The server's send timeout is a second (see server.rs). Reading now would make
        // this a client that reads, so the server is asked instead: its metrics count a
        // client disconnected for not reading (`CLIENT_NOT_READING`). A loaded machine
        // may take a while to fill the buffers first.
        let metrics = t.url.replace("/graphql", "/metrics");
        let deadline = until.max(Instant::now()) + Duration::from_secs(20);
        let mut cut = false;
        while !cut && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cut = match t.client.get(&metrics).send().await {
                Ok(resp) => resp.text().await.is_ok_and(|text| {
                    text.lines().any(|l| {
                        l.starts_with("itemgraph_graphql_errors_total")
                            && l.contains("code=\"CLIENT_NOT_READING\"")
                    })
                }),
                Err(_) => false,
            };
        }
        if !cut {
            return Ok(false);
        }
        // Drained now: the server closed it, so the end comes.
        let mut buf = vec![0u8; 64 * 1024];
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
            while stream.read(&mut buf).await.unwrap_or(0) > 0 {}
        })
        .await;
        Ok(ended.is_ok())
    };
    attempt.await.unwrap_or(false)
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
                    // Every fifth turn, one of the live surfaces' cases.
                    if i % 5 == 4 {
                        requests += 1;
                        unexpected += u64::from(!hostile_live_case(&t, i / 5).await);
                        i += 1;
                        continue;
                    }
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
    // One client that never reads, for the whole run.
    let deaf = {
        let t = t.clone();
        tokio::spawn(async move { non_reading_socket(&t, until).await })
    };
    let mut load = HostileLoad {
        clients,
        ..HostileLoad::default()
    };
    load.requests += 1;
    load.unexpected += u64::from(!deaf.await.unwrap_or(false));
    for task in tasks {
        if let Ok((r, u)) = task.await {
            load.requests += r;
            load.unexpected += u;
        }
    }
    load
}
