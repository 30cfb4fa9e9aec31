//! The demo data set: three organizations with users, tickets and orders, the same on
//! every run.
//!
//! Determinism: ids are ULIDs built from fixed timestamps and a SplitMix64 stream seeded
//! per organization, so adding an organization never changes another one's data. Every
//! counter on a parent is computed from the children actually generated, so the data
//! obeys the same invariants the writers of [`crate::collections`] keep.
//!
//! Shape: `acme` (ENTERPRISE) has 28 users, 80 tickets (34 requested by the heavy user
//! `wile-e-coyote`, tickets in every status) and 36 orders of 1–5 lines; `globex` (TEAM)
//! has 8 users, 15 tickets and 12 orders; `initech` (FREE) 5 users, 7 tickets, 4 orders.

use std::fmt;

use crate::collections::{self, RepoError, RepoResult};
use crate::keys::{Email, Id, LineNo, OrgKey, Slug, Username, COUNTER_SHARDS};
use crate::model::{
    timestamp_from_ms, CounterShard, Order, OrderLine, OrderStatus, Organization, Plan, Record,
    Role, Ticket, TicketPriority, TicketStatus, User, UserEmail,
};
use crate::store::{GetItem, Item, Store, StoreError};

/// The organization whose presence marks a seeded store.
pub const MARKER_ORG: &str = "acme";
/// The user with the most tickets (a long, paged connection).
pub const HEAVY_USER: &str = "wile-e-coyote";

/// 2024-01-08T09:00:00Z: the first organization is created then.
const EPOCH_MS: u64 = 1_704_704_400_000;
const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 24 * HOUR_MS;

struct OrgSpec {
    slug: &'static str,
    name: &'static str,
    plan: Plan,
    currency: &'static str,
    /// `(username, display name, role)`; admins handle tickets.
    users: &'static [(&'static str, &'static str, Role)],
    /// The heavy requester and how many tickets they raise, if any.
    heavy: Option<(&'static str, usize)>,
    /// Tickets raised by the other users.
    tickets: usize,
    orders: usize,
    /// `(sku, description, unit price in cents)`.
    catalog: &'static [(&'static str, &'static str, i64)],
    titles: &'static [&'static str],
}

use Role::{Admin, Member};

const ORGS: &[OrgSpec] = &[
    OrgSpec {
        slug: "acme",
        name: "Acme Corporation",
        plan: Plan::Enterprise,
        currency: "USD",
        users: &[
            ("bugs-bunny", "Bugs Bunny", Admin),
            ("daffy-duck", "Daffy Duck", Admin),
            ("porky-pig", "Porky Pig", Admin),
            ("wile-e-coyote", "Wile E. Coyote", Member),
            ("road-runner", "Road Runner", Member),
            ("elmer-fudd", "Elmer Fudd", Member),
            ("yosemite-sam", "Yosemite Sam", Member),
            ("tweety", "Tweety", Member),
            ("sylvester", "Sylvester", Member),
            ("foghorn-leghorn", "Foghorn Leghorn", Member),
            ("marvin-martian", "Marvin the Martian", Member),
            ("speedy-gonzales", "Speedy Gonzales", Member),
            ("pepe-le-pew", "Pepé Le Pew", Member),
            ("taz", "Tasmanian Devil", Member),
            ("granny", "Granny", Member),
            ("lola-bunny", "Lola Bunny", Member),
            ("michigan-frog", "Michigan J. Frog", Member),
            ("gossamer", "Gossamer", Member),
            ("henery-hawk", "Henery Hawk", Member),
            ("petunia-pig", "Petunia Pig", Member),
            ("hector-bulldog", "Hector the Bulldog", Member),
            ("marc-antony", "Marc Antony", Member),
            ("pussyfoot", "Pussyfoot", Member),
            ("sam-sheepdog", "Sam Sheepdog", Member),
            ("ralph-wolf", "Ralph Wolf", Member),
            ("beaky-buzzard", "Beaky Buzzard", Member),
            ("cecil-turtle", "Cecil Turtle", Member),
            ("witch-hazel", "Witch Hazel", Member),
        ],
        heavy: Some((HEAVY_USER, 34)),
        tickets: 46,
        orders: 36,
        catalog: &[
            ("ANVIL-100", "Anvil, 100 lb", 4_999),
            ("ROCKET-SKATES", "Rocket-powered roller skates", 12_900),
            ("GIANT-MAGNET", "Giant horseshoe magnet", 8_450),
            ("BIRD-SEED-5", "Bird seed, 5 lb bag", 599),
            ("TNT-12", "Dynamite, box of 12", 2_499),
            ("SPRING-SHOES", "Jet-propelled spring shoes", 6_750),
            ("PORTABLE-HOLE", "Portable hole", 19_900),
            ("EARTHQUAKE-PILLS", "Earthquake pills, bottle of 30", 1_250),
        ],
        titles: &[
            "Rocket skates veer left at full thrust",
            "Anvil delivered to the wrong cliff",
            "Giant magnet attracts more than advertised",
            "Portable hole cannot be folded back",
            "Earthquake pills ineffective on road runners",
            "Dynamite fuse shorter than labelled",
            "Spring shoes keep bouncing after landing",
            "Bird seed bag arrived empty",
            "Invoice shows the wrong currency",
            "Cannot reset my password",
            "Catapult counterweight missing",
            "Request a refund for a damaged crate",
        ],
    },
    OrgSpec {
        slug: "globex",
        name: "Globex Corporation",
        plan: Plan::Team,
        currency: "EUR",
        users: &[
            ("hank-scorpio", "Hank Scorpio", Admin),
            ("homer-simpson", "Homer Simpson", Member),
            ("marge-simpson", "Marge Simpson", Member),
            ("mindy-simmons", "Mindy Simmons", Member),
            ("frank-grimes", "Frank Grimes", Member),
            ("lenny-leonard", "Lenny Leonard", Member),
            ("carl-carlson", "Carl Carlson", Member),
            ("waylon-smithers", "Waylon Smithers", Admin),
        ],
        heavy: None,
        tickets: 15,
        orders: 12,
        catalog: &[
            ("HAMMOCK-DISTRICT", "Hammock, executive", 21_000),
            ("FLAMETHROWER", "Flamethrower, for morale", 45_000),
            ("DOOMSDAY-KIT", "Doomsday device starter kit", 99_900),
            ("COFFEE-BEANS", "Coffee beans, 1 kg", 2_400),
        ],
        titles: &[
            "Hammock delivery delayed",
            "Badge does not open the volcano lair",
            "Payroll shows wrong department",
            "Conference room double-booked",
            "Need a larger monitor",
        ],
    },
    OrgSpec {
        slug: "initech",
        name: "Initech",
        plan: Plan::Free,
        currency: "USD",
        users: &[
            ("bill-lumbergh", "Bill Lumbergh", Admin),
            ("peter-gibbons", "Peter Gibbons", Member),
            ("michael-bolton", "Michael Bolton", Member),
            ("samir-nagheenanajar", "Samir Nagheenanajar", Member),
            ("milton-waddams", "Milton Waddams", Member),
        ],
        heavy: None,
        tickets: 7,
        orders: 4,
        catalog: &[
            ("TPS-COVERS", "TPS report cover sheets, pack of 100", 1_299),
            ("STAPLER-RED", "Swingline stapler, red", 2_199),
            ("TONER-PC", "Printer toner cartridge", 8_900),
        ],
        titles: &[
            "PC LOAD LETTER",
            "Printer jams on every TPS report",
            "Stapler was taken",
            "Cannot access the shared drive",
            "Moved to basement, no network",
        ],
    },
];

/// The whole demo set as records.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DemoData {
    pub organizations: Vec<Organization>,
    pub users: Vec<User>,
    pub emails: Vec<UserEmail>,
    pub tickets: Vec<Ticket>,
    pub orders: Vec<Order>,
    pub lines: Vec<OrderLine>,
}

/// The counter shards of an organization in the sharded layout, all at 0 (its counts are
/// on its own item); none in the layout before.
fn counter_shards(org: &Organization) -> Vec<Item> {
    if org.schema_version != Some(Organization::SHARDED) {
        return Vec::new();
    }
    (0..COUNTER_SHARDS)
        .map(|shard| CounterShard::empty(org.slug.clone(), shard).to_item())
        .collect()
}

impl DemoData {
    /// Every record as an item, parents first.
    pub fn items(&self) -> Vec<Item> {
        let mut items = Vec::with_capacity(self.len());
        items.extend(self.organizations.iter().map(Record::to_item));
        items.extend(self.organizations.iter().flat_map(counter_shards));
        items.extend(self.users.iter().map(Record::to_item));
        items.extend(self.emails.iter().map(Record::to_item));
        items.extend(self.tickets.iter().map(Record::to_item));
        items.extend(self.orders.iter().map(Record::to_item));
        items.extend(self.lines.iter().map(Record::to_item));
        items
    }

    /// The same data in the layout before counter shards (schema version 1): what a table
    /// written by an earlier release holds, for the `counter-shards` migration's tests.
    pub fn unsharded(mut self) -> Self {
        for org in &mut self.organizations {
            org.schema_version = None;
        }
        self
    }

    /// How many items the set writes.
    pub fn len(&self) -> usize {
        self.organizations.len()
            + self
                .organizations
                .iter()
                .map(|o| counter_shards(o).len())
                .sum::<usize>()
            + self.users.len()
            + self.emails.len()
            + self.tickets.len()
            + self.orders.len()
            + self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn report(&self) -> SeedReport {
        SeedReport {
            organizations: self.organizations.len(),
            users: self.users.len(),
            tickets: self.tickets.len(),
            orders: self.orders.len(),
            order_lines: self.lines.len(),
            items: self.len(),
        }
    }
}

/// What [`seed_demo`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedReport {
    pub organizations: usize,
    pub users: usize,
    pub tickets: usize,
    pub orders: usize,
    pub order_lines: usize,
    /// All items, email markers included.
    pub items: usize,
}

impl fmt::Display for SeedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} items: {} organizations, {} users, {} tickets, {} orders, {} order lines",
            self.items, self.organizations, self.users, self.tickets, self.orders, self.order_lines
        )
    }
}

/// The demo set as items, ready to write.
pub fn demo_items() -> Vec<Item> {
    demo_data().items()
}

/// Writes the demo set in transactions of at most 100 items, each Put conditioned on its
/// item being absent: seeding never overwrites an item (`AlreadyExists("item")` when a
/// demo key holds something else, and that transaction writes nothing); a demo item
/// already there as the demo has it is skipped.
pub async fn seed_demo(store: &dyn Store) -> RepoResult<SeedReport> {
    let data = demo_data();
    let report = data.report();
    // The marker organization last: until it is written the demo set does not count as
    // there, so an interrupted seed is completed (its items skipped) by the next one.
    let marker = OrgKey::new(&Slug::parse(MARKER_ORG).expect("a valid slug")).primary_key();
    let (mut items, last): (Vec<Item>, Vec<Item>) = data
        .items()
        .into_iter()
        .partition(|item| store.schema().key_of(item).as_ref() != Some(&marker));
    items.extend(last);
    collections::put_new_entities(store, items).await?;
    Ok(report)
}

/// Whether the demo set is there: one GetItem on its marker organization, which must be
/// an organization (another application's item at that key is not the demo data).
pub async fn is_seeded(store: &dyn Store) -> RepoResult<bool> {
    let acme = Slug::parse(MARKER_ORG).expect("a valid slug");
    let item = store
        .get_item(GetItem {
            key: OrgKey::new(&acme).primary_key(),
            consistent_read: true,
        })
        .await?;
    Ok(item.is_some_and(|item| Organization::from_item(item).is_ok()))
}

/// Whether the table holds any item: one Scan of one item.
pub async fn is_empty(store: &dyn Store) -> RepoResult<bool> {
    Ok(crate::chart::data::is_empty(store).await?)
}

/// What [`seed_if_absent`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seeded {
    /// The demo set was written.
    Now(SeedReport),
    /// It was there already; nothing written.
    Already,
    /// The table holds other items: nothing written, so that a table in use is never
    /// seeded silently.
    NotEmpty,
}

/// Creates the table when it is missing, then seeds the demo set unless it is already
/// there ("there" meaning its marker organization exists) or the table holds other items
/// (unless `into_non_empty`). Seeding itself never overwrites an item ([`seed_demo`]).
pub async fn seed_if_absent(store: &dyn Store, into_non_empty: bool) -> RepoResult<Seeded> {
    patiently(|| async { store.create_table().await.map_err(RepoError::from) }).await?;
    if patiently(|| is_seeded(store)).await? {
        return Ok(Seeded::Already);
    }
    if !into_non_empty && !patiently(|| is_empty(store)).await? {
        return Ok(Seeded::NotEmpty);
    }
    seed_demo(store).await.map(Seeded::Now)
}

/// A read of seeding sent again while the store throttles it or does not answer (the
/// writes retry the same way, in `collections::put_new_entities`).
async fn patiently<T, F, Fut>(read: F) -> RepoResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = RepoResult<T>>,
{
    crate::store::retry_while(
        10,
        |e| {
            matches!(
                e,
                RepoError::Store(StoreError::Throttled(_) | StoreError::Unavailable(_))
            )
        },
        read,
    )
    .await
}

/// SplitMix64: tiny, fast, and the same stream on every platform.
struct Rng(u64);

impl Rng {
    fn for_org(slug: &str) -> Self {
        // FNV-1a of the slug, so each organization has its own stream.
        let seed = slug.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`; the modulo bias is irrelevant for demo data.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi_inclusive: u64) -> u64 {
        lo + self.below(hi_inclusive - lo + 1)
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    /// Picks by weight: `weights[i]` for `choices[i]`.
    fn weighted<T: Copy>(&mut self, choices: &[(T, u64)]) -> T {
        let total: u64 = choices.iter().map(|(_, w)| w).sum();
        let mut roll = self.below(total);
        for (choice, weight) in choices {
            if roll < *weight {
                return *choice;
            }
            roll -= weight;
        }
        unreachable!("roll < total")
    }
    fn id(&mut self, timestamp_ms: u64) -> Id {
        let random = (u128::from(self.next()) << 64 | u128::from(self.next())) & ((1 << 80) - 1);
        Id::from_parts(timestamp_ms, random)
    }
}

/// The demo set, built the same way every time.
pub fn demo_data() -> DemoData {
    let mut data = DemoData::default();
    for (i, spec) in ORGS.iter().enumerate() {
        build_org(&mut data, spec, EPOCH_MS + i as u64 * DAY_MS);
    }
    data
}

fn build_org(data: &mut DemoData, spec: &OrgSpec, created_ms: u64) {
    let mut rng = Rng::for_org(spec.slug);
    let slug = Slug::parse(spec.slug).expect("demo slugs are valid");
    let mut org = Organization::new(
        slug.clone(),
        spec.name.to_owned(),
        spec.plan,
        timestamp_from_ms(created_ms),
    );

    let mut users: Vec<User> = spec
        .users
        .iter()
        .enumerate()
        .map(|(k, (username, name, role))| User {
            org: slug.clone(),
            username: Username::parse(username).expect("demo usernames are valid"),
            email: Email::parse(&format!("{username}@{}.example", spec.slug))
                .expect("demo emails are valid"),
            name: (*name).to_owned(),
            role: *role,
            created_at: timestamp_from_ms(created_ms + (k as u64 + 1) * HOUR_MS),
            ticket_count: 0,
            assigned_ticket_count: 0,
            order_count: 0,
        })
        .collect();
    let admins: Vec<Username> = users
        .iter()
        .filter(|u| u.role == Role::Admin)
        .map(|u| u.username.clone())
        .collect();

    // Tickets start a week after the organization, one to 41 hours apart, so ids
    // (time first) sort in creation order and no two share a millisecond.
    let heavy = spec.heavy.map_or(0, |(_, n)| n);
    let n_tickets = heavy + spec.tickets;
    let heavy_slots = spread(&mut rng, n_tickets, heavy);
    let mut at = created_ms + 7 * DAY_MS;
    for (t, &heavy_slot) in heavy_slots.iter().enumerate() {
        at += rng.range(HOUR_MS, 41 * HOUR_MS) + rng.below(60_000);
        let requester_ix = match spec.heavy {
            Some((name, _)) if heavy_slot => users
                .iter()
                .position(|u| u.username == name)
                .expect("heavy user listed"),
            _ => loop {
                let ix = rng.below(users.len() as u64) as usize;
                if spec
                    .heavy
                    .is_none_or(|(name, _)| users[ix].username != name)
                {
                    break ix;
                }
            },
        };
        let recent = t * 2 >= n_tickets;
        let status = rng.weighted(if recent {
            &[
                (TicketStatus::Open, 45),
                (TicketStatus::Pending, 25),
                (TicketStatus::Solved, 20),
                (TicketStatus::Closed, 10),
            ]
        } else {
            &[
                (TicketStatus::Open, 5),
                (TicketStatus::Pending, 5),
                (TicketStatus::Solved, 40),
                (TicketStatus::Closed, 50),
            ]
        });
        let priority = rng.weighted(&[
            (TicketPriority::Low, 20),
            (TicketPriority::Normal, 50),
            (TicketPriority::High, 22),
            (TicketPriority::Urgent, 8),
        ]);
        let assignee = match status {
            TicketStatus::Open if rng.below(2) == 0 => None,
            _ => Some(rng.pick(&admins).clone()),
        };
        // One change per step along OPEN → PENDING → SOLVED → CLOSED.
        let changes = TicketStatus::ALL.iter().position(|s| *s == status).unwrap() as u64;
        let updated = at + changes * rng.range(HOUR_MS, 3 * DAY_MS);
        let title = *rng.pick(spec.titles);
        if let Some(assignee) = &assignee {
            let ix = users
                .iter()
                .position(|u| u.username == *assignee)
                .expect("assignees are users");
            users[ix].assigned_ticket_count += 1;
        }
        let requester = &mut users[requester_ix];
        requester.ticket_count += 1;
        org.ticket_count += 1;
        *org.ticket_count_in_mut(status) += 1;
        data.tickets.push(Ticket {
            ticket_id: rng.id(at),
            org: slug.clone(),
            title: title.to_owned(),
            body: format!(
                "{} writes: {title}. Reported from the {} account; please advise.",
                requester.name, spec.name
            ),
            status,
            priority,
            requester: requester.username.clone(),
            assignee,
            created_at: timestamp_from_ms(at),
            updated_at: timestamp_from_ms(updated),
            version: 1 + changes as u32,
        });
    }

    let mut at = created_ms + 5 * DAY_MS;
    for o in 0..spec.orders {
        at += rng.range(2 * HOUR_MS, 90 * HOUR_MS) + rng.below(60_000);
        let order_id = rng.id(at);
        let n_lines = rng.range(1, 5) as u16;
        let lines: Vec<OrderLine> = (1..=n_lines)
            .map(|n| {
                let (sku, description, price) = *rng.pick(spec.catalog);
                let quantity = rng.range(1, 10) as u32;
                OrderLine {
                    order_id,
                    line_no: LineNo::new(n).expect("at most five lines"),
                    sku: sku.to_owned(),
                    description: description.to_owned(),
                    quantity,
                    unit_price_cents: price,
                    amount_cents: i64::from(quantity) * price,
                }
            })
            .collect();
        let recent = o * 3 >= spec.orders * 2;
        let status = rng.weighted(if recent {
            &[
                (OrderStatus::Placed, 30),
                (OrderStatus::Paid, 30),
                (OrderStatus::Shipped, 30),
                (OrderStatus::Cancelled, 10),
            ]
        } else {
            &[(OrderStatus::Delivered, 85), (OrderStatus::Cancelled, 15)]
        });
        let version = match status {
            OrderStatus::Placed => 1,
            OrderStatus::Paid | OrderStatus::Cancelled => 2,
            OrderStatus::Shipped => 3,
            OrderStatus::Delivered => 4,
        };
        let buyer_ix = rng.below(users.len() as u64) as usize;
        let buyer = &mut users[buyer_ix];
        buyer.order_count += 1;
        org.order_count += 1;
        data.orders.push(Order {
            order_id,
            org: slug.clone(),
            buyer: buyer.username.clone(),
            status,
            placed_at: timestamp_from_ms(at),
            currency: spec.currency.to_owned(),
            total_cents: lines.iter().map(|l| l.amount_cents).sum(),
            line_count: u32::from(n_lines),
            version,
        });
        data.lines.extend(lines);
    }

    org.user_count = users.len() as u32;
    data.emails.extend(users.iter().map(|u| UserEmail {
        email: u.email.clone(),
        org: u.org.clone(),
        username: u.username.clone(),
    }));
    data.users.extend(users);
    data.organizations.push(org);
}

/// Which of `n` slots get one of `k` marks, spread at random.
fn spread(rng: &mut Rng, n: usize, k: usize) -> Vec<bool> {
    let mut slots = vec![false; n];
    let mut placed = 0;
    while placed < k {
        let i = rng.below(n as u64) as usize;
        if !slots[i] {
            slots[i] = true;
            placed += 1;
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    /// The demo set's data file holds exactly what this generator makes, in its order.
    #[test]
    fn the_data_file_is_the_generated_demo_set() {
        let file: Vec<_> = crate::chart::data::builtin_demo()
            .into_iter()
            .map(crate::store::value::canonicalize_item)
            .collect();
        let made: Vec<_> = demo_items()
            .into_iter()
            .map(crate::store::value::canonicalize_item)
            .collect();
        assert_eq!(file, made);
    }

    use std::collections::{BTreeMap, HashMap, HashSet};

    use super::*;
    use crate::collections::check_order;
    use crate::model::Entity;

    fn per_org<T>(xs: &[T], org: impl Fn(&T) -> &Slug) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for x in xs {
            *m.entry(org(x).to_string()).or_default() += 1;
        }
        m
    }

    #[test]
    fn the_demo_is_deterministic() {
        assert_eq!(demo_data(), demo_data());
        assert_eq!(demo_items(), demo_items());
        // Pinned, so that ids in bookmarks, docs and tests stay valid across releases.
        let d = demo_data();
        assert_eq!(
            d.tickets[0].ticket_id.to_string(),
            "01HM6ATRNE7863D09BPTWS4P2Z"
        );
        assert_eq!(
            d.orders[0].order_id.to_string(),
            "01HM5674YHZ4RQSV14960DHNB2"
        );
        // 396 records and 32 counter shards for each of the 3 organizations.
        assert_eq!(d.len(), 492);
    }

    #[test]
    fn the_demo_has_the_promised_shape() {
        let d = demo_data();
        let slugs: Vec<&str> = d.organizations.iter().map(|o| o.slug.as_str()).collect();
        assert_eq!(slugs, ["acme", "globex", "initech"]);

        let users = per_org(&d.users, |u| &u.org);
        let tickets = per_org(&d.tickets, |t| &t.org);
        let orders = per_org(&d.orders, |o| &o.org);
        assert_eq!(users["acme"], 28);
        assert_eq!((users["globex"], users["initech"]), (8, 5));
        assert_eq!(
            (tickets["acme"], tickets["globex"], tickets["initech"]),
            (80, 15, 7)
        );
        assert_eq!(
            (orders["acme"], orders["globex"], orders["initech"]),
            (36, 12, 4)
        );

        let heavy = d
            .tickets
            .iter()
            .filter(|t| t.requester == HEAVY_USER)
            .count();
        assert!(heavy >= 30, "{heavy}");
        let acme_statuses: HashSet<TicketStatus> = d
            .tickets
            .iter()
            .filter(|t| t.org == "acme")
            .map(|t| t.status)
            .collect();
        assert_eq!(acme_statuses.len(), TicketStatus::ALL.len());

        for o in &d.orders {
            assert!((1..=5).contains(&o.line_count), "{}", o.line_count);
        }
    }

    #[test]
    fn counters_equal_the_children_written() {
        let d = demo_data();
        for org in &d.organizations {
            let tickets: Vec<&Ticket> = d.tickets.iter().filter(|t| t.org == org.slug).collect();
            let count =
                |f: &dyn Fn(&&Ticket) -> bool| tickets.iter().filter(|t| f(t)).count() as u32;
            assert_eq!(
                org.user_count as usize,
                d.users.iter().filter(|u| u.org == org.slug).count()
            );
            assert_eq!(
                org.order_count as usize,
                d.orders.iter().filter(|o| o.org == org.slug).count()
            );
            assert_eq!(org.ticket_count, tickets.len() as u32);
            for status in TicketStatus::ALL {
                assert_eq!(
                    org.ticket_count_in(*status),
                    count(&|t| t.status == *status),
                    "{status}"
                );
            }
        }
        for user in &d.users {
            let requested = d
                .tickets
                .iter()
                .filter(|t| t.org == user.org && t.requester == user.username)
                .count();
            assert_eq!(user.ticket_count as usize, requested, "{}", user.username);
            let assigned = d
                .tickets
                .iter()
                .filter(|t| t.org == user.org && t.assignee.as_ref() == Some(&user.username))
                .count();
            assert_eq!(
                user.assigned_ticket_count as usize, assigned,
                "{}",
                user.username
            );
            let bought = d
                .orders
                .iter()
                .filter(|o| o.org == user.org && o.buyer == user.username)
                .count();
            assert_eq!(user.order_count as usize, bought, "{}", user.username);
        }
        // The counters are exercised: admins handle tickets, users of every role buy.
        assert!(d
            .users
            .iter()
            .any(|u| u.role == Role::Admin && u.assigned_ticket_count > 0));
        assert!(d
            .users
            .iter()
            .all(|u| u.role == Role::Admin || u.assigned_ticket_count == 0));
        assert!(d.users.iter().filter(|u| u.order_count > 0).count() > 10);
        for order in &d.orders {
            let lines: Vec<OrderLine> = d
                .lines
                .iter()
                .filter(|l| l.order_id == order.order_id)
                .cloned()
                .collect();
            check_order(order, &lines).unwrap();
        }
    }

    #[test]
    fn references_point_at_existing_users_and_emails_are_unique() {
        let d = demo_data();
        let users: HashSet<(&str, &str)> = d
            .users
            .iter()
            .map(|u| (u.org.as_str(), u.username.as_str()))
            .collect();
        for t in &d.tickets {
            assert!(users.contains(&(t.org.as_str(), t.requester.as_str())));
            if let Some(a) = &t.assignee {
                assert!(users.contains(&(t.org.as_str(), a.as_str())));
            }
            assert!(t.updated_at >= t.created_at);
        }
        for o in &d.orders {
            assert!(users.contains(&(o.org.as_str(), o.buyer.as_str())));
        }
        let emails: HashSet<&str> = d.emails.iter().map(|e| e.email.as_str()).collect();
        assert_eq!(emails.len(), d.users.len());
        for u in &d.users {
            assert!(d
                .emails
                .iter()
                .any(|e| e.email == u.email && e.username == u.username));
        }
    }

    #[test]
    fn no_two_items_share_a_primary_key_and_all_decode() {
        let items = demo_items();
        let schema = crate::keys::table_schema();
        let keys: HashSet<_> = items.iter().map(|i| schema.key_of(i).unwrap()).collect();
        assert_eq!(keys.len(), items.len());
        let mut types: HashMap<&str, usize> = HashMap::new();
        for item in items {
            let name = match crate::model::item_type(&item).unwrap() {
                CounterShard::TYPE => CounterShard::from_item(item).map(|_| CounterShard::TYPE),
                _ => Entity::from_item(item).map(|e| e.type_name()),
            };
            *types.entry(name.unwrap()).or_default() += 1;
        }
        assert_eq!(types["UserEmail"], types["User"]);
        assert_eq!(
            types[CounterShard::TYPE],
            types["Organization"] * COUNTER_SHARDS as usize
        );
    }

    /// Ids carry their record's creation time, so id order is creation order.
    #[test]
    fn ids_are_time_sortable() {
        let d = demo_data();
        let mut tickets = d.tickets.clone();
        for t in &tickets {
            assert_eq!(timestamp_from_ms(t.ticket_id.timestamp_ms()), t.created_at);
        }
        for o in &d.orders {
            assert_eq!(timestamp_from_ms(o.order_id.timestamp_ms()), o.placed_at);
        }
        tickets.sort_by_key(|t| t.ticket_id.to_string());
        assert!(tickets
            .windows(2)
            .all(|w| w[0].created_at <= w[1].created_at));
        let mut orders = d.orders.clone();
        orders.sort_by_key(|o| o.order_id.to_string());
        assert!(orders.windows(2).all(|w| w[0].placed_at <= w[1].placed_at));
        let ids: HashSet<Id> = d
            .tickets
            .iter()
            .map(|t| t.ticket_id)
            .chain(d.orders.iter().map(|o| o.order_id))
            .collect();
        assert_eq!(ids.len(), d.tickets.len() + d.orders.len());
    }

    #[tokio::test]
    async fn seeding_writes_everything_once() {
        let store =
            crate::store::embedded::EmbeddedStore::in_memory("t", crate::keys::table_schema())
                .unwrap();
        assert!(matches!(
            seed_if_absent(&store, false).await.unwrap(),
            Seeded::Now(_)
        ));
        assert!(is_seeded(&store).await.unwrap());
        assert_eq!(
            seed_if_absent(&store, false).await.unwrap(),
            Seeded::Already
        );
    }

    /// A seed interrupted before its last chunk leaves the table not seeded (the marker
    /// organization goes last), and `--force` completes it without overwriting anything.
    #[tokio::test]
    async fn an_interrupted_seed_is_completed() {
        let store =
            crate::store::embedded::EmbeddedStore::in_memory("t", crate::keys::table_schema())
                .unwrap();
        store.create_table().await.unwrap();
        let items = demo_items();
        let acme = OrgKey::new(&Slug::parse(MARKER_ORG).unwrap()).primary_key();
        let first: Vec<Item> = items
            .into_iter()
            .filter(|i| store.schema().key_of(i).as_ref() != Some(&acme))
            .take(150)
            .collect();
        collections::put_entities(&store, first).await.unwrap();
        assert!(!is_seeded(&store).await.unwrap());
        assert_eq!(
            seed_if_absent(&store, false).await.unwrap(),
            Seeded::NotEmpty
        );
        assert!(matches!(
            seed_if_absent(&store, true).await.unwrap(),
            Seeded::Now(_)
        ));
        let report = crate::check::check(&store).await.unwrap();
        assert!(report.is_clean(), "{report}");
        assert_eq!(
            store.describe_table().await.unwrap().unwrap().item_count,
            Some(demo_items().len() as u64)
        );
        let acme = Slug::parse("acme").unwrap();
        let heavy = Username::parse(HEAVY_USER).unwrap();
        let page = crate::collections::get_user_with_tickets(
            &store,
            &acme,
            &heavy,
            crate::collections::Page::first(100),
        )
        .await
        .unwrap();
        assert_eq!(page.tickets.len() as u32, page.user.unwrap().ticket_count);
    }
}
