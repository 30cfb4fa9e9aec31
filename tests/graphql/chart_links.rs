//! Many to many: `examples/charts/repo-stars.toml`'s stars link users and repositories
//! (`link = ["repository", "user"]`), on both engines:
//!
//! - read from the repository's side (its item collection) and from the user's (the ByUser
//!   index), the far side of each star through the DataLoader: one Query and one
//!   BatchGetItem a page;
//! - a star is one TransactWriteItems that counts it on both sides; a second star of the
//!   same pair is refused; an unstar takes both counts back; a star of a repository that
//!   is not there is refused naming it, and writes nothing.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::graphql::{example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("repo-stars")
}

on_both_engines_of!(chart;
    a_link_is_read_from_both_sides_in_one_query_and_one_batch_get,
    a_star_counts_on_both_sides_once_and_an_unstar_takes_both_back,
);

const STARGAZERS: &str = r#"query($repo: String!) { repository(org: "acme", repo: $repo) {
    starCount stargazers(first: 10) { totalCount nodes { user { username starredCount } } } } }"#;
const STARRED: &str = r#"query($first: Int!) { org(slug: "acme") { users(first: $first) { nodes { username
    starredCount starred(first: 10) { totalCount nodes { repository { repo starCount } } } } } } }"#;

fn operations(r: &Value) -> Vec<String> {
    requests(r)
        .iter()
        .map(|s| s["operation"].as_str().unwrap().to_owned())
        .collect()
}

/// `repo`'s star count and its stargazers' usernames.
async fn stargazers(api: &Api, repo: &str) -> (i64, Vec<String>) {
    let r = api.run_with(STARGAZERS, json!({"repo": repo})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let repo = &r["data"]["repository"];
    let users = repo["stargazers"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["user"]["username"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(repo["stargazers"]["totalCount"], repo["starCount"]);
    (repo["starCount"].as_i64().unwrap(), users)
}

/// Each user's starred count and the repositories they starred.
async fn starred(api: &Api) -> Vec<(String, i64, Vec<String>)> {
    let r = api.run_with(STARRED, json!({"first": 10})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    r["data"]["org"]["users"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let repos = u["starred"]["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["repository"]["repo"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(u["starred"]["totalCount"], u["starredCount"]);
            (
                u["username"].as_str().unwrap().to_owned(),
                u["starredCount"].as_i64().unwrap(),
                repos,
            )
        })
        .collect()
}

async fn a_link_is_read_from_both_sides_in_one_query_and_one_batch_get(api: &Api) {
    let r = api.run_with(STARGAZERS, json!({"repo": "rocket"})).await;
    assert_eq!(operations(&r), ["Query", "BatchGetItem"], "{r:#}");
    assert_eq!(requests(&r)[1]["keyCondition"], "2 keys");
    let (count, users) = stargazers(api, "rocket").await;
    assert_eq!(
        (count, users),
        (2, vec!["ada-l".to_owned(), "grace-h".to_owned()])
    );

    // The organization and its users are read together (the page ahead of the root field),
    // then the user's stars from the index, then their repositories.
    let r = api.run_with(STARRED, json!({"first": 1})).await;
    let mut ops = operations(&r);
    ops[..2].sort();
    assert_eq!(ops, ["GetItem", "Query", "Query", "BatchGetItem"], "{r:#}");
    assert_eq!(requests(&r)[2]["index"], "ByUser", "{r:#}");
    assert_eq!(
        starred(api).await,
        [
            (
                "ada-l".to_owned(),
                2,
                vec!["parser".to_owned(), "rocket".to_owned()]
            ),
            ("grace-h".to_owned(), 1, vec!["rocket".to_owned()]),
            ("linus-t".to_owned(), 0, vec![]),
        ]
    );
}

async fn a_star_counts_on_both_sides_once_and_an_unstar_takes_both_back(api: &Api) {
    const STAR: &str = r#"mutation($repo: String!, $user: String!) {
        starRepo(input: { org: "acme", repo: $repo, username: $user }) { star { repo } } }"#;
    const UNSTAR: &str = r#"mutation($repo: String!, $user: String!) {
        unstarRepo(input: { org: "acme", repo: $repo, username: $user }) { deletedStarId } }"#;
    let r = api
        .run_with(STAR, json!({"repo": "parser", "user": "linus-t"}))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(operations(&r), ["TransactWriteItems"], "{r:#}");
    assert_eq!(
        stargazers(api, "parser").await,
        (2, vec!["ada-l".into(), "linus-t".into()])
    );
    assert_eq!(
        starred(api).await[2],
        ("linus-t".into(), 1, vec!["parser".into()])
    );

    // Once a pair.
    let r = api
        .run_with(STAR, json!({"repo": "parser", "user": "linus-t"}))
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "CONFLICT", "{r:#}");
    assert_eq!(stargazers(api, "parser").await.0, 2);

    // A repository that is not there: nothing written.
    let r = api
        .run_with(STAR, json!({"repo": "nowhere", "user": "linus-t"}))
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "NOT_FOUND", "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "repository", "{r:#}");
    assert_eq!(starred(api).await[2].1, 1);

    let r = api
        .run_with(UNSTAR, json!({"repo": "parser", "user": "linus-t"}))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(operations(&r), ["GetItem", "TransactWriteItems"], "{r:#}");
    assert_eq!(stargazers(api, "parser").await, (1, vec!["ada-l".into()]));
    assert_eq!(starred(api).await[2], ("linus-t".into(), 0, vec![]));
    api.assert_clean(&chart()).await;
}
