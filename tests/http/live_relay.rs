//! Live updates through the change stream's relay: replicas on one DynamoDB Local table,
//! one Redis server, one relay reader elected by the lease in the table.

use crate::common::changes::Decoded as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::records::{Entity, Record as _, Ticket, TicketPriority, TicketStatus, User};
use futures::StreamExt;
use itemgraph::chart::kinds::{Id, Slug};
use itemgraph::live::lease::{Lease, LeaseRecord};
use itemgraph::live::relay::{Entry, RelayLog, Relayed};
use itemgraph::live::relayer::{Relayer, LEASE_NAME};
use itemgraph::live::{Delivered, Hub, LiveError, LiveOptions};
use itemgraph::store::dynamo::DynamoStore;
use itemgraph::store::own::lease_key;
use itemgraph::store::own::OwnRecord as _;
use itemgraph::store::{Delete, GetItem, Store};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::common;
use crate::common::hooked_stream::Hooked;

/// One replica: its hub follows the relay; its relay writer competes for the lease.
struct Replica {
    hub: Arc<Hub>,
    /// Its relay writer's `GetRecords` calls.
    get_records: Arc<AtomicUsize>,
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
    replica_with(endpoint, table, redis, n, options()).await
}

async fn replica_with(
    endpoint: &str,
    table: &str,
    redis: &str,
    n: usize,
    options: LiveOptions,
) -> Replica {
    let store: Arc<dyn Store> = Arc::new(common::dynamo_local::connect(endpoint, table).await);
    let get_records = Arc::new(AtomicUsize::new(0));
    let counted = get_records.clone();
    let stream = Arc::new(Hooked {
        inner: store.change_stream().unwrap(),
        hook: Arc::new(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            Box::pin(async { None })
        }),
    });
    let log = RelayLog::connect(redis, table, 10_000, Duration::from_secs(3600))
        .await
        .unwrap();
    let hub = Hub::with_relay(Some(stream.clone()), log.clone(), options);
    let stop = Arc::new(Notify::new());
    let relayer = Relayer {
        design: itemgraph::live::Design::builtin(),
        store,
        stream: stream.clone(),
        log,
        lease: Lease::new(LEASE_NAME, format!("replica-{n}"), LEASE),
        poll: options.poll,
    };
    let stopped = stop.clone();
    let relayer = tokio::spawn(relayer.run(async move { stopped.notified().await }));
    Replica {
        hub,
        get_records,
        stop,
        relayer,
    }
}

fn ticket(org: &Slug, requester: &User, n: usize) -> Ticket {
    let now = itemgraph::clock::now();
    Ticket {
        ticket_id: Id::generate(),
        org: org.clone(),
        title: format!("relayed {n}"),
        body: "Relayed.".into(),
        status: TicketStatus::Open,
        priority: TicketPriority::Normal,
        requester: requester.username.clone(),
        assignee: None,
        created_at: now.clone(),
        updated_at: now,
        version: 1,
    }
}

/// Writes `t` as one PutItem of its item (keys rendered by the chart), without the
/// counters a client's create keeps: one change of a ticket, all the relay's suites need.
/// A create through the API would do its work on the same two worker threads as the
/// replicas under test, and the storm's write-to-event latency would measure it too.
async fn put_ticket(store: &DynamoStore, t: &Ticket) {
    store
        .put_item(itemgraph::store::Put::new(t.to_item()))
        .await
        .unwrap();
}

/// The title of the ticket a change left, read from its item as stored: in a storm 300
/// subscribers each read every event, so none decodes the whole record.
fn ticket_title(change: &itemgraph::live::Change) -> Option<&str> {
    let after = change.after.as_ref()?;
    match (after.get("Type"), after.get("title")) {
        (
            Some(itemgraph::store::AttributeValue::S(ty)),
            Some(itemgraph::store::AttributeValue::S(title)),
        ) if ty == "Ticket" => Some(title),
        _ => None,
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
        if let Some(title) = ticket_title(&delivered.change) {
            if title.starts_with("relayed ") {
                got.push((title.to_owned(), delivered));
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
    crate::common::demo::seed_demo(&seeder).await.unwrap();
    seeder.enable_stream().await.unwrap();
    let mut replicas = Vec::new();
    for n in 0..3 {
        replicas.push(replica(&endpoint, &table, &redis.url(), n).await);
    }
    let data = crate::common::demo::demo_data();
    let org = data.organizations[0].slug.clone();
    let requester = data.users.iter().find(|u| u.org == org).unwrap().clone();

    // Wait for a holder, then subscribe on every replica.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let holder = loop {
        let reading: Vec<usize> = (0..3)
            .filter(|&i| replicas[i].get_records.load(Ordering::Relaxed) > 0)
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
                put_ticket(&store, &ticket(&org, &requester, n)).await;
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
        .filter(|&i| i != holder && replicas[i].get_records.load(Ordering::Relaxed) > 0)
        .collect();
    assert_eq!(
        readers.len(),
        1,
        "one successor reads the stream: {readers:?}"
    );
    let quiet = (0..3).find(|&i| i != holder && i != readers[0]).unwrap();

    // A resume on the replica that never read the stream: from the 10th event on, served
    // from the relay's history, with no GetRecords of its own.
    let before = replicas[quiet].get_records.load(Ordering::Relaxed);
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
    assert_eq!(replicas[quiet].get_records.load(Ordering::Relaxed), 0);

    for r in &replicas {
        r.stop.notify_one();
    }
    for r in replicas {
        let _ = r.relayer.await;
    }
    redis.kill().await;
    common::dynamo_local::drop_table(&seeder).await;
}

/// The relay's Redis restarts without its data: the next holding finds the log empty
/// after an earlier one, so subscribers are told changes were lost (`EVENTS_EXPIRED`:
/// refetch) instead of silently missing what happened meanwhile, and a new subscription
/// gets the changes made after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_lost_its_history_tells_subscribers_to_refetch() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("relay-lost");
    let seeder: DynamoStore = common::dynamo_local::connect(&endpoint, &table).await;
    seeder.create_table().await.unwrap();
    crate::common::demo::seed_demo(&seeder).await.unwrap();
    seeder.enable_stream().await.unwrap();
    let (url, port) = (redis.url(), redis.port);
    let r = replica(&endpoint, &table, &url, 0).await;
    let data = crate::common::demo::demo_data();
    let org = data.organizations[0].slug.clone();
    let requester = data.users.iter().find(|u| u.org == org).unwrap().clone();
    let mut events = Box::pin(r.hub.subscribe(None, None, |_| true).await.unwrap());
    put_ticket(&seeder, &ticket(&org, &requester, 0)).await;
    collect(events.as_mut(), 1).await;

    redis.kill().await;
    let restarted = common::redis::start_on(port).await.unwrap();
    // Changes made while the relay is down and after it came back empty.
    for n in 1..4 {
        put_ticket(&seeder, &ticket(&org, &requester, n)).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let ended = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match events.next().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Some(e),
                None => return None,
            }
        }
    })
    .await
    .expect("the subscriber was told within a minute");
    assert!(matches!(ended, Some(LiveError::Expired(_))), "{ended:?}");
    // The next holding said so in the log: a lost marker, then where it began.
    let log = RelayLog::connect(&url, &table, 10_000, Duration::from_secs(3600))
        .await
        .unwrap();
    let first: Vec<_> = log
        .newest(10_000)
        .await
        .unwrap()
        .into_iter()
        .take(2)
        .collect();
    assert!(
        matches!(
            first.iter().map(|e| &e.relayed).collect::<Vec<_>>()[..],
            [
                itemgraph::live::relay::Relayed::Lost(_),
                itemgraph::live::relay::Relayed::Began
            ]
        ),
        "{first:?}"
    );
    // A new subscription (after refetching) gets what comes next.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut fresh = loop {
        match r.hub.subscribe(None, None, |_| true).await {
            Ok(s) => break Box::pin(s),
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "{e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let after = ticket(&org, &requester, 9);
    put_ticket(&seeder, &after).await;
    // (Changes made while the relay came back may come first.)
    loop {
        let (title, _) = collect(fresh.as_mut(), 1).await.remove(0);
        if title == "relayed 9" {
            break;
        }
    }
    r.stop.notify_one();
    let _ = r.relayer.await;
    restarted.kill().await;
    common::dynamo_local::drop_table(&seeder).await;
}

/// The `n`th percentile of `samples` (nearest rank).
fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Fair replays: one tenant's reconnect storm (hundreds of subscribers resuming from an
/// old cursor, again and again, each replaying hundreds of changes) beside another
/// tenant's subscriber. The second's write-to-event p90 stays within twice its quiet
/// figure and its p99 within three times, measured in the same run (quiet and stormy
/// moments alternating, five rounds of 30 events each, so that a machine loaded by
/// something else for part of the run loads both alike), because one
/// organization's replays are capped (`max_replays_per_org`): the storm's resumes past the
/// cap are refused with a retryable error and wait their turn. (With the cap lifted, the
/// storm took the p90 to 4.5 times the quiet figure and the p99 to 4.2 times, and refused
/// nothing, which fails the test's first check. The p99 of 150 events is the second
/// slowest, which one stall of a loaded machine moves: at twice the quiet figure it failed
/// a run by half a millisecond, so the p90 holds the tight bound.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenants_reconnect_storm_leaves_anothers_events_on_time() {
    reconnect_storm(options()).await;
}

/// The same storm resuming from further back than the hub keeps in memory: each replay
/// reads and decodes the relay's history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_storm_from_the_relays_history_leaves_anothers_events_on_time() {
    reconnect_storm(LiveOptions {
        relay_memory: 0,
        ..options()
    })
    .await;
}

async fn reconnect_storm(options: LiveOptions) {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("relay-fair");
    let seeder: DynamoStore = common::dynamo_local::connect(&endpoint, &table).await;
    seeder.create_table().await.unwrap();
    crate::common::demo::seed_demo(&seeder).await.unwrap();
    seeder.enable_stream().await.unwrap();
    let r = replica_with(&endpoint, &table, &redis.url(), 0, options).await;
    let data = crate::common::demo::demo_data();
    let requester = |org: &Slug| data.users.iter().find(|u| u.org == *org).unwrap().clone();
    let (acme, globex) = (
        data.organizations[0].slug.clone(),
        data.organizations[1].slug.clone(),
    );
    let (acme_user, globex_user) = (requester(&acme), requester(&globex));

    // The storm's history: 300 changes of acme after the cursor it resumes from.
    let in_org = |org: &Slug| {
        let org = org.clone();
        move |c: &itemgraph::live::Change| c.org().is_some_and(|o| *o == org)
    };
    let mut acme_events = Box::pin(r.hub.subscribe(None, None, in_org(&acme)).await.unwrap());
    let mut globex_events = Box::pin(r.hub.subscribe(None, None, in_org(&globex)).await.unwrap());
    const HISTORY: usize = 300;
    for n in 0..=HISTORY {
        put_ticket(&seeder, &ticket(&acme, &acme_user, n)).await;
    }
    let history = collect(acme_events.as_mut(), HISTORY + 1).await;
    let cursor = history[0].1.position.as_ref().clone();

    // Write-to-event latency of globex: a ticket made, then its event awaited.
    let seeder = Arc::new(seeder);
    let mut made = 0;
    let mut measure = async |samples: usize| {
        let mut out = Vec::new();
        for _ in 0..samples {
            made += 1;
            let title = format!("relayed {made}");
            let mut t = ticket(&globex, &globex_user, made);
            t.title = title.clone();
            put_ticket(seeder.as_ref(), &t).await;
            let written = tokio::time::Instant::now();
            loop {
                let next = tokio::time::timeout(Duration::from_secs(30), globex_events.next())
                    .await
                    .expect("an event within 30 s")
                    .expect("the subscription goes on")
                    .unwrap();
                if ticket_title(&next.change) == Some(title.as_str()) {
                    break;
                }
            }
            out.push(written.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        out
    };
    // Quiet and stormy moments alternate, five rounds of 30 events each, so that what
    // else loads the machine while the test runs loads both alike.
    let replayed = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let (mut quiet, mut stormy) = (Vec::new(), Vec::new());
    for _round in 0..5 {
        quiet.extend(measure(30).await);

        // The storm: 300 subscribers of acme resuming from the cursor, over and over.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let storm: Vec<_> = (0..300)
            .map(|_| {
                let hub = r.hub.clone();
                let (stop, replayed, refused) = (stop.clone(), replayed.clone(), refused.clone());
                let (acme, cursor) = (acme.clone(), cursor.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let tenant = itemgraph::chart::kinds::Tenant::from(&acme);
                        let slot = match hub.replay_slot(&tenant) {
                            Ok(slot) => slot,
                            Err(LiveError::ReplaysBusy(_)) => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(100)).await;
                                continue;
                            }
                            Err(e) => panic!("{e}"),
                        };
                        let org = acme.clone();
                        let events = hub
                            .subscribe(Some(cursor.clone()), Some(slot), move |c| {
                                c.org().is_some_and(|o| *o == org)
                            })
                            .await
                            .unwrap();
                        let got = collect(Box::pin(events), HISTORY).await;
                        assert_eq!(got.len(), HISTORY);
                        replayed.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        stormy.extend(measure(30).await);
        stop.store(true, Ordering::Relaxed);
        for task in storm {
            task.await.unwrap();
        }
    }
    let (quiet99, stormy99) = (percentile(&quiet, 99.0), percentile(&stormy, 99.0));
    let (quiet90, stormy90) = (percentile(&quiet, 90.0), percentile(&stormy, 90.0));
    eprintln!("write-to-event p90: quiet {quiet90:?}, beside the storm {stormy90:?}");
    let (replays, refusals) = (
        replayed.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "write-to-event p99: quiet {quiet99:?}, beside the storm {stormy99:?}; {replays} replays of {HISTORY} changes, {refusals} refused"
    );
    assert!(
        replays >= 20 && refusals > 0,
        "the storm ran: {replays} replays, {refusals} refused"
    );
    assert!(
        stormy90 <= quiet90 * 2,
        "beside the storm p90 {stormy90:?} > twice the quiet {quiet90:?}"
    );
    assert!(
        stormy99 <= quiet99 * 3,
        "beside the storm p99 {stormy99:?} > three times the quiet {quiet99:?}"
    );
    r.stop.notify_one();
    let _ = r.relayer.await;
    redis.kill().await;
    common::dynamo_local::drop_table(seeder.as_ref()).await;
}

/// A seeded table with its stream on, a Redis server, and a first replica holding the
/// relay, one change already relayed to the subscriber `events`: where the tests of the
/// relay's faults start.
struct Relaying {
    endpoint: String,
    redis: common::redis::Redis,
    table: String,
    seeder: DynamoStore,
    first: Replica,
    org: Slug,
    requester: User,
    events: std::pin::Pin<Box<dyn futures::Stream<Item = Result<Delivered, LiveError>> + Send>>,
}

impl Relaying {
    /// `None` where DynamoDB Local or Redis cannot be had.
    async fn start(name: &str, options: LiveOptions) -> Option<Relaying> {
        let endpoint = common::dynamo_local::endpoint().await?;
        let redis = common::redis::start().await?;
        let table = common::dynamo_local::unique_table_name(name);
        let seeder: DynamoStore = common::dynamo_local::connect(&endpoint, &table).await;
        seeder.create_table().await.unwrap();
        crate::common::demo::seed_demo(&seeder).await.unwrap();
        seeder.enable_stream().await.unwrap();
        let first = replica_with(&endpoint, &table, &redis.url(), 0, options).await;
        let data = crate::common::demo::demo_data();
        let org = data.organizations[0].slug.clone();
        let requester = data.users.iter().find(|u| u.org == org).unwrap().clone();
        let mut events = Box::pin(first.hub.subscribe(None, None, |_| true).await.unwrap());
        put_ticket(&seeder, &ticket(&org, &requester, 0)).await;
        collect(events.as_mut(), 1).await;
        Some(Relaying {
            endpoint,
            redis,
            table,
            seeder,
            first,
            org,
            requester,
            events,
        })
    }

    /// Another replica on the same table and relay.
    async fn replica(&self, n: usize) -> Replica {
        replica(&self.endpoint, &self.table, &self.redis.url(), n).await
    }

    /// The relay log, as a replica connects to it.
    async fn log(&self) -> RelayLog {
        RelayLog::connect(
            &self.redis.url(),
            &self.table,
            10_000,
            Duration::from_secs(3600),
        )
        .await
        .unwrap()
    }

    /// A ticket titled `relayed {n}` created in the table.
    async fn change(&self, n: usize) {
        put_ticket(&self.seeder, &ticket(&self.org, &self.requester, n)).await;
    }

    /// Stops `holder`, then Redis, and drops the table.
    async fn finish(self, holder: Replica) {
        holder.stop.notify_one();
        let _ = holder.relayer.await;
        self.redis.kill().await;
        common::dynamo_local::drop_table(&self.seeder).await;
    }
}

/// The relay's fence is ahead of the lease (its item deleted after many holdings, or the
/// table restored from a backup): the next holder moves the lease past the fence at once
/// and relays, instead of being fenced once a lease, epoch by epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fence_ahead_of_the_lease_is_passed_at_once() {
    let Some(mut r) = Relaying::start("relay-fence", options()).await else {
        return;
    };
    r.first.stop.notify_one();
    (&mut r.first.relayer).await.unwrap();

    // Holdings up to epoch 1000 claimed the log; then the lease item was lost.
    r.log().await.claim(1000).await.unwrap();
    r.seeder
        .delete_item(Delete::new(lease_key(LEASE_NAME)))
        .await
        .unwrap();
    let second = r.replica(1).await;
    r.change(1).await;
    // Within `collect`'s 30 s (fenced epoch by epoch, it would take 1,000 leases).
    let (title, _) = collect(r.events.as_mut(), 1).await.remove(0);
    assert_eq!(title, "relayed 1");
    let lease = r
        .seeder
        .get_item(GetItem {
            key: lease_key(LEASE_NAME),
            consistent_read: true,
        })
        .await
        .unwrap()
        .map(|item| LeaseRecord::from_item(item, r.seeder.schema()).unwrap())
        .expect("a lease");
    assert!(lease.epoch > 1000, "{lease:?}");
    r.finish(second).await;
}

/// Whether the entry is the change of the ticket titled `title`.
fn titled(entry: &Entry, title: &str) -> bool {
    matches!(&entry.relayed, Relayed::Change(c)
        if matches!(c.entity_after(), Some(Entity::Ticket(t)) if t.title == title))
}

/// Redis restored from an older copy (a failover to a replica that missed the tail): the
/// next holder relays the missing changes again, under new ids, and neither a subscriber
/// nor a resume from a cursor of the lost tail gets any of them twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_restored_from_an_older_copy_repeats_nothing() {
    // Resumes read the history, not the hub's memory.
    let memoryless = LiveOptions {
        relay_memory: 0,
        ..options()
    };
    let Some(mut r) = Relaying::start("relay-restored", memoryless).await else {
        return;
    };
    let log = r.log().await;
    let copy = r.redis.dump(log.stream_key()).await;
    for n in 1..=2 {
        r.change(n).await;
    }
    let tail = collect(r.events.as_mut(), 2).await;
    let cursor = tail[1].1.position.as_ref().clone();

    // The holder stops; Redis comes back without the last two entries.
    r.first.stop.notify_one();
    let _ = (&mut r.first.relayer).await;
    r.redis.restore(log.stream_key(), copy).await;
    let next = r.replica(1).await;
    r.change(3).await;

    let (title, _) = collect(r.events.as_mut(), 1).await.remove(0);
    assert_eq!(
        title, "relayed 3",
        "the changes relayed again are not delivered again"
    );
    let resumed = Box::pin(
        r.first
            .hub
            .subscribe(Some(cursor), None, |_| true)
            .await
            .unwrap(),
    );
    let (title, _) = collect(resumed, 1).await.remove(0);
    assert_eq!(
        title, "relayed 3",
        "nor replayed to a cursor of the lost tail"
    );
    // The log holds the changes relayed again.
    let entries = log.range_after("0", 100).await.unwrap();
    assert!(entries.iter().any(|e| titled(e, "relayed 1")));
    r.finish(next).await;
}

/// Turns the table's stream off (`UpdateTable`), as an operator does to change its view
/// type.
async fn disable_stream(store: &DynamoStore) {
    use aws_sdk_dynamodb::types::StreamSpecification;
    store
        .client()
        .update_table()
        .table_name(store.table_name())
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(false)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
}

async fn stream_label(store: &DynamoStore) -> Option<String> {
    let out = store
        .client()
        .describe_table()
        .table_name(store.table_name())
        .send()
        .await
        .unwrap();
    out.table()
        .and_then(|t| t.latest_stream_label())
        .map(str::to_owned)
}

/// The table's stream is disabled and enabled again while no replica relays: the next
/// holder finds the log's last position in the old stream, writes one lost mark, and
/// relays the new stream from its start, so changes flow again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_change_stream_is_relayed_from_its_start() {
    let Some(mut r) = Relaying::start("relay-replaced", options()).await else {
        return;
    };
    // The holder stops (its lease released); the stream is replaced meanwhile.
    r.first.stop.notify_one();
    (&mut r.first.relayer).await.unwrap();
    let old = stream_label(&r.seeder).await;
    disable_stream(&r.seeder).await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // labels are timestamps
    r.seeder.enable_stream().await.unwrap();
    assert_ne!(
        stream_label(&r.seeder).await,
        old,
        "enabled again, it is a new stream"
    );
    r.change(1).await;

    // The next holder: a replica started now takes the released lease.
    let second = r.replica(1).await;
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match r.events.next().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Some(e),
                None => return None,
            }
        }
    })
    .await
    .expect("the subscriber was told");
    assert!(matches!(ended, Some(LiveError::Expired(_))), "{ended:?}");
    // The new stream's changes flow: a new subscription gets the next one.
    let mut fresh = Box::pin(r.first.hub.subscribe(None, None, |_| true).await.unwrap());
    r.change(2).await;
    loop {
        if collect(fresh.as_mut(), 1).await.remove(0).0 == "relayed 2" {
            break;
        }
    }
    // In the log: one lost mark, and after it the change made while no one relayed.
    let entries = r.log().await.newest(10_000).await.unwrap();
    let marks: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.relayed, Relayed::Lost(_)))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(marks.len(), 1, "one lost mark: {entries:?}");
    assert!(entries[marks[0]..].iter().any(|e| titled(e, "relayed 1")));
    r.finish(second).await;
}
