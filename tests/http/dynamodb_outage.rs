//! The server under load through a DynamoDB outage: a DynamoDB Local of this test's own is
//! first frozen (SIGSTOP: connections hang, so only the timeouts end the calls), then
//! killed (SIGKILL: connections refused) for ten seconds and restarted on the same port
//! with the same data. Throughout, every response is either exactly the answer given
//! before the outage or carries `UNAVAILABLE` on the fields that needed the store (and
//! nothing else), the fields that need no store still resolve, `/readyz` follows the
//! store, and correct answers come back without restarting the server.
//!
//! Skipped loudly when DynamoDB Local cannot be had (java or `npm ci` missing), and a
//! failure under `CI`, like the other DynamoDB suites.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::dynamo_local::{self, OwnedDynamoLocal};
use common::server::TestServer;
use itemgraph::graphql::CursorCodec;
use itemgraph::http::AppState;
use itemgraph::store::dynamo::{DynamoOptions, DynamoStore};
use itemgraph::store::Store;
use serde_json::{json, Value};

/// Concurrent clients, each sending the probes one after another in a loop.
const CLIENTS: usize = 8;
/// How long DynamoDB Local hangs (SIGSTOP) in the first outage.
const FREEZE: Duration = Duration::from_secs(4);
/// How long DynamoDB Local is gone (SIGKILL, then restarted) in the second.
const OUTAGE: Duration = Duration::from_secs(10);
/// Bound on every wait for something that must happen (an error to show, answers to come
/// back): generous, since a loaded CI machine restarts a JVM slowly. Never a threshold.
const PATIENCE: Duration = Duration::from_secs(30);

/// Short store timeouts, so a hung store becomes `UNAVAILABLE` within seconds and well
/// inside the request deadline (10 s), which would otherwise answer `TIMEOUT` for the
/// whole request instead of failing only the fields that need the store.
fn serving_options(endpoint: &str, table: &str) -> DynamoOptions {
    DynamoOptions {
        table: table.to_owned(),
        endpoint: Some(endpoint.to_owned()),
        region: Some("us-east-1".into()),
        connect_timeout: Duration::from_millis(500),
        operation_attempt_timeout: Duration::from_millis(1500),
        operation_timeout: Duration::from_secs(4),
        max_attempts: 3,
        stream: false,
    }
}

/// One query the clients send, with the answer captured before any outage.
struct Probe {
    name: &'static str,
    query: String,
    /// Whether no field of it needs the store: it must answer correctly throughout.
    store_free: bool,
}

fn probes() -> Vec<Probe> {
    let demo = crate::common::demo::demo_data();
    let ticket = &demo.tickets[0];
    let probe = |name, query: &str, store_free| Probe {
        name,
        query: query.to_owned(),
        store_free,
    };
    vec![
        probe(
            "org-with-users",
            r#"{ organization(slug: "acme") { name users(first: 3) { totalCount nodes { username role } } } }"#,
            false,
        ),
        probe(
            "user-tickets-with-assignees",
            r#"{ user(org: "acme", username: "wile-e-coyote") { name tickets(first: 5) { nodes { title status assignee { name } } } } }"#,
            false,
        ),
        probe(
            "ticket-with-references",
            &format!(
                r#"{{ ticket(id: "{}") {{ title requester {{ name }} organization {{ name }} }} }}"#,
                ticket.ticket_id
            ),
            false,
        ),
        probe(
            "nodes",
            r#"{ nodes(ids: ["T3JnYW5pemF0aW9uOmFjbWU", "VXNlcjphY21lOndpbGUtZS1jb3lvdGU"]) { id ... on User { username } ... on Organization { name } } }"#,
            false,
        ),
        // A field that needs the store beside one that needs none: the latter must
        // survive the former's failure.
        probe(
            "mixed",
            r#"{ __typename organization(slug: "globex") { name plan } }"#,
            false,
        ),
        probe("store-free", "{ __typename }", true),
    ]
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Correct,
    /// Every error is `UNAVAILABLE` on a field, and what data there is matches the answer.
    Unavailable,
    /// Anything else: the test fails on it.
    Wrong(String),
}

#[derive(Debug)]
struct Record {
    at: Instant,
    probe: usize,
    outcome: Outcome,
}

/// Whether `partial` is `known` with some values nulled, as a failed field leaves them:
/// every value present is exactly the known one.
fn consistent(partial: &Value, known: &Value) -> bool {
    match (partial, known) {
        (Value::Null, _) => true,
        (Value::Object(p), Value::Object(k)) => {
            p.len() == k.len()
                && p.iter()
                    .all(|(key, v)| k.get(key).is_some_and(|kv| consistent(v, kv)))
        }
        (Value::Array(p), Value::Array(k)) => {
            p.len() == k.len() && p.iter().zip(k).all(|(p, k)| consistent(p, k))
        }
        (p, k) => p == k,
    }
}

fn classify(probe: &Probe, known: &Value, status: u16, body: &Value) -> Outcome {
    if status != 200 {
        return Outcome::Wrong(format!("status {status}: {body}"));
    }
    if body == known {
        return Outcome::Correct;
    }
    let Some(errors) = body["errors"].as_array().filter(|e| !e.is_empty()) else {
        return Outcome::Wrong(format!("a different answer without errors: {body}"));
    };
    let field_unavailable = |e: &Value| {
        e["extensions"]["code"] == "UNAVAILABLE"
            && e["path"].as_array().is_some_and(|p| !p.is_empty())
    };
    if !errors.iter().all(field_unavailable) {
        return Outcome::Wrong(format!("an error other than a field's UNAVAILABLE: {body}"));
    }
    let Some(data) = body.get("data") else {
        return Outcome::Wrong(format!("no data beside field errors: {body}"));
    };
    if !consistent(data, &known["data"]) {
        return Outcome::Wrong(format!("data that is not the known answer's: {body}"));
    }
    if probe.store_free || (probe.name == "mixed" && data["__typename"] != "Query") {
        return Outcome::Wrong(format!("a field that needs no store failed: {body}"));
    }
    Outcome::Unavailable
}

/// Sends one probe; a transport failure (refused, reset, no answer in time) is `Wrong`.
async fn send(client: &reqwest::Client, url: &str, probe: &Probe) -> Result<(u16, Value), String> {
    let resp = client
        .post(url)
        .json(&json!({ "query": probe.query }))
        .send()
        .await
        .map_err(|e| format!("transport: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.map_err(|e| format!("transport: {e}"))?;
    let body = serde_json::from_str(&text).map_err(|_| format!("not JSON: {text}"))?;
    Ok((status, body))
}

/// Runs `check` every 100 ms until it holds; panics with `what` after [`PATIENCE`].
async fn eventually<F, Fut>(what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{what}: not within {}s",
            PATIENCE.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn readyz(client: &reqwest::Client, server: &TestServer) -> Option<u16> {
    let resp = client.get(server.url("/readyz")).send().await.ok()?;
    Some(resp.status().as_u16())
}

/// The shared log of what the clients saw.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Record>>>);

impl Log {
    fn push(&self, record: Record) {
        // Never held across an await.
        self.0.lock().unwrap().push(record);
    }

    /// Whether every probe of `which` has an outcome `want` after `since`.
    fn every_probe_has(&self, probes: &[Probe], since: Instant, want: &Outcome) -> bool {
        let log = self.0.lock().unwrap();
        (0..probes.len()).all(|i| {
            log.iter()
                .any(|r| r.probe == i && r.at > since && &r.outcome == want)
        })
    }

    fn any_since(&self, since: Instant, want: &Outcome) -> bool {
        let log = self.0.lock().unwrap();
        log.iter().any(|r| r.at > since && &r.outcome == want)
    }

    /// Responses to the probes that need the store, between `from` and `to`.
    fn count(&self, probes: &[Probe], from: Instant, to: Instant, want: &Outcome) -> usize {
        let log = self.0.lock().unwrap();
        log.iter()
            .filter(|r| !probes[r.probe].store_free)
            .filter(|r| r.at > from && r.at <= to && &r.outcome == want)
            .count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_server_rides_out_a_frozen_then_killed_dynamodb_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut local) = OwnedDynamoLocal::start(dir.path()) else {
        return;
    };
    let endpoint = local.endpoint();
    let table = dynamo_local::unique_table_name("fault");

    // Table and demo data through a store with the harness's generous timeouts.
    let setup = dynamo_local::connect(&endpoint, &table).await;
    assert!(setup.create_table().await.unwrap());
    crate::common::demo::seed_demo(&setup).await.unwrap();

    let store = DynamoStore::connect(
        serving_options(&endpoint, &table),
        itemgraph::chart::builtin().table_schema(),
    )
    .await;
    let server = TestServer::start(AppState::new(
        Arc::new(store),
        CursorCodec::new("fault tolerance test secret"),
    ))
    .await;
    // Bounded, so a server that stopped answering fails the test instead of hanging it.
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let url = server.url("/graphql");

    let probes = Arc::new(probes());
    let mut known = Vec::new();
    for probe in probes.iter() {
        let (status, body) = send(&client, &url, probe).await.unwrap();
        assert_eq!(status, 200, "{}: {body:#}", probe.name);
        assert!(body.get("errors").is_none(), "{}: {body:#}", probe.name);
        assert!(body["data"].is_object(), "{}: {body:#}", probe.name);
        known.push(body);
    }
    assert_eq!(
        known[0]["data"]["organization"]["name"], "Acme Corporation",
        "the demo data is served"
    );
    let known = Arc::new(known);

    let log = Log::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load_start = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (client, url, probes, known, log, stop) = (
                client.clone(),
                url.clone(),
                probes.clone(),
                known.clone(),
                log.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                // Each client starts at another probe, so all are in flight at once.
                let mut i = c % probes.len();
                while !stop.load(Ordering::Relaxed) {
                    let probe = &probes[i];
                    let outcome = match send(&client, &url, probe).await {
                        Ok((status, body)) => classify(probe, &known[i], status, &body),
                        Err(e) => Outcome::Wrong(e),
                    };
                    log.push(Record {
                        at: Instant::now(),
                        probe: i,
                        outcome,
                    });
                    i = (i + 1) % probes.len();
                }
            })
        })
        .collect();

    eventually("every probe answers correctly under load", || async {
        log.every_probe_has(&probes, load_start, &Outcome::Correct)
    })
    .await;

    // Outage 1: a hung store. Only the attempt and operation timeouts end its calls.
    let frozen_at = Instant::now();
    local.freeze();
    eventually("UNAVAILABLE while DynamoDB Local is frozen", || async {
        log.any_since(frozen_at, &Outcome::Unavailable)
    })
    .await;
    eventually("/readyz 503 while DynamoDB Local is frozen", || async {
        readyz(&client, &server).await == Some(503)
    })
    .await;
    tokio::time::sleep_until((frozen_at + FREEZE).into()).await;
    local.resume();
    let resumed_at = Instant::now();
    let freeze_recovery = eventually("correct answers after DynamoDB Local resumes", || async {
        log.every_probe_has(&probes, resumed_at, &Outcome::Correct)
    })
    .await;

    // Outage 2: the store is gone; connections are refused until it is back.
    let killed_at = Instant::now();
    local.kill();
    eventually("/readyz 503 while DynamoDB Local is down", || async {
        readyz(&client, &server).await == Some(503)
    })
    .await;
    tokio::time::sleep_until((killed_at + OUTAGE).into()).await;
    let restarting_at = Instant::now();
    local
        .restart()
        .unwrap_or_else(|e| panic!("restarting DynamoDB Local: {e}"));
    let listening_at = Instant::now();
    let kill_recovery = eventually("correct answers after DynamoDB Local restarts", || async {
        log.every_probe_has(&probes, listening_at, &Outcome::Correct)
    })
    .await;
    eventually("/readyz 200 after DynamoDB Local restarts", || async {
        readyz(&client, &server).await == Some(200)
    })
    .await;

    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    let end = Instant::now();

    let records = std::mem::take(&mut *log.0.lock().unwrap());
    let wrong: Vec<_> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Wrong(_)))
        .take(5)
        .map(|r| format!("{}: {:?}", probes[r.probe].name, r.outcome))
        .collect();
    assert!(
        wrong.is_empty(),
        "responses neither correct nor UNAVAILABLE: {wrong:#?}"
    );
    let log = Log(Arc::new(Mutex::new(records)));
    let unavailable_down = log.count(&probes, killed_at, restarting_at, &Outcome::Unavailable);
    assert!(
        unavailable_down > 0,
        "no UNAVAILABLE while DynamoDB Local was down"
    );
    let mixed = probes.iter().position(|p| p.name == "mixed").unwrap();
    assert!(
        log.0.lock().unwrap().iter().any(|r| r.probe == mixed
            && r.outcome == Outcome::Unavailable
            && r.at > killed_at
            && r.at <= restarting_at),
        "the mixed query never answered partially while the store was down"
    );
    let phases = [
        ("healthy", load_start, frozen_at),
        ("frozen", frozen_at, resumed_at),
        ("after resume", resumed_at, killed_at),
        ("killed", killed_at, restarting_at),
        ("restarting", restarting_at, listening_at),
        ("after restart", listening_at, end),
    ];
    for (phase, from, to) in phases {
        eprintln!(
            "{phase:>13}: {:>5.1}s, {:>5} correct, {:>5} UNAVAILABLE",
            (to - from).as_secs_f64(),
            log.count(&probes, from, to, &Outcome::Correct),
            log.count(&probes, from, to, &Outcome::Unavailable),
        );
    }
    eprintln!(
        "correct answers for every probe {:.1}s after the resume, {:.1}s after the restarted \
         DynamoDB Local listened ({:.1}s to restart it)",
        freeze_recovery.as_secs_f64(),
        kill_recovery.as_secs_f64(),
        (listening_at - restarting_at).as_secs_f64(),
    );

    server.stop().await;
    drop(local);
}
