//! Migration 3, `counter-shards` (`docs/DATA_MODEL.md`, "Counters"): each organization not
//! at schema version 3 gets its counter shards, all at 0, and the version, in one
//! TransactWriteItems (each shard put `attribute_not_exists(PK)`, the organization updated
//! `attribute_exists(PK) AND attribute_not_exists(schemaVersion)`).
//!
//! Its counts stay on its own item, which every read adds to its shards' parts, so nothing
//! moves and no concurrent write can be lost: a write racing the migration either bumps
//! the organization item (before) or a shard (after), and both are counted. An
//! organization is migrated whole or not at all, so a killed run leaves none half done,
//! and a run again skips those done.

use crate::keys::{OrgKey, COUNTER_SHARDS, PK};
use crate::model::{item_type, CounterShard, Organization, Record};
use crate::store::{
    AttributeValue, CancelReason, Condition, Item, Put, StoreError, StoreResult, TransactAction,
    Update, UpdateExpr,
};

use super::{Ctx, MigrateReport};

/// Gives an organization in the layout before counter shards its shards and schema
/// version 3, in one TransactWriteItems; nothing for one already sharded. An organization
/// that another run sharded in between is skipped; a conflict with a concurrent write
/// (`CONTENTION`) is retried by the store, then fails the run, which resumes from its checkpoint.
pub(super) async fn migrate_item(
    ctx: &Ctx<'_>,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    if item_type(item).ok() != Some(Organization::TYPE) {
        return Ok(());
    }
    let Ok(org) = Organization::from_item(item.clone()) else {
        return Ok(());
    };
    if org.schema_version == Some(Organization::SHARDED) {
        return Ok(());
    }
    if ctx.dry_run {
        report.sharded += 1;
        return Ok(());
    }
    let mut actions: Vec<TransactAction> = (0..COUNTER_SHARDS)
        .map(|shard| {
            TransactAction::Put(
                Put::new(CounterShard::empty(org.slug.clone(), shard).to_item())
                    .when(Condition::not_exists(PK)),
            )
        })
        .collect();
    actions.push(TransactAction::Update(
        Update::new(
            OrgKey::new(&org.slug).primary_key(),
            UpdateExpr::default().set(
                Organization::SCHEMA_VERSION,
                AttributeValue::N(Organization::SHARDED.to_string()),
            ),
        )
        .when(Condition::And(vec![
            Condition::exists(PK),
            Condition::not_exists(Organization::SCHEMA_VERSION),
        ])),
    ));
    match ctx.transact(actions).await {
        Ok(()) => report.sharded += 1,
        Err(StoreError::TransactionCanceled { reasons })
            if reasons
                .iter()
                .any(|r| matches!(r, CancelReason::ConditionalCheckFailed { .. })) =>
        {
            report.skipped.push(format!(
                "{}: sharded by another run, or gone, while being migrated",
                org.slug
            ));
        }
        Err(e) => return Err(e),
    }
    Ok(())
}
