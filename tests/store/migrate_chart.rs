//! `itemgraph migrate` of a chart's change, on both engines: the second chart as it was
//! (no phone markers, no version, stores outside GSI1, no time to live) recorded in its
//! table, then migrated to the chart as it is now:
//!
//! - the plan names each step, and a dry run counts what each would change and writes
//!   nothing;
//! - the run turns the Time to Live on, writes the stores' GSI1 keys, puts the phones'
//!   markers and gives the store without a version its 1, and records the chart; `check`
//!   of the new chart is clean after it, and a second run plans nothing;
//! - a plan with a step migrate does not make (an index the table lacks) writes nothing.

use std::sync::Arc;

use itemgraph::chart::Chart;
use itemgraph::migrate::{chart as planned, run_chart, Options};
use itemgraph::store::{AttributeValue, PrimaryKey, Store, Update, UpdateExpr};

const LOCATOR: &str = include_str!("../../examples/charts/store-locator.toml");

/// The second chart with a GSI1 its table has, stores in it (`STORECITY#…`), a time to
/// live: the chart migrated to.
fn now_chart() -> String {
    LOCATOR
        .replace(
            "type_attribute = \"Type\"",
            "type_attribute = \"Type\"\ntime_to_live = \"expiresAt\"\n\n[indexes.GSI1]\npartition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = \"ALL\"",
        )
        .replace(
            "key = [\"CHAIN#{chain}\", \"STORE#{country}#{state}#{city}#{number}\"]",
            "key = [\"CHAIN#{chain}\", \"STORE#{country}#{state}#{city}#{number}\"]\nindexes.GSI1 = [\"STORECITY#{chain}#{city}\", \"STORE#{number}\"]",
        )
}

/// The chart the table was made from: no stores in GSI1, no time to live, no phone
/// markers, no version.
fn then_chart() -> String {
    now_chart()
        .replace("time_to_live = \"expiresAt\"\n", "")
        .replace(
            "\nindexes.GSI1 = [\"STORECITY#{chain}#{city}\", \"STORE#{number}\"]",
            "",
        )
        .replace("unique = { phone = \"StorePhone\" }\n", "")
        .replace("version = \"version\"\n", "")
}

fn parse(text: &str) -> Arc<Chart> {
    Arc::new(itemgraph::chart::parse(text).unwrap_or_else(|e| panic!("{e}")))
}

#[tokio::test]
async fn embedded() {
    let then = parse(&then_chart());
    let store = itemgraph::store::embedded::EmbeddedStore::in_memory("stores", then.table_schema())
        .unwrap();
    a_chart_change_is_planned_and_migrated(&store).await;
}

#[tokio::test]
async fn dynamodb() {
    let Some(endpoint) = crate::common::dynamo_local::endpoint().await else {
        return;
    };
    let table = crate::common::dynamo_local::unique_table_name("migrate_chart");
    let store = crate::common::dynamo_local::connect_with(
        &endpoint,
        &table,
        parse(&then_chart()).table_schema(),
    )
    .await;
    a_chart_change_is_planned_and_migrated(&store).await;
    crate::common::dynamo_local::drop_table(&store).await;
}

async fn a_chart_change_is_planned_and_migrated(store: &dyn Store) {
    let (then, now) = (parse(&then_chart()), parse(&now_chart()));
    // The table as the old chart made it (its Time to Live off: the old chart has none),
    // one store from before versions.
    store.create_table().await.unwrap();
    assert_eq!(store.time_to_live().await.unwrap(), None);
    itemgraph::chart::samples::seed(store, &then).await.unwrap();
    planned::record(store, &then, 0).await.unwrap();
    let pike = PrimaryKey::new("CHAIN#bean-there", "STORE#US#WA#SEATTLE#1001");
    store
        .update_item(Update::new(
            pike.clone(),
            UpdateExpr::default().remove("version"),
        ))
        .await
        .unwrap();
    let phones = then
        .samples
        .iter()
        .filter(|i| i.contains_key("phone"))
        .count();
    let stores = then
        .samples
        .iter()
        .filter(|i| i.get("Type") == Some(&AttributeValue::S("Store".into())))
        .count();
    assert!(
        phones >= 1 && stores >= 3,
        "{phones} phones, {stores} stores"
    );
    let before = itemgraph::check::check_chart(store, &now).await.unwrap();
    assert!(!before.is_clean(), "the old layout breaks the new chart");

    // The plan, and a dry run of it.
    let dry = run_chart(
        store,
        &now,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    let mut plan = dry.plan.clone();
    plan.sort();
    assert_eq!(
        plan,
        [
            "index-keys Store GSI1: the keys its templates render",
            "markers Store.phone: one for every value",
            "time-to-live: turned on for `expiresAt`",
            "versions Store.version: 1 where there is none",
        ]
    );
    assert!(!dry.refused && dry.time_to_live_enabled);
    assert_eq!(store.time_to_live().await.unwrap(), None, "a dry run");
    assert_eq!(
        (dry.keys_rewritten, dry.markers_put, dry.versions_set),
        (stores, phones, 1)
    );
    assert!(!itemgraph::check::check_chart(store, &now)
        .await
        .unwrap()
        .is_clean());

    // The run: everything the new chart implies, the chart recorded.
    let done = run_chart(store, &now, &Options::default()).await.unwrap();
    assert_eq!(
        (done.keys_rewritten, done.markers_put, done.versions_set),
        (stores, phones, 1),
        "{done}"
    );
    assert_eq!(
        store.time_to_live().await.unwrap().as_deref(),
        Some("expiresAt")
    );
    let after = itemgraph::check::check_chart(store, &now).await.unwrap();
    assert!(after.is_clean(), "{after}: {:#?}", after.violations);
    let recorded = planned::recorded(store).await.unwrap().expect("recorded");
    assert_eq!(
        (recorded.source.as_str(), recorded.plans),
        (now.source.as_str(), 1)
    );
    let again = run_chart(store, &now, &Options::default()).await.unwrap();
    assert_eq!(again.plan, Vec::<String>::new());
    assert_eq!(
        (again.keys_rewritten, again.markers_put, again.versions_set),
        (0, 0, 0)
    );

    // An index the table does not have: refused, nothing written.
    let later = parse(&now_chart().replace(
        "[indexes.GSI1]",
        "[indexes.GSI2]\npartition_key = \"GSI2PK\"\nsort_key = \"GSI2SK\"\nprojection = \"ALL\"\n\n[indexes.GSI1]",
    ));
    let refused = run_chart(store, &later, &Options::default()).await.unwrap();
    assert!(refused.refused);
    assert!(
        refused
            .plan
            .iter()
            .any(|s| s.starts_with("refused index GSI2: the table has no such index")),
        "{:?}",
        refused.plan
    );
    let recorded = planned::recorded(store).await.unwrap().expect("recorded");
    assert_eq!(recorded.source, now.source, "nothing recorded");
}
