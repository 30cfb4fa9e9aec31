//! Several tables on one connection, on both engines alike: a shop table (string keys) and
//! an orders table keyed by a number, opened together; each reached as its own store
//! ([`Store::sibling`]); one BatchGetItem reading both; one TransactWriteItems writing
//! both, all or nothing; DynamoDB's limits counted across the tables, refused before
//! anything is sent. Each case runs on the embedded engine (in memory and on a file) and
//! on DynamoDB Local.

use std::sync::Arc;

use crate::common::engines::get;
use itemgraph::store::open::{open_tables, Engine};
use itemgraph::store::{
    table_store, AttributeValue as V, BatchGetTables, CancelReason, CmpOp, Condition,
    ConditionCheck, Item, KeyType, PrimaryKey, Put, Store, StoreError, TableAction, TableSchema,
    TransactAction,
};

fn shop() -> TableSchema {
    TableSchema {
        pk: "PK".into(),
        pk_type: KeyType::S,
        sk: Some("SK".into()),
        sk_type: KeyType::S,
        indexes: Vec::new(),
        time_to_live: None,
    }
}

fn orders() -> TableSchema {
    TableSchema {
        pk: "OrderId".into(),
        pk_type: KeyType::N,
        sk: None,
        sk_type: KeyType::S,
        indexes: Vec::new(),
        time_to_live: None,
    }
}

/// The shop table's store, with the orders table beside it, created: in memory, on a file
/// and on DynamoDB Local where it is available. The file's directory is kept alive beside.
async fn engines() -> Vec<(Arc<dyn Store>, String, Option<tempfile::TempDir>)> {
    let mut out = Vec::new();
    let memory = Engine::Embedded {
        table: "Shop".into(),
        data: None,
        cache_mib: 16,
        faults: Default::default(),
        change_log: Default::default(),
    };
    out.push((memory, "Orders".to_owned(), None));
    let dir = tempfile::tempdir().unwrap();
    let file = Engine::Embedded {
        table: "Shop".into(),
        data: Some(dir.path().join("two.redb")),
        cache_mib: 16,
        faults: Default::default(),
        change_log: Default::default(),
    };
    out.push((file, "Orders".to_owned(), Some(dir)));
    if let Some(endpoint) = crate::common::dynamo_local::endpoint().await {
        let mut opts = crate::common::dynamo_local::options(&endpoint);
        opts.table = crate::common::dynamo_local::unique_table_name("shop");
        let orders = crate::common::dynamo_local::unique_table_name("orders");
        out.push((Engine::DynamoDb(opts), orders, None));
    }
    let mut stores = Vec::new();
    for (engine, orders_table, dir) in out {
        let store = open_tables(&engine, shop(), vec![(orders_table.clone(), orders())])
            .await
            .unwrap();
        assert!(store.create_table().await.unwrap());
        let sibling = store.sibling(&orders_table).expect("the orders table");
        assert!(sibling.create_table().await.unwrap());
        stores.push((store, orders_table, dir));
    }
    stores
}

async fn finish(store: &Arc<dyn Store>, orders: &str) {
    if store.engine_name() == "dynamodb" {
        store.sibling(orders).unwrap().delete_table().await.unwrap();
        store.delete_table().await.unwrap();
    }
}

fn item(pairs: &[(&str, V)]) -> Item {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn s(x: &str) -> V {
    V::S(x.into())
}

fn n(x: &str) -> V {
    V::N(x.into())
}

fn customer(id: &str) -> TransactAction {
    TransactAction::Put(Put::new(item(&[
        ("PK", s(&format!("c#{id}"))),
        ("SK", s("PROFILE")),
        ("Name", s(id)),
    ])))
}

fn order(id: &str, by: &str) -> TransactAction {
    TransactAction::Put(Put::new(item(&[("OrderId", n(id)), ("Customer", s(by))])))
}

#[tokio::test]
async fn each_table_is_its_own_store_on_one_connection() {
    for (store, orders_table, _dir) in engines().await {
        let engine = store.engine_name();
        let orders = store.sibling(&orders_table).unwrap();
        assert_eq!(orders.table_name(), orders_table, "{engine}");
        assert_eq!(orders.schema().pk, "OrderId", "{engine}");
        assert!(store.sibling("Elsewhere").is_none(), "{engine}");
        assert!(store.sibling(store.table_name()).is_none(), "{engine}");
        assert_eq!(
            table_store(&store, store.table_name())
                .unwrap()
                .table_name(),
            store.table_name()
        );
        assert!(matches!(
            table_store(&store, "Elsewhere"),
            Err(StoreError::TableNotFound(_))
        ));
        // Each table keeps its own items, validated by its own keys.
        store
            .put_item(Put::new(item(&[("PK", s("c#1")), ("SK", s("PROFILE"))])))
            .await
            .unwrap();
        orders
            .put_item(Put::new(item(&[("OrderId", n("7"))])))
            .await
            .unwrap();
        assert!(get(orders.as_ref(), "7", "").await.is_some(), "{engine}");
        assert!(get(store.as_ref(), "c#1", "PROFILE").await.is_some());
        let wrong = orders
            .put_item(Put::new(item(&[("PK", s("c#2")), ("SK", s("PROFILE"))])))
            .await;
        assert!(
            matches!(wrong, Err(StoreError::Validation(_))),
            "{engine}: {wrong:?}"
        );
        finish(&store, &orders_table).await;
    }
}

#[tokio::test]
async fn one_batch_get_reads_both_tables() {
    for (store, orders_table, _dir) in engines().await {
        let engine = store.engine_name();
        let t = |table: &str, action: TransactAction| TableAction {
            table: table.to_owned(),
            action,
        };
        let shop = store.table_name().to_owned();
        store
            .transact_write_tables(vec![
                t(&shop, customer("1")),
                t(&shop, customer("2")),
                t(&orders_table, order("10", "c#1")),
                t(&orders_table, order("9", "c#2")),
            ])
            .await
            .unwrap();
        let got = store
            .batch_get_tables(BatchGetTables {
                tables: vec![
                    (
                        shop.clone(),
                        vec![
                            PrimaryKey::new("c#1", "PROFILE"),
                            PrimaryKey::new("c#3", "PROFILE"),
                        ],
                    ),
                    (
                        orders_table.clone(),
                        vec![PrimaryKey::new("10", ""), PrimaryKey::new("9", "")],
                    ),
                ],
                consistent_read: true,
            })
            .await
            .unwrap();
        let count = |table: &str| {
            got.iter()
                .find(|(t, _)| t == table)
                .map_or(0, |(_, items)| items.len())
        };
        assert_eq!(count(&shop), 1, "{engine}: {got:?}");
        assert_eq!(count(&orders_table), 2, "{engine}: {got:?}");

        // The limits count both tables: 60 + 41 keys is one too many.
        let keys = |n: usize, f: &dyn Fn(usize) -> PrimaryKey| (0..n).map(f).collect::<Vec<_>>();
        let too_many = store
            .batch_get_tables(BatchGetTables {
                tables: vec![
                    (
                        shop.clone(),
                        keys(60, &|i| PrimaryKey::new(format!("c#{i}"), "PROFILE")),
                    ),
                    (
                        orders_table.clone(),
                        keys(41, &|i| PrimaryKey::new(i.to_string(), "")),
                    ),
                ],
                consistent_read: false,
            })
            .await;
        assert!(
            matches!(&too_many, Err(StoreError::Validation(m)) if m.contains("Too many items")),
            "{engine}: {too_many:?}"
        );
        // A key of one table's shape sent to the other is refused.
        let misplaced = store
            .batch_get_tables(BatchGetTables {
                tables: vec![(
                    orders_table.clone(),
                    vec![PrimaryKey::new("c#1", "PROFILE")],
                )],
                consistent_read: false,
            })
            .await;
        assert!(
            matches!(misplaced, Err(StoreError::Validation(_))),
            "{engine}: {misplaced:?}"
        );
        let unknown = store
            .batch_get_tables(BatchGetTables {
                tables: vec![("Elsewhere".into(), vec![PrimaryKey::new("1", "")])],
                consistent_read: false,
            })
            .await;
        assert!(
            matches!(unknown, Err(StoreError::TableNotFound(_))),
            "{engine}: {unknown:?}"
        );
        finish(&store, &orders_table).await;
    }
}

#[tokio::test]
async fn a_transaction_over_both_tables_is_all_or_nothing() {
    for (store, orders_table, _dir) in engines().await {
        let engine = store.engine_name();
        let shop = store.table_name().to_owned();
        let orders = store.sibling(&orders_table).unwrap();
        let t = |table: &str, action: TransactAction| TableAction {
            table: table.to_owned(),
            action,
        };
        store
            .transact_write_tables(vec![
                t(&shop, customer("1")),
                t(&orders_table, order("1", "c#1")),
            ])
            .await
            .unwrap();
        assert!(get(orders.as_ref(), "1", "").await.is_some(), "{engine}");

        // The order's condition fails: the customer is not written either.
        let refused = store
            .transact_write_tables(vec![
                t(&shop, customer("2")),
                t(
                    &orders_table,
                    TransactAction::Put(
                        Put::new(item(&[("OrderId", n("1")), ("Customer", s("c#2"))]))
                            .when(Condition::NotExists("OrderId".into())),
                    ),
                ),
            ])
            .await;
        match refused {
            Err(StoreError::TransactionCanceled { reasons }) => {
                assert_eq!(reasons.len(), 2, "{engine}");
                assert_eq!(reasons[0], CancelReason::None, "{engine}");
                assert!(
                    matches!(reasons[1], CancelReason::ConditionalCheckFailed { .. }),
                    "{engine}: {reasons:?}"
                );
            }
            other => panic!("{engine}: {other:?}"),
        }
        assert!(
            get(store.as_ref(), "c#2", "PROFILE").await.is_none(),
            "{engine}"
        );

        // A check on one table guards a write on the other.
        let guarded = store
            .transact_write_tables(vec![
                t(
                    &shop,
                    TransactAction::ConditionCheck(ConditionCheck {
                        key: PrimaryKey::new("c#1", "PROFILE"),
                        condition: Condition::Cmp("Name".into(), CmpOp::Eq, s("1")),
                        return_old_on_condition_failure: false,
                    }),
                ),
                t(&orders_table, order("2", "c#1")),
            ])
            .await;
        assert!(guarded.is_ok(), "{engine}: {guarded:?}");
        assert!(get(orders.as_ref(), "2", "").await.is_some(), "{engine}");

        // One item twice is refused, as is the same key on the two tables' own terms.
        let twice = store
            .transact_write_tables(vec![
                t(&orders_table, order("3", "c#1")),
                t(&orders_table, order("3", "c#2")),
            ])
            .await;
        assert!(
            matches!(&twice, Err(StoreError::Validation(m)) if m.contains("multiple operations")),
            "{engine}: {twice:?}"
        );
        assert!(get(orders.as_ref(), "3", "").await.is_none(), "{engine}");
        finish(&store, &orders_table).await;
    }
}
