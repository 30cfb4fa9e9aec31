//! Keys as tables have them, on both engines alike: a number (`N`) partition and sort key,
//! sorted by value (not by text: `9` before `10`, `-1` before `0.5`), queried by range; a
//! simple primary key (the partition key alone); an index keyed by its partition key alone;
//! a local secondary index (the table's partition key, a sort key of its own). Each case
//! runs on the embedded engine and on DynamoDB Local.

use std::sync::Arc;

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::{
    AttributeValue as V, Delete, GetItem, IndexProjection, IndexSchema, Item, KeyType, PrimaryKey,
    Put, Query, SortCondition, Store, StoreError, TableSchema,
};

/// A fresh table of `schema` on each engine: the embedded one, then DynamoDB Local where it
/// is available.
async fn engines(schema: TableSchema, prefix: &str) -> Vec<Arc<dyn Store>> {
    let embedded = EmbeddedStore::in_memory("shapes", schema.clone()).unwrap();
    assert!(embedded.create_table().await.unwrap());
    let mut out: Vec<Arc<dyn Store>> = vec![Arc::new(embedded)];
    if let Some(endpoint) = crate::common::dynamo_local::endpoint().await {
        let table = crate::common::dynamo_local::unique_table_name(prefix);
        let store = crate::common::dynamo_local::connect_with(&endpoint, &table, schema).await;
        assert!(store.create_table().await.unwrap());
        out.push(Arc::new(store));
    }
    out
}

async fn finish(store: Arc<dyn Store>) {
    if store.engine_name() == "dynamodb" {
        store.delete_table().await.unwrap();
    }
}

/// The item at `pk` / `sk`, read strongly consistent.
async fn get(store: &dyn Store, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
    store
        .get_item(GetItem {
            key: PrimaryKey::new(pk, sk),
            consistent_read: true,
        })
        .await
}

/// Refused before it is sent, as DynamoDB refuses it.
#[track_caller]
fn refused<T: std::fmt::Debug>(r: Result<T, StoreError>, engine: &str) {
    assert!(
        matches!(r, Err(StoreError::Validation(_))),
        "{engine}: {r:?}"
    );
}

fn item(pairs: &[(&str, V)]) -> Item {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn n(x: &str) -> V {
    V::N(x.into())
}

fn s(x: &str) -> V {
    V::S(x.into())
}

fn numbered() -> TableSchema {
    TableSchema {
        pk: "AccountId".into(),
        pk_type: KeyType::N,
        sk: Some("Seq".into()),
        sk_type: KeyType::N,
        indexes: Vec::new(),
        time_to_live: None,
    }
}

async fn query(
    store: &dyn Store,
    partition: &str,
    sort: Option<SortCondition>,
    forward: bool,
) -> Vec<String> {
    let out = store
        .query(Query {
            sort,
            forward,
            consistent_read: true,
            ..Query::partition(partition)
        })
        .await
        .unwrap();
    out.items
        .iter()
        .map(|i| match &i["Seq"] {
            V::N(x) => x.clone(),
            other => panic!("Seq is no number: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn number_keys_sort_by_value_on_both_engines() {
    for store in engines(numbered(), "number-keys").await {
        for seq in ["10", "9", "-1", "0.5", "100", "-20", "0"] {
            let it = item(&[("AccountId", n("7")), ("Seq", n(seq)), ("Note", s(seq))]);
            store.put_item(Put::new(it)).await.unwrap();
        }
        // Another account's items stay in their own partition.
        let other = item(&[("AccountId", n("70")), ("Seq", n("1"))]);
        store.put_item(Put::new(other)).await.unwrap();
        let engine = store.engine_name();
        assert_eq!(
            query(store.as_ref(), "7", None, true).await,
            ["-20", "-1", "0", "0.5", "9", "10", "100"],
            "{engine}"
        );
        assert_eq!(
            query(store.as_ref(), "7", None, false).await,
            ["100", "10", "9", "0.5", "0", "-1", "-20"],
            "{engine}"
        );
        assert_eq!(
            query(
                store.as_ref(),
                "7",
                Some(SortCondition::Between("0".into(), "10".into())),
                true
            )
            .await,
            ["0", "0.5", "9", "10"],
            "{engine}"
        );
        assert_eq!(
            query(
                store.as_ref(),
                "7",
                Some(SortCondition::Gt("9".into())),
                true
            )
            .await,
            ["10", "100"],
            "{engine}"
        );
        let got = get(store.as_ref(), "7", "10")
            .await
            .unwrap()
            .expect("the item at 7 / 10");
        assert_eq!(got["Note"], s("10"), "{engine}");
        // A key that is no number is refused before it is sent, as DynamoDB refuses it.
        refused(get(store.as_ref(), "seven", "1").await, engine);
        // begins_with takes no number.
        refused(
            store
                .query(Query {
                    sort: Some(SortCondition::BeginsWith("1".into())),
                    ..Query::partition("7")
                })
                .await,
            engine,
        );
        finish(store).await;
    }
}

fn sessions() -> TableSchema {
    TableSchema {
        pk: "SessionToken".into(),
        pk_type: KeyType::S,
        sk: None,
        sk_type: KeyType::S,
        indexes: vec![IndexSchema {
            name: "UserIndex".into(),
            pk: "Username".into(),
            pk_type: KeyType::S,
            sk: None,
            sk_type: KeyType::S,
            pk_more: Vec::new(),
            sk_more: Vec::new(),
            local: false,
            projection: IndexProjection::KeysOnly,
        }],
        time_to_live: None,
    }
}

#[tokio::test]
async fn a_simple_key_and_an_index_keyed_by_its_partition_alone_on_both_engines() {
    for store in engines(sessions(), "simple-keys").await {
        let engine = store.engine_name();
        for (token, user) in [("t1", "ada"), ("t2", "ada"), ("t3", "grace")] {
            let it = item(&[
                ("SessionToken", s(token)),
                ("Username", s(user)),
                ("Device", s("x")),
            ]);
            store.put_item(Put::new(it)).await.unwrap();
        }
        let got = get(store.as_ref(), "t2", "").await.unwrap().expect("t2");
        assert_eq!(got["Username"], s("ada"), "{engine}");
        // A sort key the table does not have is refused.
        refused(get(store.as_ref(), "t2", "x").await, engine);
        let out = store
            .query(Query {
                index: Some("UserIndex".into()),
                ..Query::partition("ada")
            })
            .await
            .unwrap();
        let mut tokens: Vec<&V> = out.items.iter().map(|i| &i["SessionToken"]).collect();
        tokens.sort_by_key(|v| format!("{v:?}"));
        assert_eq!(tokens, [&s("t1"), &s("t2")], "{engine}");
        for i in &out.items {
            let mut names: Vec<&str> = i.keys().map(String::as_str).collect();
            names.sort_unstable();
            assert_eq!(names, ["SessionToken", "Username"], "{engine}: keys only");
        }
        store
            .delete_item(Delete::new(PrimaryKey::new("t1", "")))
            .await
            .unwrap();
        let out = store
            .query(Query {
                index: Some("UserIndex".into()),
                ..Query::partition("ada")
            })
            .await
            .unwrap();
        assert_eq!(out.items.len(), 1, "{engine}");
        // An item without the key is refused.
        refused(
            store
                .put_item(Put::new(item(&[("Username", s("ada"))])))
                .await,
            engine,
        );
        finish(store).await;
    }
}

fn with_local_index() -> TableSchema {
    TableSchema {
        pk: "PK".into(),
        pk_type: KeyType::S,
        sk: Some("SK".into()),
        sk_type: KeyType::S,
        indexes: vec![IndexSchema {
            name: "ByScore".into(),
            pk: "PK".into(),
            pk_type: KeyType::S,
            sk: Some("Score".into()),
            sk_type: KeyType::N,
            pk_more: Vec::new(),
            sk_more: Vec::new(),
            local: true,
            projection: IndexProjection::All,
        }],
        time_to_live: None,
    }
}

#[tokio::test]
async fn a_local_index_sorts_a_partition_otherwise_on_both_engines() {
    for store in engines(with_local_index(), "local-index").await {
        let engine = store.engine_name();
        for (sk, score) in [("GAME#a", "30"), ("GAME#b", "4"), ("GAME#c", "200")] {
            let it = item(&[("PK", s("PLAYER#1")), ("SK", s(sk)), ("Score", n(score))]);
            store.put_item(Put::new(it)).await.unwrap();
        }
        let out = store
            .query(Query {
                index: Some("ByScore".into()),
                forward: false,
                ..Query::partition("PLAYER#1")
            })
            .await
            .unwrap();
        let games: Vec<&V> = out.items.iter().map(|i| &i["SK"]).collect();
        assert_eq!(
            games,
            [&s("GAME#c"), &s("GAME#a"), &s("GAME#b")],
            "{engine}"
        );
        finish(store).await;
    }
}

/// A shop's stock: items keyed by their SKU alone, and an index of a multi-attribute key:
/// partition `Region` (S) and `Shelf` (N), sort `Status` (S) then `Qty` (N).
fn stock() -> TableSchema {
    TableSchema {
        pk: "Sku".into(),
        pk_type: KeyType::S,
        sk: None,
        sk_type: KeyType::S,
        indexes: vec![IndexSchema {
            pk_type: KeyType::S,
            pk_more: vec![("Shelf".into(), KeyType::N)],
            sk_more: vec![("Qty".into(), KeyType::N)],
            projection: IndexProjection::All,
            ..IndexSchema::new("ByPlace", "Region", Some("Status"))
        }],
        time_to_live: None,
    }
}

fn skus(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .map(|i| match &i["Sku"] {
            V::S(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_multi_attribute_index_key_is_queried_by_its_rules_on_both_engines() {
    for store in engines(stock(), "multi-key").await {
        let engine = store.engine_name();
        let rows = [
            ("a", "eu", "4", "OPEN", Some("10")),
            ("b", "eu", "4", "OPEN", Some("9")),
            ("c", "eu", "4", "SHUT", Some("1")),
            ("d", "eu", "4", "OPEN", Some("-2.5")),
            ("e", "eu", "5", "OPEN", Some("3")),
            ("f", "us", "4", "OPEN", Some("3")),
            // No `Qty`: not in the index (it is sparse on every key attribute).
            ("g", "eu", "4", "OPEN", None),
            ("h", "eu", "4", "OLD", Some("7")),
        ];
        for (sku, region, shelf, status, qty) in rows {
            let mut it = item(&[
                ("Sku", s(sku)),
                ("Region", s(region)),
                ("Shelf", n(shelf)),
                ("Status", s(status)),
            ]);
            if let Some(q) = qty {
                it.insert("Qty".into(), n(q));
            }
            store.put_item(Put::new(it)).await.unwrap();
        }
        let on =
            |partition_more: &[&str], sort_prefix: &[&str], sort: Option<SortCondition>| Query {
                index: Some("ByPlace".into()),
                partition_more: partition_more.iter().map(|v| (*v).to_owned()).collect(),
                sort_prefix: sort_prefix.iter().map(|v| (*v).to_owned()).collect(),
                sort,
                ..Query::partition("eu")
            };
        // The whole partition, by `Status`, then `Qty` by value.
        let all = store.query(on(&["4"], &[], None)).await.unwrap();
        assert_eq!(skus(&all.items), ["h", "d", "b", "a", "c"], "{engine}");
        // `Status = OPEN`, then a range on `Qty`.
        let open = store
            .query(on(&["4"], &["OPEN"], Some(SortCondition::Ge("0".into()))))
            .await
            .unwrap();
        assert_eq!(skus(&open.items), ["b", "a"], "{engine}");
        let between = store
            .query(on(
                &["4"],
                &["OPEN"],
                Some(SortCondition::Between("-3".into(), "9".into())),
            ))
            .await
            .unwrap();
        assert_eq!(skus(&between.items), ["d", "b"], "{engine}");
        // A condition on the first sort attribute alone.
        let starts = store
            .query(on(&["4"], &[], Some(SortCondition::BeginsWith("O".into()))))
            .await
            .unwrap();
        assert_eq!(skus(&starts.items), ["h", "d", "b", "a"], "{engine}");
        let gt = store
            .query(on(&["4"], &[], Some(SortCondition::Gt("OPEN".into()))))
            .await
            .unwrap();
        assert_eq!(skus(&gt.items), ["c"], "{engine}");
        // Both sort attributes equal.
        let one = store
            .query(on(&["4"], &["OPEN"], Some(SortCondition::Eq("9.0".into()))))
            .await
            .unwrap();
        assert_eq!(skus(&one.items), ["b"], "{engine}");
        // Pages: backward, two at a time, each resuming from the last key.
        let mut q = Query {
            forward: false,
            limit: Some(2),
            ..on(&["4"], &["OPEN"], None)
        };
        let mut seen = Vec::new();
        loop {
            let page = store.query(q.clone()).await.unwrap();
            seen.extend(skus(&page.items));
            match page.last_evaluated_key {
                Some(k) => {
                    let ik = k.index.as_ref().expect("an index key");
                    assert_eq!(ik.pk_more, ["4"], "{engine}");
                    assert_eq!(ik.sort_values().count(), 2, "{engine}");
                    q.start = Some(k);
                }
                None => break,
            }
        }
        assert_eq!(seen, ["a", "b", "d"], "{engine}");
        // DynamoDB's rules: every partition attribute, no sort attribute skipped.
        refused(store.query(on(&[], &[], None)).await, engine);
        refused(
            store.query(on(&["4"], &["OPEN", "1", "x"], None)).await,
            engine,
        );
        refused(
            store
                .query(on(
                    &["4"],
                    &["OPEN", "1"],
                    Some(SortCondition::Eq("1".into())),
                ))
                .await,
            engine,
        );
        refused(store.query(on(&["four"], &[], None)).await, engine);
        // A key attribute of the wrong type is refused on write.
        let bad = item(&[
            ("Sku", s("z")),
            ("Region", s("eu")),
            ("Shelf", s("4")),
            ("Status", s("OPEN")),
            ("Qty", n("1")),
        ]);
        refused(store.put_item(Put::new(bad)).await, engine);
        finish(store).await;
    }
}

/// What the port refuses of a multi-attribute key, DynamoDB Local refuses too, sent raw:
/// a partition attribute missing, a sort attribute skipped, a range before the last sort
/// attribute given, a value of the wrong type.
#[tokio::test]
async fn dynamodb_local_refuses_what_the_port_refuses_of_a_multi_attribute_key() {
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    use aws_sdk_dynamodb::types::AttributeValue as A;
    let Some(endpoint) = crate::common::dynamo_local::endpoint().await else {
        return;
    };
    let table = crate::common::dynamo_local::unique_table_name("multi-raw");
    let store = crate::common::dynamo_local::connect_with(&endpoint, &table, stock()).await;
    assert!(store.create_table().await.unwrap());
    let c = store.client();
    // Every attribute by a name placeholder (`Region` and `Status` are reserved words),
    // each placeholder named only where it is used, as DynamoDB asks.
    let query = |cond: &str, values: &[(&str, A)]| {
        let names: std::collections::HashMap<String, String> = [
            ("#r", "Region"),
            ("#s", "Shelf"),
            ("#t", "Status"),
            ("#q", "Qty"),
        ]
        .into_iter()
        .filter(|(k, _)| cond.contains(k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        c.query()
            .table_name(&table)
            .index_name("ByPlace")
            .key_condition_expression(cond)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(
                values
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.clone()))
                    .collect(),
            ))
            .send()
    };
    let (eu, four) = (A::S("eu".into()), A::N("4".into()));
    let cases = [
        ("#r = :r", vec![(":r", eu.clone())]),
        (
            "#r = :r AND #s = :s AND #q = :q",
            vec![
                (":r", eu.clone()),
                (":s", four.clone()),
                (":q", A::N("1".into())),
            ],
        ),
        (
            "#r = :r AND #s = :s AND #t > :t AND #q = :q",
            vec![
                (":r", eu.clone()),
                (":s", four.clone()),
                (":t", A::S("OPEN".into())),
                (":q", A::N("1".into())),
            ],
        ),
        (
            "#r = :r AND #s = :s",
            vec![(":r", eu.clone()), (":s", A::S("4".into()))],
        ),
    ];
    for (cond, values) in cases {
        let code = match query(cond, &values).await {
            Ok(_) => "accepted".to_owned(),
            Err(e) => e.code().unwrap_or("no code").to_owned(),
        };
        assert_eq!(code, "ValidationException", "{cond}");
    }
    let ok = query(
        "#r = :r AND #s = :s AND #t = :t AND #q >= :q",
        &[
            (":r", eu),
            (":s", four),
            (":t", A::S("OPEN".into())),
            (":q", A::N("1".into())),
        ],
    )
    .await;
    assert!(ok.is_ok(), "{ok:?}");
    store.delete_table().await.unwrap();
}
