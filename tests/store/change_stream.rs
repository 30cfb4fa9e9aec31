//! The change stream port, one suite on both engines: what a write puts in the stream,
//! in which shape and order, and how positions are resumed and lost.

use crate::common::changes::Decoded as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::records::{Entity, Ticket};
use futures::StreamExt;
use itemgraph::chart::kinds::Id;
use itemgraph::live::{Hub, LiveOptions};
use itemgraph::store::embedded::{ChangeLog, EmbeddedStore};
use itemgraph::store::stream::{
    seq_cmp, ChangeKind, ChangeRecord, ChangeStream, StartAt, StreamError,
};
use itemgraph::store::{
    AttributeValue as V, Delete, Item, PrimaryKey, Put, Store, TransactAction, Update, UpdateExpr,
};
use tokio::sync::Notify;

use crate::common::hooked_stream::Hooked;

fn item(pk: &str, sk: &str, n: u32) -> Item {
    Item::from([
        ("PK".to_string(), V::S(pk.into())),
        ("SK".to_string(), V::S(sk.into())),
        ("n".to_string(), V::N(n.to_string())),
    ])
}

/// Every record of the stream from `at` on in each listed shard, parents first, read
/// until the shards give nothing more (the embedded engine and DynamoDB Local answer
/// everything at once once it is there).
async fn read_all(stream: &dyn ChangeStream, at: StartAt) -> Vec<ChangeRecord> {
    let mut out = Vec::new();
    for shard in stream.shards().await.expect("shards") {
        let mut it = Some(
            stream
                .shard_iterator(&shard.id, at.clone())
                .await
                .expect("iterator"),
        );
        let mut empty = 0;
        while let Some(i) = it {
            let page = stream.get_records(&i, 1000).await.expect("records");
            if page.records.is_empty() {
                empty += 1;
                if empty > 2 {
                    break;
                }
            }
            out.extend(page.records.into_iter().map(|mut r| {
                r.shard = shard.id.clone();
                r
            }));
            it = page.next;
        }
    }
    out
}

/// Waits (briefly: DynamoDB Local publishes within a moment) until `n` records are there.
async fn records(stream: &dyn ChangeStream, n: usize) -> Vec<ChangeRecord> {
    for _ in 0..100 {
        let all = read_all(stream, StartAt::TrimHorizon).await;
        if all.len() >= n {
            return all;
        }
        stream.wait_for_changes(Duration::from_millis(100)).await;
    }
    read_all(stream, StartAt::TrimHorizon).await
}

async fn writes_reach_the_stream_in_order_with_both_images(store: &dyn Store) {
    let stream = store.change_stream().expect("the engine has a stream");
    store.put_item(Put::new(item("A", "1", 1))).await.unwrap();
    store
        .update_item(Update::new(
            PrimaryKey::new("A", "1"),
            UpdateExpr::default().add("n", 1),
        ))
        .await
        .unwrap();
    // Writing the item as it is changes nothing, and puts nothing in the stream.
    store.put_item(Put::new(item("A", "1", 2))).await.unwrap();
    store
        .transact_write(vec![
            TransactAction::Put(Put::new(item("B", "1", 7))),
            TransactAction::Delete(Delete::new(PrimaryKey::new("A", "1"))),
        ])
        .await
        .unwrap();

    let got = records(stream.as_ref(), 4).await;
    assert_eq!(got.len(), 4, "{got:#?}");
    let kinds: Vec<_> = got.iter().map(|r| (r.kind, r.key.pk.as_str())).collect();
    // One item's records are in order; the transaction's two may come either way round
    // on DynamoDB (different partitions), so compare per key.
    let of = |pk: &str| -> Vec<ChangeKind> {
        kinds
            .iter()
            .filter(|(_, p)| *p == pk)
            .map(|(k, _)| *k)
            .collect()
    };
    assert_eq!(
        of("A"),
        [ChangeKind::Insert, ChangeKind::Modify, ChangeKind::Remove]
    );
    assert_eq!(of("B"), [ChangeKind::Insert]);

    let a: Vec<_> = got.iter().filter(|r| r.key.pk == "A").collect();
    assert_eq!(a[0].old_image, None);
    assert_eq!(a[0].new_image.as_ref(), Some(&item("A", "1", 1)));
    assert_eq!(a[1].old_image.as_ref(), Some(&item("A", "1", 1)));
    assert_eq!(a[1].new_image.as_ref(), Some(&item("A", "1", 2)));
    assert_eq!(a[2].old_image.as_ref(), Some(&item("A", "1", 2)));
    assert_eq!(a[2].new_image, None);
    for pair in a.windows(2) {
        if pair[0].shard == pair[1].shard {
            assert_eq!(
                seq_cmp(&pair[0].sequence, &pair[1].sequence),
                std::cmp::Ordering::Less
            );
        }
    }
    let now = itemgraph::clock::now_ms();
    for r in &got {
        assert!(
            r.created_ms + 60_000 > now && r.created_ms <= now + 1000,
            "a record's time is when it was written: {r:?}"
        );
    }
}

async fn reading_resumes_after_a_sequence_number(store: &dyn Store) {
    let stream = store.change_stream().expect("the engine has a stream");
    for n in 0..5 {
        store
            .put_item(Put::new(item("R", &n.to_string(), n)))
            .await
            .unwrap();
    }
    let all = records(stream.as_ref(), 5).await;
    assert_eq!(all.len(), 5);
    let second = &all[1];
    let it = stream
        .shard_iterator(&second.shard, StartAt::After(second.sequence.clone()))
        .await
        .unwrap();
    let page = stream.get_records(&it, 1000).await.unwrap();
    let rest: Vec<_> = page.records.iter().map(|r| r.key.sk.clone()).collect();
    assert_eq!(rest, ["2", "3", "4"]);

    // From the latest position: only what is written afterwards.
    let shard = stream.shards().await.unwrap().last().unwrap().id.clone();
    let latest = stream
        .shard_iterator(&shard, StartAt::Latest)
        .await
        .unwrap();
    store.put_item(Put::new(item("R", "9", 9))).await.unwrap();
    let mut seen = Vec::new();
    let mut it = Some(latest);
    for _ in 0..50 {
        let Some(i) = it.take() else { break };
        let page = stream.get_records(&i, 1000).await.unwrap();
        seen.extend(page.records.into_iter().map(|r| r.key.sk));
        if !seen.is_empty() {
            break;
        }
        it = page.next;
        stream.wait_for_changes(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, ["9"]);
}

async fn a_garbled_iterator_is_refused(store: &dyn Store) {
    let stream = store.change_stream().expect("the engine has a stream");
    let err = stream.get_records("not-an-iterator", 10).await.unwrap_err();
    assert!(
        matches!(err, StreamError::Store(_)),
        "a clear error, not a panic: {err:?}"
    );
}

on_every_engine!(streaming store:
    writes_reach_the_stream_in_order_with_both_images,
    reading_resumes_after_a_sequence_number,
    a_garbled_iterator_is_refused,
);

// --- The embedded engine's log: shards, trimming, expiry ---------------------------------

async fn small_log(log: ChangeLog) -> EmbeddedStore {
    let store = EmbeddedStore::in_memory("itemgraph", itemgraph::chart::builtin().table_schema())
        .unwrap()
        .with_change_log(log);
    assert!(store.create_table().await.unwrap());
    store
}

#[tokio::test]
async fn the_embedded_log_rolls_over_into_child_shards() {
    let store = small_log(ChangeLog {
        shard_span: 3,
        ..ChangeLog::DEFAULT
    })
    .await;
    let stream = store.change_stream().unwrap();
    for n in 0..7 {
        store
            .put_item(Put::new(item("S", &n.to_string(), n)))
            .await
            .unwrap();
    }
    let shards = stream.shards().await.unwrap();
    assert_eq!(shards.len(), 3);
    assert!(shards[0].closed && shards[1].closed && !shards[2].closed);
    assert_eq!(shards[1].parent.as_deref(), Some(shards[0].id.as_str()));
    assert_eq!(shards[2].parent.as_deref(), Some(shards[1].id.as_str()));
    // A closed shard read to its end says so; the open one goes on.
    let it = stream
        .shard_iterator(&shards[0].id, StartAt::TrimHorizon)
        .await
        .unwrap();
    let page = stream.get_records(&it, 1000).await.unwrap();
    assert_eq!(page.records.len(), 3);
    assert!(page.next.is_none());
    let it = stream
        .shard_iterator(&shards[2].id, StartAt::TrimHorizon)
        .await
        .unwrap();
    let page = stream.get_records(&it, 1000).await.unwrap();
    assert_eq!(page.records.len(), 1);
    assert!(page.next.is_some());
    let order: Vec<_> = read_all(stream.as_ref(), StartAt::TrimHorizon)
        .await
        .into_iter()
        .map(|r| r.key.sk)
        .collect();
    assert_eq!(order, ["0", "1", "2", "3", "4", "5", "6"]);
}

#[tokio::test]
async fn positions_past_the_embedded_log_capacity_are_trimmed() {
    let store = small_log(ChangeLog {
        capacity: 4,
        shard_span: 100,
        ..ChangeLog::DEFAULT
    })
    .await;
    let stream = store.change_stream().unwrap();
    store.put_item(Put::new(item("T", "0", 0))).await.unwrap();
    let first = read_all(stream.as_ref(), StartAt::TrimHorizon).await;
    let first = first[0].clone();
    let it = stream
        .shard_iterator(&first.shard, StartAt::TrimHorizon)
        .await
        .unwrap();
    for n in 1..10 {
        store
            .put_item(Put::new(item("T", &n.to_string(), n)))
            .await
            .unwrap();
    }
    let kept: Vec<_> = read_all(stream.as_ref(), StartAt::TrimHorizon)
        .await
        .into_iter()
        .map(|r| r.key.sk)
        .collect();
    assert_eq!(kept, ["6", "7", "8", "9"]);
    assert!(matches!(
        stream
            .shard_iterator(&first.shard, StartAt::After(first.sequence.clone()))
            .await,
        Err(StreamError::Trimmed(_))
    ));
    assert!(matches!(
        stream.get_records(&it, 10).await,
        Err(StreamError::Trimmed(_))
    ));
}

#[tokio::test]
async fn the_embedded_reader_is_woken_by_a_write() {
    let store = crate::common::engines::embedded().await;
    let stream = store.change_stream().unwrap();
    let writer = store.clone();
    let write = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        writer.put_item(Put::new(item("W", "1", 1))).await.unwrap();
    });
    let started = std::time::Instant::now();
    stream.wait_for_changes(Duration::from_secs(30)).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    write.await.unwrap();
    assert_eq!(
        read_all(stream.as_ref(), StartAt::TrimHorizon).await.len(),
        1
    );
}

#[tokio::test]
async fn migrate_turns_the_stream_of_an_older_table_on() {
    let Some(store) = crate::common::engines::dynamodb("migrate_stream").await else {
        return;
    };
    let stream = store.change_stream().expect("a streams client");
    assert!(
        matches!(stream.shards().await, Err(StreamError::NoStream(_))),
        "created without a stream"
    );
    let dry = itemgraph::migrate::migrate(&store, true).await.unwrap();
    assert!(dry.stream_enabled);
    assert!(matches!(
        stream.shards().await,
        Err(StreamError::NoStream(_))
    ));
    let done = itemgraph::migrate::migrate(&store, false).await.unwrap();
    assert!(done.stream_enabled);
    assert!(done.to_string().starts_with("change stream turned on; "));
    stream.shards().await.expect("the stream is there");
    let again = itemgraph::migrate::migrate(&store, false).await.unwrap();
    assert!(!again.stream_enabled);
    let _ = store.delete_table().await;
}

/// The reader's iterator on a shard it has read nothing of yet expires while a change is
/// written: the change is still delivered (read again from the shard's oldest record,
/// skipping what came before the reader began), not skipped by a new iterator at the
/// latest record.
#[tokio::test]
async fn an_iterator_that_expires_before_its_shards_first_record_loses_nothing() {
    let store = crate::common::engines::embedded_demo().await;
    // Once armed, the next `GetRecords` waits to be let go, then answers
    // `ExpiredIteratorException`: an iterator that expired before its shard gave a record.
    let armed = Arc::new(AtomicBool::new(false));
    let reached = Arc::new(Notify::new());
    let go = Arc::new(Notify::new());
    let (hook_armed, hook_reached, hook_go) = (armed.clone(), reached.clone(), go.clone());
    let stream = Arc::new(Hooked {
        inner: store.change_stream().unwrap(),
        hook: Arc::new(move || {
            let (armed, reached, go) = (hook_armed.clone(), hook_reached.clone(), hook_go.clone());
            Box::pin(async move {
                if !armed.swap(false, Ordering::SeqCst) {
                    return None;
                }
                reached.notify_one();
                go.notified().await;
                Some(StreamError::ExpiredIterator)
            })
        }),
    });
    let options = LiveOptions {
        poll: Duration::from_millis(50),
        // The demo's changes, from the last minute, may be sent again first.
        buffer: 100_000,
        ..LiveOptions::DEFAULT
    };
    let hub = Hub::new(Some(stream.clone()), options);
    let mut events = Box::pin(hub.subscribe(None, None, |_| true).await.unwrap());
    armed.store(true, Ordering::SeqCst);
    // The reader is in its call, and reads nothing meanwhile.
    tokio::time::timeout(Duration::from_secs(10), reached.notified())
        .await
        .expect("the reader reads the stream");
    let data = crate::common::demo::demo_data();
    let ticket = Ticket {
        ticket_id: Id::generate(),
        title: "written meanwhile".into(),
        status: crate::common::records::TicketStatus::Open,
        ..data.tickets[0].clone()
    };
    crate::common::writes::create_ticket(crate::common::writes::shared(&store), &ticket)
        .await
        .unwrap();
    // ...and its iterator has expired.
    go.notify_one();
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.next().await {
                Some(Ok(d))
                    if matches!(d.change.entity_after(), Some(Entity::Ticket(t)) if t.title == "written meanwhile") =>
                {
                    return
                }
                Some(Ok(_)) => continue,
                other => panic!("the subscription ended: {other:?}"),
            }
        }
    })
    .await
    .expect("the change written while the iterator expired is delivered");
}
