//! Eight `itemgraph serve` processes on one DynamoDB Local table, sharing the change
//! stream's relay through a Redis server of the test's own, as a deployment of N replicas
//! behind a load balancer runs.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use itemgraph::auth::{issue_token, Claims, Role};
use itemgraph::live::lease::LeaseRecord;
use itemgraph::live::relayer::LEASE_NAME;
use itemgraph::store::own::lease_key;
use itemgraph::store::own::OwnRecord as _;
use itemgraph::store::{GetItem, Store};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");
const SECRET: &str = "replicas-test-jwt-secret-0123456789abcdef";
const CURSOR_SECRET: &str = "replicas-test-cursor-secret-0123456789abcdef";
const SUBSCRIPTION: &str = r#"subscription($after: String) { ticketEvents(org: "acme", after: $after) { cursor ticket { title } } }"#;

struct Replica {
    child: Child,
    addr: String,
}

impl Replica {
    async fn start(endpoint: &str, table: &str, redis: &str) -> Replica {
        Replica::start_with(endpoint, table, redis, &[]).await
    }

    /// [`start`](Self::start) with `extra` arguments after the others.
    async fn start_with(endpoint: &str, table: &str, redis: &str, extra: &[&str]) -> Replica {
        let mut child = Command::new(BIN)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--store",
                "dynamodb",
                "--endpoint",
                endpoint,
                "--region",
                "us-east-1",
                "--table",
                table,
                "--jwt-secret",
                SECRET,
                "--cursor-secret",
                CURSOR_SECRET,
                "--relay-url",
                redis,
                "--relay-lease-ms",
                "1500",
                "--stream-poll-ms",
                "250",
                "--max-replays-per-org",
                "64",
            ])
            .args(extra)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start itemgraph");
        let (addr, _) = crate::commands::listening(&mut child).await;
        Replica { child, addr }
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    async fn get(&self, path: &str) -> String {
        reqwest::get(format!("http://{}{path}", self.addr))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// A counter of `/metrics`, summed over its series with `label`.
    async fn counter(&self, name: &str, label: &str) -> f64 {
        self.get("/metrics")
            .await
            .lines()
            .filter(|l| l.starts_with(name) && l.contains(label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }

    async fn stop(mut self) {
        let pid = self.pid().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }
}

fn token() -> String {
    issue_token(
        SECRET.as_bytes(),
        &Claims {
            sub: Some("replicas-test".into()),
            org: "acme".into(),
            role: Role::Admin,
            exp: itemgraph::auth::expiring_in(Duration::from_secs(3600)),
            iat: None,
            iss: None,
            aud: None,
        },
    )
    .unwrap()
}

/// One Server-Sent Events subscription: its events' data, in order.
struct Events {
    resp: reqwest::Response,
    buf: String,
}

impl Events {
    /// Subscribes; `None` when refused before any event (the refusal's code).
    async fn open(
        client: &reqwest::Client,
        addr: &str,
        after: Option<&str>,
    ) -> Result<Events, String> {
        let resp = client
            .post(format!("http://{addr}/graphql"))
            .header("accept", "text/event-stream")
            .bearer_auth(token())
            .json(&json!({ "query": SUBSCRIPTION, "variables": { "after": after } }))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if resp.status() != 200 {
            return Err(format!("status {}", resp.status()));
        }
        Ok(Events {
            resp,
            buf: String::new(),
        })
    }

    /// The next `next` event's data.
    async fn next(&mut self) -> Value {
        common::sse::next_event(&mut self.resp, &mut self.buf, |_| true).await
    }

    /// The titles of the next `n` events, with the last event's cursor.
    async fn titles(&mut self, n: usize) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while out.len() < n {
            let v = self.next().await;
            assert!(v.get("errors").is_none(), "{v:#}");
            let e = &v["data"]["ticketEvents"];
            out.push((
                e["ticket"]["title"].as_str().unwrap().to_owned(),
                e["cursor"].as_str().unwrap().to_owned(),
            ));
        }
        out
    }
}

async fn create_ticket(client: &reqwest::Client, addr: &str, title: &str) {
    let r: Value = client
        .post(format!("http://{addr}/graphql"))
        .bearer_auth(token())
        .json(&json!({
            "query": "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }",
            "variables": { "input": { "org": "acme", "title": title, "body": "b", "requester": "wile-e-coyote", "priority": "NORMAL" } }
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r.get("errors").is_none(), "{r:#}");
}

/// The lease's holder as stored: its id names its process.
async fn holder_pid(store: &dyn Store) -> Option<u32> {
    let item = store
        .get_item(GetItem {
            key: lease_key(LEASE_NAME),
            consistent_read: true,
        })
        .await
        .unwrap()?;
    let lease = LeaseRecord::from_item(item, store.schema()).ok()?;
    // `<host>-<pid>-<random>`
    lease.holder.rsplit('-').nth(1)?.parse().ok()
}

/// Eight replicas, one relay: every change reaches the subscriber on every replica once
/// and in order; only the lease holder calls `GetRecords`, within DynamoDB Streams' five a
/// second per shard; the holder killed (SIGKILL) mid-test is replaced without a change
/// lost or repeated; and after a replica restarts, 1,000 subscribers resuming on it at
/// once are all served from the relay's history, with no stream read of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_replicas_share_one_stream_reader_through_the_relay() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("replicas");
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    store.create_table().await.unwrap();
    crate::common::demo::seed_demo(&store).await.unwrap();
    store.enable_stream().await.unwrap();
    let mut replicas = Vec::new();
    for _ in 0..8 {
        replicas.push(Replica::start(&endpoint, &table, &redis.url()).await);
    }
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let first_holder = loop {
        if let Some(pid) = holder_pid(&store).await {
            break pid;
        }
        assert!(Instant::now() < deadline, "no replica took the relay lease");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut subscribers = Vec::new();
    for r in &replicas {
        subscribers.push(Events::open(&client, &r.addr, None).await.unwrap());
    }
    // Let every subscription reach its hub before the first change.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    const CHANGES: usize = 30;
    let started = Instant::now();
    let writer = {
        let client = client.clone();
        let addr = replicas
            .iter()
            .find(|r| r.pid() != first_holder)
            .unwrap()
            .addr
            .clone();
        tokio::spawn(async move {
            for n in 0..CHANGES {
                create_ticket(&client, &addr, &format!("replicated {n:02}")).await;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let killed = replicas
        .iter()
        .position(|r| r.pid() == first_holder)
        .unwrap();
    replicas.remove(killed).kill().await;
    subscribers.remove(killed);
    writer.await.unwrap();
    let want: Vec<String> = (0..CHANGES).map(|n| format!("replicated {n:02}")).collect();
    let mut cursors = Vec::new();
    // Keep-alive comments keep each read alive: bound the whole wait instead.
    let got = tokio::time::timeout(
        Duration::from_secs(120),
        futures::future::join_all(subscribers.iter_mut().map(|s| s.titles(CHANGES))),
    )
    .await
    .expect("every replica's subscriber got every change within 2 minutes");
    for (i, events) in got.iter().enumerate() {
        let titles: Vec<String> = events.iter().map(|(t, _)| t.clone()).collect();
        assert_eq!(titles, want, "replica {i}: every change once, in order");
        cursors.push(events[4].1.clone());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let second_holder = holder_pid(&store).await.unwrap();
    assert_ne!(second_holder, first_holder, "another replica took over");

    // Only the holder reads the stream, within its limit (DynamoDB Local has one shard).
    let mut get_records = HashMap::new();
    for r in &replicas {
        let calls = r
            .counter("itemgraph_stream_calls_total", "op=\"GetRecords\"")
            .await;
        get_records.insert(r.pid(), calls);
    }
    let readers: Vec<u32> = get_records
        .iter()
        .filter(|(_, c)| **c > 0.0)
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(
        readers,
        [second_holder],
        "only the holder reads the stream: {get_records:?}"
    );
    let per_second = get_records[&second_holder] / elapsed;
    assert!(
        per_second <= 5.0,
        "{per_second:.1} GetRecords a second on one shard"
    );
    let health = replicas[0].get("/readyz").await;
    assert!(
        health.starts_with("ready\nrelay: reachable; lease held by"),
        "{health}"
    );

    // A replica that is not the holder restarts; 1,000 subscribers resume on it at once
    // (refused ones, past the replay limit, resume again), from the fifth event.
    let quiet = replicas
        .iter()
        .position(|r| r.pid() != second_holder)
        .unwrap();
    replicas.remove(quiet).stop().await;
    let restarted = Replica::start(&endpoint, &table, &redis.url()).await;
    let from = Arc::new(cursors[0].clone());
    let resumes = (0..1000).map(|_| {
        let client = client.clone();
        let addr = restarted.addr.clone();
        let from = from.clone();
        tokio::spawn(async move {
            // As a client backs off: doubling from 100 ms, at most 2 s, with jitter.
            let mut backoff = Duration::from_millis(100);
            loop {
                let mut events = Events::open(&client, &addr, Some(&from)).await.unwrap();
                let first = events.next().await;
                if first["errors"][0]["extensions"]["code"] == "TOO_MANY_REPLAYS" {
                    let jitter = rand::random::<f64>() * 0.5 + 0.75;
                    tokio::time::sleep(backoff.mul_f64(jitter)).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    continue;
                }
                assert!(first.get("errors").is_none(), "{first:#}");
                let mut titles = vec![first["data"]["ticketEvents"]["ticket"]["title"]
                    .as_str()
                    .unwrap()
                    .to_owned()];
                titles.extend(events.titles(CHANGES - 6).await.into_iter().map(|(t, _)| t));
                return titles;
            }
        })
    });
    let resumed =
        tokio::time::timeout(Duration::from_secs(300), futures::future::join_all(resumes))
            .await
            .expect("the 1,000 resumes were served within 5 minutes");
    for titles in resumed {
        assert_eq!(titles.unwrap(), want[5..].to_vec());
    }
    let calls = restarted.counter("itemgraph_stream_calls_total", "").await;
    assert_eq!(calls, 0.0, "the resumes read no stream");

    restarted.stop().await;
    for r in replicas {
        r.stop().await;
    }
    redis.kill().await;
    common::dynamo_local::drop_table(&store).await;
}

/// The relay's Redis keys carry the table's ARN (deployments of other accounts or regions
/// sharing one Redis stay apart), or the name `--relay-prefix` gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relays_keys_carry_the_tables_arn_or_the_prefix() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("relay-keys");
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    store.create_table().await.unwrap();
    store.enable_stream().await.unwrap();
    let arn = store
        .describe_table()
        .await
        .unwrap()
        .unwrap()
        .arn
        .expect("DynamoDB names the table's ARN");
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for (extra, name) in [
        (&[][..], arn.as_str()),
        (&["--relay-prefix", "staging"][..], "staging"),
    ] {
        let replica = Replica::start_with(&endpoint, &table, &redis.url(), extra).await;
        // The holder appends where it began as soon as it holds the lease.
        let key = format!("itemgraph:{{{name}}}:changes");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let exists: bool = redis::cmd("EXISTS")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            if exists {
                break;
            }
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("itemgraph:*")
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(Instant::now() < deadline, "no {key}; there are {keys:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        replica.stop().await;
    }
    let legacy: bool = redis::cmd("EXISTS")
        .arg(format!("itemgraph:{{{table}}}:changes"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!legacy, "keys named by the table's name only");
    redis.kill().await;
    common::dynamo_local::drop_table(&store).await;
}
