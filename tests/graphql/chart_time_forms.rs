//! Times as tables keep them: `examples/charts/device-log.toml` stores its times to the
//! second without a zone (`form = "local-seconds"`), in its sort key `State#Date` and in the
//! `Date` key of its index. On both engines:
//!
//! - items hold the time so (`WARNING1#2026-11-30T07:15:00`), GraphQL reads and gives RFC
//!   3339 (`2026-11-30T07:15:00Z`);
//! - a range of the sort key is one Query in time order, either end open; an index keyed by
//!   the time pages newest first;
//! - a time given to the millisecond is stored to the second; one that is no time is
//!   refused naming the field, and nothing is written.

use std::sync::Arc;

use serde_json::json;

use itemgraph::store::{AttributeValue, GetItem, PrimaryKey};

use crate::common::graphql::{error_codes, example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("device-log")
}

on_both_engines_of!(chart;
    times_are_stored_in_the_tables_form_and_read_as_rfc3339,
    a_time_range_is_one_query_in_time_order,
    a_time_is_written_in_the_tables_form,
);

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

async fn times_are_stored_in_the_tables_form_and_read_as_rfc3339(api: &Api) {
    let item = api
        .raw
        .get_item(GetItem {
            key: PrimaryKey::new("d#10031", "WARNING1#2026-11-30T07:15:00"),
            consistent_read: true,
        })
        .await
        .unwrap()
        .expect("a sample");
    assert_eq!(item["Date"], s("2026-11-30T07:15:00"));
    assert_eq!(item["Operator"], s("Mira"));
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["Date", "DeviceID", "Notes", "Operator", "State#Date"]
    );
    let r = api
        .run(r#"{ stateChange(deviceId: "10031", state: WARNING1, date: "2026-11-30T07:15:00Z") { date notes } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["stateChange"],
        json!({ "date": "2026-11-30T07:15:00Z", "notes": "Fan loud" })
    );
}

async fn a_time_range_is_one_query_in_time_order(api: &Api) {
    let dates = |r: &serde_json::Value, field: &str| -> Vec<String> {
        r["data"][field]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["date"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = api
        .run(r#"{ deviceStates(deviceId: "10031", state: WARNING1, from: "2026-11-01T00:00:00Z") { nodes { date } } }"#)
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        dates(&r, "deviceStates"),
        ["2026-11-30T07:15:00Z", "2026-12-02T10:20:00Z"]
    );
    assert_eq!(requests(&r).len(), 1);
    let r = api
        .run(r#"{ deviceStates(deviceId: "10031", state: WARNING1, to: "2026-12-01T00:00:00Z") { nodes { date } } }"#)
        .await;
    assert_eq!(dates(&r, "deviceStates"), ["2026-11-30T07:15:00Z"]);
    let r = api
        .run(r#"{ shift(operator: "Mira") { nodes { date } } }"#)
        .await;
    assert_eq!(
        dates(&r, "shift"),
        [
            "2026-12-01T06:45:00Z",
            "2026-11-30T08:00:00Z",
            "2026-11-30T07:15:00Z"
        ]
    );
    let sent = requests(&r);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["keyCondition"], r#"Operator = "Mira""#);
    let r = api
        .run(r#"{ shift(operator: "Mira", from: "2026-11-30T07:30:00Z", first: 1) { nodes { date } pageInfo { hasNextPage endCursor } } }"#)
        .await;
    assert_eq!(dates(&r, "shift"), ["2026-12-01T06:45:00Z"]);
    let after = r["data"]["shift"]["pageInfo"]["endCursor"]
        .as_str()
        .unwrap();
    let r = api
        .run(&format!(
            r#"{{ shift(operator: "Mira", from: "2026-11-30T07:30:00Z", first: 5, after: "{after}") {{ nodes {{ date }} }} }}"#
        ))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(dates(&r, "shift"), ["2026-11-30T08:00:00Z"]);
}

async fn a_time_is_written_in_the_tables_form(api: &Api) {
    let log = r#"mutation($date: String!) { logState(input: { deviceId: "10044", state: ALARM, date: $date, operator: "Tomas" }) { stateChange { date } } }"#;
    let r = api
        .run_with(log, json!({ "date": "2026-12-03T10:00:00.250Z" }))
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["logState"]["stateChange"]["date"],
        "2026-12-03T10:00:00Z"
    );
    let item = api
        .raw
        .get_item(GetItem {
            key: PrimaryKey::new("d#10044", "ALARM#2026-12-03T10:00:00"),
            consistent_read: true,
        })
        .await
        .unwrap()
        .expect("the new change of state");
    assert_eq!(item["Date"], s("2026-12-03T10:00:00"));
    // The same second again: taken.
    let r = api
        .run_with(log, json!({ "date": "2026-12-03T10:00:00Z" }))
        .await;
    assert_eq!(error_codes(&r), ["CONFLICT"], "{r:#}");
    let r = api.run_with(log, json!({ "date": "yesterday" })).await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
    api.assert_clean(&chart()).await;
}
