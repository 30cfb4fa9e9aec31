//! A chart other than the built-in one, served with no code of its own: the store locator
//! of `examples/charts/store-locator.toml`, on both engines. Each access pattern is one
//! request; pages go both ways from the last-seen key; the hierarchy is read at any level;
//! references and `node`/`nodes` are batched; tenants see only their own; the limits hold.

use std::path::Path;
use std::sync::Arc;

use itemgraph::auth::{Access, Role};
use serde_json::{json, Value};

use crate::common::graphql::{error_codes, request_count, requests, Api};

const CHART: &str = "examples/charts/store-locator.toml";

fn chart() -> Arc<itemgraph::chart::Chart> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(CHART);
    Arc::new(itemgraph::chart::load(&path).unwrap_or_else(|e| panic!("{e}")))
}

async fn api(dynamodb: Option<&str>) -> Option<Api> {
    Api::chart(chart(), dynamodb).await
}

macro_rules! on_both_engines {
    ($($case:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $case() {
                    let api = super::api(None).await.expect("the embedded engine");
                    super::$case(&api).await;
                    api.finish().await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $case() {
                    let Some(api) = super::api(Some(stringify!($case))).await else {
                        return;
                    };
                    super::$case(&api).await;
                    api.finish().await;
                }
            )*
        }
    };
}

on_both_engines!(
    a_chain_and_its_first_stores_are_one_query,
    stores_page_forward_and_backward_from_the_last_seen_key,
    the_hierarchy_is_read_at_any_level_in_one_query,
    references_and_nodes_are_batched_into_one_request,
    a_tenant_sees_only_its_own_chain,
    a_cursor_serves_only_its_own_connection,
    the_playground_examples_run_within_their_budgets,
);

fn key_conditions(response: &Value) -> Vec<String> {
    requests(response)
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["operation"].as_str().unwrap(),
                r["keyCondition"].as_str().unwrap()
            )
        })
        .collect()
}

async fn a_chain_and_its_first_stores_are_one_query(api: &Api) {
    let r = api
        .run(
            r#"{ chain(slug: "bean-there") { name storeCount
                 stores(first: 2) { totalCount nodes { name city } pageInfo { hasNextPage hasPreviousPage } } } }"#,
        )
        .await;
    assert_eq!(
        r["data"],
        json!({"chain": {"name": "Bean There Coffee", "storeCount": 5, "stores": {
            "totalCount": 5,
            "nodes": [{"name": "Gastown", "city": "VANCOUVER"}, {"name": "Pearl District", "city": "PORTLAND"}],
            "pageInfo": {"hasNextPage": true, "hasPreviousPage": false}}}}),
        "{r:#}"
    );
    assert_eq!(request_count(&r), 1, "{r:#}");
    assert_eq!(
        key_conditions(&r),
        [r#"Query PK = "CHAIN#bean-there" AND SK >= "CHAIN#bean-there""#]
    );
    // The chain, the page and one more to learn whether a next page exists.
    assert_eq!(requests(&r)[0]["limit"], 4);
    // Without a page, the chain alone is one GetItem; one that does not exist is null.
    let r = api
        .run(r#"{ chain(slug: "bean-there") { slug } none: chain(slug: "no-such") { slug } }"#)
        .await;
    assert_eq!(
        r["data"],
        json!({"chain": {"slug": "bean-there"}, "none": null})
    );
    assert_eq!(request_count(&r), 1, "one BatchGetItem of both keys: {r:#}");
}

async fn stores_page_forward_and_backward_from_the_last_seen_key(api: &Api) {
    let all = [
        "Gastown",
        "Pearl District",
        "Pike Place",
        "Capitol Hill",
        "Riverfront",
    ];
    let page = |args: String| {
        format!(
            r#"{{ chain(slug: "bean-there") {{ stores({args}) {{ edges {{ cursor node {{ name }} }} pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} }} }} }}"#
        )
    };
    let names = |r: &Value| -> Vec<String> {
        r["data"]["chain"]["stores"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["node"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // Forward, two at a time.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    for round in 0.. {
        let args = match &after {
            None => "first: 2".to_owned(),
            Some(c) => format!(r#"first: 2, after: "{c}""#),
        };
        let r = api.run(&page(args)).await;
        assert!(r.get("errors").is_none(), "{r:#}");
        seen.extend(names(&r));
        let info = &r["data"]["chain"]["stores"]["pageInfo"];
        if round > 0 {
            // A later page queries the stores' prefix only, from the last-seen key (and the
            // chain, which no page carried, by key).
            assert!(
                key_conditions(&r).contains(
                    &r#"Query PK = "CHAIN#bean-there" AND begins_with(SK, "STORE#")"#.to_owned()
                ) || key_conditions(&r).iter().any(|k| k.starts_with(
                    r#"Query PK = "CHAIN#bean-there" AND begins_with(SK, "STORE#") (after"#
                )),
                "{r:#}"
            );
            assert_eq!(info["hasPreviousPage"], true);
        }
        if info["hasNextPage"] == false {
            break;
        }
        after = info["endCursor"].as_str().map(str::to_owned);
    }
    assert_eq!(seen, all);
    // Backward from the end, two at a time: the same stores, each page in the
    // connection's order.
    let mut back: Vec<String> = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let args = match &before {
            None => "last: 2".to_owned(),
            Some(c) => format!(r#"last: 2, before: "{c}""#),
        };
        let r = api.run(&page(args)).await;
        assert!(r.get("errors").is_none(), "{r:#}");
        let mut names = names(&r);
        names.extend(back);
        back = names;
        let info = &r["data"]["chain"]["stores"]["pageInfo"];
        if info["hasPreviousPage"] == false {
            break;
        }
        before = info["startCursor"].as_str().map(str::to_owned);
    }
    assert_eq!(back, all);
}

async fn the_hierarchy_is_read_at_any_level_in_one_query(api: &Api) {
    let r = api
        .run(
            r#"{ chain(slug: "bean-there") {
                 us: storesIn(country: "US") { totalCount nodes { name } }
                 wa: storesIn(country: "US", state: "WA") { nodes { name } }
                 seattle: storesIn(country: "US", state: "WA", city: "SEATTLE") { nodes { name } } } }"#,
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    let chain = &r["data"]["chain"];
    assert_eq!(
        chain["us"]["totalCount"],
        Value::Null,
        "no counter per country"
    );
    let names = |v: &Value| v["nodes"].as_array().unwrap().len();
    assert_eq!(
        (
            names(&chain["us"]),
            names(&chain["wa"]),
            names(&chain["seattle"])
        ),
        (4, 3, 2)
    );
    let mut keys = key_conditions(&r);
    keys.sort();
    assert_eq!(
        keys,
        [
            r#"GetItem PK = "CHAIN#bean-there" AND SK = "CHAIN#bean-there""#,
            r#"Query PK = "CHAIN#bean-there" AND begins_with(SK, "STORE#US#")"#,
            r#"Query PK = "CHAIN#bean-there" AND begins_with(SK, "STORE#US#WA#")"#,
            r#"Query PK = "CHAIN#bean-there" AND begins_with(SK, "STORE#US#WA#SEATTLE#")"#,
        ],
        "one request per level, and the chain by key"
    );
    // A level left out above a given one is refused, naming it, before any read.
    let r = api
        .run(r#"{ chain(slug: "bean-there") { storesIn(country: "US", city: "SEATTLE") { nodes { name } } } }"#)
        .await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "city");
    assert_eq!(r["errors"][0]["path"], json!(["chain", "storesIn"]));
    assert_eq!(
        r["data"],
        json!({"chain": null}),
        "a failed non-null field nulls its parent"
    );
    // A value that could forge a key is refused by its kind.
    let r = api
        .run(r#"{ chain(slug: "bean-there") { storesIn(country: "US#WA") { nodes { name } } } }"#)
        .await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"], "{r:#}");
}

async fn references_and_nodes_are_batched_into_one_request(api: &Api) {
    let r = api
        .run(
            r#"{ chain(slug: "bean-there") { stores(first: 5) { nodes { id chain { slug } } } } }"#,
        )
        .await;
    let ids: Vec<String> = r["data"]["chain"]["stores"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 5);
    // The chain came with the page: every store's reference to it is answered from it.
    assert_eq!(request_count(&r), 1, "{r:#}");
    let missing = "Q2hhaW46bm8tc3VjaA"; // Chain:no-such
    let q = format!(
        r#"{{ store(id: "{}") {{ name hours {{ day opens closes }} chain {{ name }} }}
             nodes(ids: ["{}", "{}", "{missing}"]) {{ __typename id ... on Store {{ name }} }} }}"#,
        ids[2], ids[0], ids[4]
    );
    let r = api.run(&q).await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"]["store"],
        json!({"name": "Pike Place", "hours": [
            {"day": "MONDAY", "opens": "06:00", "closes": "18:00"},
            {"day": "SATURDAY", "opens": "07:00", "closes": "16:00"}],
            "chain": {"name": "Bean There Coffee"}})
    );
    assert_eq!(
        r["data"]["nodes"][2],
        Value::Null,
        "an id of nothing is null"
    );
    assert_eq!(r["data"]["nodes"][0]["name"], "Gastown");
    // The store, the nodes and the chain the store refers to: one BatchGetItem, then one
    // more for the reference found in it.
    let ops: Vec<&str> = requests(&r)
        .iter()
        .map(|x| x["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["BatchGetItem", "GetItem"], "{r:#}");
    assert_eq!(requests(&r)[0]["keyCondition"], "4 keys");
    // An id that is not one is refused with its code.
    let r = api.run(r#"{ node(id: "not-an-id") { id } }"#).await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"]);
}

async fn a_tenant_sees_only_its_own_chain(api: &Api) {
    let tea = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("tea-leaf").unwrap(),
        role: Role::Member,
        subject: None,
    };
    let r = api
        .run_as(
            &tea,
            r#"{ mine: chain(slug: "tea-leaf") { stores { nodes { name } } }
                 theirs: chain(slug: "bean-there") { stores { nodes { name } } } }"#,
            Value::Null,
        )
        .await;
    assert!(r.get("errors").is_none(), "{r:#}");
    assert_eq!(
        r["data"],
        json!({"mine": {"stores": {"nodes": [{"name": "Fremont"}]}}, "theirs": null})
    );
    // Another tenant's chain is answered as a missing one, without reading it.
    assert!(
        key_conditions(&r).iter().all(|k| !k.contains("bean-there")),
        "{r:#}"
    );
    // Another tenant's store by id reads as null too.
    let all = api
        .run(r#"{ chain(slug: "bean-there") { stores(first: 1) { nodes { id } } } }"#)
        .await;
    let id = all["data"]["chain"]["stores"]["nodes"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = api
        .run_as(
            &tea,
            &format!(r#"{{ store(id: "{id}") {{ name }} node(id: "{id}") {{ id }} }}"#),
            Value::Null,
        )
        .await;
    assert_eq!(r["data"], json!({"store": null, "node": null}), "{r:#}");
    let r = api
        .run_as(&tea, "{ viewer { chain { slug } role } }", Value::Null)
        .await;
    assert_eq!(
        r["data"],
        json!({"viewer": {"chain": {"slug": "tea-leaf"}, "role": "MEMBER"}})
    );
}

async fn a_cursor_serves_only_its_own_connection(api: &Api) {
    let r = api
        .run(r#"{ chain(slug: "bean-there") { stores(first: 1) { pageInfo { endCursor } } } }"#)
        .await;
    let cursor = r["data"]["chain"]["stores"]["pageInfo"]["endCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // On another connection of the same chain, on another chain, or altered: refused.
    for q in [
        format!(
            r#"{{ chain(slug: "bean-there") {{ storesIn(country: "US", after: "{cursor}") {{ nodes {{ name }} }} }} }}"#
        ),
        format!(
            r#"{{ chain(slug: "tea-leaf") {{ stores(after: "{cursor}") {{ nodes {{ name }} }} }} }}"#
        ),
        format!(
            r#"{{ chain(slug: "bean-there") {{ stores(after: "x{cursor}") {{ nodes {{ name }} }} }} }}"#
        ),
    ] {
        let r = api.run(&q).await;
        assert_eq!(error_codes(&r), ["INVALID_CURSOR"], "{q}: {r:#}");
    }
    // Paging arguments are checked as on every connection.
    let r = api
        .run(r#"{ chain(slug: "bean-there") { stores(first: 101) { nodes { name } } } }"#)
        .await;
    assert_eq!(error_codes(&r), ["BAD_USER_INPUT"]);
    // So is what a request may cost: a page of a page of a page.
    let r = api
        .run(r#"{ chain(slug: "bean-there") { stores(first: 100) { nodes { chain { stores(first: 100) { nodes { name } } } } } } }"#)
        .await;
    assert_eq!(error_codes(&r), ["QUERY_TOO_COMPLEX"], "{r:#}");
    assert_eq!(request_count(&r), 0);
}

/// The playground's tabs for the chart, written from its patterns and samples: one per
/// pattern, reads and writes, each answering without an error in exactly the requests
/// its header states, run in order (a change and a delete name the item a create tab
/// before them made); the table as the chart implies after them.
async fn the_playground_examples_run_within_their_budgets(api: &Api) {
    let examples = itemgraph::graphql::examples(&chart());
    assert_eq!(examples.len(), 10, "{examples:#?}");
    // The delete of the store the create tab makes names the change tab too (it moved
    // the version the delete sends).
    assert!(
        examples[8].contains("as the tabs of access patterns 7 and 8 leave it"),
        "{}",
        examples[8]
    );
    for (n, example) in examples.iter().enumerate() {
        assert!(
            example.starts_with(&format!("# Access pattern {}:", n + 1)),
            "{example}"
        );
        let budget: u64 = example
            .lines()
            .find_map(|l| l.strip_prefix("# dynamodb-requests: "))
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("no budget in {example}"));
        let r = api.run(example).await;
        assert!(r.get("errors").is_none(), "{example}\n{r:#}");
        assert_eq!(request_count(&r), budget, "{example}\n{r:#}");
        // Each request the header names.
        for q in requests(&r) {
            let op = q["operation"].as_str().unwrap();
            assert!(
                example.contains(&format!(" {op}")),
                "{op} unnamed: {example}"
            );
        }
        assert!(
            r["data"]
                .as_object()
                .is_some_and(|d| d.values().all(|v| !v.is_null())),
            "every example reads something: {example}\n{r:#}"
        );
    }
    let report = itemgraph::check::check_chart(api.store.as_ref(), &chart())
        .await
        .unwrap();
    assert!(report.is_clean(), "{report}: {:#?}", report.violations);
}

/// The SDL of the second chart, as `itemgraph schema --chart` prints it, is the one
/// committed beside it: the API a frontend writes against.
#[test]
fn the_second_charts_schema_is_the_committed_one() {
    let sdl = itemgraph::graphql::chart_schema(chart(), &itemgraph::graphql::Limits::default())
        .unwrap()
        .sdl();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/store-locator.graphql");
    if std::env::var_os("UPDATE_SDL").is_some() {
        std::fs::write(&path, &sdl).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == sdl,
        "examples/charts/store-locator.graphql is not `itemgraph schema --chart {CHART}`: run UPDATE_SDL=1 cargo nextest run --test graphql the_second_charts_schema"
    );
}
