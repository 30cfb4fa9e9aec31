//! `itemgraph migrate` on DynamoDB Local, as a deployment runs it against a live table.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::records::{
    Organization, Record, Ticket, TicketPriority, TicketStatus, User, UserEmail,
};
use crate::common::writes::{counts, create_ticket, shared};
use itemgraph::chart::kinds::{Id, Slug};
use itemgraph::store::dynamo::DynamoStore;
use itemgraph::store::{GetItem, Item, Put, Scan, Store};
use tokio::process::Command;

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");

/// The previous layout (before counter shards): the demo data, and 40 more organizations
/// with one user each, all without their shards. Returns each organization with the user
/// the writers file tickets as.
async fn previous_layout(store: &DynamoStore) -> Vec<(Slug, User)> {
    let data = crate::common::demo::demo_data().unsharded();
    let mut items = data.items();
    let mut orgs: Vec<(Slug, User)> = data
        .organizations
        .iter()
        .map(|o| {
            let user = data.users.iter().find(|u| u.org == o.slug).unwrap().clone();
            (o.slug.clone(), user)
        })
        .collect();
    let template = &data.organizations[0];
    for i in 0..40 {
        let slug = Slug::parse(&format!("old-{i:02}")).unwrap();
        let mut org = Organization::new(
            slug.clone(),
            format!("Old {i}"),
            template.plan,
            template.created_at.clone(),
        );
        org.schema_version = None;
        org.user_count = 1;
        let user = User {
            org: slug.clone(),
            email: itemgraph::chart::kinds::Email::parse(&format!("owner@old-{i:02}.example"))
                .unwrap(),
            ticket_count: 0,
            assigned_ticket_count: 0,
            order_count: 0,
            ..data.users[0].clone()
        };
        let marker = UserEmail {
            email: user.email.clone(),
            org: slug.clone(),
            username: user.username.clone(),
        };
        items.extend([org.to_item(), user.to_item(), marker.to_item()]);
        orgs.push((slug, user));
    }
    for item in items {
        store.put_item(Put::new(item)).await.unwrap();
    }
    orgs
}

/// Every item, each as a sorted line of its attributes.
async fn everything(store: &DynamoStore) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = store
            .scan(Scan {
                limit: None,
                start,
                consistent_read: true,
                segment: None,
                ..Default::default()
            })
            .await
            .unwrap();
        out.extend(page.items.iter().map(line));
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    out.sort();
    out
}

fn line(item: &Item) -> String {
    let mut attrs: Vec<String> = item.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    attrs.sort();
    attrs.join(",")
}

/// How many of `orgs` carry schema version 3.
async fn sharded(store: &DynamoStore, orgs: &[(Slug, User)]) -> usize {
    let mut n = 0;
    for (org, _) in orgs {
        let item = store
            .get_item(GetItem {
                key: crate::common::records::key("Organization", &[("slug", org.as_str())]),
                consistent_read: true,
            })
            .await
            .unwrap()
            .unwrap();
        if Organization::from_item(item).unwrap().schema_version == Some(Organization::SHARDED) {
            n += 1;
        }
    }
    n
}

fn migrate(endpoint: &str, table: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "migrate",
        "--store",
        "dynamodb",
        "--endpoint",
        endpoint,
        "--region",
        "us-east-1",
        "--table",
        table,
        // A DynamoDB Local the whole suite loads may stall a call for seconds: what this
        // test holds is the migration's outcome, not its latency.
        "--dynamodb-attempt-timeout-ms",
        "60000",
        "--dynamodb-operation-timeout-ms",
        "120000",
    ])
    .args(extra)
    .env("NO_COLOR", "1")
    .kill_on_drop(true);
    cmd
}

/// The counter migration on a table of the previous layout while writers file tickets in
/// every organization: a dry run first writes nothing; `itemgraph migrate`, held to a
/// write budget, is killed (SIGKILL) midway and run again, and resumes from its
/// checkpoints. Every acknowledged ticket is there and counted exactly once by its
/// organization's ticketCount and OPEN count, and `itemgraph check` is clean.
#[tokio::test]
async fn the_counter_migration_resumes_after_a_kill_while_writers_run() {
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("cli-migrate");
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    assert!(store.create_table().await.unwrap());
    let orgs = previous_layout(&store).await;
    let mut before = HashMap::new();
    for (org, _) in &orgs {
        let (_, _, tickets) = counts(shared(&store), org.as_str()).await.unwrap();
        before.insert(org.clone(), tickets);
    }

    // A dry run reads, counts, and writes nothing: not a shard, not a checkpoint.
    let untouched = everything(&store).await;
    let dry = migrate(&endpoint, &table, &["--dry-run"])
        .output()
        .await
        .unwrap();
    let dry_out = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        dry.status.success(),
        "{dry_out}{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(
        dry_out.contains("migration 3 counter-shards: to do"),
        "{dry_out}"
    );
    assert!(
        dry_out.contains(&format!("{} organizations sharded", orgs.len())),
        "{dry_out}"
    );
    assert_eq!(
        everything(&store).await,
        untouched,
        "the dry run wrote nothing"
    );

    // Writers: two tasks filing tickets round the organizations until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let store = store.clone();
            let orgs = orgs.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut made: Vec<Ticket> = Vec::new();
                let mut failed = Vec::new();
                let mut i = w;
                while !stop.load(Ordering::Relaxed) {
                    let (org, user) = &orgs[i % orgs.len()];
                    i += 2;
                    let now = itemgraph::clock::now();
                    let ticket = Ticket {
                        ticket_id: Id::generate(),
                        org: org.clone(),
                        title: format!("written while migrating {i}"),
                        body: "Written while migrating.".into(),
                        status: TicketStatus::Open,
                        priority: TicketPriority::Normal,
                        requester: user.username.clone(),
                        assignee: None,
                        created_at: now.clone(),
                        updated_at: now,
                        version: 1,
                    };
                    match create_ticket(shared(&store), &ticket).await {
                        Ok(ticket) => made.push(ticket),
                        Err(e) => failed.push(e.to_string()),
                    }
                }
                (made, failed)
            })
        })
        .collect();

    // The migration, slowed by its budget, killed once some organizations are sharded.
    let mut first = migrate(
        &endpoint,
        &table,
        &["--segments", "3", "--page-size", "10", "--max-wcu", "300"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let n = sharded(&store, &orgs).await;
        if n >= 5 {
            break n;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no progress: {n} sharded"
        );
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first run ended on its own"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    assert!(
        at_kill < orgs.len(),
        "killed midway: {at_kill} of {} sharded",
        orgs.len()
    );

    let again = migrate(&endpoint, &table, &[]).output().await.unwrap();
    let out = String::from_utf8_lossy(&again.stdout).to_string();
    assert!(
        again.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        out.contains("migration 3 counter-shards: resumed from its checkpoints and done"),
        "{out}"
    );
    assert_eq!(sharded(&store, &orgs).await, orgs.len());

    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let mut made = Vec::new();
    for writer in writers {
        let (m, failed) = writer.await.unwrap();
        assert!(failed.is_empty(), "writes refused: {failed:?}");
        made.extend(m);
    }
    assert!(
        made.len() > 20,
        "the writers wrote throughout: {}",
        made.len()
    );

    // Nothing lost: every acknowledged ticket is there and counted once.
    let mut per_org: HashMap<Slug, i64> = HashMap::new();
    for t in &made {
        *per_org.entry(t.org.clone()).or_default() += 1;
        let stored = store
            .get_item(GetItem {
                key: t.primary_key(),
                consistent_read: true,
            })
            .await
            .unwrap();
        assert!(stored.is_some(), "ticket {} lost", t.ticket_id);
    }
    for (org, _) in &orgs {
        let (_, _, tickets) = counts(shared(&store), org.as_str()).await.unwrap();
        let added = per_org.get(org).copied().unwrap_or(0);
        assert_eq!(tickets, before[org] + added as u32, "{org}");
    }
    let check = itemgraph::check::check(&store).await.unwrap();
    assert!(check.is_clean(), "{check}");
    let done = migrate(&endpoint, &table, &[]).output().await.unwrap();
    let out = String::from_utf8_lossy(&done.stdout).to_string();
    assert!(
        out.contains("migration 3 counter-shards: done by an earlier run"),
        "{out}"
    );
    common::dynamo_local::drop_table(&store).await;
}
