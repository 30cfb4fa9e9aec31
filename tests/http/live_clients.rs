//! Live updates over real transports, with authentication on: the `graphql-ws` and
//! `graphql-sse` npm clients (`tests/clients/live.mjs`) against a server on a loopback
//! port; and two replicas against one DynamoDB Local, where a change made through replica
//! A, or written straight with the AWS SDK, reaches a subscriber on replica B.
//!
//! `scripts/test` installs the npm clients; outside CI a machine without them skips the
//! client half, saying so.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::server::TestServer;
use itemgraph::auth::{issue_token, Authenticator, Claims, Role};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::{AppState, Options};
use itemgraph::live::LiveOptions;
use itemgraph::store::Store;
use serde_json::{json, Value};

const JWT_SECRET: &[u8] = b"live-clients-test-jwt-secret-0123456789";

fn token(org: &str, role: Role) -> String {
    let exp = itemgraph::auth::expiring_in(Duration::from_secs(3600));
    issue_token(
        JWT_SECRET,
        &Claims {
            sub: Some("live-test".into()),
            org: org.into(),
            role,
            exp,
            iat: None,
            iss: None,
            aud: None,
        },
    )
    .unwrap()
}

fn state(store: Arc<dyn Store>, live: LiveOptions) -> AppState {
    AppState::with_options(
        store,
        CursorCodec::new(b"live-clients-cursor-secret"),
        Options {
            live,
            ..Options::default()
        },
    )
    .with_authenticator(Some(Authenticator::hs256(JWT_SECRET)))
}

fn live_options() -> LiveOptions {
    LiveOptions {
        poll: Duration::from_millis(100),
        init_timeout: Duration::from_millis(700),
        keepalive: Duration::from_secs(1),
        max_per_connection: 3,
        ..LiveOptions::DEFAULT
    }
}

/// `node tests/clients/live.mjs …`, or `None` when the clients are not installed (outside
/// CI only).
async fn run_clients(args: &[String]) -> Option<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join("node_modules/graphql-ws").exists() {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "CI needs node_modules/graphql-ws (scripts/test installs it)"
        );
        eprintln!("skipping: no node_modules/graphql-ws (run scripts/test)");
        return None;
    }
    let out = tokio::time::timeout(
        Duration::from_secs(180),
        tokio::process::Command::new("node")
            .arg(root.join("tests/clients/live.mjs"))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the clients finish within 3 minutes")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    eprintln!("{stdout}");
    Some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_ws_and_graphql_sse_clients_follow_the_changes() {
    let store: Arc<dyn Store> = Arc::new(common::engines::embedded_demo().await);
    let server = TestServer::start(state(store, live_options())).await;
    run_clients(&[server.url(""), token("acme", Role::Admin)]).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_stream() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("replicas");
    let seeder = common::dynamo_local::connect(&endpoint, &table).await;
    seeder.create_table().await.unwrap();
    crate::common::demo::seed_demo(&seeder).await.unwrap();
    seeder.enable_stream().await.unwrap();
    let a = TestServer::start(state(
        Arc::new(common::dynamo_local::connect(&endpoint, &table).await),
        live_options(),
    ))
    .await;
    let b = TestServer::start(state(
        Arc::new(common::dynamo_local::connect(&endpoint, &table).await),
        live_options(),
    ))
    .await;
    let acme = token("acme", Role::Admin);

    // A subscriber on B, over Server-Sent Events.
    let mut resp = b
        .client
        .post(b.url("/graphql"))
        .header("accept", "text/event-stream")
        .bearer_auth(&acme)
        .json(&json!({ "query": r#"subscription { ticketEvents(org: "acme") { kind ticket { ticketId title } } }"# }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut buf = String::new();

    // A change through A, repeated until B's subscription is listening.
    let create = |title: String| {
        let (client, url, acme) = (a.client.clone(), a.url("/graphql"), acme.clone());
        async move {
            let r: Value = client
                .post(url)
                .bearer_auth(acme)
                .json(&json!({
                    "query": "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }",
                    "variables": { "input": { "org": "acme", "requester": "wile-e-coyote", "title": title, "body": "Via A.", "priority": "HIGH" } }
                }))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["data"]["createTicket"]["ticket"]["ticketId"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let mut seen = false;
    for i in 0..20 {
        let id = create(format!("through A {i}")).await;
        let got = tokio::time::timeout(
            Duration::from_secs(2),
            common::sse::next_event(&mut resp, &mut buf, |v| {
                v["data"]["ticketEvents"]["ticket"]["ticketId"] == id.as_str()
            }),
        )
        .await;
        if got.is_ok() {
            seen = true;
            break;
        }
    }
    assert!(
        seen,
        "a ticket created through A reached the subscriber on B"
    );

    // A write made with the AWS SDK, not through itemgraph.
    let mut t = crate::common::demo::demo_data()
        .records
        .tickets
        .into_iter()
        .find(|t| t.org == "acme")
        .unwrap();
    t.title = "Written with the AWS SDK".into();
    t.version += 1;
    let item = crate::common::records::Record::to_item(&t);
    let sdk_item: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
        serde_dynamo::Item::from(item).into();
    seeder
        .client()
        .put_item()
        .table_name(&table)
        .set_item(Some(sdk_item))
        .send()
        .await
        .unwrap();
    let e = common::sse::next_event(&mut resp, &mut buf, |v| {
        v["data"]["ticketEvents"]["ticket"]["title"] == "Written with the AWS SDK"
    })
    .await;
    assert_eq!(e["data"]["ticketEvents"]["kind"], "UPDATED");
    drop(resp);

    // The npm client on B, the mutations through A.
    run_clients(&[b.url(""), acme, "--replica".into(), a.url("")]).await;
    a.stop().await;
    b.stop().await;
    let _ = seeder.delete_table().await;
}
