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

use crate::chart::template::Value;
use crate::chart::types::Type;
use crate::store::{
    AttributeValue, CancelReason, Condition, Item, Put, StoreError, StoreResult, TransactAction,
    Update, UpdateExpr,
};

use super::super::{Ctx, MigrateReport};
use super::{entity, is_a, key_of, text, vars};

/// The attribute an organization in the sharded layout holds, and its value there.
const SCHEMA_VERSION: &str = "schemaVersion";
const SHARDED: &str = "3";

/// Gives an organization in the layout before counter shards its shards and schema
/// version 3, in one TransactWriteItems; nothing for one already sharded. An organization
/// that another run sharded in between is skipped; a conflict with a concurrent write
/// (`CONTENTION`) is retried by the store, then fails the run, which resumes from its checkpoint.
pub(in crate::migrate) async fn migrate_item(
    ctx: &Ctx<'_>,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let chart = crate::chart::builtin();
    let owner = entity(&chart, "Organization");
    if !is_a(&chart, owner, item) {
        return Ok(());
    }
    let Some(slug) = text(item, "slug") else {
        return Ok(());
    };
    if matches!(item.get(SCHEMA_VERSION), Some(AttributeValue::N(v)) if v == SHARDED) {
        return Ok(());
    }
    let Some(key) = key_of(owner, &vars(&[("slug", slug)])) else {
        return Ok(());
    };
    let Some((shards, count)) = chart.shards_of(&owner.name) else {
        return Ok(());
    };
    if ctx.dry_run {
        report.sharded += 1;
        return Ok(());
    }
    let pk = chart.table.partition_key.clone();
    let mut actions = Vec::with_capacity(count as usize + 1);
    for shard in 0..count {
        // A shard at 0: its owner's tenant, its number, every counter.
        let mut item: Item = shards
            .attributes
            .iter()
            .filter(|(_, a)| matches!(a.ty, Type::Counter))
            .map(|(name, _)| (name.clone(), AttributeValue::N("0".into())))
            .collect();
        item.insert("org".into(), AttributeValue::S(slug.to_owned()));
        item.insert("shard".into(), AttributeValue::N(shard.to_string()));
        let mut vars = vars(&[("org", slug)]);
        vars.insert("shard".into(), Value::Int(i64::from(shard)));
        if crate::chart::samples::set_keys(
            chart.table_of(shards),
            &chart.indexes,
            shards,
            &mut item,
            &vars,
        )
        .is_err()
        {
            return Ok(());
        }
        actions.push(TransactAction::Put(
            Put::new(item).when(Condition::not_exists(pk.clone())),
        ));
    }
    actions.push(TransactAction::Update(
        Update::new(
            key,
            UpdateExpr::default().set(SCHEMA_VERSION, AttributeValue::N(SHARDED.into())),
        )
        .when(Condition::And(vec![
            Condition::exists(pk),
            Condition::not_exists(SCHEMA_VERSION),
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
                slug
            ));
        }
        Err(e) => return Err(e),
    }
    Ok(())
}
