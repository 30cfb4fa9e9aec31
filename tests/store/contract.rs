//! The store contract: one suite, generic over the port, run on every engine.
//!
//! Each case below is an `async fn(&dyn Store)`; the `contract!` macro at the bottom runs
//! every case once on the embedded engine (`embedded::…`) and once on AWS's DynamoDB Local
//! (`dynamodb::…`), so a test name says which engine it proved.

use std::collections::{BTreeMap, HashMap};

use itemgraph::store::value::equal;

use itemgraph::store::{
    AttributeValue as V, BatchGet, CancelReason, CmpOp, Condition, ConditionCheck, Delete, GetItem,
    IndexKey, Item, PageKey, PrimaryKey, Put, Query, ReturnValues, ScanSegment, SetValue,
    SortCondition, Store, StoreError, TransactAction, Update, UpdateExpr,
};

fn s(v: &str) -> V {
    V::S(v.into())
}
fn n(v: &str) -> V {
    V::N(v.into())
}

fn item(pk: &str, sk: &str, extra: &[(&str, V)]) -> Item {
    let mut i = Item::from([("PK".to_string(), s(pk)), ("SK".to_string(), s(sk))]);
    for (k, v) in extra {
        i.insert(k.to_string(), v.clone());
    }
    i
}

fn key(pk: &str, sk: &str) -> PrimaryKey {
    PrimaryKey::new(pk, sk)
}

fn sk_of(i: &Item) -> String {
    match &i["SK"] {
        V::S(x) => x.clone(),
        other => panic!("SK not a string: {other:?}"),
    }
}

async fn put(store: &dyn Store, i: Item) {
    store.put_item(Put::new(i)).await.expect("put");
}

async fn get(store: &dyn Store, pk: &str, sk: &str) -> Option<Item> {
    store
        .get_item(GetItem {
            key: key(pk, sk),
            consistent_read: true,
        })
        .await
        .expect("get")
}

fn q(partition: &str) -> Query {
    Query::partition(partition)
}

/// Walks every page of a query and returns the pages' sort keys.
async fn pages(store: &dyn Store, mut query: Query) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    loop {
        let page = store.query(query.clone()).await.expect("query");
        out.push(page.items.iter().map(sk_of).collect());
        match page.last_evaluated_key {
            Some(k) => query.start = Some(k),
            None => return out,
        }
    }
}

fn validation(r: Result<impl std::fmt::Debug, StoreError>) -> String {
    match r {
        Err(StoreError::Validation(msg)) => msg,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------

/// The table exists after creation with both indexes, and creating it again is a no-op.
async fn table_lifecycle(store: &dyn Store) {
    let d = store.describe_table().await.unwrap().expect("table exists");
    assert_eq!(d.status, "ACTIVE");
    let mut idx = d.indexes.clone();
    idx.sort();
    assert_eq!(idx, vec!["GSI1", "GSI2"]);
    assert!(
        !store.create_table().await.unwrap(),
        "second create is a no-op"
    );
}

/// An item comes back as written, numbers in DynamoDB's canonical form; absent is None.
async fn put_get_round_trip(store: &dyn Store) {
    let written = item(
        "P",
        "S",
        &[
            ("n", n("1.50")),
            ("z", n("-0")),
            ("e", n("1e3")),
            ("t", s("")),
            ("b", V::Bool(true)),
            ("l", V::L(vec![n("01"), s("x")])),
            ("m", V::M([("k".to_string(), n("2.0"))].into())),
            ("ss", V::Ss(vec!["a".into(), "b".into()])),
        ],
    );
    put(store, written).await;
    let got = get(store, "P", "S").await.expect("present");
    assert_eq!(got["n"], n("1.5"));
    assert_eq!(got["z"], n("0"));
    assert_eq!(got["e"], n("1000"));
    assert_eq!(got["t"], s(""));
    // Nested numbers keep their value; DynamoDB Local (unlike DynamoDB) keeps their text
    // as written, so they are compared by value.
    assert!(equal(&got["l"], &V::L(vec![n("1"), s("x")])));
    assert!(equal(&got["m"], &V::M([("k".to_string(), n("2"))].into())));
    assert_eq!(get(store, "P", "nope").await, None);
}

/// Sort keys order as UTF-8 bytes (not UTF-16): `#` < `L` < `O` < `T` < `U`, and a
/// character above U+FFFF after U+FFFF.
async fn sort_keys_order_as_utf8_bytes(store: &dyn Store) {
    let sks = [
        "USER#b",
        "#ORDER#2",
        "ORG#acme",
        "TICKET#1",
        "LINE#001",
        "USER#a",
        "\u{FFFF}",
        "\u{10000}",
        "é",
        "z",
        "USER#",
        "Z",
    ];
    for sk in sks {
        put(store, item("ORD", sk, &[])).await;
    }
    let mut want: Vec<&str> = sks.to_vec();
    want.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let got = pages(store, q("ORD")).await;
    assert_eq!(
        got,
        vec![want.iter().map(|x| x.to_string()).collect::<Vec<_>>()]
    );
    let mut backward = q("ORD");
    backward.forward = false;
    let got = pages(store, backward).await;
    want.reverse();
    assert_eq!(
        got,
        vec![want.iter().map(|x| x.to_string()).collect::<Vec<_>>()]
    );
}

/// Each sort-key operator selects exactly what it says.
async fn sort_key_conditions(store: &dyn Store) {
    for sk in ["a", "ab", "abc", "b", "ba", "c"] {
        put(store, item("C", sk, &[])).await;
    }
    let cases = [
        (SortCondition::Eq("ab".into()), vec!["ab"]),
        (SortCondition::Lt("b".into()), vec!["a", "ab", "abc"]),
        (SortCondition::Le("b".into()), vec!["a", "ab", "abc", "b"]),
        (SortCondition::Gt("b".into()), vec!["ba", "c"]),
        (SortCondition::Ge("b".into()), vec!["b", "ba", "c"]),
        (
            SortCondition::Between("ab".into(), "b".into()),
            vec!["ab", "abc", "b"],
        ),
        (SortCondition::BeginsWith("ab".into()), vec!["ab", "abc"]),
        (SortCondition::BeginsWith("zz".into()), vec![]),
    ];
    for (cond, want) in cases {
        let mut query = q("C");
        query.sort = Some(cond.clone());
        let got = pages(store, query).await.concat();
        assert_eq!(got, want, "{cond:?}");
    }
}

/// Limit cuts pages; the last-evaluated key comes back whenever a page is full, even when
/// nothing follows; walking pages both ways yields every item once, in order.
async fn limit_and_pagination(store: &dyn Store) {
    for i in 0..7 {
        put(store, item("L", &format!("k{i}"), &[])).await;
    }
    let mut query = q("L");
    query.limit = Some(3);
    let got = pages(store, query.clone()).await;
    assert_eq!(
        got,
        vec![vec!["k0", "k1", "k2"], vec!["k3", "k4", "k5"], vec!["k6"]]
    );
    query.forward = false;
    query.sort = Some(SortCondition::Le("k5".into()));
    let got = pages(store, query.clone()).await;
    assert_eq!(
        got,
        vec![vec!["k5", "k4", "k3"], vec!["k2", "k1", "k0"], vec![]]
    );
    let exact = store.query(query.clone()).await.unwrap();
    assert_eq!(
        exact.last_evaluated_key,
        Some(PageKey {
            table: key("L", "k3"),
            index: None
        })
    );
}

/// A page stops once 1 MB has been read, the item that crosses the line included.
async fn one_megabyte_page_cut(store: &dyn Store) {
    let blob = "x".repeat(100 * 1024);
    for i in 0..15 {
        put(store, item("BIG", &format!("s{i:02}"), &[("d", s(&blob))])).await;
    }
    let first = store.query(q("BIG")).await.unwrap();
    assert_eq!(first.items.len(), 11);
    assert_eq!(
        first.last_evaluated_key.map(|k| k.table),
        Some(key("BIG", "s10"))
    );
    let all = pages(store, q("BIG")).await;
    assert_eq!(all.iter().map(Vec::len).collect::<Vec<_>>(), vec![11, 4]);
}

/// Only items carrying both index keys appear in a GSI; index pages carry the index key
/// and the table key; changing or removing an index key moves the item.
async fn sparse_global_secondary_index(store: &dyn Store) {
    put(
        store,
        item("A", "1", &[("GSI1PK", s("G")), ("GSI1SK", s("x2"))]),
    )
    .await;
    put(
        store,
        item("B", "1", &[("GSI1PK", s("G")), ("GSI1SK", s("x1"))]),
    )
    .await;
    put(store, item("C", "1", &[("GSI1PK", s("G"))])).await;
    put(
        store,
        item("D", "1", &[("GSI2PK", s("G")), ("GSI2SK", s("x0"))]),
    )
    .await;
    let mut query = q("G");
    query.index = Some("GSI1".into());
    query.limit = Some(1);
    let first = store.query(query.clone()).await.unwrap();
    assert_eq!(first.items[0]["PK"], s("B"));
    assert_eq!(
        first.last_evaluated_key,
        Some(PageKey {
            table: key("B", "1"),
            index: Some(IndexKey::new("G", "x1"))
        })
    );
    query.start = first.last_evaluated_key;
    let second = store.query(query.clone()).await.unwrap();
    assert_eq!(second.items[0]["PK"], s("A"));

    // Moving A to another index partition, then out of the index.
    store
        .update_item(Update::new(
            key("A", "1"),
            UpdateExpr::default().set("GSI1PK", s("H")),
        ))
        .await
        .unwrap();
    let mut all_g = q("G");
    all_g.index = Some("GSI1".into());
    let g = store.query(all_g.clone()).await.unwrap();
    assert_eq!(g.items.len(), 1);
    let mut all_h = all_g.clone();
    all_h.partition = "H".into();
    assert_eq!(store.query(all_h.clone()).await.unwrap().items.len(), 1);
    store
        .update_item(Update::new(
            key("A", "1"),
            UpdateExpr::default().remove("GSI1SK"),
        ))
        .await
        .unwrap();
    assert!(store.query(all_h).await.unwrap().items.is_empty());
    store.delete_item(Delete::new(key("B", "1"))).await.unwrap();
    assert!(store.query(all_g).await.unwrap().items.is_empty());
}

/// Conditional writes: create-only puts, version checks, and the current item reported on
/// failure when asked for.
async fn conditional_writes(store: &dyn Store) {
    let create =
        |v: &str| Put::new(item("K", "1", &[("v", n(v))])).when(Condition::not_exists("PK"));
    store.put_item(create("1")).await.unwrap();
    assert_eq!(
        store.put_item(create("2")).await,
        Err(StoreError::ConditionFailed { item: None })
    );
    let bump = |expected: &str| {
        let mut u = Update::new(key("K", "1"), UpdateExpr::default().add("v", 1))
            .when(Condition::eq("v", n(expected)))
            .returning(ReturnValues::AllNew);
        u.return_old_on_condition_failure = true;
        u
    };
    let new = store.update_item(bump("1")).await.unwrap().unwrap();
    assert_eq!(new["v"], n("2"));
    match store.update_item(bump("1")).await {
        Err(StoreError::ConditionFailed {
            item: Some(current),
        }) => assert_eq!(current["v"], n("2")),
        other => panic!("expected a failed condition with the item, got {other:?}"),
    }
    // Comparisons: a missing attribute fails every comparison except `<>`.
    let check =
        |c: Condition| Update::new(key("K", "1"), UpdateExpr::default().set("t", n("0"))).when(c);
    assert!(store
        .update_item(check(Condition::Cmp("nope".into(), CmpOp::Ne, s("a"))))
        .await
        .is_ok());
    assert!(store
        .update_item(check(Condition::Cmp("nope".into(), CmpOp::Lt, s("a"))))
        .await
        .is_err());
    assert!(store
        .update_item(check(Condition::Between("v".into(), n("1.5"), n("2.5"))))
        .await
        .is_ok());
    assert!(store
        .update_item(check(Condition::Or(vec![
            Condition::exists("zz"),
            Condition::BeginsWith("PK".into(), "K".into())
        ])))
        .await
        .is_ok());
    assert!(store
        .update_item(check(Condition::Not(Box::new(Condition::exists("v")))))
        .await
        .is_err());
    let del = Delete {
        key: key("K", "1"),
        condition: Some(Condition::eq("v", n("2"))),
        returns: ReturnValues::AllOld,
        return_old_on_condition_failure: false,
    };
    let old = store.delete_item(del).await.unwrap().unwrap();
    assert_eq!(old["v"], n("2"));
    assert_eq!(get(store, "K", "1").await, None);
}

/// UpdateItem creates absent items, ADDs to missing counters from zero, honours
/// `if_not_exists`, REMOVE and ReturnValues, and refuses ADD on a string.
async fn update_semantics(store: &dyn Store) {
    let e = UpdateExpr {
        set: vec![
            ("name".into(), SetValue::Value(s("n1"))),
            ("created".into(), SetValue::IfNotExists(s("t1"))),
        ],
        remove: vec![],
        add: vec![
            ("count".into(), n("5")),
            ("tags".into(), V::Ss(vec!["a".into()])),
        ],
        ..Default::default()
    };
    let first = store
        .update_item(Update::new(key("U", "1"), e.clone()).returning(ReturnValues::AllOld))
        .await
        .unwrap();
    assert_eq!(first, None, "no old item");
    let mut e2 = e.clone();
    e2.set[1].1 = SetValue::IfNotExists(s("t2"));
    e2.add[1].1 = V::Ss(vec!["b".into(), "a".into()]);
    let new = store
        .update_item(Update::new(key("U", "1"), e2).returning(ReturnValues::AllNew))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(new["created"], s("t1"));
    assert_eq!(new["count"], n("10"));
    let mut tags = match &new["tags"] {
        V::Ss(t) => t.clone(),
        other => panic!("{other:?}"),
    };
    tags.sort();
    assert_eq!(tags, vec!["a", "b"]);
    store
        .update_item(Update::new(
            key("U", "1"),
            UpdateExpr::default().remove("name").add("count", -12),
        ))
        .await
        .unwrap();
    let got = get(store, "U", "1").await.unwrap();
    assert!(!got.contains_key("name"));
    assert_eq!(got["count"], n("-2"));
    let bad = store
        .update_item(Update::new(
            key("U", "1"),
            UpdateExpr {
                add: vec![("created".into(), n("1"))],
                ..Default::default()
            },
        ))
        .await;
    assert!(matches!(bad, Err(StoreError::Validation(_))), "{bad:?}");
}

/// One entry of a map attribute is set or removed by its path (`m.k`), conditioned on it
/// being there or on the map's size; a path into a map that is not there is refused, and
/// an entry's path with its map's in one update overlaps.
async fn map_entries_by_path(store: &dyn Store) {
    let map = |entries: &[(&str, V)]| {
        V::M(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    };
    put(store, item("ME", "1", &[("m", map(&[("a", s("1"))]))])).await;
    let room = Condition::Or(vec![
        Condition::EntryExists("m".into(), "b.c".into()),
        Condition::Size("m".into(), CmpOp::Lt, 2),
    ]);
    let mut u = Update::new(
        key("ME", "1"),
        UpdateExpr::default().set_entry("m", "b.c", s("2")),
    );
    u.condition = Some(room.clone());
    store.update_item(u.clone()).await.unwrap();
    assert_eq!(
        get(store, "ME", "1").await.unwrap()["m"],
        map(&[("a", s("1")), ("b.c", s("2"))])
    );
    // Full now: a new key is refused, the one there may change.
    let mut full = Update::new(
        key("ME", "1"),
        UpdateExpr::default().set_entry("m", "z", s("3")),
    );
    full.condition = Some(Condition::Or(vec![
        Condition::EntryExists("m".into(), "z".into()),
        Condition::Size("m".into(), CmpOp::Lt, 2),
    ]));
    assert!(matches!(
        store.update_item(full).await,
        Err(StoreError::ConditionFailed { .. })
    ));
    let mut again = Update::new(
        key("ME", "1"),
        UpdateExpr::default().set_entry("m", "b.c", s("4")),
    );
    again.condition = Some(room);
    store.update_item(again).await.unwrap();
    let removed = Update::new(key("ME", "1"), UpdateExpr::default().remove_entry("m", "a"))
        .returning(ReturnValues::AllNew);
    let after = store.update_item(removed).await.unwrap().unwrap();
    assert_eq!(after["m"], map(&[("b.c", s("4"))]));
    // Removing an entry that is not there changes nothing.
    let none = Update::new(key("ME", "1"), UpdateExpr::default().remove_entry("m", "a"));
    store.update_item(none).await.unwrap();

    put(store, item("ME", "2", &[])).await;
    let nowhere = Update::new(
        key("ME", "2"),
        UpdateExpr::default().set_entry("m", "a", s("1")),
    );
    let msg = validation(store.update_item(nowhere).await);
    assert!(
        msg.contains("document path provided in the update expression is invalid"),
        "{msg}"
    );
    let both = Update::new(
        key("ME", "1"),
        UpdateExpr::default()
            .set("m", map(&[]))
            .remove_entry("m", "b.c"),
    );
    let msg = validation(store.update_item(both).await);
    assert!(msg.contains("Two document paths overlap"), "{msg}");
}

/// A transaction applies all of its actions or none, and says why per action.
async fn transactions_are_all_or_nothing(store: &dyn Store) {
    put(store, item("T", "parent", &[("count", n("0"))])).await;
    let add_child = |sk: &str| {
        TransactAction::Put(Put::new(item("T", sk, &[])).when(Condition::not_exists("PK")))
    };
    let bump = TransactAction::Update(
        Update::new(key("T", "parent"), UpdateExpr::default().add("count", 1))
            .when(Condition::exists("PK")),
    );
    store
        .transact_write(vec![add_child("c1"), bump.clone()])
        .await
        .unwrap();
    let mut check = ConditionCheck {
        key: key("T", "c1"),
        condition: Condition::not_exists("PK"),
        return_old_on_condition_failure: true,
    };
    let err = store
        .transact_write(vec![
            add_child("c2"),
            bump.clone(),
            TransactAction::ConditionCheck(check.clone()),
        ])
        .await
        .unwrap_err();
    match err {
        StoreError::TransactionCanceled { reasons } => {
            assert_eq!(reasons.len(), 3);
            assert_eq!(reasons[0], CancelReason::None);
            assert_eq!(reasons[1], CancelReason::None);
            match &reasons[2] {
                CancelReason::ConditionalCheckFailed { item: Some(i) } => {
                    assert_eq!(i["SK"], s("c1"))
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("expected a cancelled transaction, got {other:?}"),
    }
    assert_eq!(
        get(store, "T", "c2").await,
        None,
        "nothing of a cancelled transaction stays"
    );
    assert_eq!(get(store, "T", "parent").await.unwrap()["count"], n("1"));
    check.condition = Condition::exists("PK");
    store
        .transact_write(vec![
            add_child("c2"),
            bump,
            TransactAction::ConditionCheck(check),
            TransactAction::Delete(Delete::new(key("T", "nothing"))),
        ])
        .await
        .unwrap();
    assert_eq!(get(store, "T", "parent").await.unwrap()["count"], n("2"));
    assert!(get(store, "T", "c2").await.is_some());
}

/// Writes sent at once apply one after the other, each exactly once, whatever the engine
/// makes of them (the embedded engine commits them in groups): one conditional create of a
/// key wins, counters count every increment, and a cancelled transaction among accepted
/// ones leaves nothing.
async fn concurrent_writes_apply_one_after_another(store: &dyn Store) {
    let creates = (0..40).map(|i| {
        store.put_item(
            Put::new(item("W", "one", &[("by", n(&i.to_string()))]))
                .when(Condition::not_exists("PK")),
        )
    });
    let outcomes = futures::future::join_all(creates).await;
    let won = outcomes.iter().filter(|r| r.is_ok()).count();
    let refused = outcomes
        .iter()
        .filter(|r| matches!(r, Err(StoreError::ConditionFailed { .. })))
        .count();
    assert_eq!((won, refused), (1, 39), "{outcomes:?}");

    put(store, item("W", "parent", &[("count", n("0"))])).await;
    let bumps = (0..40).map(|_| {
        store.update_item(Update::new(
            key("W", "parent"),
            UpdateExpr::default().add("count", 1),
        ))
    });
    for r in futures::future::join_all(bumps).await {
        r.expect("an increment");
    }
    assert_eq!(get(store, "W", "parent").await.unwrap()["count"], n("40"));

    let transactions = (0..30).map(|i| {
        let mut actions = vec![
            TransactAction::Put(
                Put::new(item("W", &format!("child{i:02}"), &[])).when(Condition::not_exists("PK")),
            ),
            TransactAction::Update(
                Update::new(key("W", "parent"), UpdateExpr::default().add("count", 1))
                    .when(Condition::exists("PK")),
            ),
        ];
        if i % 3 == 0 {
            actions.push(TransactAction::ConditionCheck(ConditionCheck {
                key: key("W", "missing"),
                condition: Condition::exists("PK"),
                return_old_on_condition_failure: false,
            }));
        }
        store.transact_write(actions)
    });
    let outcomes = futures::future::join_all(transactions).await;
    for (i, r) in outcomes.iter().enumerate() {
        assert_eq!(r.is_ok(), i % 3 != 0, "transaction {i}: {r:?}");
    }
    assert_eq!(get(store, "W", "parent").await.unwrap()["count"], n("60"));
    for i in 0..30 {
        assert_eq!(
            get(store, "W", &format!("child{i:02}")).await.is_some(),
            i % 3 != 0,
            "child {i}"
        );
    }
}

/// BatchGetItem answers 100 keys at once, present ones only.
async fn batch_get_hundred_keys(store: &dyn Store) {
    for i in 0..60 {
        put(store, item("BG", &format!("{i:03}"), &[])).await;
    }
    let keys: Vec<PrimaryKey> = (0..100).map(|i| key("BG", &format!("{i:03}"))).collect();
    let items = store
        .batch_get_item(BatchGet {
            keys,
            consistent_read: false,
        })
        .await
        .unwrap();
    let mut got: Vec<String> = items.iter().map(sk_of).collect();
    got.sort();
    let want: Vec<String> = (0..60).map(|i| format!("{i:03}")).collect();
    assert_eq!(got, want);
}

/// BatchWriteItem puts and deletes up to 25 items in one call, each on its own, and the
/// indexes follow; more than 25, or one item twice, is refused before anything is written.
async fn batch_write_puts_and_deletes(store: &dyn Store) {
    use itemgraph::store::{BatchWrite, BatchWriteRequest as W};
    for i in 0..5 {
        put(store, item("BW", &format!("old{i}"), &[])).await;
    }
    let mut requests: Vec<W> = (0..20)
        .map(|i| {
            W::Put(item(
                "BW",
                &format!("new{i:02}"),
                &[("GSI1PK", s("BWI")), ("GSI1SK", s(&format!("{i:02}")))],
            ))
        })
        .collect();
    requests.extend((0..5).map(|i| W::Delete(key("BW", &format!("old{i}")))));
    assert_eq!(store.batch_write(BatchWrite { requests }).await.unwrap(), 1);
    let got: Vec<String> = pages(store, q("BW")).await.concat();
    let want: Vec<String> = (0..20).map(|i| format!("new{i:02}")).collect();
    assert_eq!(got, want);
    let mut by_index = q("BWI");
    by_index.index = Some("GSI1".into());
    assert_eq!(pages(store, by_index).await.concat().len(), 20);

    // A delete of an item that is not there is no error.
    let gone = vec![W::Delete(key("BW", "nothing"))];
    store
        .batch_write(BatchWrite { requests: gone })
        .await
        .unwrap();

    let too_many = (0..26)
        .map(|i| W::Delete(key("BW", &format!("new{i:02}"))))
        .collect();
    let msg = validation(store.batch_write(BatchWrite { requests: too_many }).await);
    assert!(msg.contains("less than or equal to 25"), "{msg}");
    let twice = vec![
        W::Delete(key("BW", "new00")),
        W::Put(item("BW", "new00", &[])),
    ];
    let msg = validation(store.batch_write(BatchWrite { requests: twice }).await);
    assert!(msg.contains("duplicates"), "{msg}");
    assert_eq!(pages(store, q("BW")).await.concat().len(), 20);
}

/// Requests DynamoDB rejects get the same clear validation error from every engine.
async fn bad_requests_are_rejected_alike(store: &dyn Store) {
    let mut msgs = BTreeMap::new();
    let huge = item("H", "1", &[("d", s(&"x".repeat(400 * 1024)))]);
    msgs.insert(
        "oversized item",
        validation(store.put_item(Put::new(huge)).await),
    );
    msgs.insert(
        "empty key",
        validation(store.put_item(Put::new(item("", "1", &[]))).await),
    );
    msgs.insert("empty sort key", validation(get_raw(store, "P", "").await));
    let keys: Vec<PrimaryKey> = (0..101).map(|i| key("B", &i.to_string())).collect();
    msgs.insert(
        "101 keys",
        validation(
            store
                .batch_get_item(BatchGet {
                    keys,
                    consistent_read: false,
                })
                .await,
        ),
    );
    let dup = vec![key("B", "1"), key("B", "1")];
    msgs.insert(
        "duplicate keys",
        validation(
            store
                .batch_get_item(BatchGet {
                    keys: dup,
                    consistent_read: false,
                })
                .await,
        ),
    );
    let twice = vec![
        TransactAction::Put(Put::new(item("X", "1", &[]))),
        TransactAction::Update(Update::new(
            key("X", "1"),
            UpdateExpr::default().add("c", 1),
        )),
    ];
    msgs.insert(
        "one item twice",
        validation(store.transact_write(twice).await),
    );
    msgs.insert(
        "update the key",
        validation(
            store
                .update_item(Update::new(
                    key("X", "1"),
                    UpdateExpr::default().set("SK", s("2")),
                ))
                .await,
        ),
    );
    msgs.insert(
        "empty index key",
        validation(
            store
                .put_item(Put::new(item("X", "1", &[("GSI1PK", s(""))])))
                .await,
        ),
    );
    msgs.insert(
        "index key type",
        validation(
            store
                .put_item(Put::new(item("X", "1", &[("GSI2SK", n("1"))])))
                .await,
        ),
    );
    let mut gsi = q("G");
    gsi.index = Some("GSI1".into());
    gsi.consistent_read = true;
    msgs.insert("consistent gsi", validation(store.query(gsi).await));
    let mut unknown = q("G");
    unknown.index = Some("GSI9".into());
    msgs.insert("unknown index", validation(store.query(unknown).await));
    let mut zero = q("G");
    zero.limit = Some(0);
    msgs.insert("limit 0", validation(store.query(zero).await));
    let mut foreign = q("G");
    foreign.start = Some(PageKey {
        table: key("OTHER", "1"),
        index: None,
    });
    msgs.insert("foreign start key", validation(store.query(foreign).await));
    msgs.insert(
        "bad number",
        validation(
            store
                .put_item(Put::new(item("X", "1", &[("n", n("1e200"))])))
                .await,
        ),
    );
    // The messages are pinned: both engines run the same validator, so a change shows here.
    assert_eq!(
        msgs["oversized item"],
        "Item size has exceeded the maximum allowed size"
    );
    assert_eq!(
        msgs["one item twice"],
        "Transaction request cannot include multiple operations on one item"
    );
    assert_eq!(
        msgs["101 keys"],
        "Too many items requested for the BatchGetItem call"
    );
    assert!(msgs["empty key"].contains("cannot contain an empty string value"));
    assert!(msgs["empty sort key"].contains("cannot contain an empty string value"));
    assert!(msgs["update the key"].contains("This attribute is part of the key"));
    // Nothing was written by any of them.
    assert_eq!(get(store, "X", "1").await, None);
    assert_eq!(get(store, "H", "1").await, None);
}

async fn get_raw(store: &dyn Store, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
    store
        .get_item(GetItem {
            key: key(pk, sk),
            consistent_read: false,
        })
        .await
}

/// A Scan walks every item of the table once, page by page, whatever the order.
async fn scan_walks_every_item(store: &dyn Store) {
    for p in 0..5 {
        for sk in 0..5 {
            put(
                store,
                item(
                    &format!("S{p}"),
                    &format!("{sk}"),
                    &[("GSI1PK", s("g")), ("GSI1SK", s(&format!("{p}{sk}")))],
                ),
            )
            .await;
        }
    }
    let mut seen = Vec::new();
    let mut req = itemgraph::store::Scan {
        limit: Some(4),
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = store.scan(req.clone()).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 4);
        seen.extend(
            page.items
                .iter()
                .map(|i| format!("{:?}/{}", i["PK"], sk_of(i))),
        );
        match page.last_evaluated_key {
            Some(k) => req.start = Some(k),
            None => break,
        }
    }
    seen.sort();
    let before = seen.len();
    seen.dedup();
    assert_eq!((before, seen.len()), (25, 25), "every item exactly once");
    assert!(pages >= 7, "pages of at most 4 items");

    // A parallel scan: three segments, each walked page by page, hold every item once,
    // and an item's partition is never split between segments.
    let mut segmented = Vec::new();
    let mut partitions: HashMap<String, u32> = HashMap::new();
    for index in 0..3 {
        let mut req = itemgraph::store::Scan {
            limit: Some(2),
            segment: Some(ScanSegment { index, total: 3 }),
            ..Default::default()
        };
        loop {
            let page = store.scan(req.clone()).await.unwrap();
            for i in &page.items {
                let pk = format!("{:?}", i["PK"]);
                assert_eq!(*partitions.entry(pk.clone()).or_insert(index), index);
                segmented.push(format!("{pk}/{}", sk_of(i)));
            }
            match page.last_evaluated_key {
                Some(k) => req.start = Some(k),
                None => break,
            }
        }
    }
    segmented.sort();
    assert_eq!(
        segmented, seen,
        "the segments together hold every item once"
    );
    for (segment, wanted) in [
        (
            ScanSegment { index: 3, total: 3 },
            "must be less than parameter TotalSegments",
        ),
        (ScanSegment { index: 0, total: 0 }, "totalSegments"),
        (
            ScanSegment {
                index: 0,
                total: 1_000_001,
            },
            "totalSegments",
        ),
    ] {
        let err = store
            .scan(itemgraph::store::Scan {
                segment: Some(segment),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Validation(m) if m.contains(wanted)),
            "{segment:?}: {err}"
        );
    }
}

/// Every operation on a table that does not exist reports `TableNotFound`.
async fn missing_table_is_reported(store: &dyn Store) {
    assert!(store.delete_table().await.unwrap());
    assert_eq!(store.describe_table().await.unwrap(), None);
    assert!(matches!(
        get_raw(store, "P", "S").await,
        Err(StoreError::TableNotFound(_))
    ));
    assert!(matches!(
        store.query(q("P")).await,
        Err(StoreError::TableNotFound(_))
    ));
    assert!(matches!(
        store.put_item(Put::new(item("P", "S", &[]))).await,
        Err(StoreError::TableNotFound(_))
    ));
    assert!(store.create_table().await.unwrap());
}

on_every_engine!(store:
    table_lifecycle,
    put_get_round_trip,
    sort_keys_order_as_utf8_bytes,
    sort_key_conditions,
    limit_and_pagination,
    one_megabyte_page_cut,
    sparse_global_secondary_index,
    conditional_writes,
    update_semantics,
    map_entries_by_path,
    transactions_are_all_or_nothing,
    batch_get_hundred_keys,
    batch_write_puts_and_deletes,
    bad_requests_are_rejected_alike,
    missing_table_is_reported,
    scan_walks_every_item,
    concurrent_writes_apply_one_after_another,
);
