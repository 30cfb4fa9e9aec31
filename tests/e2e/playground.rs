//! The playground in a real browser: Debian's Chromium driven by `puppeteer-core`
//! (`tests/browser/playground.mjs`) against a server on a loopback port, with every
//! request to another host blocked. Zero requests may leave the origin; a nested query run
//! by the page's own button must show its data; the DynamoDB panel must list as many
//! requests as the response's trace; no console error, no CSP violation. The screenshot
//! is left at `target/playground.png`. With authentication on, the headers pane opens with
//! the `Authorization` placeholder and a query without a token shows a readable 401
//! (`target/playground-auth.png`). With introspection off the page still runs a typed
//! query (`target/playground-no-introspection.png`). Serving a chart of its own (the store
//! locator of `examples/charts/`), the page holds that chart's tabs and runs its first
//! (`target/playground-chart.png`), and the access-pattern charts `repo-stars` and
//! `arcade-awards` likewise (`target/playground-{name}.png`). For every chart, the Chart panel shows every entity and
//! access pattern of the chart served, and a pattern's link opens the tab that runs it
//! (`target/playground-chart-panel.png`, `target/playground-chart-chart-panel.png`).
//!
//! `scripts/test` installs Chromium and `puppeteer-core` when they are missing; outside CI
//! (`CI` unset) a machine without them skips the test, saying so.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::server::TestServer;
use itemgraph::auth::Authenticator;
use itemgraph::graphql::CursorCodec;
use itemgraph::http::AppState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_works_offline_and_shows_the_dynamodb_requests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chromium =
        std::env::var("ITEMGRAPH_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let driver = root.join("node_modules/puppeteer-core");
    if !Path::new(&chromium).exists() || !driver.exists() {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "CI needs Chromium at {chromium} and node_modules/puppeteer-core (scripts/test installs both)"
        );
        eprintln!("skipping: no Chromium at {chromium} or no puppeteer-core (run scripts/test)");
        return;
    }
    let store: Arc<dyn itemgraph::store::Store> = Arc::new(common::engines::embedded_demo().await);
    // Default; authentication on; introspection off (typed queries still run).
    for (auth, introspection) in [(false, true), (true, true), (false, false)] {
        let mut options = itemgraph::http::Options::default();
        options.limits.introspection = introspection;
        let mut state = AppState::with_options(
            store.clone(),
            CursorCodec::new(b"playground-test-cursor-secret"),
            options,
        );
        if auth {
            state = state.with_authenticator(Some(Authenticator::hs256(
                b"playground-test-jwt-secret-0123456789",
            )));
        }
        let server = TestServer::start(state).await;
        let name = match (auth, introspection) {
            (true, _) => "playground-auth.png",
            (false, false) => "playground-no-introspection.png",
            (false, true) => "playground.png",
        };
        let screenshot = root.join("target").join(name);
        let mut node = tokio::process::Command::new("node");
        node.arg(root.join("tests/browser/playground.mjs"))
            .arg(server.url("/"))
            .arg(&screenshot)
            .env("ITEMGRAPH_CHROMIUM", &chromium)
            .kill_on_drop(true);
        if auth {
            node.arg("--auth");
        }
        if !introspection {
            node.arg("--no-introspection");
        }
        let out = tokio::time::timeout(std::time::Duration::from_secs(180), node.output())
            .await
            .expect("the browser test finishes within 3 minutes")
            .expect("node runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "auth {auth}, introspection {introspection}: {stdout}\n{stderr}"
        );
        if !auth {
            assert!(stdout.contains("\"requests\":1"), "{stdout}");
        }
        assert!(screenshot.exists());
        server.stop().await;
    }

    // A chart of its own: its tabs, written from its patterns, and the first one run; the
    // access-pattern charts too (a Scan, a bulk delete, map entries, links, a collection
    // of several kinds in their Chart panels).
    for name in ["store-locator", "repo-stars", "arcade-awards"] {
        let chart =
            itemgraph::config::load_chart(Some(&root.join(format!("examples/charts/{name}.toml"))))
                .expect("the example chart");
        let store: Arc<dyn itemgraph::store::Store> = Arc::new(
            itemgraph::store::embedded::EmbeddedStore::in_memory(
                &chart.table.name,
                chart.table_schema(),
            )
            .unwrap(),
        );
        store.create_table().await.unwrap();
        itemgraph::chart::samples::seed(store.as_ref(), &chart)
            .await
            .unwrap();
        // A tab per pattern a root field reaches, reads and writes (a write's tab changes
        // the table only when run); the store locator's reach every pattern.
        let tabs = itemgraph::graphql::examples(&chart).len();
        if name == "store-locator" {
            assert_eq!(tabs, chart.patterns.len());
        }
        let state = AppState::with_options(
            store,
            CursorCodec::new(b"playground-test-cursor-secret"),
            itemgraph::http::Options::default(),
        )
        .with_chart(chart)
        .unwrap();
        let server = TestServer::start(state).await;
        let screenshot = if name == "store-locator" {
            root.join("target/playground-chart.png")
        } else {
            root.join(format!("target/playground-{name}.png"))
        };
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(180),
            tokio::process::Command::new("node")
                .arg(root.join("tests/browser/playground.mjs"))
                .arg(server.url("/"))
                .arg(&screenshot)
                .args(["--chart", &tabs.to_string()])
                .env("ITEMGRAPH_CHROMIUM", &chromium)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("the browser test finishes within 3 minutes")
        .expect("node runs");
        assert!(
            out.status.success(),
            "{name}'s playground: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(screenshot.exists());
        server.stop().await;
    }
}
