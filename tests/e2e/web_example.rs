//! The Relay example (`examples/web`) against the schema and in a real browser: its
//! queries checked by `relay-compiler --validate` against `schema.graphql` (schema drift
//! breaks it), the production build, then `tests/browser/web.mjs` walking the built app
//! in Debian's Chromium against a server with `--auth jwt` and CORS for the app's origin,
//! on both engines. Screenshots are left at `target/web-<engine>-*.png`.
//!
//! `scripts/test` installs the example's packages and Chromium; outside CI a machine
//! without them skips, saying so.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::server::TestServer;
use itemgraph::auth::{issue_token, Authenticator, Claims, Role};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::{AppState, Cors, CorsOrigins, Options};
use itemgraph::live::LiveOptions;
use itemgraph::store::Store;

const JWT_SECRET: &[u8] = b"web-example-test-jwt-secret-0123456789";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `program args` in `dir`, panicking with its output when it fails.
async fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(program)
            .args(args)
            .current_dir(dir)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{program} {args:?} within 5 minutes"))
    .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The built app walked against `store` served with auth and CORS.
async fn walk(store: Arc<dyn Store>, engine: &str, chromium: &str) {
    let app_port = free_port();
    let origin = format!("http://127.0.0.1:{app_port}");
    let state = AppState::with_options(
        store,
        CursorCodec::new(b"web-example-cursor-secret"),
        Options {
            cors: Cors {
                origins: CorsOrigins::List(vec![origin.parse().unwrap()]),
                max_age: None,
            },
            // A resume replays at most this many stream records: the walk's short cut
            // (two tickets) is resumed, its long one (twelve) gets EVENTS_EXPIRED.
            live: LiveOptions {
                max_replay: 20,
                ..LiveOptions::DEFAULT
            },
            ..Options::default()
        },
    )
    .with_authenticator(Some(Authenticator::hs256(JWT_SECRET)));
    let server = TestServer::start(state).await;
    let token = issue_token(
        JWT_SECRET,
        &Claims {
            sub: Some("web-example".into()),
            org: "acme".into(),
            role: Role::Admin,
            exp: itemgraph::auth::expiring_in(Duration::from_secs(3600)),
            iat: None,
            iss: None,
            aud: None,
        },
    )
    .unwrap();
    let shots: PathBuf = root().join("target").join(format!("web-{engine}"));
    let out = tokio::time::timeout(
        Duration::from_secs(240),
        tokio::process::Command::new("node")
            .arg(root().join("tests/browser/web.mjs"))
            .arg(root().join("examples/web/dist"))
            .arg(app_port.to_string())
            .arg(server.url("/graphql"))
            .arg(&token)
            .arg(&shots)
            .env("ITEMGRAPH_CHROMIUM", chromium)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the walk finishes within 4 minutes")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{engine}:\n{stdout}\n{stderr}");
    eprintln!("{engine}:\n{stdout}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_example_validates_builds_and_works_in_a_browser() {
    let web = root().join("examples/web");
    let chromium =
        std::env::var("ITEMGRAPH_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !web.join("node_modules/relay-compiler").exists() || !Path::new(&chromium).exists() {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "CI needs examples/web/node_modules and Chromium (scripts/test installs both)"
        );
        eprintln!("skipping: run scripts/test to install the example's packages and Chromium");
        return;
    }
    run(&web, "npx", &["relay-compiler", "--validate"]).await;
    run(&web, "npm", &["run", "build"]).await;

    walk(
        Arc::new(common::engines::embedded_demo().await),
        "embedded",
        &chromium,
    )
    .await;
    if let Some(endpoint) = common::dynamo_local::endpoint().await {
        let table = common::dynamo_local::unique_table_name("web-example");
        let store = common::dynamo_local::connect(&endpoint, &table).await;
        store.create_table().await.unwrap();
        crate::common::demo::seed_demo(&store).await.unwrap();
        store.enable_stream().await.unwrap();
        walk(Arc::new(store.clone()), "dynamodb", &chromium).await;
        let _ = store.delete_table().await;
    }
}
