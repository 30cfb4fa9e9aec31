//! Live updates through the change stream's relay: replicas on one DynamoDB Local table,
//! one Redis server, one relay reader elected by the lease in the table.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use itemgraph::collections::tickets::create_ticket;
use itemgraph::keys::{Id, Slug};
use itemgraph::live::lease::Lease;
use itemgraph::live::relay::RelayLog;
use itemgraph::live::relayer::{Relayer, LEASE_NAME};
use itemgraph::live::{Delivered, Hub, LiveError, LiveOptions};
use itemgraph::model::{Entity, Ticket, TicketPriority, TicketStatus, User};
use itemgraph::store::dynamo::DynamoStore;
use itemgraph::store::stream::{ChangeStream, RecordsPage, ShardInfo, StartAt, StreamResult};
use itemgraph::store::Store;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::common;

/// A change stream that counts its `GetRecords` calls.
struct Counted {
    inner: Arc<dyn ChangeStream>,
    get_records: AtomicUsize,
}

#[async_trait]
impl ChangeStream for Counted {
    fn engine_name(&self) -> &'static str {
        self.inner.engine_name()
    }
    async fn shards(&self) -> StreamResult<Vec<ShardInfo>> {
        self.inner.shards().await
    }
    async fn shard_iterator(&self, shard: &str, at: StartAt) -> StreamResult<String> {
        self.inner.shard_iterator(shard, at).await
    }
    async fn get_records(&self, iterator: &str, limit: u32) -> StreamResult<RecordsPage> {
        self.get_records.fetch_add(1, Ordering::Relaxed);
        self.inner.get_records(iterator, limit).await
    }
    async fn wait_for_changes(&self, idle: Duration) {
        self.inner.wait_for_changes(idle).await
    }
}

/// One replica: its hub follows the relay; its relay writer competes for the lease.
struct Replica {
    hub: Arc<Hub>,
    stream: Arc<Counted>,
    stop: Arc<Notify>,
    relayer: JoinHandle<()>,
}

const LEASE: Duration = Duration::from_millis(900);

fn options() -> LiveOptions {
    LiveOptions {
        poll: Duration::from_millis(50),
        ..LiveOptions::DEFAULT
    }
}

async fn replica(endpoint: &str, table: &str, redis: &str, n: usize) -> Replica {
    let store: Arc<dyn Store> = Arc::new(common::dynamo_local::connect(endpoint, table).await);
    let stream = Arc::new(Counted {
        inner: store.change_stream().unwrap(),
        get_records: AtomicUsize::new(0),
    });
    let log = RelayLog::connect(redis, table, 10_000, Duration::from_secs(3600))
        .await
        .unwrap();
    let hub = Hub::with_relay(Some(stream.clone()), log.clone(), options());
    let stop = Arc::new(Notify::new());
    let relayer = Relayer {
        store,
        stream: stream.clone(),
        log,
        lease: Lease::new(LEASE_NAME, format!("replica-{n}"), LEASE),
        poll: options().poll,
    };
    let stopped = stop.clone();
    let relayer = tokio::spawn(relayer.run(async move { stopped.notified().await }));
    Replica {
        hub,
        stream,
        stop,
        relayer,
    }
}

fn ticket(org: &Slug, requester: &User, n: usize) -> Ticket {
    let now = itemgraph::model::now();
    Ticket {
        ticket_id: Id::generate(),
        org: org.clone(),
        title: format!("relayed {n}"),
        body: String::new(),
        status: TicketStatus::Open,
        priority: TicketPriority::Normal,
        requester: requester.username.clone(),
        assignee: None,
        created_at: now.clone(),
        updated_at: now,
        version: 1,
    }
}

/// The titles of the tickets created, in the order delivered, until `want` of them came.
async fn collect(
    mut events: impl futures::Stream<Item = Result<Delivered, LiveError>> + Unpin,
    want: usize,
) -> Vec<(String, Delivered)> {
    let mut got = Vec::new();
    while got.len() < want {
        let next = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap_or_else(|_| panic!("only {} of {want} events came", got.len()))
            .expect("the subscription ended");
        let delivered = next.unwrap();
        if let Some(Entity::Ticket(t)) = &delivered.change.after {
            if t.title.starts_with("relayed ") {
                got.push((t.title.clone(), delivered));
            }
        }
    }
    got
}

/// Three replicas, one relay reader: every change reaches every replica's subscriber once
/// and in order, and only the lease holder calls `GetRecords`. The holder's writer is
/// killed (its task aborted, its lease never released, as SIGKILL leaves it) while
/// changes are being made: another replica takes over within a lease and goes on from
/// the relay's last entry, with no change lost or repeated. A resume on a replica that
/// does not hold the lease is served from the relay's history: its stream is not read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_one_relay_reader_that_a_kill_hands_over() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("itemgraph=info")
        .with_test_writer()
        .try_init();
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("relay");
    let seeder: DynamoStore = common::dynamo_local::connect(&endpoint, &table).await;
    seeder.create_table().await.unwrap();
    itemgraph::demo::seed_demo(&seeder).await.unwrap();
    seeder.enable_stream().await.unwrap();
    let mut replicas = Vec::new();
    for n in 0..3 {
        replicas.push(replica(&endpoint, &table, &redis.url(), n).await);
    }
    let data = itemgraph::demo::demo_data();
    let org = data.organizations[0].slug.clone();
    let requester = data.users.iter().find(|u| u.org == org).unwrap().clone();

    // Wait for a holder, then subscribe on every replica.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let holder = loop {
        let reading: Vec<usize> = (0..3)
            .filter(|&i| replicas[i].stream.get_records.load(Ordering::Relaxed) > 0)
            .collect();
        if reading.len() == 1 {
            break reading[0];
        }
        assert!(
            reading.len() <= 1,
            "more than one replica reads the stream: {reading:?}"
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "no replica took the relay lease"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut subscribers = Vec::new();
    for r in &replicas {
        subscribers.push(Box::pin(
            r.hub.subscribe(None, None, |_| true).await.unwrap(),
        ));
    }

    // Changes before and after the holder's writer is killed midway.
    const CHANGES: usize = 40;
    let writer = {
        let store = seeder.clone();
        let org = org.clone();
        let requester = requester.clone();
        tokio::spawn(async move {
            for n in 0..CHANGES {
                create_ticket(&store, &ticket(&org, &requester, n))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    replicas[holder].relayer.abort();
    let collected: Vec<Vec<(String, Delivered)>> = futures::future::join_all(
        subscribers
            .iter_mut()
            .map(|events| collect(events.as_mut(), CHANGES)),
    )
    .await;
    writer.await.unwrap();
    let want: Vec<String> = (0..CHANGES).map(|n| format!("relayed {n}")).collect();
    for (i, got) in collected.iter().enumerate() {
        let titles: Vec<String> = got.iter().map(|(t, _)| t.clone()).collect();
        assert_eq!(titles, want, "replica {i}: every change once, in order");
    }
    // Exactly one other replica took over and read the stream after the kill.
    let readers: Vec<usize> = (0..3)
        .filter(|&i| i != holder && replicas[i].stream.get_records.load(Ordering::Relaxed) > 0)
        .collect();
    assert_eq!(
        readers.len(),
        1,
        "one successor reads the stream: {readers:?}"
    );
    let quiet = (0..3).find(|&i| i != holder && i != readers[0]).unwrap();

    // A resume on the replica that never read the stream: from the 10th event on, served
    // from the relay's history, with no GetRecords of its own.
    let before = replicas[quiet].stream.get_records.load(Ordering::Relaxed);
    assert_eq!(before, 0);
    let from = collected[quiet][9].1.position.as_ref().clone();
    assert!(
        from.relay.is_some(),
        "a relayed event's position names its relay entry"
    );
    let resumed = Box::pin(
        replicas[quiet]
            .hub
            .subscribe(Some(from), None, |_| true)
            .await
            .unwrap(),
    );
    let replayed = collect(resumed, CHANGES - 10).await;
    let titles: Vec<String> = replayed.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(titles, want[10..].to_vec());
    assert_eq!(
        replicas[quiet].stream.get_records.load(Ordering::Relaxed),
        0
    );

    for r in &replicas {
        r.stop.notify_one();
    }
    for r in replicas {
        let _ = r.relayer.await;
    }
    redis.kill().await;
    common::dynamo_local::drop_table(&seeder).await;
}
