//! Item collections of several kinds: `examples/charts/repo-stars.toml`'s `Repo.tracker`
//! reads a repository with its pull requests and issues, on both engines:
//!
//! - the repository and a first page of both kinds in one Query of its item collection, in
//!   sort order, as one connection over the mix (a union) and each kind typed;
//! - later pages from the last-seen key (the repository item never read again), either
//!   direction;
//! - `kind` narrows it to one kind: a Query of that kind's prefix alone, its cursors its
//!   own (a cursor of the mix is refused there);
//! - an issue opened comes first among the issues.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::graphql::{example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("repo-stars")
}

on_both_engines_of!(chart;
    a_repository_and_both_kinds_are_one_query,
    the_mix_pages_from_the_last_seen_key_both_ways,
    one_kind_alone_queries_its_prefix,
);

const TRACKER: &str = r#"query($first: Int, $after: String, $last: Int, $before: String, $kind: RepoTrackerKind) {
    repository(org: "acme", repo: "rocket") { repo
        tracker(first: $first, after: $after, last: $last, before: $before, kind: $kind) {
            edges { cursor node { __typename ... on Issue { title } ... on PullRequest { title } } }
            issueNodes { title } pullRequestNodes { title }
            pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"#;

/// The titles of a page (`Kind: title`), its page info and its requests.
async fn tracker(api: &Api, vars: Value) -> (Vec<String>, Value, Vec<Value>) {
    let r = api.run_with(TRACKER, vars).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let page = &r["data"]["repository"]["tracker"];
    let titles = page["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e["node"]["__typename"].as_str().unwrap(),
                e["node"]["title"].as_str().unwrap()
            )
        })
        .collect();
    (titles, page["pageInfo"].clone(), requests(&r).to_vec())
}

async fn a_repository_and_both_kinds_are_one_query(api: &Api) {
    let r = api.run_with(TRACKER, json!({"first": 10})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let sent = requests(&r);
    assert_eq!(sent.len(), 1, "{r:#}");
    assert_eq!(sent[0]["operation"], "Query");
    assert_eq!(
        sent[0]["keyCondition"],
        r#"PK = "REPO#acme#rocket" AND SK <= "REPO#acme#rocket""#
    );
    assert_eq!(sent[0]["scanForward"], false);
    let page = &r["data"]["repository"]["tracker"];
    assert_eq!(r["data"]["repository"]["repo"], "rocket");
    assert_eq!(page["pullRequestNodes"], json!([{"title": "Fix thrust"}]));
    assert_eq!(
        page["issueNodes"],
        json!([{"title": "Add a second stage"}, {"title": "Thrust is off by one"}])
    );
    let (titles, _, _) = tracker(api, json!({"first": 10})).await;
    assert_eq!(
        titles,
        [
            "PullRequest: Fix thrust",
            "Issue: Add a second stage",
            "Issue: Thrust is off by one"
        ]
    );
}

async fn the_mix_pages_from_the_last_seen_key_both_ways(api: &Api) {
    let (titles, info, _) = tracker(api, json!({"first": 2})).await;
    assert_eq!(
        titles,
        ["PullRequest: Fix thrust", "Issue: Add a second stage"]
    );
    assert_eq!(info["hasNextPage"], true);
    let (titles, info, sent) = tracker(api, json!({"first": 2, "after": info["endCursor"]})).await;
    assert_eq!(titles, ["Issue: Thrust is off by one"]);
    assert_eq!(info["hasNextPage"], false);
    assert_eq!(info["hasPreviousPage"], true);
    // The owner by key, the page from the cursor: the repository item is not read again.
    let ops: Vec<&str> = sent
        .iter()
        .map(|s| s["operation"].as_str().unwrap())
        .collect();
    assert!(ops.contains(&"Query"), "{sent:#?}");
    // Backward from the end of the mix.
    let (titles, info, _) = tracker(api, json!({"last": 2})).await;
    assert_eq!(
        titles,
        ["Issue: Add a second stage", "Issue: Thrust is off by one"]
    );
    assert_eq!(info["hasPreviousPage"], true);
    let (titles, _, _) = tracker(api, json!({"last": 2, "before": info["startCursor"]})).await;
    assert_eq!(titles, ["PullRequest: Fix thrust"]);
}

async fn one_kind_alone_queries_its_prefix(api: &Api) {
    let (titles, info, sent) = tracker(api, json!({"first": 1, "kind": "Issue"})).await;
    assert_eq!(titles, ["Issue: Add a second stage"]);
    assert_eq!(info["hasNextPage"], true);
    let q = sent.iter().find(|s| s["operation"] == "Query").unwrap();
    assert_eq!(
        q["keyCondition"],
        r#"PK = "REPO#acme#rocket" AND begins_with(SK, "ISSUE#")"#
    );
    let (titles, info2, _) = tracker(
        api,
        json!({"first": 1, "kind": "Issue", "after": info["endCursor"]}),
    )
    .await;
    assert_eq!(titles, ["Issue: Thrust is off by one"]);
    assert_eq!(info2["hasNextPage"], false);

    // A cursor of the mix pages the mix only.
    let (_, mix, _) = tracker(api, json!({"first": 1})).await;
    let r = api
        .run_with(
            TRACKER,
            json!({"first": 1, "kind": "Issue", "after": mix["endCursor"]}),
        )
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "INVALID_CURSOR",
        "{r:#}"
    );

    // A new issue is the newest.
    let r = api
        .run(r#"mutation { openIssue(input: { org: "acme", repo: "rocket", title: "Fins", state: OPEN }) { issue { title } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let (titles, _, _) = tracker(api, json!({"first": 10, "kind": "Issue"})).await;
    assert_eq!(titles[0], "Issue: Fins");
    let (titles, _, _) = tracker(api, json!({"first": 10})).await;
    assert_eq!(titles.len(), 4);
    api.assert_clean(&chart()).await;
}
