//! Range arguments: a Query pattern whose sort condition takes a connection's arguments
//! (`examples/charts/sensor-log.toml`: a device's readings `BETWEEN READING#{from?} AND
//! READING#{to?}`, and `>= READING#{since}` newest first), on both engines. Each page is
//! one Query whose key condition holds the caller's values; an end left out is open (the
//! range starts at the first reading, or runs past the last); later pages keep the range;
//! a value is checked as its attribute's (`instant`); a range whose start comes after its
//! end, and a cursor of another range, are refused before anything is read.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::graphql::{error_codes, example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("sensor-log")
}

on_both_engines_of!(chart;
    a_window_of_readings_is_one_query_with_either_end_open,
    later_pages_keep_the_range_and_a_cursor_of_another_range_is_refused,
    a_range_that_ends_before_it_starts_or_a_bad_moment_is_refused_unread,
);

/// The readings of `TEMP-01` as `args` select them: their moments, and the one Query's key
/// condition.
async fn window(api: &Api, args: &str) -> (Vec<String>, String) {
    let q = format!(
        r#"{{ site(slug: "north-plant") {{ devices(first: 1) {{ nodes {{
            readings{args} {{ nodes {{ at value }} }} }} }} }} }}"#
    );
    let r = api.run(&q).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let at = r["data"]["site"]["devices"]["nodes"][0]["readings"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["at"].as_str().unwrap().to_owned())
        .collect();
    // The site, its devices, the readings: one request each.
    let sent = requests(&r);
    assert_eq!(sent.len(), 3, "{r:#}");
    let readings = &sent[2];
    assert_eq!(readings["operation"], "Query", "{r:#}");
    (at, readings["keyCondition"].as_str().unwrap().to_owned())
}

async fn a_window_of_readings_is_one_query_with_either_end_open(api: &Api) {
    let (at, cond) = window(
        api,
        r#"(from: "2026-03-01T08:30:00Z", to: "2026-03-01T10:00:00Z")"#,
    )
    .await;
    assert_eq!(at, ["2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z"]);
    assert_eq!(
        cond,
        r#"PK = "READINGS#north-plant#TEMP-01" AND SK BETWEEN "READING#2026-03-01T08:30:00Z" AND "READING#2026-03-01T10:00:00Z""#
    );
    // From a moment on: the upper end runs past the last reading.
    let (at, cond) = window(api, r#"(from: "2026-03-01T10:00:00Z")"#).await;
    assert_eq!(at, ["2026-03-01T10:00:00Z", "2026-03-02T08:00:00Z"]);
    assert!(
        cond.contains(r#"SK BETWEEN "READING#2026-03-01T10:00:00Z" AND "READING#"#),
        "{cond}"
    );
    // Up to a moment: the lower end starts at the first.
    let (at, cond) = window(api, r#"(to: "2026-03-01T08:59:59Z")"#).await;
    assert_eq!(at, ["2026-03-01T08:00:00Z"]);
    assert!(
        cond.ends_with(r#"SK BETWEEN "READING#" AND "READING#2026-03-01T08:59:59Z""#),
        "{cond}"
    );
    // Neither: every reading of the device, and only its.
    let (at, cond) = window(api, "").await;
    assert_eq!(at.len(), 4, "{at:?}");
    assert!(cond.ends_with(r#"begins_with(SK, "READING#")"#), "{cond}");
    // Since a moment, newest first.
    let r = api
        .run(
            r#"{ site(slug: "north-plant") { devices(first: 1) { nodes {
                readingsSince(since: "2026-03-01T09:00:00Z") { nodes { at } } } } } }"#,
        )
        .await;
    let at: Vec<&str> = r["data"]["site"]["devices"]["nodes"][0]["readingsSince"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["at"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        [
            "2026-03-02T08:00:00Z",
            "2026-03-01T10:00:00Z",
            "2026-03-01T09:00:00Z"
        ],
        "{r:#}"
    );
}

const PAGE: &str = r#"query($from: String, $to: String, $after: String) {
    site(slug: "north-plant") { devices(first: 1) { nodes {
        readings(from: $from, to: $to, first: 1, after: $after) {
            nodes { at } pageInfo { hasNextPage endCursor } } } } } }"#;

fn readings(r: &Value) -> &Value {
    &r["data"]["site"]["devices"]["nodes"][0]["readings"]
}

async fn later_pages_keep_the_range_and_a_cursor_of_another_range_is_refused(api: &Api) {
    let range = json!({"from": "2026-03-01T08:30:00Z", "to": "2026-03-01T10:00:00Z"});
    let mut seen = Vec::new();
    let mut after = Value::Null;
    loop {
        let mut vars = range.clone();
        vars["after"] = after.clone();
        let r = api.run_with(PAGE, vars).await;
        assert!(r.get("errors").is_none(), "{r:#}");
        let page = readings(&r);
        for n in page["nodes"].as_array().unwrap() {
            seen.push(n["at"].as_str().unwrap().to_owned());
        }
        if page["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = page["pageInfo"]["endCursor"].clone();
        assert!(seen.len() < 10, "{seen:?}");
    }
    assert_eq!(seen, ["2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z"]);

    // A cursor of the whole log, given with a window it lies outside: refused unread.
    let r = api
        .run_with(PAGE, json!({"from": null, "to": null, "after": null}))
        .await;
    let first = readings(&r)["pageInfo"]["endCursor"].clone();
    let r = api
        .run_with(
            PAGE,
            json!({"from": "2026-03-01T09:00:00Z", "to": null, "after": first}),
        )
        .await;
    assert_eq!(error_codes(&r), ["INVALID_CURSOR"], "{r:#}");
    assert_eq!(
        requests(&r).len(),
        2,
        "the site and its devices only: {r:#}"
    );
}

async fn a_range_that_ends_before_it_starts_or_a_bad_moment_is_refused_unread(api: &Api) {
    for (vars, field) in [
        (
            json!({"from": "2026-03-02T00:00:00Z", "to": "2026-03-01T00:00:00Z", "after": null}),
            "from",
        ),
        (
            json!({"from": "yesterday", "to": null, "after": null}),
            "from",
        ),
    ] {
        let r = api.run_with(PAGE, vars).await;
        assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
        assert!(
            r["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains(field)),
            "{r:#}"
        );
        assert_eq!(
            requests(&r).len(),
            2,
            "the site and its devices only: {r:#}"
        );
    }
}
