//! Bulk deletes (`every`): `examples/charts/session-store.toml`'s `endAccountSessions`
//! deletes every session the keys-only index finds for an account, on both engines:
//!
//! - one Query of the index for the keys, then a BatchWriteItem of each 25 of them; the
//!   account's sessions are gone, another account's stay, and `check` is clean;
//! - at most `max` a call: the rest are left, and `more` says so;
//! - `atomic`: one TransactWriteItems of every delete, each held to the item being there;
//! - another tenant's caller deletes nothing and is told the app is missing, sending no
//!   request; a tenant named by a value no tenant has is refused as bad input.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::auth::{Access, Role};

use crate::common::graphql::{example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("session-store")
}

/// The session store with a bulk delete of at most 2 sessions a call, whole or not at all.
fn atomic_chart() -> Arc<itemgraph::chart::Chart> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/session-store.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace(
            "request = \"BatchWriteItem\"",
            "request = \"TransactWriteItems\"",
        )
        .replace("every = 4\nmax = 100", "every = 4\nmax = 2\natomic = true");
    Arc::new(itemgraph::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")))
}

mod batched {
    use super::*;
    on_both_engines_of!(chart;
        every_session_of_an_account_ends_in_batches_of_25,
        another_tenant_ends_nothing,
    );
}

mod atomic {
    use super::*;
    on_both_engines_of!(atomic_chart;
        at_most_max_a_call_in_one_transaction,
    );
}

const END: &str = r#"mutation($input: EndAccountSessionsInput!) {
    endAccountSessions(input: $input) { deletedCount more } }"#;

async fn start(api: &Api, username: &str, n: usize) {
    for i in 0..n {
        let r = api
            .run_with(
                r#"mutation($input: StartSessionInput!) { startSession(input: $input) { session { token } } }"#,
                json!({"input": {"app": "harbor", "username": username, "device": format!("Device {i}")}}),
            )
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
}

/// The tokens of `username`'s sessions, all of them.
async fn tokens(api: &Api, username: &str) -> Vec<String> {
    let q = r#"{ app(slug: "harbor") { accounts(first: 10) { nodes { username
        sessions(first: 100) { nodes { token } } } } } }"#;
    let r = api.run(q).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"]["app"]["accounts"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["username"] == username)
        .flat_map(|a| a["sessions"]["nodes"].as_array().unwrap().clone())
        .map(|n| n["token"].as_str().unwrap().to_owned())
        .collect()
}

fn operations(r: &Value) -> Vec<(String, Value)> {
    requests(r)
        .iter()
        .map(|s| {
            (
                s["operation"].as_str().unwrap().to_owned(),
                s["itemCount"].clone(),
            )
        })
        .collect()
}

async fn every_session_of_an_account_ends_in_batches_of_25(api: &Api) {
    // 3 sample sessions and 30 more: two batches.
    start(api, "ada-l", 30).await;
    assert_eq!(tokens(api, "ada-l").await.len(), 33);
    let grace = tokens(api, "grace-h").await;
    assert_eq!(grace.len(), 1);

    let r = api
        .run_with(
            END,
            json!({"input": {"app": "harbor", "username": "ada-l"}}),
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["endAccountSessions"],
        json!({"deletedCount": 33, "more": false})
    );
    assert_eq!(
        operations(&r),
        [
            ("Query".to_owned(), json!(33)),
            ("BatchWriteItem".to_owned(), json!(25)),
            ("BatchWriteItem".to_owned(), json!(8)),
        ],
        "{r:#}"
    );
    let sent = requests(&r);
    assert!(
        sent[0]["keyCondition"]
            .as_str()
            .unwrap()
            .starts_with(r#"AccountPK = "ACCOUNT#harbor#ada-l""#),
        "{sent:#?}"
    );
    assert_eq!(sent[0]["index"], "ByAccount");
    assert!(tokens(api, "ada-l").await.is_empty());
    assert_eq!(tokens(api, "grace-h").await, grace);

    // Nothing left: one Query, nothing written.
    let r = api
        .run_with(
            END,
            json!({"input": {"app": "harbor", "username": "ada-l"}}),
        )
        .await;
    assert_eq!(
        r["data"]["endAccountSessions"],
        json!({"deletedCount": 0, "more": false})
    );
    assert_eq!(operations(&r), [("Query".to_owned(), json!(0))], "{r:#}");
    api.assert_clean(&chart()).await;
}

async fn another_tenant_ends_nothing(api: &Api) {
    let other = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("dockside").unwrap(),
        role: Role::Admin,
        subject: None,
    };
    let r = api
        .run_as(
            &other,
            END,
            json!({"input": {"app": "harbor", "username": "ada-l"}}),
        )
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "NOT_FOUND", "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "app", "{r:#}");
    assert!(requests(&r).is_empty(), "{r:#}");
    assert_eq!(tokens(api, "ada-l").await.len(), 3);

    let r = api
        .run_with(
            END,
            json!({"input": {"app": "Harbor!", "username": "ada-l"}}),
        )
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{r:#}"
    );
    assert_eq!(r["errors"][0]["extensions"]["field"], "app", "{r:#}");
    assert_eq!(tokens(api, "ada-l").await.len(), 3);
}

async fn at_most_max_a_call_in_one_transaction(api: &Api) {
    let input = json!({"input": {"app": "harbor", "username": "ada-l"}});
    let r = api.run_with(END, input.clone()).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["endAccountSessions"],
        json!({"deletedCount": 2, "more": true})
    );
    let ops = operations(&r);
    assert_eq!(ops.len(), 2, "{r:#}");
    assert_eq!(ops[0].0, "Query");
    assert_eq!(ops[1], ("TransactWriteItems".to_owned(), json!(2)), "{r:#}");
    assert_eq!(tokens(api, "ada-l").await.len(), 1);

    let r = api.run_with(END, input.clone()).await;
    assert_eq!(
        r["data"]["endAccountSessions"],
        json!({"deletedCount": 1, "more": false})
    );
    assert!(tokens(api, "ada-l").await.is_empty());
    assert_eq!(tokens(api, "grace-h").await.len(), 1);
    api.assert_clean(&atomic_chart()).await;
}

/// A bulk update: `examples/charts/repo-stars.toml`'s `closeIssues` sets the state of
/// every issue of a repository, one Query of its issues and one TransactWriteItems of up to
/// 100, on both engines; another organization's caller changes nothing.
mod update {
    use super::*;

    fn stars() -> Arc<itemgraph::chart::Chart> {
        example_chart("repo-stars")
    }

    on_both_engines_of!(stars; every_issue_of_a_repository_is_closed_in_one_transaction);

    const CLOSE: &str = r#"mutation($input: CloseIssuesInput!) {
        closeIssues(input: $input) { updatedCount more } }"#;

    async fn states(api: &Api) -> Vec<String> {
        let r = api
            .run(r#"{ repository(org: "acme", repo: "rocket") { issues(first: 10) { nodes { state } } } }"#)
            .await;
        r["data"]["repository"]["issues"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["state"].as_str().unwrap().to_owned())
            .collect()
    }

    async fn every_issue_of_a_repository_is_closed_in_one_transaction(api: &Api) {
        assert_eq!(states(api).await, ["CLOSED", "OPEN"]);
        let other = Access::Tenant {
            org: itemgraph::chart::kinds::Tenant::parse("globex").unwrap(),
            role: Role::Admin,
            subject: None,
        };
        let input = json!({"input": {"org": "acme", "repo": "rocket", "state": "CLOSED"}});
        let r = api.run_as(&other, CLOSE, input.clone()).await;
        assert_eq!(r["errors"][0]["extensions"]["code"], "NOT_FOUND", "{r:#}");
        assert!(requests(&r).is_empty(), "{r:#}");
        assert_eq!(states(api).await, ["CLOSED", "OPEN"]);

        let r = api.run_with(CLOSE, input).await;
        assert!(r.get("errors").is_none(), "{r:#}");
        assert_eq!(
            r["data"]["closeIssues"],
            json!({"updatedCount": 2, "more": false})
        );
        let ops: Vec<&str> = requests(&r)
            .iter()
            .map(|s| s["operation"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["Query", "TransactWriteItems"], "{r:#}");
        assert_eq!(states(api).await, ["CLOSED", "CLOSED"]);
        // Nothing to set: refused, nothing sent.
        let r = api
            .run_with(CLOSE, json!({"input": {"org": "acme", "repo": "rocket"}}))
            .await;
        assert_eq!(
            r["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
            "{r:#}"
        );
        assert!(requests(&r).is_empty(), "{r:#}");
        api.assert_clean(&stars()).await;
    }
}
