//! The DynamoDB Local harness works, and the DynamoDB engine does what only it can be asked
//! to prove: the table it creates has the schema of `DATA_MODEL.md`, and the SDK's answers
//! (items returned on failed conditions, cancellation reasons, error codes, page keys) come
//! back through the port intact.

use crate::common;

use aws_sdk_dynamodb::types::{BillingMode, KeyType, ProjectionType};
use itemgraph::store::{
    AttributeValue, BatchGet, CancelReason, Condition, ConditionCheck, Delete, GetItem, Item,
    PrimaryKey, Put, Query, ReturnValues, SortCondition, Store, StoreError, TransactAction, Update,
    UpdateExpr,
};

use common::dynamo_local;

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: &str) -> AttributeValue {
    AttributeValue::N(v.into())
}

fn item(pk: &str, sk: &str, extra: &[(&str, AttributeValue)]) -> Item {
    let mut item: Item = [("PK".to_string(), s(pk)), ("SK".to_string(), s(sk))].into();
    item.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    item
}

/// The harness reaches a DynamoDB Local (the run's, or one it starts) and creates the table
/// of `DATA_MODEL.md`: `PK`/`SK`, and GSI1 and GSI2 with projection ALL, on demand.
#[tokio::test]
async fn harness_creates_the_itemgraph_table_with_both_indexes() {
    let Some(store) = dynamo_local::store("harness-schema").await else {
        return;
    };
    let described = store.describe_table().await.unwrap().expect("table exists");
    assert_eq!(described.name, store.table_name());
    assert_eq!(described.status, "ACTIVE");
    let mut indexes = described.indexes.clone();
    indexes.sort();
    assert_eq!(indexes, ["GSI1", "GSI2"]);

    let raw = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let keys = |schema: &[aws_sdk_dynamodb::types::KeySchemaElement]| {
        schema
            .iter()
            .map(|k| (k.attribute_name().to_owned(), k.key_type().clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(raw.key_schema()),
        [("PK".into(), KeyType::Hash), ("SK".into(), KeyType::Range)]
    );
    assert_eq!(
        raw.billing_mode_summary().and_then(|b| b.billing_mode()),
        Some(&BillingMode::PayPerRequest)
    );
    for gsi in raw.global_secondary_indexes() {
        let name = gsi.index_name().unwrap();
        assert_eq!(
            keys(gsi.key_schema()),
            [
                (format!("{name}PK"), KeyType::Hash),
                (format!("{name}SK"), KeyType::Range)
            ]
        );
        assert_eq!(
            gsi.projection().and_then(|p| p.projection_type()),
            Some(&ProjectionType::All)
        );
    }
    dynamo_local::drop_table(&store).await;
}

/// An item written through `DynamoStore` reads back equal, numbers in canonical form.
#[tokio::test]
async fn harness_round_trips_an_item_through_dynamodb_local() {
    let Some(store) = dynamo_local::store("harness-roundtrip").await else {
        return;
    };
    let written = item(
        "ORG#acme",
        "ORG#acme",
        &[
            ("Type", s("Organization")),
            ("userCount", n("3")),
            ("tags", AttributeValue::Ss(vec!["a".into(), "b".into()])),
            (
                "meta",
                AttributeValue::M([("k".to_string(), AttributeValue::Bool(true))].into()),
            ),
            ("blob", AttributeValue::B(vec![0, 255])),
        ],
    );
    assert_eq!(
        store.put_item(Put::new(written.clone())).await.unwrap(),
        None
    );
    let read = store
        .get_item(GetItem {
            key: PrimaryKey::new("ORG#acme", "ORG#acme"),
            consistent_read: true,
        })
        .await
        .unwrap();
    assert_eq!(read, Some(written));
    let absent = store
        .get_item(GetItem {
            key: PrimaryKey::new("ORG#acme", "ORG#none"),
            consistent_read: false,
        })
        .await
        .unwrap();
    assert_eq!(absent, None);
    dynamo_local::drop_table(&store).await;
}

/// Table lifecycle answers: a second create and a second delete report, not fail; a
/// missing table describes as `None` and item operations on it fail as `TableNotFound`.
#[tokio::test]
async fn table_lifecycle_reports_existing_and_missing_tables() {
    let Some(store) = dynamo_local::store("harness-lifecycle").await else {
        return;
    };
    assert!(!store.create_table().await.unwrap());
    assert!(store.delete_table().await.unwrap());
    assert!(!store.delete_table().await.unwrap());
    assert_eq!(store.describe_table().await.unwrap(), None);
    let err = store
        .get_item(GetItem {
            key: PrimaryKey::new("a", "b"),
            consistent_read: false,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::TableNotFound(store.table_name().to_owned())
    );
}

/// `return_old_on_condition_failure` brings the current item back inside the error.
#[tokio::test]
async fn a_failed_condition_carries_the_current_item_only_when_asked() {
    let Some(store) = dynamo_local::store("harness-condition").await else {
        return;
    };
    let first = item("USER#u", "USER#u", &[("Version", n("1"))]);
    store.put_item(Put::new(first.clone())).await.unwrap();

    let mut again = Put::new(item("USER#u", "USER#u", &[])).when(Condition::not_exists("PK"));
    let err = store.put_item(again.clone()).await.unwrap_err();
    assert_eq!(err, StoreError::ConditionFailed { item: None });
    again.return_old_on_condition_failure = true;
    let err = store.put_item(again).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::ConditionFailed {
            item: Some(Box::new(first.clone()))
        }
    );

    let mut update = Update::new(
        PrimaryKey::new("USER#u", "USER#u"),
        UpdateExpr::default().set("Version", n("3")),
    )
    .when(Condition::eq("Version", n("2")));
    update.return_old_on_condition_failure = true;
    let err = store.update_item(update).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::ConditionFailed {
            item: Some(Box::new(first.clone()))
        }
    );

    let mut delete =
        Delete::new(PrimaryKey::new("USER#u", "USER#u")).when(Condition::not_exists("PK"));
    delete.return_old_on_condition_failure = true;
    let err = store.delete_item(delete).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::ConditionFailed {
            item: Some(Box::new(first))
        }
    );
    dynamo_local::drop_table(&store).await;
}

/// UpdateItem returns nothing, the old or the new item as asked; DeleteItem the old one.
#[tokio::test]
async fn writes_return_the_item_as_asked() {
    let Some(store) = dynamo_local::store("harness-returns").await else {
        return;
    };
    let key = PrimaryKey::new("ORG#o", "ORG#o");
    let bump = || UpdateExpr::default().add("userCount", 1);
    let created = store
        .update_item(Update::new(key.clone(), bump()).returning(ReturnValues::AllOld))
        .await
        .unwrap();
    assert_eq!(created, None, "no old item");
    let none = store
        .update_item(Update::new(key.clone(), bump()))
        .await
        .unwrap();
    assert_eq!(none, None);
    let new = store
        .update_item(Update::new(key.clone(), bump()).returning(ReturnValues::AllNew))
        .await
        .unwrap();
    assert_eq!(new, Some(item("ORG#o", "ORG#o", &[("userCount", n("3"))])));
    let mut delete = Delete::new(key.clone());
    delete.returns = ReturnValues::AllOld;
    let old = store.delete_item(delete).await.unwrap();
    assert_eq!(old, Some(item("ORG#o", "ORG#o", &[("userCount", n("3"))])));

    // An empty update creates the bare key item.
    let empty = store
        .update_item(
            Update::new(key.clone(), UpdateExpr::default()).returning(ReturnValues::AllNew),
        )
        .await
        .unwrap();
    assert_eq!(empty, Some(item("ORG#o", "ORG#o", &[])));
    dynamo_local::drop_table(&store).await;
}

/// A cancelled transaction reports one reason per action, in action order, with the
/// current item where asked; one that goes through writes every action.
#[tokio::test]
async fn a_cancelled_transaction_reports_reasons_in_action_order() {
    let Some(store) = dynamo_local::store("harness-transact").await else {
        return;
    };
    let taken = item("EMAIL#a@x", "EMAIL#a@x", &[("owner", s("u1"))]);
    store.put_item(Put::new(taken.clone())).await.unwrap();

    let actions = vec![
        TransactAction::Put(Put::new(item("ORG#o", "USER#u2", &[]))),
        TransactAction::ConditionCheck(ConditionCheck {
            key: PrimaryKey::new("EMAIL#a@x", "EMAIL#a@x"),
            condition: Condition::not_exists("PK"),
            return_old_on_condition_failure: true,
        }),
        TransactAction::Update(Update::new(
            PrimaryKey::new("ORG#o", "ORG#o"),
            UpdateExpr::default().add("userCount", 1),
        )),
    ];
    let err = store.transact_write(actions).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::TransactionCanceled {
            reasons: vec![
                CancelReason::None,
                CancelReason::ConditionalCheckFailed { item: Some(taken) },
                CancelReason::None,
            ]
        }
    );
    let nothing_written = store
        .get_item(GetItem {
            key: PrimaryKey::new("ORG#o", "USER#u2"),
            consistent_read: true,
        })
        .await
        .unwrap();
    assert_eq!(nothing_written, None);

    store
        .transact_write(vec![
            TransactAction::Put(Put::new(item("ORG#o", "USER#u2", &[]))),
            TransactAction::Delete(Delete::new(PrimaryKey::new("EMAIL#a@x", "EMAIL#a@x"))),
        ])
        .await
        .unwrap();
    let page = store
        .batch_get_page(BatchGet {
            keys: vec![
                PrimaryKey::new("ORG#o", "USER#u2"),
                PrimaryKey::new("EMAIL#a@x", "EMAIL#a@x"),
            ],
            consistent_read: true,
        })
        .await
        .unwrap();
    assert_eq!(page.items, [item("ORG#o", "USER#u2", &[])]);
    assert!(page.unprocessed.is_empty());
    dynamo_local::drop_table(&store).await;
}

/// DynamoDB-only failures map onto the port: a write that is valid in itself but not
/// against the stored item is `Validation`; a transaction update with nothing to update is
/// refused before sending (TransactWriteItems requires an UpdateExpression).
#[tokio::test]
async fn dynamodb_validation_failures_map_to_the_port() {
    let Some(store) = dynamo_local::store("harness-validation").await else {
        return;
    };
    store
        .put_item(Put::new(item("ORG#o", "ORG#o", &[("name", s("Acme"))])))
        .await
        .unwrap();
    let key = PrimaryKey::new("ORG#o", "ORG#o");
    let add_to_string = Update::new(key.clone(), UpdateExpr::default().add("name", 1));
    let err = store.update_item(add_to_string.clone()).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Validation(m) if m.contains("incorrect data type")),
        "{err:?}"
    );
    let err = store
        .transact_write(vec![TransactAction::Update(add_to_string)])
        .await
        .unwrap_err();
    // The service cancels the transaction with a `ValidationError` reason; DynamoDB Local
    // (3.3.1) fails the whole call with a plain ValidationException instead. Both arrive.
    let incorrect_type = |m: &str| m.contains("incorrect data type");
    assert!(
        match &err {
            StoreError::Validation(m) => incorrect_type(m),
            StoreError::TransactionCanceled { reasons } => matches!(
                reasons.as_slice(),
                [CancelReason::ValidationError(m)] if incorrect_type(m)
            ),
            _ => false,
        },
        "{err:?}"
    );
    let err = store
        .transact_write(vec![TransactAction::Update(Update::new(
            key,
            UpdateExpr::default(),
        ))])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Validation(_)), "{err:?}");
    dynamo_local::drop_table(&store).await;
}

/// A GSI query pages with a key holding the index key and the table key, both ways.
#[tokio::test]
async fn an_index_query_pages_through_a_partition() {
    let Some(store) = dynamo_local::store("harness-query").await else {
        return;
    };
    for i in 0..5 {
        let ticket = format!("TICKET#{i}");
        store
            .put_item(Put::new(item(
                &ticket,
                &ticket,
                &[("GSI1PK", s("ORG#o#USER#u")), ("GSI1SK", s(&ticket))],
            )))
            .await
            .unwrap();
    }
    for forward in [true, false] {
        let mut seen = Vec::new();
        let mut query = Query {
            index: Some("GSI1".into()),
            sort: Some(SortCondition::BeginsWith("TICKET#".into())),
            forward,
            limit: Some(2),
            ..Query::partition("ORG#o#USER#u")
        };
        let mut pages = 0;
        loop {
            let out = store.query(query.clone()).await.unwrap();
            pages += 1;
            seen.extend(out.items.iter().map(|i| i["SK"].clone()));
            match out.last_evaluated_key {
                Some(key) => {
                    let index = key
                        .index
                        .as_ref()
                        .expect("an index page key has the index key");
                    assert_eq!(index.pk, "ORG#o#USER#u");
                    assert_eq!(index.sk, key.table.sk);
                    query.start = Some(key);
                }
                None => break,
            }
        }
        let mut want: Vec<_> = (0..5).map(|i| s(&format!("TICKET#{i}"))).collect();
        if !forward {
            want.reverse();
        }
        assert_eq!(seen, want);
        assert!(pages >= 3, "Limit 2 over 5 items takes at least 3 pages");
    }
    let between = store
        .query(Query {
            index: Some("GSI1".into()),
            sort: Some(SortCondition::Between("TICKET#1".into(), "TICKET#3".into())),
            ..Query::partition("ORG#o#USER#u")
        })
        .await
        .unwrap();
    assert_eq!(between.items.len(), 3);
    assert_eq!(between.last_evaluated_key, None);
    dynamo_local::drop_table(&store).await;
}

/// Nothing listening is `Unavailable`, not `Internal`: the GraphQL layer says UNAVAILABLE.
#[tokio::test]
async fn an_unreachable_endpoint_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = dynamo_local::connect(&format!("http://127.0.0.1:{port}"), "nowhere").await;
    let err = store
        .get_item(GetItem {
            key: PrimaryKey::new("a", "b"),
            consistent_read: false,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
}
