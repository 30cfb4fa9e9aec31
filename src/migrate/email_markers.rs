//! Migration 1, `email-markers`: email markers were keyed `EMAIL#<email>`, one per address
//! across the whole table, so creating a user told the caller whether an address was
//! taken in another organization. They are keyed `EMAIL#<org>#<email>` now
//! ([`UserEmailKey`]).
//!
//! Each marker still at its old key is moved in one TransactWriteItems: Put at the new key
//! (`attribute_not_exists`), Delete at the old one (conditioned on it still naming the
//! same user), and a ConditionCheck that the user still has that email. A marker whose new
//! key already holds the same marker only loses its old copy; a marker of a user who no
//! longer has the address (changed or deleted since the new version took over) is
//! removed, not moved. `itemgraph check` reports old markers as `key-mismatch` until they
//! are moved.

use crate::keys::{UserEmailKey, UserKey, PK};
use crate::model::{item_type, Record, UserEmail};
use crate::store::{
    AttributeValue, CancelReason, Condition, ConditionCheck, Delete, Item, PrimaryKey, Put,
    StoreError, StoreResult, TransactAction,
};

use super::{Ctx, MigrateReport};

/// Moves `item` when it is an email marker at its old key; nothing for any other item.
pub(super) async fn migrate_item(
    ctx: &Ctx<'_>,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    if item_type(item).ok() != Some(UserEmail::TYPE) {
        return Ok(());
    }
    let Ok(marker) = UserEmail::from_item(item.clone()) else {
        return Ok(());
    };
    let new_key = UserEmailKey::new(&marker.org, &marker.email).primary_key();
    let Some(old_key) = ctx.store.schema().key_of(item) else {
        return Ok(());
    };
    if old_key == new_key {
        return Ok(());
    }
    if ctx.dry_run {
        report.moved += 1;
        return Ok(());
    }
    move_marker(ctx, &marker, old_key, report).await
}

async fn move_marker(
    ctx: &Ctx<'_>,
    marker: &UserEmail,
    old_key: PrimaryKey,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let unchanged = Condition::And(vec![
        Condition::eq("org", AttributeValue::S(marker.org.to_string())),
        Condition::eq("username", AttributeValue::S(marker.username.to_string())),
    ]);
    let mut put = Put::new(marker.to_item()).when(Condition::not_exists(PK));
    put.return_old_on_condition_failure = true;
    // The user must still have this email: a marker left behind by a user who changed
    // email or was deleted after the new version took over is stale, and moving it would
    // block the address in the organization for good.
    let still_theirs = TransactAction::ConditionCheck(ConditionCheck {
        key: UserKey::new(&marker.org, &marker.username).primary_key(),
        condition: Condition::eq("email", AttributeValue::S(marker.email.to_string())),
        return_old_on_condition_failure: false,
    });
    let actions = vec![
        TransactAction::Put(put),
        TransactAction::Delete(Delete::new(old_key.clone()).when(unchanged.clone())),
        still_theirs,
    ];
    match ctx.transact(actions).await {
        Ok(()) => report.moved += 1,
        Err(StoreError::TransactionCanceled { reasons }) => match reasons.as_slice() {
            [CancelReason::None, CancelReason::None, CancelReason::ConditionalCheckFailed { .. }] => {
                if remove_old(ctx, &old_key, unchanged, report).await? {
                    report.stale_removed += 1;
                }
            }
            [CancelReason::ConditionalCheckFailed { item: Some(there) }, CancelReason::None, _] => {
                let same = UserEmail::from_item(there.clone()).is_ok_and(|m| m == *marker);
                if same {
                    if remove_old(ctx, &old_key, unchanged, report).await? {
                        report.duplicates_removed += 1;
                    }
                } else {
                    report.skipped.push(format!(
                        "{}: the organization's marker of {} names another user",
                        old_key.pk, marker.email
                    ));
                }
            }
            _ => report
                .skipped
                .push(format!("{}: changed while being moved", old_key.pk)),
        },
        Err(e) => return Err(e),
    }
    Ok(())
}

/// Deletes an old marker that still names the same user; `false` (noted as skipped) when
/// it changed in between.
async fn remove_old(
    ctx: &Ctx<'_>,
    old_key: &PrimaryKey,
    unchanged: Condition,
    report: &mut MigrateReport,
) -> StoreResult<bool> {
    match ctx
        .delete(Delete::new(old_key.clone()).when(unchanged))
        .await
    {
        Ok(_) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => {
            report
                .skipped
                .push(format!("{}: changed while being moved", old_key.pk));
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
