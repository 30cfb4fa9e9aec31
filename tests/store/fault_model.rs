//! The embedded engine's fault model at the port: each of DynamoDB's failure modes shows
//! up as DynamoDB shows it, and the engine answers as the SDK in front of DynamoDB does.

use crate::common;

use std::time::Duration;

use itemgraph::store::embedded::EmbeddedStore;
use itemgraph::store::faults::Faults;
use itemgraph::store::{
    AttributeValue, CancelReason, Condition, GetItem, Item, PrimaryKey, Put, Query, Store,
    StoreError, TransactAction, Update, UpdateExpr,
};

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn item(pk: &str, sk: &str, extra: &[(&str, AttributeValue)]) -> Item {
    let mut item = Item::from([("PK".to_string(), s(pk)), ("SK".to_string(), s(sk))]);
    for (k, v) in extra {
        item.insert((*k).to_string(), v.clone());
    }
    item
}

async fn store(faults: Faults) -> EmbeddedStore {
    let store = EmbeddedStore::in_memory_with_faults(
        "t",
        itemgraph::chart::builtin().table_schema(),
        faults,
    )
    .expect("open");
    assert!(store.create_table().await.expect("create"));
    store
}

fn on_index(partition: &str) -> Query {
    Query {
        index: Some("GSI1".into()),
        ..Query::partition(partition)
    }
}

#[tokio::test]
async fn an_index_shows_a_write_only_after_the_lag_and_as_it_was_written() {
    let lag = Duration::from_millis(300);
    let store = store(Faults {
        gsi_lag: lag,
        ..Faults::default()
    })
    .await;
    let indexed = |status: &str| {
        item(
            "A",
            "1",
            &[
                ("GSI1PK", s("G")),
                ("GSI1SK", s("1")),
                ("status", s(status)),
            ],
        )
    };
    store.put_item(Put::new(indexed("old"))).await.unwrap();
    // The table has it at once; the index does not.
    let got = store
        .get_item(GetItem {
            key: PrimaryKey::new("A", "1"),
            consistent_read: true,
        })
        .await
        .unwrap();
    assert!(got.is_some());
    assert!(store.query(on_index("G")).await.unwrap().items.is_empty());
    tokio::time::sleep(lag + Duration::from_millis(100)).await;
    let items = store.query(on_index("G")).await.unwrap().items;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["status"], s("old"));

    // An update reaches the index late too, and until then the index holds the item as
    // it was (the index projects the item; it does not look the table up).
    store.put_item(Put::new(indexed("new"))).await.unwrap();
    let items = store.query(on_index("G")).await.unwrap().items;
    assert_eq!(items[0]["status"], s("old"));
    tokio::time::sleep(lag + Duration::from_millis(100)).await;
    let items = store.query(on_index("G")).await.unwrap().items;
    assert_eq!(items[0]["status"], s("new"));

    // A delete leaves the index late, with the item still readable there.
    store
        .delete_item(itemgraph::store::Delete::new(PrimaryKey::new("A", "1")))
        .await
        .unwrap();
    assert_eq!(store.query(on_index("G")).await.unwrap().items.len(), 1);
    tokio::time::sleep(lag + Duration::from_millis(100)).await;
    assert!(store.query(on_index("G")).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn changes_waiting_for_the_indexes_reach_them_when_the_file_is_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lag.redb");
    let faults = Faults {
        gsi_lag: Duration::from_secs(3600),
        ..Faults::default()
    };
    {
        let store = EmbeddedStore::open_with_faults(
            &path,
            "t",
            itemgraph::chart::builtin().table_schema(),
            faults,
        )
        .unwrap();
        store.create_table().await.unwrap();
        store
            .put_item(Put::new(item(
                "A",
                "1",
                &[("GSI1PK", s("G")), ("GSI1SK", s("1"))],
            )))
            .await
            .unwrap();
        assert!(store.query(on_index("G")).await.unwrap().items.is_empty());
    }
    let store =
        EmbeddedStore::open(&path, "t", itemgraph::chart::builtin().table_schema()).unwrap();
    assert_eq!(store.query(on_index("G")).await.unwrap().items.len(), 1);

    // Without a lag, the index follows every write at once, rows written under the lag
    // included; under a lag again, rows written without one keep the item as it was.
    let version = |v: &str| {
        item(
            "A",
            "1",
            &[("GSI1PK", s("G")), ("GSI1SK", s("1")), ("v", s(v))],
        )
    };
    store.put_item(Put::new(version("2"))).await.unwrap();
    assert_eq!(
        store.query(on_index("G")).await.unwrap().items,
        vec![version("2")]
    );
    drop(store);
    let store = EmbeddedStore::open_with_faults(
        &path,
        "t",
        itemgraph::chart::builtin().table_schema(),
        Faults {
            gsi_lag: Duration::from_millis(300),
            ..Faults::default()
        },
    )
    .unwrap();
    store.put_item(Put::new(version("3"))).await.unwrap();
    assert_eq!(
        store.query(on_index("G")).await.unwrap().items,
        vec![version("2")]
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        store.query(on_index("G")).await.unwrap().items,
        vec![version("3")]
    );
}

#[tokio::test]
async fn throttling_past_the_attempts_is_throttled_and_writes_nothing() {
    let store = store(Faults {
        throttle: 1.0,
        ..Faults::default()
    })
    .await;
    let err = store
        .put_item(Put::new(item("A", "1", &[])))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Throttled(_)), "{err:?}");
    let err = store.query(Query::partition("A")).await.unwrap_err();
    assert!(matches!(err, StoreError::Throttled(_)), "{err:?}");
}

#[tokio::test]
async fn conflicts_past_the_retries_are_conflicts_and_write_nothing() {
    let store = store(Faults {
        conflict: 1.0,
        ..Faults::default()
    })
    .await;
    let err = store
        .put_item(Put::new(item("A", "1", &[])))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TransactionConflict(_)), "{err:?}");
    let err = store
        .transact_write(vec![
            TransactAction::Put(Put::new(item("A", "2", &[]))),
            TransactAction::Put(Put::new(item("A", "3", &[]))),
        ])
        .await
        .unwrap_err();
    let StoreError::TransactionCanceled { reasons } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(reasons.len(), 2);
    assert!(reasons.contains(&CancelReason::TransactionConflict));
    // Nothing of either write is there (reads never conflict).
    assert!(store
        .query(Query::partition("A"))
        .await
        .unwrap()
        .items
        .is_empty());
}

/// A transaction whose reply is lost is sent again with the same client token and
/// answered with success, never applied twice; without the token its own conditions
/// would cancel the second attempt.
#[tokio::test]
async fn lost_replies_of_transactions_are_answered_by_their_client_token() {
    let store = store(Faults {
        lost_reply: 0.4,
        seed: 11,
        ..Faults::default()
    })
    .await;
    store
        .put_item(Put::new(item("COUNTER", "C", &[])))
        .await
        .unwrap();
    let mut applied = 0;
    for i in 0..60 {
        let result = store
            .transact_write(vec![
                TransactAction::Put(
                    Put::new(item("A", &format!("{i:03}"), &[])).when(Condition::not_exists("PK")),
                ),
                TransactAction::Update(
                    Update::new(
                        PrimaryKey::new("COUNTER", "C"),
                        UpdateExpr::default().add("n", 1),
                    )
                    .when(Condition::exists("PK")),
                ),
            ])
            .await;
        match result {
            Ok(()) => applied += 1,
            // Every attempt's reply lost: applied, and the caller cannot know.
            Err(StoreError::Unavailable(_)) => applied += 1,
            Err(e) => panic!("transaction {i}: {e:?}"),
        }
    }
    let items = store.query(Query::partition("A")).await.unwrap().items;
    assert_eq!(items.len(), applied);
    let counter = store
        .get_item(GetItem {
            key: PrimaryKey::new("COUNTER", "C"),
            consistent_read: true,
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(counter["n"], AttributeValue::N(applied.to_string()));
}

/// A single conditional write whose reply is lost is sent again and then fails its own
/// condition, as on DynamoDB: the item it returns is what the write wrote, which is how
/// the access patterns tell their own applied write from another's.
#[tokio::test]
async fn a_single_write_sent_again_after_a_lost_reply_meets_its_own_item() {
    let store = store(Faults {
        lost_reply: 1.0,
        ..Faults::default()
    })
    .await;
    let mut put = Put::new(item("A", "1", &[("v", s("mine"))])).when(Condition::not_exists("PK"));
    put.return_old_on_condition_failure = true;
    let err = store.put_item(put).await.unwrap_err();
    // Three attempts, every reply lost: the last error is the lost reply.
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    let store = self::store(Faults {
        lost_reply: 0.5,
        seed: 1,
        ..Faults::default()
    })
    .await;
    let mut saw_own_item = false;
    for i in 0..40 {
        let mine = item("A", &i.to_string(), &[("v", s("mine"))]);
        let mut put = Put::new(mine.clone()).when(Condition::not_exists("PK"));
        put.return_old_on_condition_failure = true;
        match store.put_item(put).await {
            Ok(_) | Err(StoreError::Unavailable(_)) => {}
            Err(StoreError::ConditionFailed { item: Some(found) }) => {
                assert_eq!(*found, mine);
                saw_own_item = true;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(saw_own_item, "no write was sent again after a lost reply");
}

/// The DynamoDB engine, against an endpoint that answers a first attempt with a 500 (which
/// DynamoDB documents as "may have succeeded") and every later one with
/// `ThrottlingException`: the write's outcome is unknown, so it fails `Unavailable`, not
/// `Throttled` (which tells the caller nothing was written). Throttled from the first
/// attempt on, it is `Throttled`.
#[tokio::test]
async fn a_write_throttled_after_an_unanswered_attempt_is_not_called_unwritten() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use itemgraph::store::dynamo::DynamoStore;

    async fn endpoint(fail_first: bool) -> (DynamoStore, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let app = axum::Router::new().fallback(move || {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                let (status, kind) = if first && fail_first {
                    (500, "InternalServerError")
                } else {
                    (400, "ThrottlingException")
                };
                (
                    axum::http::StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/x-amz-json-1.0")],
                    format!(
                        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{kind}","message":"m"}}"#
                    ),
                )
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let store = common::engines::dynamodb_at(&url);
        (store, task)
    }

    let put = || Put::new(item("A", "1", &[])).when(Condition::not_exists("PK"));
    let (store, task) = endpoint(true).await;
    let err = store.put_item(put()).await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    let err = store
        .transact_write(vec![TransactAction::Put(put())])
        .await
        .unwrap_err();
    // Its first attempt was answered with throttling (the endpoint's 500 went to the
    // PutItem above): nothing was written.
    assert!(matches!(err, StoreError::Throttled(_)), "{err:?}");
    task.abort();

    let (store, task) = endpoint(false).await;
    let err = store.put_item(put()).await.unwrap_err();
    assert!(matches!(err, StoreError::Throttled(_)), "{err:?}");
    task.abort();
}

/// Seeding under the fault model (`serve --faults …` seeds the demo data at startup):
/// throttled transactions and reads are sent again, lost replies find their items there
/// as given, and the table ends up exactly the demo set.
#[tokio::test]
async fn seeding_goes_through_throttling_and_lost_replies() {
    use itemgraph::store::embedded::EmbeddedStore;
    use itemgraph::store::faults::Faults;

    for seed in 1..=3 {
        let store = EmbeddedStore::in_memory_with_faults(
            "itemgraph",
            itemgraph::chart::builtin().table_schema(),
            Faults {
                throttle: 0.5,
                lost_reply: 0.2,
                seed,
                ..Faults::default()
            },
        )
        .unwrap();
        let seeded = crate::common::demo::seed_if_absent(&store, false)
            .await
            .expect("seeding goes through the faults");
        assert!(matches!(seeded, crate::common::demo::Seeded::Now(_)));
        let report = itemgraph::check::check(&store).await.unwrap();
        assert!(report.is_clean(), "{report}");
        assert_eq!(
            report.items,
            crate::common::demo::demo_data().len(),
            "{report}"
        );
    }
}

/// A throttled BatchWriteItem leaves some of its requests unprocessed, as DynamoDB does,
/// and `batch_write` sends those again until every one is written; throttled past its
/// attempts, it is `Throttled` and what went through stays written.
#[tokio::test]
async fn a_throttled_batch_write_sends_what_was_left_again() {
    use itemgraph::store::{BatchWrite, BatchWriteRequest};
    let faulty = store(Faults {
        throttle: 0.5,
        seed: 3,
        ..Faults::default()
    })
    .await;
    let requests: Vec<BatchWriteRequest> = (0..25)
        .map(|i| BatchWriteRequest::Put(item("B", &format!("{i:02}"), &[])))
        .collect();
    let page = faulty
        .batch_write_page(BatchWrite {
            requests: requests.clone(),
        })
        .await
        .unwrap();
    assert!(
        !page.unprocessed.is_empty() && page.unprocessed.len() < 25,
        "{}",
        page.unprocessed.len()
    );
    let calls = faulty.batch_write(BatchWrite { requests }).await.unwrap();
    assert!(calls > 1, "{calls}");
    let clean = store_items(&faulty, "B").await;
    assert_eq!(clean, 25);

    let stuck = store(Faults {
        throttle: 1.0,
        ..Faults::default()
    })
    .await;
    let one = vec![BatchWriteRequest::Put(item("C", "1", &[]))];
    let err = stuck
        .batch_write(BatchWrite { requests: one })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Throttled(_)), "{err:?}");
}

/// How many items partition `pk` holds, read past any throttling.
async fn store_items(store: &EmbeddedStore, pk: &str) -> usize {
    loop {
        if let Ok(out) = store
            .query(Query {
                consistent_read: true,
                ..Query::partition(pk)
            })
            .await
        {
            return out.items.len();
        }
    }
}
