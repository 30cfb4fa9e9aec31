//! `itemgraph migrate` of a chart's change, on both engines: the second chart as it was
//! (no phone markers, no version, stores outside GSI1, no time to live, no store counts,
//! no counter shards) recorded in its table, then migrated to that chart with all of them:
//!
//! - the plan names each step, and a dry run counts what each would change and writes
//!   nothing;
//! - the run turns the Time to Live on, writes the stores' GSI1 keys, puts the phones'
//!   markers, gives the store without a version its 1, puts each chain's counter shards
//!   and recounts its stores, and records the chart; `check`
//!   of the new chart is clean after it, and a second run plans nothing;
//! - a plan with a step migrate does not make (an index the table lacks) writes nothing.

use std::sync::Arc;

use itemgraph::chart::Chart;
use itemgraph::migrate::{chart as planned, run_chart, Options};
use itemgraph::store::{AttributeValue, PrimaryKey, Store, Update, UpdateExpr};

const LOCATOR: &str = include_str!("../../examples/charts/store-locator.toml");

/// The second chart with a GSI1 its table has, stores in it (`STORECITY#…`), a time to
/// live, the chain's counters on four shards: the chart migrated to.
fn now_chart() -> String {
    let deleted = LOCATOR.find("[mutations.deleteChain]").unwrap();
    let end = deleted + LOCATOR[deleted..].find("\n\n").unwrap() + 2;
    // A chain's counts on shards: its create puts them, and it is not deleted (one
    // condition cannot see its counts).
    format!("{}{}", &LOCATOR[..deleted], &LOCATOR[end..])
        .replace(
            "[patterns.10]\nname = \"Remove a chain that has no stores\"\nrequest = \"DeleteItem\"\nentity = \"Chain\"\nfield = \"Mutation.deleteChain\"\n",
            "",
        )
        .replace(
            "name = \"Create a chain\"\nrequest = \"PutItem\"",
            "name = \"Create a chain\"\nrequest = \"TransactWriteItems\"",
        )
        .replace(
            "field = \"Query.chain\"",
            "field = \"Query.chain\"\nwith_shards = \"PK = CHAIN#{slug} AND SK BETWEEN CHAIN#{slug} AND CHAIN#{slug}#COUNT#~\"",
        )
        .replace(
            "parent = \"Chain\"\nchildren = \"Store\"",
            "parent = \"Chain\"\nbeside = [\"ChainShard\"]\nchildren = \"Store\"",
        )
        .replace(
            "[query.chain]",
            "[entities.ChainShard]\nshards_of = \"Chain\"\nshards = 4\nkey = [\"CHAIN#{chain}\", \"CHAIN#{chain}#COUNT#{shard:02}\"]\n\n\
             [entities.ChainShard.attributes]\nchain = \"slug\"\nshard = { type = \"int\", min = 0, max = 3 }\nstoreCount = \"counter\"\nopenStoreCount = \"counter\"\n\n[query.chain]",
        )
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
/// markers, no version, no store counts, no shards.
fn then_chart() -> String {
    let now = now_chart();
    let shards = now.find("[entities.ChainShard]").unwrap();
    let end = now[shards..].find("[query.chain]").unwrap();
    format!("{}{}", &now[..shards], &now[shards + end..])
        .replace(
            "\nwith_shards = \"PK = CHAIN#{slug} AND SK BETWEEN CHAIN#{slug} AND CHAIN#{slug}#COUNT#~\"",
            "",
        )
        .replace("beside = [\"ChainShard\"]\n", "")
        .replace(
            "name = \"Create a chain\"\nrequest = \"TransactWriteItems\"",
            "name = \"Create a chain\"\nrequest = \"PutItem\"",
        )
        .replace(
            "counts = { chain = [\"storeCount\", { by = \"status\", counters = { OPEN = \"openStoreCount\" } }] }\n",
            "",
        )
        // Without markers, counts or a version, a store's change and removal are one
        // request of their own.
        .replace(
            "name = \"Change a store (a new phone moves its marker)\"\nrequest = \"TransactWriteItems\"",
            "name = \"Change a store (a new phone moves its marker)\"\nrequest = \"UpdateItem\"",
        )
        .replace(
            "name = \"Remove a store, its phone's marker and its count\"\nrequest = \"TransactWriteItems\"",
            "name = \"Remove a store, its phone's marker and its count\"\nrequest = \"DeleteItem\"",
        )
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stores.redb");
    {
        let store =
            itemgraph::store::embedded::EmbeddedStore::open(&path, "stores", then.table_schema())
                .unwrap();
        a_chart_change_is_planned_and_migrated(&store).await;
    }
    // The file opened again with the schema of a chart that adds an index, and written
    // through it before any migration (as `serve` of the new chart would): the index's
    // table exists, not filled.
    let later = parse(&later_chart());
    let store =
        itemgraph::store::embedded::EmbeddedStore::open(&path, "stores", later.table_schema())
            .unwrap();
    let chain = PrimaryKey::new("CHAIN#bean-there", "CHAIN#bean-there");
    for u in [
        UpdateExpr::default()
            .set("GSI2PK", AttributeValue::S("CHAINS".into()))
            .set("GSI2SK", AttributeValue::S("CHAIN#bean-there".into())),
        UpdateExpr::default().remove("GSI2PK").remove("GSI2SK"),
    ] {
        store
            .update_item(Update::new(chain.clone(), u))
            .await
            .unwrap();
    }
    a_new_index_is_created_and_filled(&store).await;
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
    let later = crate::common::dynamo_local::connect_with(
        &endpoint,
        &table,
        parse(&later_chart()).table_schema(),
    )
    .await;
    a_new_index_is_created_and_filled(&later).await;
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
    // The chains' counters from before the stores counted on them: absent.
    let chains: Vec<String> = then
        .samples
        .iter()
        .filter(|i| i.get("Type") == Some(&AttributeValue::S("Chain".into())))
        .map(|i| match &i["slug"] {
            AttributeValue::S(s) => s.clone(),
            _ => unreachable!(),
        })
        .collect();
    for chain in &chains {
        store
            .update_item(Update::new(
                PrimaryKey::new(format!("CHAIN#{chain}"), format!("CHAIN#{chain}")),
                UpdateExpr::default()
                    .remove("storeCount")
                    .remove("openStoreCount"),
            ))
            .await
            .unwrap();
    }
    // A count per chain with a store, and per chain with an open store.
    let counted = |status: Option<&str>| {
        chains
            .iter()
            .filter(|c| {
                then.samples.iter().any(|i| {
                    i.get("chain") == Some(&AttributeValue::S((*c).clone()))
                        && i.get("Type") == Some(&AttributeValue::S("Store".into()))
                        && status
                            .is_none_or(|s| i.get("status") == Some(&AttributeValue::S(s.into())))
                })
            })
            .count()
    };
    let counts = counted(None) + counted(Some("OPEN"));
    let shards = 4 * chains.len();
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
            "counter-shards Chain: for every item without them",
            "counts Store.chain: storeCount, openStoreCount recounted",
            "index-keys Store GSI1: the keys its templates render",
            "markers Store.phone: one for every value",
            "time-to-live: turned on for `expiresAt`",
            "versions Store.version: 1 where there is none",
        ]
    );
    assert!(!dry.refused && dry.time_to_live_enabled);
    assert_eq!(store.time_to_live().await.unwrap(), None, "a dry run");
    assert_eq!(
        (
            dry.keys_rewritten,
            dry.markers_put,
            dry.versions_set,
            dry.shards_put,
            dry.counts_set
        ),
        (stores, phones, 1, shards, counts)
    );
    assert!(!itemgraph::check::check_chart(store, &now)
        .await
        .unwrap()
        .is_clean());

    // The run: everything the new chart implies, the chart recorded.
    let done = run_chart(store, &now, &Options::default()).await.unwrap();
    assert_eq!(
        (
            done.keys_rewritten,
            done.markers_put,
            done.versions_set,
            done.shards_put,
            done.counts_set
        ),
        (stores, phones, 1, shards, counts),
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
        (
            again.keys_rewritten,
            again.markers_put,
            again.versions_set,
            again.shards_put,
            again.counts_set
        ),
        (0, 0, 0, 0, 0)
    );
}

/// The chart migrated to, with a GSI2 of every chain (`CHAINS`): an index the table does
/// not have yet.
fn later_chart() -> String {
    now_chart()
        .replace(
            "[indexes.GSI1]",
            "[indexes.GSI2]\npartition_key = \"GSI2PK\"\nsort_key = \"GSI2SK\"\nprojection = \"ALL\"\n\n[indexes.GSI1]",
        )
        .replace(
            "key = [\"CHAIN#{slug}\", \"CHAIN#{slug}\"]",
            "key = [\"CHAIN#{slug}\", \"CHAIN#{slug}\"]\nindexes.GSI2 = [\"CHAINS\", \"CHAIN#{slug}\"]",
        )
}

/// The index created (UpdateTable; the embedded engine's own), the chains' keys for it
/// written, and the index answering a Query; an index whose keys or projection change
/// refused; items moved to a new primary key.
async fn a_new_index_is_created_and_filled(store: &dyn Store) {
    let (now, later) = (parse(&now_chart()), parse(&later_chart()));
    let chains = now
        .samples
        .iter()
        .filter(|i| i.get("Type") == Some(&AttributeValue::S("Chain".into())))
        .count();
    let has_gsi2 = || async {
        store
            .describe_table()
            .await
            .unwrap()
            .unwrap()
            .indexes
            .contains(&"GSI2".to_owned())
    };
    assert!(!has_gsi2().await);
    let dry = run_chart(
        store,
        &later,
        &Options {
            dry_run: true,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        dry.plan,
        [
            "index GSI2: created (UpdateTable)",
            "index-keys Chain GSI2: the keys its templates render"
        ]
    );
    assert_eq!((dry.indexes_created, dry.keys_rewritten), (1, chains));
    assert!(!has_gsi2().await, "a dry run");
    let done = run_chart(store, &later, &Options::default()).await.unwrap();
    assert_eq!(
        (done.indexes_created, done.keys_rewritten),
        (1, chains),
        "{done}"
    );
    assert!(has_gsi2().await);
    let page = store
        .query(itemgraph::store::Query {
            index: Some("GSI2".into()),
            ..itemgraph::store::Query::partition("CHAINS")
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), chains);
    let after = itemgraph::check::check_chart(store, &later).await.unwrap();
    assert!(after.is_clean(), "{after}: {:#?}", after.violations);

    // An index whose key attributes or projection change: refused, nothing written.
    for (from, to, why) in [
        (
            "sort_key = \"GSI2SK\"",
            "sort_key = \"GSI2SORT\"",
            "its key attributes change",
        ),
        (
            "sort_key = \"GSI2SK\"\nprojection = \"ALL\"",
            "sort_key = \"GSI2SK\"\nprojection = \"KEYS_ONLY\"",
            "its projection changes",
        ),
    ] {
        let changed = parse(&later_chart().replace(from, to));
        let refused = run_chart(store, &changed, &Options::default())
            .await
            .unwrap();
        assert!(refused.refused);
        let says = format!("refused index GSI2: {why}");
        assert!(
            refused.plan.iter().any(|s| s.starts_with(&says)),
            "{:?}",
            refused.plan
        );
    }
    let recorded = planned::recorded(store).await.unwrap().expect("recorded");
    assert_eq!(recorded.source, later.source, "nothing recorded");

    // The phones' markers under another key: each moved, in one transaction.
    let moved = parse(&later_chart().replace("PHONE#{chain}#{phone}", "TEL#{chain}#{phone}"));
    let phones = later
        .samples
        .iter()
        .filter(|i| {
            i.contains_key("phone") && i.get("Type") == Some(&AttributeValue::S("Store".into()))
        })
        .count();
    let done = run_chart(store, &moved, &Options::default()).await.unwrap();
    assert_eq!(
        done.plan,
        ["rekey StorePhone: every item moved to the key its templates render"]
    );
    assert_eq!(done.items_moved, phones, "{done}");
    let after = itemgraph::check::check_chart(store, &moved).await.unwrap();
    assert!(after.is_clean(), "{after}: {:#?}", after.violations);
    let again = run_chart(store, &moved, &Options::default()).await.unwrap();
    assert_eq!((again.plan.len(), again.items_moved), (0, 0));
}

const SHOP: &str = include_str!("../../examples/charts/corner-shop.toml");

/// The corner shop before its index of a multi-attribute key (`ByProductStatus`), its
/// pattern and its field.
fn shop_before_multi() -> String {
    let cut = |text: &str, from: &str, to: &str| {
        let (a, b) = (text.find(from).unwrap(), text.find(to).unwrap());
        format!("{}{}", &text[..a], &text[b..])
    };
    let text = cut(SHOP, "[indexes.ByProductStatus]", "[kinds.customerId]");
    let text = cut(&text, "[patterns.10]", "[mutations.createCustomer]");
    let field = text.find("ordersIn = {").unwrap();
    let end = field + text[field..].find('\n').unwrap() + 1;
    format!("{}{}", &text[..field], &text[end..]).replace(
        "indexes.ByProductStatus = [\"{sku}\", \"{status}\", \"{placedAt}\"]\n",
        "",
    )
}

/// The table made from the shop before the index: created, its samples written, that
/// chart recorded in it.
async fn made_before_multi(raw: &Arc<dyn Store>) {
    let before = parse(&shop_before_multi());
    assert!(raw.create_table().await.unwrap());
    let store = itemgraph::store::stored::wrap(raw.clone(), &before);
    itemgraph::chart::samples::seed(store.as_ref(), &before)
        .await
        .unwrap();
    planned::record(store.as_ref(), &before, 0).await.unwrap();
}

/// `migrate` to a chart that adds an index of a multi-attribute key, through `raw` opened
/// with that chart's schema: the index created (UpdateTable; the embedded engine's own),
/// no key written (the items' own attributes are its key), the index answering a Query of
/// them; a change of where its attributes are (partition or sort) refused.
async fn a_multi_attribute_index_is_created(raw: Arc<dyn Store>) {
    let after = parse(SHOP);
    let store = itemgraph::store::stored::wrap(raw.clone(), &after);
    let done = run_chart(store.as_ref(), &after, &Options::default())
        .await
        .unwrap();
    assert_eq!(done.plan, ["index ByProductStatus: created (UpdateTable)"]);
    assert_eq!(
        (done.indexes_created, done.keys_rewritten),
        (1, 0),
        "{done}"
    );
    let page = raw
        .query(itemgraph::store::Query {
            index: Some("ByProductStatus".into()),
            ..itemgraph::store::Query::partition("BK-100")
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2, "{page:?}");
    // The same attributes, `Status` moved from the sort key to the partition.
    let changed = parse(&SHOP.replace(
        "partition_key = [\"ProductSku\"]\nsort_key = [\"Status\", \"PlacedAt\"]",
        "partition_key = [\"ProductSku\", \"Status\"]\nsort_key = [\"PlacedAt\"]",
    ));
    let refused = run_chart(store.as_ref(), &changed, &Options::default())
        .await
        .unwrap();
    assert!(refused.refused);
    assert!(
        refused
            .plan
            .iter()
            .any(|s| s.starts_with("refused index ByProductStatus: its key attributes change")),
        "{:?}",
        refused.plan
    );
}

#[tokio::test]
async fn a_multi_attribute_index_is_created_on_both_engines() {
    let (before, after) = (
        parse(&shop_before_multi()).table_schema(),
        parse(SHOP).table_schema(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shop.redb");
    {
        let raw: Arc<dyn Store> = Arc::new(
            itemgraph::store::embedded::EmbeddedStore::open(&path, "shop", before.clone()).unwrap(),
        );
        made_before_multi(&raw).await;
    }
    let raw: Arc<dyn Store> = Arc::new(
        itemgraph::store::embedded::EmbeddedStore::open(&path, "shop", after.clone()).unwrap(),
    );
    a_multi_attribute_index_is_created(raw).await;

    let Some(endpoint) = crate::common::dynamo_local::endpoint().await else {
        return;
    };
    let table = crate::common::dynamo_local::unique_table_name("migrate_multi");
    let raw: Arc<dyn Store> =
        Arc::new(crate::common::dynamo_local::connect_with(&endpoint, &table, before).await);
    made_before_multi(&raw).await;
    let later = crate::common::dynamo_local::connect_with(&endpoint, &table, after).await;
    a_multi_attribute_index_is_created(Arc::new(later)).await;
    raw.delete_table().await.unwrap();
}
