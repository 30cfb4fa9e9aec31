//! `itemgraph migrate`: moves a table written by an earlier version to today's keys.
//!
//! First, the table's change stream (subscriptions follow it): turned on
//! (`NEW_AND_OLD_IMAGES`) on a DynamoDB table created before it was part of the design.
//!
//! Then email markers. They were keyed `EMAIL#<email>`, one per address
//! across the whole table, so creating a user told the caller whether an address was
//! taken in another organization. They are keyed `EMAIL#<org>#<email>` now
//! ([`UserEmailKey`]). Each marker still at its old key is moved in one
//! TransactWriteItems: Put at the new key (`attribute_not_exists`), Delete at the old one
//! (conditioned on it still naming the same user), and a ConditionCheck that the user
//! still has that email. A marker whose new key already holds the same marker only loses
//! its old copy; a marker of a user who no longer has the address (changed or deleted
//! since the new version took over) is removed, not moved. Running it again finds nothing to move.
//! `itemgraph check` reports old markers as `key-mismatch` until they are moved.
//!
//! Then counter shards (`docs/DATA_MODEL.md`, "Counters"): each organization not at
//! schema version 3 gets its counter shards, all at 0, and the version, in one
//! TransactWriteItems (each shard put `attribute_not_exists(PK)`, the organization
//! updated `attribute_exists(PK) AND attribute_not_exists(schemaVersion)`). Its counts stay
//! on its own item, which every read adds to its shards' parts, so nothing moves and no
//! concurrent write can be lost: a write racing the migration either bumps the
//! organization item (before) or a shard (after), and both are counted. An organization is
//! migrated whole or not at all, so a killed run leaves none half done, and a run again
//! skips those done.

use std::fmt;

use crate::keys::{OrgKey, UserEmailKey, UserKey, COUNTER_SHARDS, PK};
use crate::model::{item_type, CounterShard, Organization, Record, UserEmail};
use crate::store::{
    AttributeValue, CancelReason, Condition, ConditionCheck, Delete, Item, PrimaryKey, Put, Scan,
    Store, StoreError, StoreResult, TransactAction, Update, UpdateExpr,
};

/// What [`migrate`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateReport {
    /// Whether the table's stream was turned on (or would be, on a dry run).
    pub stream_enabled: bool,
    /// Items read.
    pub scanned: usize,
    /// Email markers moved to their organization's key (or that would be, on a dry run).
    pub moved: usize,
    /// Old markers whose new key already held the same marker: the old copy removed.
    pub duplicates_removed: usize,
    /// Old markers of a user who no longer has that email (changed or deleted since the
    /// new version took over): removed, not moved.
    pub stale_removed: usize,
    /// Old markers left where they are, with why (their new key holds another user's
    /// marker, or they changed while being moved): for `itemgraph check` to name.
    pub skipped: Vec<String>,
    /// Organizations given their counter shards (or that would be, on a dry run).
    pub sharded: usize,
}

impl fmt::Display for MigrateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{} items scanned: {} email markers moved, {} old copies removed, {} stale removed, {} left; {} organizations sharded",
            if self.stream_enabled {
                "change stream turned on; "
            } else {
                ""
            },
            self.scanned,
            self.moved,
            self.duplicates_removed,
            self.stale_removed,
            self.skipped.len(),
            self.sharded
        )
    }
}

/// Moves every email marker still at its old key. With `dry_run`, reads only and counts
/// what it would move.
pub async fn migrate(store: &dyn Store, dry_run: bool) -> StoreResult<MigrateReport> {
    let mut report = MigrateReport {
        stream_enabled: store.enable_change_stream(dry_run).await?,
        ..MigrateReport::default()
    };
    let mut start = None;
    loop {
        let page = store
            .scan(Scan {
                limit: Some(crate::check::SCAN_PAGE_SIZE),
                start,
                consistent_read: true,
            })
            .await?;
        report.scanned += page.items.len();
        for item in page.items {
            if item_type(&item).ok() == Some(Organization::TYPE) {
                shard_counters(store, &item, dry_run, &mut report).await?;
                continue;
            }
            if item_type(&item).ok() != Some(UserEmail::TYPE) {
                continue;
            }
            let Ok(marker) = UserEmail::from_item(item.clone()) else {
                continue;
            };
            let new_key = UserEmailKey::new(&marker.org, &marker.email).primary_key();
            let Some(old_key) = store.schema().key_of(&item) else {
                continue;
            };
            if old_key == new_key {
                continue;
            }
            if dry_run {
                report.moved += 1;
                continue;
            }
            move_marker(store, &marker, &item, &mut report).await?;
        }
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => return Ok(report),
        }
    }
}

async fn move_marker(
    store: &dyn Store,
    marker: &UserEmail,
    old: &Item,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let Some(old_key) = store.schema().key_of(old) else {
        return Ok(());
    };
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
    match store.transact_write(actions).await {
        Ok(()) => report.moved += 1,
        Err(StoreError::TransactionCanceled { reasons }) => match reasons.as_slice() {
            [CancelReason::None, CancelReason::None, CancelReason::ConditionalCheckFailed { .. }] => {
                if remove_old(store, &old_key, unchanged, report).await? {
                    report.stale_removed += 1;
                }
            }
            [CancelReason::ConditionalCheckFailed { item: Some(there) }, CancelReason::None, _] => {
                let same = UserEmail::from_item(there.clone()).is_ok_and(|m| m == *marker);
                if same {
                    if remove_old(store, &old_key, unchanged, report).await? {
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

/// Gives an organization in the layout before counter shards its shards and schema
/// version 3, in one TransactWriteItems; nothing for one already sharded. An organization
/// that another run sharded in between is skipped; a conflict with a concurrent write
/// (`CONTENTION`) is retried by the store, then fails the run, which can simply run again.
async fn shard_counters(
    store: &dyn Store,
    item: &Item,
    dry_run: bool,
    report: &mut MigrateReport,
) -> StoreResult<()> {
    let Ok(org) = Organization::from_item(item.clone()) else {
        return Ok(());
    };
    if org.schema_version == Some(Organization::SHARDED) {
        return Ok(());
    }
    if dry_run {
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
    match store.transact_write(actions).await {
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

/// Deletes an old marker that still names the same user; `false` (noted as skipped) when
/// it changed in between.
async fn remove_old(
    store: &dyn Store,
    old_key: &PrimaryKey,
    unchanged: Condition,
    report: &mut MigrateReport,
) -> StoreResult<bool> {
    match store
        .delete_item(Delete::new(old_key.clone()).when(unchanged))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::PrimaryKey;

    /// A demo table whose markers all sit at the old global key, as an earlier version
    /// wrote them: `check` names each one, `migrate` moves them all, and a second run
    /// finds nothing.
    #[tokio::test]
    async fn old_email_markers_move_to_their_organization() {
        let store = EmbeddedStore::in_memory("t", crate::keys::table_schema()).unwrap();
        crate::demo::seed_if_absent(&store, false).await.unwrap();
        let markers: Vec<UserEmail> = crate::demo::demo_items()
            .into_iter()
            .filter(|i| item_type(i).ok() == Some(UserEmail::TYPE))
            .map(|i| UserEmail::from_item(i).unwrap())
            .collect();
        assert!(markers.len() > 2);
        for m in &markers {
            let new = UserEmailKey::new(&m.org, &m.email).primary_key();
            store.delete_item(Delete::new(new)).await.unwrap();
            let old = format!("EMAIL#{}", m.email);
            let mut item = m.to_item();
            item.insert(PK.into(), AttributeValue::S(old.clone()));
            item.insert("SK".into(), AttributeValue::S(old));
            store.put_item(Put::new(item)).await.unwrap();
        }
        let before = crate::check::check(&store).await.unwrap();
        assert!(before.violations.len() >= markers.len(), "{before}");

        let dry = migrate(&store, true).await.unwrap();
        assert_eq!(dry.moved, markers.len());
        assert!(!crate::check::check(&store).await.unwrap().is_clean());

        // One old marker whose new key already holds it: only the old copy goes.
        let first = &markers[0];
        store.put_item(Put::new(first.to_item())).await.unwrap();
        // One old marker whose user has another email by now: removed, not moved.
        let stale = &markers[1];
        let mut user = crate::collections::get_user(&store, &stale.org, &stale.username)
            .await
            .unwrap()
            .unwrap();
        user.email = crate::keys::Email::parse("moved-on@elsewhere.example").unwrap();
        store.put_item(Put::new(user.to_item())).await.unwrap();
        let moved_on = UserEmail {
            email: user.email.clone(),
            ..stale.clone()
        };
        store.put_item(Put::new(moved_on.to_item())).await.unwrap();
        let report = migrate(&store, false).await.unwrap();
        assert_eq!(
            (
                report.moved,
                report.duplicates_removed,
                report.stale_removed,
                report.skipped.len()
            ),
            (markers.len() - 2, 1, 1, 0),
            "{report}"
        );
        let stale_new = UserEmailKey::new(&stale.org, &stale.email).primary_key();
        let gone = store
            .get_item(crate::store::GetItem {
                key: stale_new,
                consistent_read: true,
            })
            .await
            .unwrap();
        assert!(gone.is_none(), "a stale marker is not moved");
        let after = crate::check::check(&store).await.unwrap();
        assert!(after.is_clean(), "{after}");
        let old_key = format!("EMAIL#{}", first.email);
        let gone = store
            .get_item(crate::store::GetItem {
                key: PrimaryKey::new(old_key.clone(), old_key),
                consistent_read: true,
            })
            .await
            .unwrap();
        assert!(gone.is_none());
        let again = migrate(&store, false).await.unwrap();
        assert_eq!((again.moved, again.duplicates_removed), (0, 0));
    }
}
