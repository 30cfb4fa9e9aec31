//! The change stream's relay parts against real servers: the relay log on a Redis server
//! of the test's own, the lease that elects its writer on DynamoDB Local.

use std::time::Duration;

use crate::common::records::{Entity, Ticket};
use base64::Engine as _;
use futures::StreamExt;
use itemgraph::chart::kinds::Slug;
use itemgraph::live::lease::{Lease, Look};
use itemgraph::live::position::{Pos, Position};
use itemgraph::live::relay::{RelayError, RelayLog, Relayed};
use itemgraph::live::{Change, EventKind, Hub, LiveError, LiveOptions};

use crate::common;

fn change(n: u64) -> (Relayed, Position) {
    let data = crate::common::demo::demo_data();
    ticket_change(data.tickets[(n as usize) % data.tickets.len()].clone(), n)
}

/// A change of a ticket of `org`.
fn change_in(org: &Slug, n: u64) -> (Relayed, Position) {
    let data = crate::common::demo::demo_data();
    let ticket = data
        .tickets
        .iter()
        .find(|t| t.org == *org)
        .expect("a ticket of the organization")
        .clone();
    ticket_change(ticket, n)
}

fn ticket_change(ticket: Ticket, n: u64) -> (Relayed, Position) {
    let sequence = format!("{:021}", 1000 + n);
    let mut position = Position::default();
    position
        .shards
        .insert("shard-1".into(), Pos::Seq(sequence.clone()));
    (
        Relayed::Change(Box::new(Change::new(
            EventKind::Updated,
            Some(Entity::Ticket(ticket.clone()).to_item()),
            Some(Entity::Ticket(ticket.clone()).to_item()),
            Some(itemgraph::chart::kinds::Tenant::from(&ticket.org)),
            ("shard-1".into(), sequence, 1_700_000_000_000 + n),
        ))),
        position,
    )
}

/// Entries come back as appended, to a follower and to a range read; appends are fenced
/// by the lease epoch; the log keeps about `max_len` entries.
/// A log of at most `max_len` entries claimed by epoch 1, which has relayed its start.
async fn begun(redis: &common::redis::Redis, max_len: usize) -> RelayLog {
    let log = RelayLog::connect(&redis.url(), "t", max_len, Duration::from_secs(3600))
        .await
        .unwrap();
    log.claim(1).await.unwrap();
    log.append(1, &[(Relayed::Began, Position::default())])
        .await
        .unwrap();
    log
}

#[tokio::test]
async fn the_relay_log_keeps_order_fences_stale_writers_and_trims() {
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let log = RelayLog::connect(&redis.url(), "t", 500, Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(log.last().await.unwrap(), None);
    assert_eq!(log.tail().await.unwrap(), "0");
    // Nothing may be appended before a holder claims the log.
    assert!(matches!(
        log.append(1, &[change(0)]).await,
        Err(RelayError::Fenced(0))
    ));
    log.claim(1).await.unwrap();
    let follower = log.clone();
    let followed = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut at = "0".to_owned();
        while got.len() < 3 {
            for e in follower
                .follow(&at, 10, Duration::from_secs(5))
                .await
                .unwrap()
            {
                at = e.id.clone();
                got.push(e);
            }
        }
        got
    });
    let ids = log
        .append(1, &[change(1), change(2), change(3)])
        .await
        .unwrap();
    assert_eq!(ids.len(), 3);
    let got = followed.await.unwrap();
    let want: Vec<(Relayed, Position)> = (1..=3).map(change).collect();
    assert_eq!(
        got.iter()
            .map(|e| (e.relayed.clone(), e.position.clone()))
            .collect::<Vec<_>>(),
        want
    );
    assert_eq!(got.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), ids);
    let after_first = log.range_after(&ids[0], 10).await.unwrap();
    assert_eq!(after_first.len(), 2);
    assert_eq!(after_first[0].id, ids[1]);
    assert_eq!(log.last().await.unwrap().unwrap().id, ids[2]);

    // A later holding claims the log: the earlier one's appends are refused.
    log.claim(2).await.unwrap();
    assert!(matches!(
        log.append(1, &[change(4)]).await,
        Err(RelayError::Fenced(2))
    ));
    assert!(matches!(log.claim(1).await, Err(RelayError::Fenced(2))));
    log.append(2, &[change(4)]).await.unwrap();

    // Trimmed to about max_len: the oldest entries go.
    let lost = (Relayed::Lost("trimmed".into()), Position::default());
    log.append(2, std::slice::from_ref(&lost)).await.unwrap();
    assert_eq!(log.last().await.unwrap().unwrap().relayed, lost.0);
    let batch: Vec<(Relayed, Position)> = (5..105).map(change).collect();
    for _ in 0..20 {
        log.append(2, &batch).await.unwrap();
    }
    let first = log.first_id().await.unwrap().unwrap();
    assert_ne!(first, ids[0], "the oldest entries were trimmed");
    let kept = log.range_after("0", 10_000).await.unwrap().len();
    assert!((500..=700).contains(&kept), "{kept} entries kept");
    redis.kill().await;
}

/// Over TLS (`rediss://`): a server whose certificate a private CA signed is reached
/// trusting that CA, and refused against the system's roots.
#[tokio::test]
async fn the_relay_log_speaks_tls_trusting_a_given_ca() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let Some(redis) = common::redis::start_tls(&cert_file, &key_file).await else {
        return;
    };
    let url = format!("rediss://127.0.0.1:{}", redis.port);
    let retention = Duration::from_secs(3600);
    let log = RelayLog::connect_trusting(&url, Some(ca.pem().as_bytes()), "t", 100, retention)
        .await
        .unwrap();
    log.claim(1).await.unwrap();
    let ids = log.append(1, &[change(1)]).await.unwrap();
    assert_eq!(log.last().await.unwrap().unwrap().id, ids[0]);
    // The system's roots do not know the CA: no connection.
    assert!(RelayLog::connect(&url, "t", 100, retention).await.is_err());
    redis.kill().await;
}

/// The lease on DynamoDB Local: one holder; a stalled one replaced after a duration at the
/// next epoch; a released one taken at once.
#[tokio::test]
async fn the_relay_lease_elects_one_holder_on_dynamodb_local() {
    let Some(store) = common::dynamo_local::store("relay-lease").await else {
        return;
    };
    let d = Duration::from_millis(400);
    let mut a = Lease::new("stream-relay", "a", d);
    let mut b = Lease::new("stream-relay", "b", d);
    let Look::Held(mut held_a) = a.try_acquire(&store).await.unwrap() else {
        panic!("a free lease is taken");
    };
    assert!(matches!(
        b.try_acquire(&store).await.unwrap(),
        Look::HeldBy { epoch: 1, .. }
    ));
    tokio::time::sleep(d / 2).await;
    assert!(a.renew(&store, &mut held_a).await.unwrap());
    assert!(matches!(
        b.try_acquire(&store).await.unwrap(),
        Look::HeldBy { .. }
    ));
    tokio::time::sleep(d + Duration::from_millis(50)).await;
    let Look::Held(held_b) = b.try_acquire(&store).await.unwrap() else {
        panic!("a stalled holder is replaced");
    };
    assert_eq!(held_b.epoch, 2);
    assert!(!a.renew(&store, &mut held_a).await.unwrap());
    b.release(&store, held_b).await.unwrap();
    assert!(matches!(a.try_acquire(&store).await.unwrap(), Look::Held(h) if h.epoch == 3));
    common::dynamo_local::drop_table(&store).await;
}

/// An entry as a later version writes one: a change of an entity type this version does
/// not know, with the organization and position every version reads.
fn foreign_entry(org: &Slug, n: u64) -> String {
    let sequence = format!("{:021}", 1000 + n);
    let mut position = Position::default();
    position
        .shards
        .insert("shard-1".into(), Pos::Seq(sequence.clone()));
    serde_json::json!({
        "k": "c",
        "o": org.as_str(),
        "s": "shard-1",
        "q": sequence,
        "t": 1_700_000_000_000u64 + n,
        "a": { "PK": format!("ORG#{org}#INVOICE#1"), "SK": "INVOICE#1", "Type": "Invoice" },
        "p": base64::engine::general_purpose::STANDARD_NO_PAD.encode(position.to_bytes()),
    })
    .to_string()
}

fn in_org(org: &Slug) -> impl Fn(&Change) -> bool + Send + 'static {
    let org = org.clone();
    move |c| c.org().is_some_and(|o| *o == org)
}

/// An entry a later version wrote that this one cannot read (a new entity type) is
/// skipped alone: the subscribers of its organization are told to refetch, the others go
/// on, and a hub that starts with it among the newest entries starts.
#[tokio::test]
async fn an_entry_this_version_cannot_read_is_skipped_for_its_organization_only() {
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let log = begun(&redis, 10_000).await;
    let data = crate::common::demo::demo_data();
    let (acme, globex) = (
        data.organizations[0].slug.clone(),
        data.organizations[1].slug.clone(),
    );
    let hub = Hub::with_relay(None, log.clone(), LiveOptions::DEFAULT);
    let mut of_acme = Box::pin(
        hub.subscribe_in(
            Some(itemgraph::chart::kinds::Tenant::from(&acme)),
            None,
            None,
            in_org(&acme),
        )
        .await
        .unwrap(),
    );
    let mut of_globex = Box::pin(
        hub.subscribe_in(
            Some(itemgraph::chart::kinds::Tenant::from(&globex)),
            None,
            None,
            in_org(&globex),
        )
        .await
        .unwrap(),
    );

    let _: String = redis::cmd("XADD")
        .arg(log.stream_key())
        .arg("*")
        .arg("e")
        .arg(foreign_entry(&acme, 1))
        .query_async(&mut redis.connection().await)
        .await
        .unwrap();
    log.append(1, &[change_in(&globex, 2), change_in(&acme, 3)])
        .await
        .unwrap();

    let within = Duration::from_secs(10);
    let got = tokio::time::timeout(within, of_globex.next())
        .await
        .expect("the change after the unreadable entry reaches another organization")
        .expect("the subscription goes on")
        .unwrap();
    assert_eq!(got.change.sequence, format!("{:021}", 1002));
    let ended = tokio::time::timeout(within, of_acme.next())
        .await
        .expect("the entry's organization is told")
        .expect("an error, then the end");
    assert!(matches!(ended, Err(LiveError::Expired(_))), "{ended:?}");

    // A hub that starts now loads the entry among the newest.
    let later = Hub::with_relay(None, log.clone(), LiveOptions::DEFAULT);
    let mut events = Box::pin(
        later
            .subscribe_in(
                Some(itemgraph::chart::kinds::Tenant::from(&globex)),
                None,
                None,
                in_org(&globex),
            )
            .await
            .expect("a hub starts with an unreadable entry among the newest"),
    );
    log.append(1, &[change_in(&globex, 4)]).await.unwrap();
    let got = tokio::time::timeout(within, events.next())
        .await
        .expect("a change after")
        .unwrap()
        .unwrap();
    assert_eq!(got.change.sequence, format!("{:021}", 1004));
    redis.kill().await;
}

/// Trimmed past a follower that had not read there yet (1,000 entries appended in one
/// script, trimmed to about 100 before the blocked follower is served): the follower
/// tells its subscribers they missed changes, instead of going on from the oldest entry
/// left.
#[tokio::test]
async fn a_follower_that_trimming_overtook_tells_its_subscribers() {
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let log = begun(&redis, 100).await;
    let options = LiveOptions {
        buffer: 10_000,
        ..LiveOptions::DEFAULT
    };
    let hub = Hub::with_relay(None, log.clone(), options);
    let mut events = Box::pin(hub.subscribe(None, None, |_| true).await.unwrap());
    let batch: Vec<(Relayed, Position)> = (1..=1000).map(change).collect();
    log.append(1, &batch).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("told within 10 s")
        .expect("an error, then the end");
    assert!(
        matches!(first, Err(LiveError::Expired(_))),
        "the first thing delivered: {first:?}"
    );
    redis.kill().await;
}

/// A resume from the relay's history that trimming overtakes between two pages gets
/// `EVENTS_EXPIRED`, not the entries after the gap as if none were missed.
#[tokio::test]
async fn a_history_replay_that_trimming_overtakes_expires() {
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let log = begun(&redis, 100_000).await;
    // Resumes read the history, not the hub's memory.
    let options = LiveOptions {
        relay_memory: 0,
        buffer: 10_000,
        ..LiveOptions::DEFAULT
    };
    let hub = Hub::with_relay(None, log.clone(), options);
    let mut live = Box::pin(hub.subscribe(None, None, |_| true).await.unwrap());
    for chunk in (1..=3000u64).collect::<Vec<_>>().chunks(500) {
        let entries: Vec<(Relayed, Position)> = chunk.iter().map(|&n| change(n)).collect();
        log.append(1, &entries).await.unwrap();
    }
    // The hub has all 3,000: resume from the first.
    let mut from = None;
    for _ in 0..3000 {
        let delivered = tokio::time::timeout(Duration::from_secs(10), live.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        from.get_or_insert(delivered.position);
    }
    let from = from.unwrap().as_ref().clone();
    let mut resumed = Box::pin(hub.subscribe(Some(from), None, |_| true).await.unwrap());
    // The first page (1,000 entries) is being read; then all but the last 500 entries
    // are trimmed.
    resumed.next().await.unwrap().unwrap();
    let keep = log.range_after("0", 4000).await.unwrap()[2500].id.clone();
    let _: u64 = redis::cmd("XTRIM")
        .arg(log.stream_key())
        .arg("MINID")
        .arg(&keep)
        .query_async(&mut redis.connection().await)
        .await
        .unwrap();
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(10), resumed.next())
            .await
            .expect("the replay ends or errs within 10 s")
        {
            Some(Ok(_)) => continue,
            Some(Err(e)) => break e,
            None => panic!("ended without an error"),
        }
    };
    assert!(matches!(ended, LiveError::Expired(_)), "{ended:?}");
    redis.kill().await;
}

/// Redis restored behind a holder (its last appends lost): its next append on what it
/// appended last is refused, so the next holding goes on from the log's last entry; each
/// entry names the one before it.
#[tokio::test]
async fn an_append_on_a_tail_redis_lost_is_refused() {
    let Some(redis) = common::redis::start().await else {
        return;
    };
    let log = RelayLog::connect(&redis.url(), "t", 10_000, Duration::from_secs(3600))
        .await
        .unwrap();
    let first = log.claim(1).await.unwrap();
    assert_eq!(first, "0-0");
    let ids = log
        .append_on(1, Some(&first), None, &[change(1)])
        .await
        .unwrap();
    let copy = redis.dump(log.stream_key()).await;
    let more = log
        .append_on(1, Some(&ids[0]), None, &[change(2)])
        .await
        .unwrap();
    redis.restore(log.stream_key(), copy).await;
    assert!(matches!(
        log.append_on(1, Some(&more[0]), None, &[change(3)]).await,
        Err(RelayError::Diverged(_))
    ));
    // The next holding goes on from the log's last entry.
    let again = log
        .append_on(1, Some(&ids[0]), None, &[change(2)])
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    let after = log.range_after(&ids[0], 10).await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].prev.as_deref(), Some(ids[0].as_str()));
    assert_eq!(after[0].follows_gap(&ids[0]), Some(false));
    redis.kill().await;
}
