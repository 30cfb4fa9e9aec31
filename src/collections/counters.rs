//! An organization's counters, spread over [`COUNTER_SHARDS`] shard items so that no item
//! takes every write of a busy organization (`docs/DATA_MODEL.md`, "Counters").
//!
//! - **Writing**: a write that changes a count `ADD`s to one shard, in the same
//!   TransactWriteItems as the child, conditioned on the shard existing (shards exist
//!   exactly when their organization does, so the condition still proves the parent). An
//!   organization written by an earlier release has no shards until the `counter-shards`
//!   migration made them: the shard's condition fails, and the write is made again on the
//!   organization item itself, as before ([`transact_counted`]).
//! - **Picking**: a process never sends two transactions on one shard at once while
//!   another shard is free ([`ShardLease`]): DynamoDB cancels a transaction that touches an item
//!   another one has in flight (`TransactionConflict`).
//! - **Reading**: the organization's count is its own counter plus every shard's. The
//!   shards sit between the organization and its users, so each read of the organization
//!   that matters for counts (a first page of users or orders, [`get_org_counted`]) is
//!   still one Query ([`fold`]).

use super::error::RepoResult;
use super::write::{failed_condition, put_new, OnFail};
use crate::keys::{OrgKey, Slug, COUNTER_SHARDS, PK};
use crate::model::{item_type, CounterShard, Organization, Record};
use crate::store::shards::ShardLease;
use crate::store::{
    AttributeValue, Condition, Item, Query, SortCondition, Store, StoreError, TransactAction,
    Update, UpdateExpr,
};

/// Whether an item is one of the organization counter shards.
pub(super) fn is_shard(item: &Item) -> bool {
    item_type(item).is_ok_and(|t| t == CounterShard::TYPE)
}

/// Adds a shard's parts to its organization's item, counter by counter, before the item is
/// decoded (the organization's decoding keeps a sum within `0..=u32::MAX`).
pub(super) fn fold(org: &mut Item, shard: &Item) {
    for name in Organization::COUNTERS {
        let part = number(shard.get(name));
        if part == 0 {
            continue;
        }
        let sum = number(org.get(name)).saturating_add(part);
        org.insert(name.to_owned(), AttributeValue::N(sum.to_string()));
    }
}

fn number(v: Option<&AttributeValue>) -> i64 {
    match v {
        Some(AttributeValue::N(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// Splits the items a read brought before the children into the parent, with every
/// counter shard among them folded in, and nothing else.
pub(super) fn parent_of(head: Vec<Item>) -> Option<Item> {
    let (shards, mut rest): (Vec<Item>, Vec<Item>) = head.into_iter().partition(is_shard);
    let mut parent = (!rest.is_empty()).then(|| rest.swap_remove(0))?;
    for shard in &shards {
        fold(&mut parent, shard);
    }
    Some(parent)
}

/// Access pattern 1 with the counts: the organization and its counter shards, one Query
/// `PK = ORG#<org> AND SK BETWEEN ORG#<org> AND ORG#<org>#COUNT#~`. `None` when there is no
/// such organization.
pub async fn get_org_counted(store: &dyn Store, org: &Slug) -> RepoResult<Option<Organization>> {
    let key = OrgKey::new(org);
    let out = store
        .query(Query {
            index: None,
            partition: key.partition(),
            sort: Some(SortCondition::Between(key.boundary(), key.counters_top())),
            forward: true,
            limit: Some(COUNTER_SHARDS + 1),
            start: None,
            consistent_read: false,
        })
        .await?;
    Ok(parent_of(out.items)
        .map(Organization::from_item)
        .transpose()?)
}

/// The shard items of a new organization: each counting nothing, each put only where
/// none exists.
pub(super) fn new_shards(org: &Slug) -> Vec<TransactAction> {
    (0..COUNTER_SHARDS)
        .map(|shard| put_new(CounterShard::empty(org.clone(), shard).to_item()))
        .collect()
}

/// A change to an organization's counters, made on one of its shards, or on the
/// organization item when it has none yet.
pub(super) struct OrgBump {
    pub org: Slug,
    pub update: UpdateExpr,
    /// The condition on the organization item when the write falls back to it
    /// (`attribute_exists(PK)`, and for a decrement a positive count, as before shards).
    pub legacy_when: Condition,
    /// What a failure of that condition means.
    pub legacy_meaning: OnFail,
}

impl OrgBump {
    /// An increment (or a move between counters) that only needs the organization to exist.
    pub fn new(org: &Slug, update: UpdateExpr) -> Self {
        OrgBump {
            org: org.clone(),
            update,
            legacy_when: Condition::exists(PK),
            legacy_meaning: OnFail::NotFound("organization"),
        }
    }

    fn on_shard(&self, shard: u32) -> TransactAction {
        TransactAction::Update(
            Update::new(
                OrgKey::new(&self.org).counter_shard(shard),
                self.update.clone(),
            )
            .when(Condition::exists(PK)),
        )
    }

    fn on_org(&self) -> TransactAction {
        TransactAction::Update(
            Update::new(OrgKey::new(&self.org).primary_key(), self.update.clone())
                .when(self.legacy_when.clone()),
        )
    }
}

/// Runs one TransactWriteItems: `actions` with `bump` inserted at `at`, on a shard of the
/// organization. When that shard does not exist (an organization not migrated yet, or
/// none at all), the transaction runs once more with the bump on the organization item,
/// whose own condition then tells the two apart: explain the error with
/// [`OrgBump::legacy_meaning`] at `at`.
pub(super) async fn transact_counted(
    store: &dyn Store,
    actions: Vec<TransactAction>,
    at: usize,
    bump: &OrgBump,
) -> Result<(), StoreError> {
    let lease = ShardLease::take(&OrgKey::new(&bump.org).primary_key(), COUNTER_SHARDS).await;
    let with = |action: TransactAction| {
        let mut all = actions.clone();
        all.insert(at, action);
        all
    };
    let first = store.transact_write(with(bump.on_shard(lease.shard))).await;
    drop(lease);
    match first {
        Err(e) if failed_condition(&e).is_some_and(|(i, _)| i == at) => {
            store.transact_write(with(bump.on_org())).await
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slug(s: &str) -> Slug {
        Slug::parse(s).unwrap()
    }

    #[test]
    fn a_read_sums_the_organization_and_its_shards() {
        let org = Organization::new(
            slug("acme"),
            "Acme".into(),
            crate::model::Plan::Free,
            "2024-01-08T09:00:00.000Z".into(),
        );
        let mut with_counts = org.clone();
        with_counts.user_count = 5;
        with_counts.ticket_count = 2;
        let mut a = CounterShard::empty(slug("acme"), 3);
        a.user_count = -1;
        a.ticket_count = 4;
        let mut b = CounterShard::empty(slug("acme"), 9);
        b.user_count = 2;
        let head = vec![a.to_item(), with_counts.to_item(), b.to_item()];
        let folded = Organization::from_item(parent_of(head).unwrap()).unwrap();
        assert_eq!((folded.user_count, folded.ticket_count), (6, 6));
        assert_eq!(folded.order_count, 0);
        // Shards without their organization are no parent.
        assert!(parent_of(vec![a.to_item()]).is_none());
    }
}
