//! The consistency checker behind `itemgraph check`: reads the whole table and verifies
//! what its chart implies ([`charted`] says what, in full): items decode with the keys
//! their templates render, references resolve within their tenant, counters (and their
//! shards) equal what counts on them, lists agree with their children and computed
//! numbers with what they are computed from, markers and their owners agree. The
//! built-in design is checked by its chart ([`check`]) as any other is ([`check_chart`]).
//!
//! It is the one place that reads a table whole (a strongly consistent Scan, page by
//! page) and never serves a request. It holds every decoded item in memory, so it suits
//! tables that fit in memory: demo, test and development tables, or a periodic audit of
//! a modest production table.

mod charted;

pub use charted::{check_chart, check_chart_within};

use std::fmt;

use crate::store::{PrimaryKey, Store, StoreError};

pub(crate) use crate::store::scan_all;
pub use crate::store::SCAN_PAGE_SIZE;

/// What kind of invariant a [`Violation`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViolationKind {
    /// The item has no type attribute, an unknown one, or does not decode as its entity.
    Undecodable,
    /// A stored key attribute differs from what its templates render.
    KeyMismatch,
    /// Two items hold the same record (their templates render one key).
    Duplicate,
    /// A counter differs from the items found that count on it.
    CounterMismatch,
    /// A reference names nothing (or an item of another tenant).
    DanglingReference,
    /// An item disagrees with its list's children or a number computed from its own
    /// attributes (printed `order-lines`: the design it was first written for).
    OrderLines,
    /// A child of a list whose parent does not exist (printed `orphan-line`).
    OrphanLine,
    /// A marker (a unique value's, a client token's) that names nothing, or an owner
    /// holding another value.
    OrphanMarker,
    /// A unique value without its marker, or with a marker naming another owner.
    MissingMarker,
    /// Counter shards that disagree with their item's layout: some missing where it is
    /// sharded, any present where it is not, or a shard of an item that does not exist.
    CounterShards,
}

impl ViolationKind {
    /// The kebab-case name printed in a report line.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Undecodable => "undecodable",
            ViolationKind::KeyMismatch => "key-mismatch",
            ViolationKind::Duplicate => "duplicate",
            ViolationKind::CounterMismatch => "counter-mismatch",
            ViolationKind::DanglingReference => "dangling-reference",
            ViolationKind::OrderLines => "order-lines",
            ViolationKind::OrphanLine => "orphan-line",
            ViolationKind::OrphanMarker => "orphan-marker",
            ViolationKind::MissingMarker => "missing-marker",
            ViolationKind::CounterShards => "counter-shards",
        }
    }
}

/// One broken invariant: which item, of what type, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The item's `Type` (`?` when it has none).
    pub entity: String,
    /// The item's primary key as stored.
    pub key: PrimaryKey,
    /// What is wrong, with the values found and expected.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({} | {}): {}",
            self.kind.as_str(),
            self.entity,
            self.key.pk,
            self.key.sk,
            self.message
        )
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckReport {
    /// Items scanned.
    pub items: usize,
    /// Where the scan stopped at a read budget: the read capacity units it read (the rest
    /// of the table unread, and only what each item is checked).
    pub within: Option<u64>,
    /// In key order of the item concerned.
    pub violations: Vec<Violation>,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// How many violations of each kind, in the order kinds first appear.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        let mut out: Vec<(&'static str, usize)> = Vec::new();
        for v in &self.violations {
            match out.iter_mut().find(|(k, _)| *k == v.kind.as_str()) {
                Some((_, n)) => *n += 1,
                None => out.push((v.kind.as_str(), 1)),
            }
        }
        out
    }

    /// The violations of one kind.
    pub fn of_kind(&self, kind: ViolationKind) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.kind == kind)
    }
}

/// The summary line.
impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.within {
            None => write!(f, "checked {} items", self.items)?,
            Some(rcu) => write!(
                f,
                "checked {} items, the first {rcu} read capacity units of the table (--max-rcu; each item alone: what it is, its keys and attributes)",
                self.items
            )?,
        }
        match self.violations.len() {
            0 => write!(f, ": no violations"),
            1 => write!(f, ": 1 violation"),
            n => write!(f, ": {n} violations"),
        }
    }
}

/// Scans the whole table (strongly consistent, [`SCAN_PAGE_SIZE`] items a page) and
/// verifies the data model's invariants. Fails only when the store does; whatever the
/// table holds becomes violations.
pub async fn check(store: &dyn Store) -> Result<CheckReport, StoreError> {
    check_chart(store, &crate::chart::builtin()).await
}

/// The report of `items` checked: its violations in key order of the item concerned.
fn report(items: usize, mut violations: Vec<Violation>) -> CheckReport {
    violations.sort_by(|a, b| {
        (a.key.pk.as_bytes(), a.key.sk.as_bytes(), a.kind, &a.message).cmp(&(
            b.key.pk.as_bytes(),
            b.key.sk.as_bytes(),
            b.kind,
            &b.message,
        ))
    });
    CheckReport {
        items,
        within: None,
        violations,
    }
}

fn violation(kind: ViolationKind, entity: &str, key: &PrimaryKey, message: String) -> Violation {
    Violation {
        kind,
        entity: entity.to_owned(),
        key: key.clone(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::data::builtin_demo;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::{AttributeValue, Item, Put};

    async fn seeded() -> EmbeddedStore {
        let store = EmbeddedStore::in_memory("t", crate::chart::builtin().table_schema()).unwrap();
        store.create_table().await.unwrap();
        crate::chart::data::load(&store, &crate::chart::builtin(), builtin_demo())
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn the_demo_data_is_clean() {
        let store = seeded().await;
        let report = check(&store).await.unwrap();
        assert_eq!(report.violations, []);
        assert_eq!(report.items, builtin_demo().len());
        assert_eq!(
            report.to_string(),
            format!("checked {} items: no violations", report.items)
        );
    }

    #[tokio::test]
    async fn undecodable_items_and_stray_index_keys_are_reported() {
        let store = seeded().await;
        let mut junk = Item::new();
        junk.insert("PK".into(), AttributeValue::S("JUNK".into()));
        junk.insert("SK".into(), AttributeValue::S("JUNK".into()));
        let mut order = builtin_demo()
            .into_iter()
            .find(|i| i.get("Type") == Some(&AttributeValue::S("Order".into())))
            .unwrap();
        order.insert("GSI2PK".into(), AttributeValue::S("X".into()));
        order.insert("GSI2SK".into(), AttributeValue::S("Y".into()));
        for item in [junk, order] {
            store.put_item(Put::new(item)).await.unwrap();
        }
        let report = check(&store).await.unwrap();
        let lines: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines
            .iter()
            .any(|l| l.starts_with("undecodable ? (JUNK | JUNK): does not decode")));
        assert_eq!(
            report.of_kind(ViolationKind::KeyMismatch).count(),
            2,
            "{lines:#?}"
        );
        assert!(lines
            .iter()
            .any(|l| l.ends_with("GSI2PK is \"X\", but its record has no such key")));
        assert_eq!(
            report.to_string(),
            format!("checked {} items: 3 violations", report.items)
        );
    }

    /// Two tables whose entities share a key shape: rule `keys-distinct` lets keys of
    /// different tables be equal, so a record is where its table and key say.
    const TWINS: &str = r#"
format = 1
name = "twins"

[[tables]]
name = "shelves"
partition_key = "PK"
sort_key = "SK"
type_attribute = "Type"

[[tables]]
name = "crates"
partition_key = "PK"
sort_key = "SK"
type_attribute = "Type"

[entities.Shelf]
key = ["ITEM#{slug}", "ITEM#{slug}"]

[entities.Shelf.attributes]
slug = "slug"
crates = { type = "counter", referrers = "crates" }

[entities.Crate]
table = "crates"
key = ["ITEM#{slug}", "ITEM#{slug}"]
counts = { shelf = "crates" }

[entities.Crate.attributes]
slug = "slug"
shelfId = "slug"

[entities.Crate.references]
shelf = { entity = "Shelf", key = { slug = "shelfId" } }

[query.shelf]
entity = "Shelf"
pattern = 1

[query.crate]
entity = "Crate"
pattern = 2

[patterns.1]
name = "Shelf by id"
request = "GetItem"
entity = "Shelf"
field = "Query.shelf"

[patterns.2]
name = "Crate by id"
request = "GetItem"
entity = "Crate"
field = "Query.crate"

[[samples.Shelf]]
slug = "a"
crates = 1

[[samples.Crate]]
slug = "a"
shelfId = "a"
"#;

    #[tokio::test]
    async fn equal_keys_in_two_tables_are_two_records() {
        let chart =
            std::sync::Arc::new(crate::chart::parse(TWINS).unwrap_or_else(|e| panic!("{e}")));
        let engine = crate::store::open::Engine::Embedded {
            table: "shelves".into(),
            data: None,
            cache_mib: 16,
            faults: Default::default(),
            change_log: Default::default(),
        };
        let store =
            crate::store::open::open_tables(&engine, chart.table_schema(), chart.other_tables())
                .await
                .unwrap();
        for (_, one) in chart.stores(store.as_ref()).unwrap().iter() {
            assert!(one.create_table().await.unwrap());
        }
        crate::chart::samples::seed(store.as_ref(), &chart)
            .await
            .unwrap();
        let report = check_chart(store.as_ref(), &chart).await.unwrap();
        assert_eq!(report.items, 2, "{report:?}");
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        // The crate's count is held by the shelf of the other table: a wrong one is named.
        store
            .update_item(crate::store::Update::new(
                PrimaryKey::new("ITEM#a", "ITEM#a"),
                crate::store::UpdateExpr::default().set("crates", AttributeValue::N("2".into())),
            ))
            .await
            .unwrap();
        let report = check_chart(store.as_ref(), &chart).await.unwrap();
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert!(
            report.violations[0].message.contains("crates is 2, but 1"),
            "{:?}",
            report.violations
        );
        // A shelf in the crates' table: no read of a shelf finds it there.
        let crates = chart.store_of(&store, 1).unwrap();
        let mut stray = std::collections::HashMap::new();
        for (a, v) in [
            ("PK", "ITEM#b"),
            ("SK", "ITEM#b"),
            ("Type", "Shelf"),
            ("slug", "b"),
        ] {
            stray.insert(a.to_owned(), AttributeValue::S(v.to_owned()));
        }
        stray.insert("crates".to_owned(), AttributeValue::N("0".into()));
        crates.put_item(Put::new(stray)).await.unwrap();
        let report = check_chart(store.as_ref(), &chart).await.unwrap();
        assert!(
            report.violations.iter().any(|v| v.message
                == "is in table crates, and the items of Shelf are in table shelves: no read finds it here"),
            "{:?}",
            report.violations
        );
    }
}
