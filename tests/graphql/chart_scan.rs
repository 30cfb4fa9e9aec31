//! Scans of a sparse index: `examples/charts/arcade-awards.toml` lists the scores that won
//! an award (`Query.awardWinners`) by a Scan of the Awards index, which only they carry
//! keys in, on both engines:
//!
//! - one Scan a page, of the index alone, in its key order; a caller of one league gets
//!   its league's winners only (a filter on the league each score holds), the trace
//!   telling the items read beside those kept; a caller who sees every league gets all;
//! - pages follow from the last-read key; a page may hold fewer than asked, and
//!   `hasNextPage` holds while the index has more to read; `last`/`before` and another
//!   connection's cursor are refused before anything is read;
//! - a score given an award joins the index, and leaves it when the award is taken away.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::auth::{Access, Role};

use crate::common::graphql::{example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("arcade-awards")
}

on_both_engines_of!(chart;
    award_winners_are_one_scan_of_the_sparse_index,
    pages_follow_from_the_last_read_key,
    an_award_puts_a_score_in_the_index_and_taking_it_away_takes_it_out,
);

fn league(slug: &str) -> Access {
    Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse(slug).unwrap(),
        role: Role::Member,
        subject: None,
    }
}

const WINNERS: &str = r#"query($first: Int, $after: String) {
    awardWinners(first: $first, after: $after) {
        nodes { handle game points award }
        pageInfo { hasNextPage endCursor } } }"#;

/// The awards of a page of winners, whether more follow, the end cursor and the requests.
async fn winners(
    api: &Api,
    access: &Access,
    vars: Value,
) -> (Vec<String>, bool, Value, Vec<Value>) {
    let r = api.run_as(access, WINNERS, vars).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let page = &r["data"]["awardWinners"];
    let awards = page["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            format!(
                "{} {}",
                n["handle"].as_str().unwrap(),
                n["award"].as_str().unwrap()
            )
        })
        .collect();
    (
        awards,
        page["pageInfo"]["hasNextPage"].as_bool().unwrap(),
        page["pageInfo"]["endCursor"].clone(),
        requests(&r).to_vec(),
    )
}

async fn award_winners_are_one_scan_of_the_sparse_index(api: &Api) {
    let (awards, more, _, sent) = winners(api, &league("harbor"), json!({"first": 10})).await;
    // In the index's key order: AWARD#GOLD before AWARD#SILVER.
    assert_eq!(awards, ["ada-l GOLD", "grace-h SILVER"]);
    assert!(!more);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["operation"], "Scan");
    assert_eq!(sent[0]["index"], "Awards");
    assert_eq!(sent[0]["filter"], r#"league = "harbor""#);
    assert_eq!(sent[0]["limit"], 11, "{sent:#?}");
    // What it read of other leagues is not a tenant's to count.
    assert!(sent[0].get("scannedCount").is_none(), "{sent:#?}");
    assert!(sent[0].get("itemCount").is_none(), "{sent:#?}");

    let (awards, _, _, _) = winners(api, &league("dockside"), json!({"first": 10})).await;
    assert_eq!(awards, ["alan-t BRONZE"]);
    let (awards, _, _, sent) = winners(api, &Access::Unrestricted, json!({"first": 10})).await;
    assert_eq!(awards, ["alan-t BRONZE", "ada-l GOLD", "grace-h SILVER"]);
    assert!(sent[0].get("filter").is_none(), "{sent:#?}");
    assert_eq!(sent[0]["scannedCount"], 3, "{sent:#?}");
    assert_eq!(sent[0]["itemCount"], 3, "{sent:#?}");
}

async fn pages_follow_from_the_last_read_key(api: &Api) {
    let harbor = league("harbor");
    // Two read (dockside's bronze, harbor's gold), one kept.
    let (awards, more, cursor, sent) = winners(api, &harbor, json!({"first": 1})).await;
    assert_eq!(awards, ["ada-l GOLD"]);
    assert!(more);
    assert_eq!(sent[0]["limit"], 2, "{sent:#?}");
    let (awards, more, _, sent) = winners(api, &harbor, json!({"first": 1, "after": cursor})).await;
    assert_eq!(awards, ["grace-h SILVER"]);
    assert!(!more);
    assert!(
        sent[0]["keyCondition"]
            .as_str()
            .unwrap()
            .starts_with("(after"),
        "{sent:#?}"
    );

    // Backward, and a cursor of another connection: refused, nothing read.
    let r = api
        .run_as(
            &harbor,
            "{ awardWinners(last: 2) { nodes { award } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{r:#}"
    );
    assert_eq!(r["errors"][0]["extensions"]["field"], "last", "{r:#}");
    assert!(requests(&r).is_empty(), "{r:#}");
    let players = api
        .run_as(
            &harbor,
            r#"{ league(slug: "harbor") { players(first: 1) { pageInfo { endCursor } } } }"#,
            json!({}),
        )
        .await;
    let other = players["data"]["league"]["players"]["pageInfo"]["endCursor"].clone();
    let r = api
        .run_as(&harbor, WINNERS, json!({"first": 1, "after": other}))
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "INVALID_CURSOR",
        "{r:#}"
    );
    assert!(requests(&r).is_empty(), "{r:#}");
}

async fn an_award_puts_a_score_in_the_index_and_taking_it_away_takes_it_out(api: &Api) {
    let harbor = league("harbor");
    const AWARD: &str = r#"mutation($award: Award) { awardScore(input: {
        league: "harbor", handle: "grace-h", scoreId: "01JD8Y5J3M0000000000000004", award: $award })
        { score { award } } }"#;
    let r = api.run_as(&harbor, AWARD, json!({"award": "BRONZE"})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let (awards, _, _, _) = winners(api, &harbor, json!({"first": 10})).await;
    assert_eq!(awards, ["grace-h BRONZE", "ada-l GOLD", "grace-h SILVER"]);
    let r = api.run_as(&harbor, AWARD, json!({"award": null})).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let (awards, _, _, _) = winners(api, &harbor, json!({"first": 10})).await;
    assert_eq!(awards, ["ada-l GOLD", "grace-h SILVER"]);
    api.assert_clean(&chart()).await;
}
