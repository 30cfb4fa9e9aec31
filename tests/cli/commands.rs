//! The `itemgraph` binary as a user runs it: `serve` with no store flags starts on the
//! embedded engine with the demo data and keeps it across a restart; `create-table` and
//! `seed` load the same demo data into DynamoDB Local.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::value::canonicalize_item;
use itemgraph::store::{BatchGet, Item, Store};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");

/// A running `itemgraph serve`, stopped (SIGTERM) when the test says so or killed on drop.
struct Server {
    child: Child,
    addr: String,
}

/// Strips ANSI colour sequences from a log line.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads a starting `serve`'s log (its stdout, colourless) until the line saying where it
/// listens: that address, and the lines up to it. The rest of the log is drained in the
/// background, so the server never blocks on a full pipe.
pub(crate) async fn listening(child: &mut Child) -> (String, Vec<String>) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let addr = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read log") {
            let line = plain(&line);
            seen.push(line.clone());
            if let Some(rest) = line
                .split("addr=")
                .nth(1)
                .filter(|_| line.contains("listening"))
            {
                return rest.split_whitespace().next().unwrap().to_string();
            }
        }
        panic!("itemgraph exited before listening: {seen:#?}");
    })
    .await
    .expect("itemgraph did not start listening within 60 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (addr, seen)
}

async fn start_server(dir: &Path, extra: &[&str]) -> (Server, Vec<String>) {
    let data = dir.join("itemgraph.redb");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .args(extra)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start itemgraph");
    let (addr, seen) = listening(&mut child).await;
    (Server { child, addr }, seen)
}

impl Server {
    async fn get(&self, path: &str) -> (u16, String) {
        let resp = reqwest::get(format!("http://{}{path}", self.addr))
            .await
            .expect("GET");
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// SIGTERM, then wait for a clean exit.
    async fn stop(mut self) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("itemgraph did not stop within 30 s of SIGTERM")
            .unwrap();
        assert!(exit.success(), "itemgraph exited with {exit}");
    }
}

/// Reads every demo item's key back from a store, in chunks of 100.
async fn read_back(store: &dyn Store, wanted: &[Item]) -> Vec<Item> {
    let schema = itemgraph::chart::builtin().table_schema();
    let mut out = Vec::new();
    for chunk in wanted.chunks(100) {
        let keys = chunk.iter().map(|i| schema.key_of(i).unwrap()).collect();
        out.extend(
            store
                .batch_get_item(BatchGet {
                    keys,
                    consistent_read: true,
                })
                .await
                .unwrap(),
        );
    }
    sorted(out)
}

fn sorted(items: Vec<Item>) -> Vec<Item> {
    let mut items: Vec<Item> = items.into_iter().map(canonicalize_item).collect();
    items.sort_by_key(|i| format!("{:?}|{:?}", i.get("PK"), i.get("SK")));
    items
}

/// `itemgraph serve` with only a data path loads the demo data into the embedded engine,
/// answers /healthz and /readyz, stops cleanly on SIGTERM, and after a restart still has
/// every item exactly as before (and does not seed twice).
#[tokio::test]
async fn serve_keeps_its_embedded_data_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let demo = sorted(crate::common::demo::demo_items());

    let (server, log) = start_server(dir.path(), &[]).await;
    assert!(
        log.iter().any(|l| l.contains("demo data loaded")),
        "{log:#?}"
    );
    assert_eq!(server.get("/healthz").await, (200, "ok".to_string()));
    assert_eq!(server.get("/readyz").await.0, 200);
    server.stop().await;

    let store = EmbeddedStore::open(
        &dir.path().join("itemgraph.redb"),
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
    )
    .unwrap();
    assert_eq!(
        read_back(&store, &demo).await,
        demo,
        "the demo data as written"
    );
    drop(store);

    // Restarted with a page cache of 1 MiB: the pages come from the file through the
    // operating system, the same data.
    let (server, log) = start_server(dir.path(), &["--cache-mib", "1"]).await;
    assert_eq!(
        server
            .get("/graphql?query=%7Borganization(slug:%22acme%22)%7Bname%7D%7D")
            .await,
        (
            200,
            r#"{"data":{"organization":{"name":"Acme Corporation"}}}"#.to_string()
        )
    );
    assert!(
        log.iter().any(|l| l.contains("demo data already present")),
        "{log:#?}"
    );
    server.stop().await;
    let store = EmbeddedStore::open(
        &dir.path().join("itemgraph.redb"),
        "itemgraph",
        itemgraph::chart::builtin().table_schema(),
    )
    .unwrap();
    assert_eq!(
        read_back(&store, &demo).await,
        demo,
        "the same data after a restart"
    );
    let count = store.describe_table().await.unwrap().unwrap().item_count;
    assert_eq!(count, Some(demo.len() as u64), "nothing seeded twice");
}

/// A page cache of no size is refused before anything is opened, naming the option.
#[tokio::test]
async fn a_cache_of_no_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("itemgraph.redb");
    let out = Command::new(BIN)
        .args([
            "serve",
            "--cache-mib",
            "0",
            "--listen",
            "127.0.0.1:0",
            "--data",
        ])
        .arg(&data)
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--cache-mib"), "{stderr}");
    assert!(!data.exists(), "nothing was created");
}

/// `create-table` then `seed` against DynamoDB Local load exactly the demo data.
#[tokio::test]
async fn create_table_and_seed_load_the_demo_data_into_dynamodb_local() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("cli-seed");
    for cmd in ["create-table", "seed"] {
        let out = Command::new(BIN)
            .args([
                cmd,
                "--store",
                "dynamodb",
                "--endpoint",
                &endpoint,
                "--region",
                "us-east-1",
                "--table",
                &table,
            ])
            .env("NO_COLOR", "1")
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    let demo = sorted(crate::common::demo::demo_items());
    assert_eq!(read_back(&store, &demo).await, demo);
    common::dynamo_local::drop_table(&store).await;
}

/// A user's own DynamoDB table is never seeded by accident: `serve --store dynamodb`
/// with no seed flag leaves a table holding one item of theirs exactly as it was, and
/// even `seed`/`--seed demo` refuse a table that holds other items; `seed --force` seeds
/// it without overwriting their item.
#[tokio::test]
async fn a_dynamodb_table_in_use_is_never_seeded_silently_or_overwritten() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("cli-noseed");
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    store.create_table().await.unwrap();
    let theirs: Item = serde_json::from_value(serde_json::json!({
        "PK": { "S": "ORG#acme" }, "SK": { "S": "ORG#acme" }, "theirs": { "S": "yes" }
    }))
    .unwrap();
    store
        .put_item(itemgraph::store::Put::new(theirs.clone()))
        .await
        .unwrap();
    let all = |store: itemgraph::store::dynamo::DynamoStore| async move {
        let page = store
            .scan(itemgraph::store::Scan {
                limit: None,
                start: None,
                consistent_read: true,
                segment: None,
                ..Default::default()
            })
            .await
            .unwrap();
        sorted(page.items)
    };
    let dynamo = [
        "--store",
        "dynamodb",
        "--endpoint",
        &endpoint,
        "--region",
        "us-east-1",
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut serve = dynamo.to_vec();
    serve.extend(["--table", &table, "--auth", "off"]);
    let (server, log) = start_server(dir.path(), &serve).await;
    server.stop().await;
    assert_eq!(all(store.clone()).await, vec![theirs.clone()], "{log:#?}");

    // Asked for, the demo data still goes only into an empty table.
    serve.extend(["--seed", "demo"]);
    let (server, log) = start_server(dir.path(), &serve).await;
    server.stop().await;
    assert_eq!(all(store.clone()).await, vec![theirs.clone()]);
    assert!(log.iter().any(|l| l.contains("not seeding")), "{log:#?}");

    let mut seed = vec!["seed"];
    seed.extend(dynamo);
    seed.extend(["--table", &table]);
    let out = run_seed(&seed).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds other items"));
    assert_eq!(all(store.clone()).await, vec![theirs.clone()]);

    // --force seeds, but a demo key that is taken (their ORG#acme) is never overwritten.
    seed.push("--force");
    let out = run_seed(&seed).await;
    assert!(!out.status.success());
    let items = all(store.clone()).await;
    assert!(items.contains(&theirs), "their item is as it was");
    common::dynamo_local::drop_table(&store).await;
}

/// `itemgraph token` prints a token that a server started with the same `--jwt-secret`
/// accepts, for its organization only; without a token that server answers 401.
#[tokio::test]
async fn token_prints_a_token_the_server_accepts() {
    const SECRET: &str = "cli-test-secret-cli-test-secret-0";
    let out = Command::new(BIN)
        .args(["token", "--org", "acme", "--role", "admin", "--sub", "wile"])
        .env("ITEMGRAPH_JWT_SECRET", SECRET)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start_server(dir.path(), &["--jwt-secret", SECRET]).await;
    assert!(
        !log.iter().any(|l| l.contains("authentication is off")),
        "{log:#?}"
    );
    let client = reqwest::Client::new();
    let url = format!("http://{}/graphql", server.addr);
    let query = serde_json::json!({
        "query": r#"{ acme: organization(slug: "acme") { name } globex: organization(slug: "globex") { name } }"#
    });
    let body: serde_json::Value = client
        .post(&url)
        .json(&query)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        body,
        serde_json::json!({ "data": { "acme": { "name": "Acme Corporation" }, "globex": null } })
    );
    let status = client
        .post(&url)
        .json(&query)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 401);
    server.stop().await;

    // A bad organization is refused by the command itself.
    let out = Command::new(BIN)
        .args(["token", "--org", "Not A Slug", "--jwt-secret", SECRET])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
}

/// A DynamoDB table is never served without auth by accident: without a key or an
/// explicit `--auth off`, `serve --store dynamodb` refuses to start, before touching the
/// store. The embedded demo store serves with auth off and says so in its log.
#[tokio::test]
async fn dynamodb_without_auth_refuses_to_start() {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN)
            .args([
                "serve",
                "--store",
                "dynamodb",
                "--endpoint",
                "http://127.0.0.1:9",
                "--region",
                "us-east-1",
                "--listen",
                "127.0.0.1:0",
            ])
            .env("NO_COLOR", "1")
            .env_remove("ITEMGRAPH_JWT_SECRET")
            .env_remove("ITEMGRAPH_AUTH")
            .output(),
    )
    .await
    .expect("refuses at once")
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to serve a DynamoDB table without authentication"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start_server(dir.path(), &["--in-memory"]).await;
    assert!(
        log.iter().any(|l| l.contains("authentication is off")),
        "{log:#?}"
    );
    server.stop().await;
}

/// `--metrics-listen` moves `GET /metrics` to a listener of its own: the API's listener no
/// longer has the route, the metrics one has nothing else of the API.
#[tokio::test]
async fn metrics_listen_serves_metrics_apart_from_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let (server, log) = start_server(
        dir.path(),
        &["--in-memory", "--metrics-listen", "127.0.0.1:0"],
    )
    .await;
    let metrics_addr = log
        .iter()
        .find(|l| l.contains("metrics served"))
        .and_then(|l| l.split("addr=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no metrics address in {log:#?}"))
        .to_owned();
    let client = reqwest::Client::new();
    let body: serde_json::Value = client
        .post(format!("http://{}/graphql", server.addr))
        .json(&serde_json::json!({ "query": "query Probe { organization(slug: \"acme\") { name } }" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["data"]["organization"]["name"], "Acme Corporation");
    assert_eq!(server.get("/metrics").await.0, 404);
    let get = |path: &str| {
        let url = format!("http://{metrics_addr}{path}");
        async move {
            let resp = reqwest::get(url).await.unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    let (status, text) = get("/metrics").await;
    assert_eq!(status, 200);
    assert!(
        text.contains(r#"itemgraph_graphql_requests_total{operation="Probe""#),
        "{text}"
    );
    assert_eq!(get("/graphql").await.0, 404);
    server.stop().await;
}

/// Runs `itemgraph` with `args` to completion.
async fn run_seed(args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .await
        .unwrap()
}

/// Serving a table that already holds items (one being adopted) writes nothing to it: the
/// chart's samples, loaded into a table of its own by default on the embedded engine, are
/// not put into it.
#[tokio::test]
async fn serving_a_table_that_holds_items_writes_no_samples_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chart = root.join("examples/charts/auth-sessions.toml");
    let model = root.join("examples/models/sessions.json");
    let seeded = std::process::Command::new(BIN)
        .args(["seed", "--chart"])
        .arg(&chart)
        .arg("--workbench")
        .arg(&model)
        .arg("--data")
        .arg(dir.path().join("itemgraph.redb"))
        .output()
        .unwrap();
    assert!(
        seeded.status.success(),
        "{}",
        String::from_utf8_lossy(&seeded.stderr)
    );
    let (server, log) = start_server(
        dir.path(),
        &["--auth", "off", "--chart", chart.to_str().unwrap()],
    )
    .await;
    assert!(
        log.iter()
            .any(|l| l.contains("the table holds items: not seeding the chart's samples into it")),
        "{log:#?}"
    );
    let ask = |token: &str| serde_json::json!({ "query": format!(r#"{{ session(token: "{token}") {{ username }} }}"#) });
    let client = reqwest::Client::new();
    // One of the chart's samples: not written.
    for (token, want) in [("01JE0000000000000000000001", serde_json::Value::Null)] {
        let r: serde_json::Value = client
            .post(format!("http://{}/graphql", server.addr))
            .json(&ask(token))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(r["data"]["session"], want, "{r:#}");
    }
    server.stop().await;
}

/// A table served as a chart says it is: `serve` on a DynamoDB table keyed otherwise (a
/// session store's `SessionToken` alone, under the corner shop's chart of `PK` and `SK`)
/// refuses to start, naming the difference, before answering anything.
#[tokio::test]
async fn a_table_keyed_otherwise_than_its_chart_is_refused_at_start() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = common::dynamo_local::unique_table_name("cli-shape");
    let run = |args: Vec<String>| {
        Command::new(BIN)
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("ITEMGRAPH_JWT_SECRET")
            .output()
    };
    let store = |chart: &str| -> Vec<String> {
        [
            "--chart",
            root.join(chart).to_str().unwrap(),
            "--store",
            "dynamodb",
            "--endpoint",
            &endpoint,
            "--region",
            "us-east-1",
            "--table",
            &table,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };
    let mut create = vec!["create-table".to_owned()];
    create.extend(store("examples/charts/auth-sessions.toml"));
    let out = run(create).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut serve = vec![
        "serve".to_owned(),
        "--auth".to_owned(),
        "off".to_owned(),
        "--listen".to_owned(),
        "127.0.0.1:0".to_owned(),
    ];
    serve.extend(store("examples/charts/corner-shop.toml"));
    let out = tokio::time::timeout(Duration::from_secs(60), run(serve))
        .await
        .expect("refused at once")
        .unwrap();
    assert!(!out.status.success());
    let stderr = plain(&format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
    assert!(
        stderr.contains(
            "the table is keyed by partition key `SessionToken` (S); the chart says partition key `PK` (S), sort key `SK` (S)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("index GSI1: the table has none"),
        "{stderr}"
    );
    // `check` says so too, and reads no item against the chart.
    let mut check = vec!["check".to_owned()];
    check.extend(store("examples/charts/corner-shop.toml"));
    let out = run(check).await.unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("table: the table is keyed by partition key `SessionToken` (S);"),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("its items were not read"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    common::dynamo_local::drop_table(&store).await;
}

/// A chart of two tables (`examples/charts/box-office.toml`) is made, seeded and checked
/// table by table: `create-table` creates both, `seed` puts each sample in its entity's
/// table, `check` reads both clean and reports a booking gone wrong in the second; on
/// DynamoDB Local each table under a name of its own (`--table`, `--table-name`). A
/// `--table-name` of a table the chart lacks is refused.
#[tokio::test]
async fn a_chart_of_two_tables_is_created_seeded_and_checked_table_by_table() {
    use itemgraph::store::open::open_tables;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chart_path = root.join("examples/charts/box-office.toml");
    let chart = itemgraph::config::load_chart(Some(&chart_path)).unwrap();
    let run = |args: Vec<String>| {
        Command::new(BIN)
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("ITEMGRAPH_JWT_SECRET")
            .output()
    };
    let ok = |out: &std::process::Output| {
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let with = |cmd: &str, store: &[String]| -> Vec<String> {
        let mut v = vec![
            cmd.to_owned(),
            "--chart".to_owned(),
            chart_path.to_str().unwrap().to_owned(),
        ];
        v.extend(store.iter().cloned());
        v
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("box.redb");
    let engines = common::engines::box_office_tables(dir.path()).await;
    for (store_args, engine, bookings) in engines {
        ok(&run(with("create-table", &store_args)).await.unwrap());
        ok(&run(with("seed", &store_args)).await.unwrap());
        let out = run(with("check", &store_args)).await.unwrap();
        ok(&out);
        // Each sample in its entity's table: three bookings in theirs, none in the first.
        let store = open_tables(
            &engine,
            chart.table_schema(),
            vec![(bookings.clone(), chart.schema_of(1))],
        )
        .await
        .unwrap();
        let sibling = store.sibling(&bookings).expect("the bookings table");
        let in_bookings = itemgraph::store::scan_all(sibling.as_ref()).await.unwrap();
        assert_eq!(in_bookings.len(), 3, "{in_bookings:?}");
        assert!(in_bookings.iter().all(|i| i.contains_key("BookingNo")));
        let in_first = itemgraph::store::scan_all(store.as_ref()).await.unwrap();
        assert!(
            in_first.iter().all(|i| !i.contains_key("BookingNo")),
            "{in_first:?}"
        );
        // A booking of an event that is not there: named by the check of both tables.
        let mut stray = in_bookings[0].clone();
        for number in ["BookingNo", "bookingNo"] {
            stray.insert(
                number.into(),
                itemgraph::store::AttributeValue::N("9999".into()),
            );
        }
        stray.insert(
            "eventId".into(),
            itemgraph::store::AttributeValue::S("no-such-event".into()),
        );
        stray.insert(
            "EventRef".into(),
            itemgraph::store::AttributeValue::S("EVENT#harbour-hall#no-such-event".into()),
        );
        sibling
            .put_item(itemgraph::store::Put::new(stray))
            .await
            .unwrap();
        drop((store, sibling));
        let out = run(with("check", &store_args)).await.unwrap();
        assert!(!out.status.success());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("no-such-event"), "{stdout}");
        common::engines::drop_box_office_tables(&engine, &bookings, &chart).await;
    }
    // A name the chart does not have.
    let out = run(with(
        "check",
        &[
            "--data".to_owned(),
            data.to_str().unwrap().to_owned(),
            "--table-name".to_owned(),
            "tickets=prod-tickets".to_owned(),
        ],
    ))
    .await
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "the chart has no table `tickets` (its tables: box-office, box-office-bookings)"
        ),
        "{stderr}"
    );
}
