//! The function as `cargo lambda build` builds it, run on `cargo lambda watch` (the local
//! Lambda emulator: the Runtime API the function polls, and function URLs in front of it)
//! against DynamoDB Local, invoked over HTTP. The same query answers the same JSON as
//! `serve` on the same table.
//!
//! `scripts/test` builds the function and names it in `ITEMGRAPH_LAMBDA_BOOTSTRAP`, and the
//! emulator in `ITEMGRAPH_CARGO_LAMBDA`. Without them the test skips loudly; under `CI` it
//! fails, so a CI run cannot pass without it.

mod common;

use common::{dynamo_local, token, CURSOR_SECRET, JWT_SECRET};

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::process::{Child, Command};
use tower::ServiceExt;

use itemgraph_lambda::{Settings, LONG_LIVED_REFUSED};

/// The function name the emulator gives a function it does not start itself.
const FUNCTION: &str = "_";

/// The built function and the emulator, or `None` after a loud skip outside CI.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    match (
        var("ITEMGRAPH_LAMBDA_BOOTSTRAP"),
        var("ITEMGRAPH_CARGO_LAMBDA"),
    ) {
        (Some(bootstrap), Some(cargo_lambda)) => {
            assert!(
                bootstrap.is_file(),
                "no function at {}",
                bootstrap.display()
            );
            Some((bootstrap, cargo_lambda))
        }
        _ if std::env::var_os("CI").is_some() => panic!(
            "ITEMGRAPH_LAMBDA_BOOTSTRAP and ITEMGRAPH_CARGO_LAMBDA are unset: run scripts/test"
        ),
        _ => {
            eprintln!(
                "SKIPPED: the local Lambda runtime test needs ITEMGRAPH_LAMBDA_BOOTSTRAP and \
                 ITEMGRAPH_CARGO_LAMBDA (scripts/test sets them)"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until something listens on the port (or the process has exited).
async fn listening(port: u16, process: &mut Child, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = process.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not listen within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_built_function_answers_on_the_local_runtime_as_serve_does() {
    let Some((bootstrap, cargo_lambda)) = tools() else {
        return;
    };
    let Some(store) = dynamo_local::store("lambda-rt").await else {
        return;
    };
    let Some(endpoint) = dynamo_local::endpoint().await else {
        return;
    };
    itemgraph::chart::data::load(
        &store,
        &itemgraph::chart::builtin(),
        itemgraph::chart::data::builtin_demo(),
    )
    .await
    .expect("seeding");
    let table = itemgraph::store::Store::table_name(&store).to_owned();

    // The emulator, on loopback, without building or starting the function itself.
    let port = free_port();
    let mut emulator = Command::new(&cargo_lambda)
        .args([
            "lambda",
            "watch",
            "--only-lambda-apis",
            "--invoke-address",
            "127.0.0.1",
        ])
        .args(["--invoke-port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("cargo lambda watch");
    listening(port, &mut emulator, "cargo lambda watch").await;

    // The function, with what Lambda gives a function and what the template sets.
    let mut function = Command::new(&bootstrap)
        .env_clear()
        .env(
            "AWS_LAMBDA_RUNTIME_API",
            format!("http://127.0.0.1:{port}/.rt"),
        )
        .env("AWS_LAMBDA_FUNCTION_NAME", FUNCTION)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("ITEMGRAPH_STORE", "dynamodb")
        .env("ITEMGRAPH_ENDPOINT", &endpoint)
        .env("ITEMGRAPH_TABLE", &table)
        .env("ITEMGRAPH_SEED", "none")
        .env("ITEMGRAPH_JWT_SECRET", JWT_SECRET)
        .env("ITEMGRAPH_CURSOR_SECRET", CURSOR_SECRET)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the function");

    // `serve`'s router on the same table, to answer the same requests.
    let settings = Settings::parse(
        [
            "--store",
            "dynamodb",
            "--endpoint",
            &endpoint,
            "--table",
            &table,
            "--jwt-secret",
            JWT_SECRET,
            "--cursor-secret",
            CURSOR_SECRET,
        ]
        .map(Into::into),
    )
    .expect("settings");
    let args = &settings.serve;
    let serve = itemgraph::http::app(
        args.app_state(args.options().expect("options"))
            .await
            .expect("serve's state"),
    );
    let served = |body: Value| {
        let serve = serve.clone();
        async move {
            let request = axum::http::Request::post("/graphql")
                .header("content-type", "application/json")
                .header(
                    "authorization",
                    format!("Bearer {}", token("acme", "admin")),
                )
                .body(axum::body::Body::from(body.to_string()))
                .expect("a request");
            let response = serve.oneshot(request).await.expect("infallible");
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("a body");
            serde_json::from_slice::<Value>(&bytes).expect("JSON")
        }
    };

    let url = format!("http://127.0.0.1:{port}/lambda-url/{FUNCTION}/graphql");
    let client = reqwest::Client::new();
    let invoke = |body: Value| {
        let request = client
            .post(&url)
            .bearer_auth(token("acme", "admin"))
            .json(&body)
            .timeout(Duration::from_secs(60));
        async move {
            let response = request.send().await.expect("invoking the function");
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.expect("JSON"))
        }
    };

    let query = json!({
        "query": "query($after: String) { organization(slug: \"acme\") { name users(first: 3, after: $after) { nodes { username email role } pageInfo { endCursor hasNextPage } } } }"
    });
    let (status, first) = invoke(query.clone()).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first, served(query.clone()).await);
    assert_eq!(first["data"]["organization"]["name"], "Acme Corporation");

    // The next page, from the function's cursor, in a later invocation.
    let after = first["data"]["organization"]["users"]["pageInfo"]["endCursor"].clone();
    assert!(after.is_string(), "{first}");
    let next = json!({ "query": query["query"], "variables": { "after": after } });
    let (status, second) = invoke(next.clone()).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second, served(next).await);
    assert_ne!(second, first);

    // A subscription: refused, naming the container deployment.
    let (status, refused) = invoke(json!({
        "query": "subscription { ticketEvents(org: \"acme\") { cursor } }"
    }))
    .await;
    assert_eq!(status, 501, "{refused}");
    assert_eq!(refused["errors"][0]["message"], LONG_LIVED_REFUSED);

    assert!(
        function.try_wait().expect("the function").is_none(),
        "the function is still polling for events"
    );
    function.kill().await.ok();
    emulator.kill().await.ok();
}
