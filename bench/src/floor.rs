//! The floor: the read mix executed in-process straight on the store port, with no HTTP,
//! no GraphQL and no JSON. Each shape sends the requests the server sends for it, built by
//! the built-in chart as the server builds them (`itemgraph::graphql::pattern_query`
//! for its Queries, the chart's keys for GetItem and BatchGetItem: the parent with its
//! page, then one BatchGetItem of the references), and decodes what comes back into the
//! built-in design's records, so served throughput over floor throughput is what the HTTP
//! and GraphQL layers cost.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use itemgraph::store::{BatchGet, GetItem, Item, PageKey, PrimaryKey, Store};

use crate::dataset::{Dataset, PAGE};
use crate::driver::Window;
use crate::records::{key, Entity, Ticket};
use crate::shapes::{Mix, Shape};
use crate::stats::{Latencies, RunStats};

/// The items of Query pattern `pattern` for a page of `size` from `start`, decoded.
async fn page(
    store: &dyn Store,
    pattern: u32,
    vars: &[(&str, &str)],
    size: u32,
    start: Option<PageKey>,
) -> anyhow::Result<Vec<Entity>> {
    let query =
        itemgraph::graphql::pattern_query(&itemgraph::chart::builtin(), pattern, vars, size, start)
            .with_context(|| format!("pattern {pattern} for {vars:?}"))?;
    decoded(store.query(query).await?.items)
}

fn decoded(items: Vec<Item>) -> anyhow::Result<Vec<Entity>> {
    items
        .into_iter()
        .filter(|i| {
            // The counter shards read beside an organization are summed, not decoded.
            i.get("Type") != Some(&itemgraph::store::AttributeValue::S("CounterShard".into()))
        })
        .map(|i| Entity::from_item(i).context("an item decodes"))
        .collect()
}

/// One BatchGetItem of `keys` (asked once each), decoded.
async fn batch(store: &dyn Store, keys: Vec<PrimaryKey>) -> anyhow::Result<Vec<Entity>> {
    let mut seen = HashSet::new();
    let keys: Vec<PrimaryKey> = keys
        .into_iter()
        .filter(|k| seen.insert(k.clone()))
        .collect();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    decoded(
        store
            .batch_get_item(BatchGet {
                keys,
                consistent_read: false,
            })
            .await?,
    )
}

async fn get(store: &dyn Store, key: PrimaryKey) -> anyhow::Result<Option<Entity>> {
    let item = store
        .get_item(GetItem {
            key,
            consistent_read: false,
        })
        .await?;
    Ok(decoded(item.into_iter().collect())?.pop())
}

fn user_key(org: &str, username: &str) -> PrimaryKey {
    key("User", &[("org", org), ("username", username)])
}

/// One read of `shape` on the store, with targets drawn from `rng` as the HTTP workers
/// draw them.
async fn read_once(
    store: &dyn Store,
    ds: &Dataset,
    shape: Shape,
    rng: &mut ChaCha8Rng,
) -> anyhow::Result<()> {
    let size = PAGE as u32;
    let is = |e: &Entity, ty: &str| e.type_name() == ty;
    match shape {
        Shape::OrgUsers | Shape::OrgOrders => {
            let org = ds.orgs.choose(rng).context("organizations")?;
            let pattern = if shape == Shape::OrgUsers { 2 } else { 3 };
            let read = page(store, pattern, &[("slug", org.slug.as_str())], size, None).await?;
            anyhow::ensure!(
                read.iter().any(|e| is(e, "Organization")),
                "organization {} missing",
                org.slug
            );
        }
        Shape::UserTickets => {
            let (o, user) = ds.users_with_assigned.choose(rng).context("users")?;
            let slug = ds.orgs[*o].slug.as_str();
            let vars = [("org", slug), ("username", user.as_str())];
            let read = page(store, 4, &vars, size, None).await?;
            anyhow::ensure!(
                read.iter().any(|e| is(e, "User")),
                "user {slug}/{user} missing"
            );
            let keys = read
                .iter()
                .filter_map(|e| match e {
                    Entity::Ticket(t) => t.assignee.as_ref(),
                    _ => None,
                })
                .map(|a| user_key(slug, a.as_str()))
                .collect();
            batch(store, keys).await?;
        }
        Shape::TicketById => {
            let id = *ds.ticket_ids.choose(rng).context("tickets")?;
            let t: Ticket =
                match get(store, key("Ticket", &[("ticketId", &id.to_string())])).await? {
                    Some(Entity::Ticket(t)) => t,
                    _ => anyhow::bail!("ticket {id} missing"),
                };
            let mut keys = vec![
                user_key(t.org.as_str(), t.requester.as_str()),
                key("Organization", &[("slug", t.org.as_str())]),
            ];
            if let Some(a) = &t.assignee {
                keys.push(user_key(t.org.as_str(), a.as_str()));
            }
            batch(store, keys).await?;
        }
        Shape::OrderLines => {
            let id = *ds.order_ids.choose(rng).context("orders")?;
            let read = page(store, 7, &[("orderId", &id.to_string())], 100, None).await?;
            anyhow::ensure!(read.iter().any(|e| is(e, "Order")), "order {id} missing");
        }
        Shape::Nodes50 => {
            let keys: Vec<PrimaryKey> = ds
                .node_keys
                .choose_multiple(rng, 50)
                .map(|n| n.key.clone())
                .collect();
            batch(store, keys).await?;
        }
        Shape::DeepPage => {
            let deep: Vec<usize> = (0..ds.orgs.len())
                .filter(|o| ds.orgs[*o].deep_start.is_some())
                .collect();
            let org = &ds.orgs[*deep.choose(rng).context("a deep page")?];
            let start = org.deep_start.clone().context("a deep page")?;
            let vars = [("org", org.slug.as_str()), ("username", org.heavy.as_str())];
            // The server reads the parent with one GetItem beside the later page.
            let (user, tickets) = futures::join!(
                get(store, user_key(org.slug.as_str(), org.heavy.as_str())),
                page(store, 4, &vars, size, Some(start)),
            );
            anyhow::ensure!(user?.is_some(), "heavy user missing");
            anyhow::ensure!(!tickets?.is_empty(), "deep page empty");
        }
        Shape::CreateTicket | Shape::UpdateTicket | Shape::PlaceOrder => {
            anyhow::bail!("the floor runs reads only")
        }
    }
    Ok(())
}

/// The read mix on `store` with `concurrency` tasks through `window`.
pub async fn run(
    store: Arc<dyn Store>,
    ds: Arc<Dataset>,
    concurrency: usize,
    window: Window,
    seed: u64,
) -> anyhow::Result<RunStats> {
    let shapes = Mix::Reads.shapes();
    let total: u32 = shapes.iter().map(|(_, w)| w).sum();
    let clock = Arc::new(window.start());
    let mut tasks = Vec::with_capacity(concurrency);
    for index in 0..concurrency {
        let store = store.clone();
        let ds = ds.clone();
        let shapes = shapes.clone();
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x51_7cc1));
            let mut lat = Latencies::default();
            while clock.goes_on() {
                let mut roll = rng.random_range(0..total);
                let mut shape = shapes[0].0;
                for (s, w) in &shapes {
                    if roll < *w {
                        shape = *s;
                        break;
                    }
                    roll -= w;
                }
                let sent = Instant::now();
                let measured = clock.measures(sent);
                let outcome = read_once(store.as_ref(), &ds, shape, &mut rng).await;
                if measured {
                    lat.record(
                        shape,
                        sent.elapsed(),
                        outcome.err().map(|e| format!("{e:#}")),
                    );
                    clock.answered();
                }
            }
            lat
        }));
    }
    let mut all = Latencies::default();
    for task in tasks {
        all.merge(task.await.context("a floor task panicked")?);
    }
    let seconds = clock.seconds(&format!("the floor at concurrency {concurrency}"))?;
    Ok(all.summarize(seconds))
}
