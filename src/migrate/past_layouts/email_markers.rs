//! Migration 1, `email-markers`: email markers were keyed `EMAIL#<email>`, one per address
//! across the whole table, so creating a user told the caller whether an address was
//! taken in another organization. They are keyed `EMAIL#<org>#<email>` now (the built-in
//! chart's `UserEmail`, whose key the chart renders).
//!
//! Each marker still at its old key is moved in one TransactWriteItems: Put at the new key
//! (`attribute_not_exists`), Delete at the old one (conditioned on it still naming the
//! same user), and a ConditionCheck that the user still has that email. A marker whose new
//! key already holds the same marker only loses its old copy; a marker of a user who no
//! longer has the address (changed or deleted since the new version took over) is
//! removed, not moved. `itemgraph check` reports old markers as `key-mismatch` until they
//! are moved.

use crate::chart::Chart;
use crate::store::{
    AttributeValue, CancelReason, Condition, ConditionCheck, Delete, Item, PrimaryKey, Put,
    StoreError, StoreResult, TransactAction,
};

use super::super::{Ctx, MigrateReport};
use super::{entity, is_a, key_of, text, vars};

/// A marker as it was stored, and where the chart puts it now.
struct Marker {
    org: String,
    email: String,
    username: String,
    /// The marker at its key of today.
    item: Item,
}

impl Marker {
    /// `item` as an email marker, at the key the chart renders for it; none for any other
    /// item.
    fn read(chart: &Chart, item: &Item) -> Option<(Marker, PrimaryKey)> {
        let e = entity(chart, "UserEmail");
        if !is_a(chart, e, item) {
            return None;
        }
        let (org, email, username) = (
            text(item, "org")?,
            text(item, "email")?,
            text(item, "username")?,
        );
        let vars = vars(&[("org", org), ("email", email)]);
        let key = key_of(e, &vars)?;
        let mut moved = item.clone();
        crate::chart::samples::set_keys(chart.table_of(e), &chart.indexes, e, &mut moved, &vars)
            .ok()?;
        let marker = Marker {
            org: org.to_owned(),
            email: email.to_owned(),
            username: username.to_owned(),
            item: moved,
        };
        Some((marker, key))
    }

    /// Whether `other` is the same marker (the same user's address in the same
    /// organization).
    fn same(&self, other: &Item) -> bool {
        text(other, "org") == Some(&self.org)
            && text(other, "email") == Some(&self.email)
            && text(other, "username") == Some(&self.username)
    }
}

/// Moves `item` when it is an email marker at its old key; nothing for any other item.
pub(in crate::migrate) async fn migrate_item(
    ctx: &Ctx<'_>,
    item: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let chart = crate::chart::builtin();
    let Some((marker, new_key)) = Marker::read(&chart, item) else {
        return Ok(());
    };
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
    move_marker(ctx, &chart, &marker, old_key, report).await
}

async fn move_marker(
    ctx: &Ctx<'_>,
    chart: &Chart,
    marker: &Marker,
    old_key: PrimaryKey,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let unchanged = Condition::And(vec![
        Condition::eq("org", AttributeValue::S(marker.org.clone())),
        Condition::eq("username", AttributeValue::S(marker.username.clone())),
    ]);
    let Some(user) = key_of(
        entity(chart, "User"),
        &vars(&[("org", &marker.org), ("username", &marker.username)]),
    ) else {
        return Ok(());
    };
    let mut put = Put::new(marker.item.clone())
        .when(Condition::not_exists(chart.table.partition_key.clone()));
    put.return_old_on_condition_failure = true;
    // The user must still have this email: a marker left behind by a user who changed
    // email or was deleted after the new version took over is stale, and moving it would
    // block the address in the organization for good.
    let still_theirs = TransactAction::ConditionCheck(ConditionCheck {
        key: user,
        condition: Condition::eq("email", AttributeValue::S(marker.email.clone())),
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
                if marker.same(there) {
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
