//! The floor: the read mix executed in-process straight on the repository layer
//! (`itemgraph::collections` on the store port), with no HTTP, no GraphQL and no JSON.
//! Each shape makes the same store calls the server makes for it (the parent with its
//! page, then one BatchGetItem of the references), so served throughput over floor
//! throughput is what the HTTP and GraphQL layers cost.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use itemgraph::collections::{self, Page};
use itemgraph::keys::{OrgKey, UserKey};
use itemgraph::store::{PrimaryKey, Store};

use crate::dataset::{Dataset, PAGE};
use crate::driver::Window;
use crate::shapes::{Mix, Shape};
use crate::stats::{Latencies, RunStats};

/// One read of `shape` on the repository layer, with targets drawn from `rng` as the
/// HTTP workers draw them.
async fn read_once(
    store: &dyn Store,
    ds: &Dataset,
    shape: Shape,
    rng: &mut ChaCha8Rng,
) -> anyhow::Result<()> {
    let page = PAGE as u32;
    match shape {
        Shape::OrgUsers => {
            let org = ds.orgs.choose(rng).context("organizations")?;
            let r = collections::get_org_with_users(store, &org.slug, Page::first(page)).await?;
            anyhow::ensure!(r.org.is_some(), "organization {} missing", org.slug);
        }
        Shape::OrgOrders => {
            let org = ds.orgs.choose(rng).context("organizations")?;
            let r = collections::get_org_with_orders(store, &org.slug, Page::first(page)).await?;
            anyhow::ensure!(r.org.is_some(), "organization {} missing", org.slug);
        }
        Shape::UserTickets => {
            let (o, user) = ds.users_with_assigned.choose(rng).context("users")?;
            let slug = &ds.orgs[*o].slug;
            let r =
                collections::get_user_with_tickets(store, slug, user, Page::first(page)).await?;
            anyhow::ensure!(r.user.is_some(), "user {slug}/{user} missing");
            let keys: Vec<PrimaryKey> = r
                .tickets
                .iter()
                .filter_map(|t| t.assignee.as_ref())
                .map(|a| UserKey::new(slug, a).primary_key())
                .collect::<HashSet<_>>()
                .into_iter()
                .collect();
            collections::batch_get_entities(store, &keys).await?;
        }
        Shape::TicketById => {
            let id = *ds.ticket_ids.choose(rng).context("tickets")?;
            let t = collections::get_ticket(store, id)
                .await?
                .with_context(|| format!("ticket {id} missing"))?;
            let mut keys = vec![
                UserKey::new(&t.org, &t.requester).primary_key(),
                OrgKey::new(&t.org).primary_key(),
            ];
            if let Some(a) = &t.assignee {
                keys.push(UserKey::new(&t.org, a).primary_key());
            }
            collections::batch_get_entities(store, &keys).await?;
        }
        Shape::OrderLines => {
            let id = *ds.order_ids.choose(rng).context("orders")?;
            let r = collections::get_order_with_lines(store, id, Page::first(100)).await?;
            anyhow::ensure!(r.order.is_some(), "order {id} missing");
        }
        Shape::Nodes50 => {
            let keys: Vec<PrimaryKey> = ds
                .node_keys
                .choose_multiple(rng, 50)
                .map(|n| n.key.clone())
                .collect();
            collections::batch_get_entities(store, &keys).await?;
        }
        Shape::DeepPage => {
            let deep: Vec<usize> = (0..ds.orgs.len())
                .filter(|o| ds.orgs[*o].deep_start.is_some())
                .collect();
            let org = &ds.orgs[*deep.choose(rng).context("a deep page")?];
            let start = org.deep_start.clone().context("a deep page")?;
            // The server reads the parent with one GetItem beside the later page.
            let (user, tickets) = futures::join!(
                collections::get_user(store, &org.slug, &org.heavy),
                collections::get_user_with_tickets(
                    store,
                    &org.slug,
                    &org.heavy,
                    Page::after(page, start)
                ),
            );
            anyhow::ensure!(user?.is_some(), "heavy user missing");
            anyhow::ensure!(!tickets?.tickets.is_empty(), "deep page empty");
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
