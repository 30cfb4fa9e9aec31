//! Keys-only indexes read for what they hold: `examples/charts/session-store.toml` lists an
//! account's sessions through an index that projects the keys only, declared as the index
//! Query followed by a BatchGetItem of the keys it finds (`then = "BatchGetItem"`), on both
//! engines:
//!
//! - the index answers with the keys only (the table's and its own), as DynamoDB's does:
//!   the embedded engine projects what the chart declares;
//! - a page is one Query of the index and one BatchGetItem of the page's keys, in the
//!   index's order; the key after the page only tells that more follow; later pages
//!   resume from the last-seen index key;
//! - a session ended, or expired and not yet deleted, is left out; a new one comes first;
//! - a session ended through the index's keys is found and deleted by its key.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::store::{AttributeValue, Put};

use crate::common::graphql::{example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("session-store")
}

on_both_engines_of!(chart;
    the_index_answers_with_the_keys_only,
    a_page_of_sessions_is_one_query_and_one_batch_get,
    an_ended_session_leaves_the_list_and_a_new_one_comes_first,
);

async fn the_index_answers_with_the_keys_only(api: &Api) {
    let out = api
        .store
        .query(itemgraph::store::Query {
            index: Some("ByAccount".into()),
            ..itemgraph::store::Query::partition("ACCOUNT#harbor#ada-l")
        })
        .await
        .unwrap();
    assert_eq!(out.items.len(), 3);
    for item in &out.items {
        let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["AccountPK", "AccountSK", "PK", "SK"], "{item:?}");
    }
}

/// `ada-l`'s sessions, `first` of them after `after`: their tokens, whether more follow,
/// the end cursor, and the requests after the app and its accounts.
async fn sessions(api: &Api, args: &str) -> (Vec<String>, bool, String, Vec<Value>) {
    let q = format!(
        r#"{{ app(slug: "harbor") {{ accounts(first: 1) {{ nodes {{ username
            sessions{args} {{ nodes {{ token device username }} pageInfo {{ hasNextPage endCursor }} }} }} }} }} }}"#
    );
    let r = api.run(&q).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let account = &r["data"]["app"]["accounts"]["nodes"][0];
    assert_eq!(account["username"], "ada-l");
    let page = &account["sessions"];
    let tokens = page["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert_eq!(n["username"], "ada-l");
            assert!(n["device"].is_string(), "{n}");
            n["token"].as_str().unwrap().to_owned()
        })
        .collect();
    let sent = requests(&r);
    (
        tokens,
        page["pageInfo"]["hasNextPage"].as_bool().unwrap(),
        page["pageInfo"]["endCursor"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        sent[2..].to_vec(),
    )
}

const T1: &str = "01JD8Y5J3M0000000000000001";
const T2: &str = "01JD8Y5J3M0000000000000002";
const T3: &str = "01JD8Y5J3M0000000000000003";

async fn a_page_of_sessions_is_one_query_and_one_batch_get(api: &Api) {
    let (tokens, more, cursor, sent) = sessions(api, "(first: 2)").await;
    assert_eq!(tokens, [T3, T2]);
    assert!(more);
    let ops: Vec<&str> = sent
        .iter()
        .map(|s| s["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["Query", "BatchGetItem"], "{sent:#?}");
    assert!(
        sent[0]["keyCondition"]
            .as_str()
            .unwrap()
            .starts_with(r#"AccountPK = "ACCOUNT#harbor#ada-l""#),
        "{sent:#?}"
    );
    // The Query reads one key past the page, to tell that more follow; only the page's
    // keys are read whole.
    assert_eq!(sent[0]["itemCount"], 3, "{sent:#?}");
    assert_eq!(sent[1]["itemCount"], 2, "{sent:#?}");

    let (tokens, more, _, sent) = sessions(api, &format!(r#"(first: 2, after: "{cursor}")"#)).await;
    assert_eq!(tokens, [T1]);
    assert!(!more);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[1]["itemCount"], 1, "{sent:#?}");
}

async fn an_ended_session_leaves_the_list_and_a_new_one_comes_first(api: &Api) {
    let ended = api
        .run_with(
            r#"mutation($token: String!) { endSession(input: { app: "harbor", token: $token }) { deletedSessionId } }"#,
            json!({ "token": T2 }),
        )
        .await;
    assert!(ended.get("errors").is_none(), "{ended:#}");
    let started = api
        .run(
            r#"mutation { startSession(input: { app: "harbor", username: "ada-l", device: "Desk, Firefox" }) {
                session { token expiresAt } } }"#,
        )
        .await;
    assert!(started.get("errors").is_none(), "{started:#}");
    let new = started["data"]["startSession"]["session"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // One that has expired and that the service has not deleted yet: its key is in the
    // index, and the session read by it is left out.
    let s = |v: &str| AttributeValue::S(v.to_owned());
    const OLD: &str = "01JD8Y5J3M0000000000000009";
    let item = [
        ("PK", s(&format!("SESSION#harbor#{OLD}"))),
        ("SK", s(&format!("SESSION#harbor#{OLD}"))),
        ("AccountPK", s("ACCOUNT#harbor#ada-l")),
        ("AccountSK", s(&format!("SESSION#{OLD}"))),
        ("Type", s("Session")),
        ("app", s("harbor")),
        ("token", s(OLD)),
        ("username", s("ada-l")),
        ("device", s("Old phone")),
        ("startedAt", s("2026-01-01T00:00:00Z")),
        ("expiresAt", AttributeValue::N("1700000000".into())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    api.store.put_item(Put::new(item)).await.unwrap();
    let (tokens, more, _, sent) = sessions(api, "(first: 10)").await;
    assert_eq!(tokens, [new.as_str(), T3, T1]);
    assert!(!more);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    api.assert_clean(&chart()).await;
}
