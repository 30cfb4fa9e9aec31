//! The benchmark's data sets: deterministic (a ChaCha stream from one seed), built as the
//! built-in design's records (`tests/common/records.rs`, keys rendered by its chart) so
//! every counter equals the children written, as the chart's writes keep them, and
//! seeded as any data set is (`itemgraph::chart::data`).
//!
//! Two shapes:
//! - [`DatasetSpec::main`]: hundreds of organizations, each with users (two admins, one
//!   heavy requester), tickets (tens of thousands in all) and orders with lines;
//! - [`DatasetSpec::collection`]: one organization whose heavy user requested `n`
//!   tickets: one item collection (a GSI1 partition) of `n` items, for the scaling runs.
//!
//! Besides the records, [`Dataset`] keeps what the load driver picks its targets from.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::records::{
    timestamp_from_ms, CounterShard, Order, OrderLine, OrderStatus, Organization, Plan, Record,
    Records, Role, Ticket, TicketPriority, TicketStatus, User, UserEmail,
};
use itemgraph::chart::kinds::{Email, Id, LineNo, Slug, Username};
use itemgraph::store::{Item, PageKey, PrimaryKey, Put, Store};

/// 2024-03-04T00:00:00Z: the first organization is created then.
const EPOCH_MS: u64 = 1_709_510_400_000;
const MINUTE_MS: u64 = 60_000;

/// What to generate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DatasetSpec {
    pub seed: u64,
    pub orgs: usize,
    pub users_per_org: usize,
    pub tickets_per_org: usize,
    /// Share of an organization's tickets requested by its heavy user, in percent.
    pub heavy_percent: u64,
    pub orders_per_org: usize,
}

impl DatasetSpec {
    /// The load test's data set.
    pub fn main(seed: u64, orgs: usize, tickets_per_org: usize) -> Self {
        DatasetSpec {
            seed,
            orgs,
            users_per_org: 20,
            tickets_per_org,
            heavy_percent: 50,
            orders_per_org: 10,
        }
    }

    /// One organization whose heavy user requested `n` tickets: one item collection of
    /// `n` tickets (plus the user) on GSI1.
    pub fn collection(seed: u64, n: usize) -> Self {
        DatasetSpec {
            seed,
            orgs: 1,
            users_per_org: 3,
            tickets_per_org: n,
            heavy_percent: 100,
            orders_per_org: 0,
        }
    }
}

/// An organization as the driver sees it.
#[derive(Debug, Clone)]
pub struct OrgRef {
    pub slug: Slug,
    /// Every username, admins first.
    pub users: Vec<Username>,
    /// The admins: assignees of new tickets.
    pub admin: Username,
    /// The user who requested most tickets: the target of the deep page.
    pub heavy: Username,
    /// Where the heavy user's deep page starts: the key of the ticket that ends the page
    /// before it, newest first (the connection's order).
    pub deep_start: Option<PageKey>,
}

/// How [`Dataset::seed`] writes.
#[derive(Debug, Clone, Copy)]
pub enum Seeding {
    Transactions,
    Puts(usize),
}

/// Every record of the data set as an item, parents first, each organization with its
/// counter shards (as many as the built-in chart gives it, all at 0: its counts are on its
/// own item).
fn items_of(records: &Records) -> Vec<Item> {
    let shards = itemgraph::chart::builtin()
        .shards_of("Organization")
        .map_or(0, |(_, n)| n);
    records.items_with(|o| {
        (0..shards)
            .map(|s| CounterShard::empty(o.slug.clone(), s).to_item())
            .collect()
    })
}

/// The records and the driver's targets.
pub struct Dataset {
    pub data: Records,
    pub orgs: Vec<OrgRef>,
    /// `(org index, username)` of users whose newest page of tickets holds a ticket
    /// assigned to someone else, so "user + newest tickets with assignee references" always costs the
    /// BatchGetItem of the assignees.
    pub users_with_assigned: Vec<(usize, Username)>,
    pub ticket_ids: Vec<Id>,
    pub order_ids: Vec<Id>,
    /// Global ids of every organization, user, ticket and order, for `nodes`.
    pub node_keys: Vec<NodeRef>,
}

/// An entity that `nodes` can fetch: its global id (for GraphQL) and its primary key
/// (for the repository floor).
#[derive(Debug, Clone)]
pub struct NodeRef {
    pub global_id: String,
    pub key: PrimaryKey,
}

/// How many tickets a page holds in every shape of the benchmark.
pub const PAGE: usize = 20;

impl Dataset {
    /// Builds the data set: the same records for the same spec, on every machine.
    pub fn generate(spec: DatasetSpec) -> anyhow::Result<Self> {
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let mut data = Records::default();
        let mut orgs = Vec::with_capacity(spec.orgs);
        let mut users_with_assigned = Vec::new();
        anyhow::ensure!(spec.users_per_org >= 3, "an organization needs 3 users");
        for o in 0..spec.orgs {
            let (org_ref, assigned) = build_org(&mut data, &mut rng, &spec, o)?;
            users_with_assigned.extend(assigned.into_iter().map(|u| (o, u)));
            orgs.push(org_ref);
        }
        let ticket_ids = data.tickets.iter().map(|t| t.ticket_id).collect();
        let order_ids = data.orders.iter().map(|o| o.order_id).collect();
        use crate::records::GlobalId;
        let mut node_keys: Vec<NodeRef> = Vec::new();
        node_keys.extend(data.organizations.iter().map(|o| NodeRef {
            global_id: GlobalId::Organization(o.slug.clone()).encode(),
            key: o.primary_key(),
        }));
        node_keys.extend(data.users.iter().map(|u| NodeRef {
            global_id: GlobalId::User(u.org.clone(), u.username.clone()).encode(),
            key: u.primary_key(),
        }));
        node_keys.extend(data.tickets.iter().map(|t| NodeRef {
            global_id: GlobalId::Ticket(t.ticket_id).encode(),
            key: t.primary_key(),
        }));
        node_keys.extend(data.orders.iter().map(|o| NodeRef {
            global_id: GlobalId::Order(o.org.clone(), o.order_id).encode(),
            key: o.primary_key(),
        }));
        Ok(Dataset {
            data,
            orgs,
            users_with_assigned,
            ticket_ids,
            order_ids,
            node_keys,
        })
    }

    /// Items the data set writes.
    pub fn item_count(&self) -> usize {
        items_of(&self.data).len()
    }

    /// Creates the table (if missing) and writes every item. Returns the seconds it took.
    ///
    /// `Seeding::Transactions`: TransactWriteItems of 100 items through
    /// `itemgraph::chart::data::put_new`, one at a time (the embedded engine has one writer, and
    /// one commit per 100 items beats one per item). `Seeding::Puts(n)`: one PutItem per
    /// item, `n` in flight (DynamoDB Local takes far longer over a transaction of 100 items
    /// than over 100 concurrent puts). Either way every item is written as generated, so
    /// the counters equal the children once seeding is done.
    pub async fn seed(&self, store: Arc<dyn Store>, how: Seeding) -> anyhow::Result<f64> {
        let started = Instant::now();
        store.create_table().await.context("creating the table")?;
        let items = items_of(&self.data);
        match how {
            Seeding::Transactions => {
                // In transactions of at most 100 items, each Put on a free key.
                itemgraph::chart::data::put_new(store.as_ref(), items)
                    .await
                    .context("seeding the benchmark data set")?;
            }
            Seeding::Puts(parallel) => {
                futures::stream::iter(items)
                    .map(|item| {
                        let store = store.clone();
                        async move { store.put_item(Put::new(item)).await }
                    })
                    .buffer_unordered(parallel.max(1))
                    .try_collect::<Vec<_>>()
                    .await
                    .context("seeding the benchmark data set")?;
            }
        }
        Ok(started.elapsed().as_secs_f64())
    }
}

fn build_org(
    data: &mut Records,
    rng: &mut ChaCha8Rng,
    spec: &DatasetSpec,
    o: usize,
) -> anyhow::Result<(OrgRef, Vec<Username>)> {
    let slug = Slug::parse(&format!("org-{o:04}"))?;
    // Each organization gets its own stretch of time, so ids never collide across them.
    let created_ms = EPOCH_MS + o as u64 * 1_000 * MINUTE_MS;
    let mut org = Organization::new(
        slug.clone(),
        format!("Organization {o}"),
        [Plan::Free, Plan::Team, Plan::Enterprise][o % 3],
        timestamp_from_ms(created_ms),
    );
    // u000 and u001 are admins; u002 is the heavy requester.
    let mut users: Vec<User> = (0..spec.users_per_org)
        .map(|k| {
            let username = Username::parse(&format!("u{k:03}"))?;
            Ok(User {
                org: slug.clone(),
                email: Email::parse(&format!("{username}@{slug}.example"))?,
                username,
                name: format!("User {k} of {slug}"),
                role: if k < 2 { Role::Admin } else { Role::Member },
                created_at: timestamp_from_ms(created_ms + k as u64 + 1),
                ticket_count: 0,
                assigned_ticket_count: 0,
                order_count: 0,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let heavy_ix = 2;

    let first_ticket = data.tickets.len();
    // Tickets a few milliseconds apart from a minute after the organization: ids (time
    // first) sort in creation order.
    let mut at = created_ms + MINUTE_MS;
    for _ in 0..spec.tickets_per_org {
        at += rng.random_range(1..5);
        let requester_ix = if rng.random_range(0..100) < spec.heavy_percent {
            heavy_ix
        } else {
            rng.random_range(0..users.len())
        };
        let status = TicketStatus::ALL[rng.random_range(0..TicketStatus::ALL.len())];
        let priority = TicketPriority::ALL[rng.random_range(0..TicketPriority::ALL.len())];
        // Two in three tickets are assigned, to one of the two admins.
        let assignee_ix = (rng.random_range(0..3) > 0).then(|| rng.random_range(0..2));
        if let Some(a) = assignee_ix {
            users[a].assigned_ticket_count += 1;
        }
        users[requester_ix].ticket_count += 1;
        org.ticket_count += 1;
        *org.ticket_count_in_mut(status) += 1;
        let n = data.tickets.len() - first_ticket;
        data.tickets.push(Ticket {
            ticket_id: Id::from_parts(at, rng.random::<u128>() & ((1 << 80) - 1)),
            org: slug.clone(),
            title: format!("Ticket {n} of {slug}"),
            body: format!(
                "Reported by {}. The widget stopped working after the last update; steps \
                 to reproduce are attached.",
                users[requester_ix].name
            ),
            status,
            priority,
            requester: users[requester_ix].username.clone(),
            assignee: assignee_ix.map(|a| users[a].username.clone()),
            created_at: timestamp_from_ms(at),
            updated_at: timestamp_from_ms(at),
            version: 1,
        });
    }

    let mut at = created_ms + 500 * MINUTE_MS;
    for _ in 0..spec.orders_per_org {
        at += rng.random_range(1..5);
        let order_id = Id::from_parts(at, rng.random::<u128>() & ((1 << 80) - 1));
        let n_lines: u16 = rng.random_range(1..=5);
        let lines: Vec<OrderLine> = (1..=n_lines)
            .map(|n| {
                let quantity = rng.random_range(1..=10u32);
                let unit_price_cents = rng.random_range(100..=20_000i64);
                Ok(OrderLine {
                    order_id,
                    line_no: LineNo::new(n)?,
                    sku: format!("SKU-{:04}", rng.random_range(0..1000)),
                    description: "Widget, standard".to_owned(),
                    quantity,
                    unit_price_cents,
                    amount_cents: i64::from(quantity) * unit_price_cents,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let buyer_ix = rng.random_range(0..users.len());
        users[buyer_ix].order_count += 1;
        org.order_count += 1;
        data.orders.push(Order {
            order_id,
            org: slug.clone(),
            buyer: users[buyer_ix].username.clone(),
            status: OrderStatus::Placed,
            placed_at: timestamp_from_ms(at),
            currency: "USD".to_owned(),
            total_cents: lines.iter().map(|l| l.amount_cents).sum(),
            line_count: u32::from(n_lines),
            version: 1,
        });
        data.lines.extend(lines);
    }

    // Each user's tickets newest first, as their connection serves them.
    let org_tickets = &data.tickets[first_ticket..];
    let newest_first = |username: &Username| -> Vec<&Ticket> {
        let mut ts: Vec<&Ticket> = org_tickets
            .iter()
            .filter(|t| &t.requester == username)
            .collect();
        ts.sort_by_key(|t| std::cmp::Reverse(t.ticket_id));
        ts
    };
    let assigned_on_first_page: Vec<Username> = users
        .iter()
        .filter(|u| {
            newest_first(&u.username)
                .iter()
                .take(PAGE)
                // An assignee who is the user themselves is already loaded with the
                // page, so only another user's assignment costs the BatchGetItem.
                .any(|t| t.assignee.as_ref().is_some_and(|a| a != &u.username))
        })
        .map(|u| u.username.clone())
        .collect();
    // The deep page: the last full page of the heavy user's tickets, i.e. the page after
    // the ticket PAGE + 1 places from the oldest.
    let heavy_tickets = newest_first(&users[heavy_ix].username);
    let deep_start = heavy_tickets
        .len()
        .checked_sub(PAGE + 1)
        .map(|ix| heavy_tickets[ix].page_key(Some("GSI1")));

    org.user_count = users.len() as u32;
    data.emails.extend(users.iter().map(|u| UserEmail {
        email: u.email.clone(),
        org: u.org.clone(),
        username: u.username.clone(),
    }));
    let org_ref = OrgRef {
        slug,
        users: users.iter().map(|u| u.username.clone()).collect(),
        admin: users[0].username.clone(),
        heavy: users[heavy_ix].username.clone(),
        deep_start,
    };
    data.users.extend(users);
    data.organizations.push(org);
    Ok((org_ref, assigned_on_first_page))
}
