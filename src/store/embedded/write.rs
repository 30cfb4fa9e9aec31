//! Writes: each action planned against the stored item (conditions, updates) before
//! anything is applied, then the item written with its index rows and change log record;
//! single-item writes and TransactWriteItems (all or nothing, client request tokens); index
//! changes held back under a GSI lag.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use crate::store::faults::Call;
use crate::store::faults::CLIENT_TOKEN_TTL;
use crate::store::value::{self};
use crate::store::{
    retry_conflicts, BatchWriteRequest, CancelReason, Delete, Item, PrimaryKey, Put, StoreError,
    StoreResult, TransactAction,
};

use super::codec::{decode_item, encode_item, index_row_key, projected, row_key, PROJECTED};
use super::expr::{apply_update, eval};
use super::group::Batch;
use super::{internal, now_ms, EmbeddedEngine, Inner, Op};

/// The index changes of one write, waiting for the GSI lag to pass.
#[derive(Serialize, Deserialize)]
pub(super) struct Propagation {
    /// Milliseconds since the Unix epoch when the change reaches the indexes.
    pub(super) due_ms: u64,
    pub(super) rows: Vec<IndexChange>,
}

/// (index position, encoded index key, the item to store there or `None` to remove).
pub(super) type IndexChange = (usize, Vec<u8>, Option<Vec<u8>>);

fn decode_propagation(bytes: &[u8]) -> StoreResult<Propagation> {
    serde_json::from_slice(bytes).map_err(internal)
}

impl Inner {
    /// Applies the index changes whose lag has passed (all of them with `all`), oldest
    /// first. A write transaction only when there is something to apply.
    pub(super) fn propagate(&self, all: bool) -> StoreResult<()> {
        let now = now_ms();
        let due = |p: &Propagation| all || p.due_ms <= now;
        {
            let tx = self.db.begin_read().map_err(internal)?;
            let pending = match tx.open_table(self.pending_def()) {
                Ok(t) => t,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
                Err(e) => return Err(internal(e)),
            };
            let first = pending.first().map_err(internal)?;
            match first {
                Some((_, v)) if due(&decode_propagation(v.value())?) => {}
                _ => return Ok(()),
            }
        }
        let tx = self.db.begin_write().map_err(internal)?;
        {
            let mut pending = tx.open_table(self.pending_def()).map_err(internal)?;
            while let Some((seq, p)) = {
                let first = pending.first().map_err(internal)?;
                match first {
                    Some((k, v)) => Some((k.value(), decode_propagation(v.value())?)),
                    None => None,
                }
            } {
                if !due(&p) {
                    break;
                }
                self.apply_index_changes(&tx, &p.rows)?;
                pending.remove(seq).map_err(internal)?;
            }
        }
        tx.commit().map_err(internal)
    }

    /// Index rows an item has: (index position, encoded index key).
    pub(super) fn index_rows(&self, item: &Item) -> Vec<(usize, Vec<u8>)> {
        let Some(key) = self.schema.key_of(item) else {
            return Vec::new();
        };
        self.schema
            .indexes
            .iter()
            .enumerate()
            .filter_map(|(i, index)| {
                let ik = self.schema.index_key_of(index, item)?;
                Some((i, index_row_key(&self.schema, index, &ik, &key)))
            })
            .collect()
    }

    pub(super) fn get_in_write(
        &self,
        tx: &redb::WriteTransaction,
        key: &PrimaryKey,
    ) -> StoreResult<Option<Item>> {
        let items = tx.open_table(self.items_def()).map_err(internal)?;
        let got = items
            .get(row_key(&self.schema, key).as_slice())
            .map_err(internal)?;
        got.map(|v| decode_item(v.value())).transpose()
    }

    /// Replaces (or removes, with `None`) the item at `key`, keeping the indexes in step.
    pub(super) fn write_item(
        &self,
        tx: &redb::WriteTransaction,
        key: &PrimaryKey,
        old: Option<&Item>,
        new: Option<&Item>,
    ) -> StoreResult<()> {
        let tk = row_key(&self.schema, key);
        self.log_change(tx, key, old, new)?;
        {
            let mut items = tx.open_table(self.items_def()).map_err(internal)?;
            match new {
                Some(item) => {
                    items
                        .insert(tk.as_slice(), encode_item(item)?.as_slice())
                        .map_err(internal)?;
                }
                None => {
                    items.remove(tk.as_slice()).map_err(internal)?;
                }
            }
        }
        let old_rows = old.map(|i| self.index_rows(i)).unwrap_or_default();
        let new_rows = new.map(|i| self.index_rows(i)).unwrap_or_default();
        let lag = !self.gsi_lag.is_zero();
        // Rows the item leaves, then its rows: new ones point at it; under a lag every
        // one holds the item as written, which reaches the index later.
        let mut changes: Vec<IndexChange> = old_rows
            .iter()
            .filter(|r| !new_rows.contains(r))
            .map(|(i, row)| (*i, row.clone(), None))
            .collect();
        if let Some(item) = new {
            let value = if lag { projected(item)? } else { tk.clone() };
            for (i, row) in &new_rows {
                // Without a lag a row the item keeps needs no write, unless it still holds
                // a copy from a run with a lag (which would go stale).
                let write = lag
                    || !old_rows.contains(&(*i, row.clone()))
                    || tx
                        .open_table(self.index_def(*i))
                        .map_err(internal)?
                        .get(row.as_slice())
                        .map_err(internal)?
                        .is_some_and(|v| v.value().starts_with(&PROJECTED));
                if write {
                    changes.push((*i, row.clone(), Some(value.clone())));
                }
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        if lag {
            // A row that points at the item would show the new item before the lag has
            // passed: it keeps the old item until then.
            if let Some(old) = old {
                let frozen = projected(old)?;
                for (i, row) in &old_rows {
                    let mut t = tx.open_table(self.index_def(*i)).map_err(internal)?;
                    let points = t
                        .get(row.as_slice())
                        .map_err(internal)?
                        .is_some_and(|v| !v.value().starts_with(&PROJECTED));
                    if points {
                        t.insert(row.as_slice(), frozen.as_slice())
                            .map_err(internal)?;
                    }
                }
            }
            let mut pending = tx.open_table(self.pending_def()).map_err(internal)?;
            let seq = pending
                .last()
                .map_err(internal)?
                .map_or(0, |(k, _)| k.value() + 1);
            let p = Propagation {
                due_ms: now_ms() + self.gsi_lag.as_millis() as u64,
                rows: changes,
            };
            let bytes = serde_json::to_vec(&p).map_err(internal)?;
            pending.insert(seq, bytes.as_slice()).map_err(internal)?;
            return Ok(());
        }
        self.apply_index_changes(tx, &changes)
    }

    /// Writes index rows (`Some` item) and removes them (`None`).
    pub(super) fn apply_index_changes(
        &self,
        tx: &redb::WriteTransaction,
        changes: &[IndexChange],
    ) -> StoreResult<()> {
        for (i, row, item) in changes {
            let mut t = tx.open_table(self.index_def(*i)).map_err(internal)?;
            match item {
                Some(item) => t.insert(row.as_slice(), item.as_slice()),
                None => t.remove(row.as_slice()),
            }
            .map_err(internal)?;
        }
        Ok(())
    }
}

/// The outcome of checking one write against the stored item, before anything is applied.
pub(super) enum Planned {
    /// Write `new` (or delete, when `None`) over `old`.
    Write {
        key: PrimaryKey,
        old: Option<Item>,
        new: Option<Item>,
    },
    /// A condition check that held: nothing to write.
    Nothing,
}

pub(super) enum Refused {
    Condition(Option<Item>),
    Invalid(String),
}

pub(super) fn plan(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    action: &TransactAction,
) -> StoreResult<Result<Planned, Refused>> {
    let key = action
        .key(&inner.schema)
        .ok_or_else(|| internal("action without key"))?;
    let old = inner.get_in_write(tx, &key)?;
    let (condition, wants_old) = match action {
        TransactAction::Put(p) => (p.condition.as_ref(), p.return_old_on_condition_failure),
        TransactAction::Update(u) => (u.condition.as_ref(), u.return_old_on_condition_failure),
        TransactAction::Delete(d) => (d.condition.as_ref(), d.return_old_on_condition_failure),
        TransactAction::ConditionCheck(c) => {
            (Some(&c.condition), c.return_old_on_condition_failure)
        }
    };
    if let Some(c) = condition {
        if !eval(c, old.as_ref()) {
            return Ok(Err(Refused::Condition(if wants_old { old } else { None })));
        }
    }
    let new = match action {
        TransactAction::Put(p) => Some(value::canonicalize_item(p.item.clone())),
        TransactAction::Update(u) => {
            match apply_update(&inner.schema, &key, old.as_ref(), &u.update) {
                Ok(item) => Some(item),
                Err(msg) => return Ok(Err(Refused::Invalid(msg))),
            }
        }
        TransactAction::Delete(_) => None,
        TransactAction::ConditionCheck(_) => return Ok(Ok(Planned::Nothing)),
    };
    Ok(Ok(Planned::Write { key, old, new }))
}

pub(super) fn apply(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    planned: &Planned,
) -> StoreResult<()> {
    if let Planned::Write { key, old, new } = planned {
        inner.write_item(tx, key, old.as_ref(), new.as_ref())?;
    }
    Ok(())
}

/// One single-item write in its group's transaction: plan, refuse with DynamoDB's error,
/// or apply.
pub(super) fn single_in_group(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    action: &TransactAction,
) -> StoreResult<(Option<Item>, Option<Item>)> {
    inner.write_exists(tx)?;
    let planned = match plan(inner, tx, action)? {
        Ok(p) => p,
        Err(Refused::Condition(item)) => {
            return Err(StoreError::ConditionFailed {
                item: item.map(Box::new),
            })
        }
        Err(Refused::Invalid(msg)) => return Err(StoreError::Validation(msg)),
    };
    apply(inner, tx, &planned).inspect_err(|_| batch.unsound = true)?;
    Ok(match planned {
        Planned::Write { old, new, .. } => (old, new),
        Planned::Nothing => (None, None),
    })
}

impl EmbeddedEngine {
    pub(super) async fn single_write(
        &self,
        op: &'static str,
        action: Arc<TransactAction>,
    ) -> StoreResult<(Option<Item>, Option<Item>)> {
        let write = self
            .inner
            .faults
            .as_ref()
            .and_then(|_| crate::store::faults::ItemWrite::of(&self.inner.schema, &action));
        retry_conflicts(op, || {
            let action = action.clone();
            self.call(
                Call::Single(write.clone()),
                Op::Write(Arc::new(move |inner, tx, batch| {
                    single_in_group(inner, tx, batch, &action)
                })),
            )
        })
        .await
    }
}

/// One BatchWriteItem's requests in their group's transaction, each applied on its own
/// (a batch carries no conditions, so none can fail but by the table itself).
pub(super) fn batch_in_group(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    requests: &[BatchWriteRequest],
) -> StoreResult<()> {
    inner.write_exists(tx)?;
    for r in requests {
        let action = match r {
            BatchWriteRequest::Put(item) => TransactAction::Put(Put::new(item.clone())),
            BatchWriteRequest::Delete(key) => TransactAction::Delete(Delete::new(key.clone())),
        };
        match plan(inner, tx, &action)? {
            Ok(planned) => apply(inner, tx, &planned).inspect_err(|_| batch.unsound = true)?,
            Err(Refused::Invalid(msg)) => return Err(StoreError::Validation(msg)),
            Err(Refused::Condition(_)) => return Err(internal("a batch write has no condition")),
        }
    }
    Ok(())
}

/// TransactWriteItems in its group's transaction: every action planned against the items
/// as stored (and as the group's earlier writes left them), then all applied or none. A
/// `ClientRequestToken` (with the digest of the request) that applied a transaction within
/// [`CLIENT_TOKEN_TTL`] makes a repeat a success that changes nothing, as on DynamoDB; the
/// same token with another request is DynamoDB's `IdempotentParameterMismatchException`.
pub(super) fn transact(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    actions: &[TransactAction],
    token: Option<&(String, u64)>,
) -> StoreResult<()> {
    let on: Vec<(&Inner, &TransactAction)> = actions.iter().map(|a| (inner, a)).collect();
    transact_across(inner, tx, batch, &on, token)
}

/// TransactWriteItems over several tables of one database (each action with its table) in
/// `inner`'s group's transaction, its token kept by `inner`: every table checked to
/// exist, every action planned, then all applied or none.
pub(super) fn transact_across(
    inner: &Inner,
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    actions: &[(&Inner, &TransactAction)],
    token: Option<&(String, u64)>,
) -> StoreResult<()> {
    for (table, _) in actions {
        table.write_exists(tx)?;
    }
    if let Some((token, digest)) = token {
        let tokens = inner.tokens.lock().unwrap_or_else(|p| p.into_inner());
        let in_group = batch
            .tokens
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, d)| (d, Instant::now() + CLIENT_TOKEN_TTL));
        let seen = in_group.or_else(|| tokens.by_token.get(token).map(|(d, e)| (d, *e)));
        match seen {
            Some((seen, expires)) if expires > Instant::now() => {
                return if seen == digest {
                    Ok(())
                } else {
                    Err(internal(
                        "IdempotentParameterMismatchException: the client token was used with another request",
                    ))
                };
            }
            _ => {}
        }
    }
    plan_and_apply(tx, batch, actions)?;
    if let Some((token, digest)) = token {
        batch.tokens.push((token.clone(), *digest));
    }
    Ok(())
}

/// A transaction's actions planned against the items as stored (and as the group's earlier
/// writes left them), then all applied, or none with DynamoDB's reasons.
fn plan_and_apply(
    tx: &redb::WriteTransaction,
    batch: &mut Batch,
    actions: &[(&Inner, &TransactAction)],
) -> StoreResult<()> {
    let mut planned = Vec::with_capacity(actions.len());
    let mut reasons = Vec::with_capacity(actions.len());
    for (inner, action) in actions {
        match plan(inner, tx, action)? {
            Ok(p) => {
                planned.push((*inner, p));
                reasons.push(CancelReason::None);
            }
            Err(Refused::Condition(item)) => {
                reasons.push(CancelReason::ConditionalCheckFailed { item })
            }
            Err(Refused::Invalid(msg)) => reasons.push(CancelReason::ValidationError(msg)),
        }
    }
    // Planning wrote nothing: a refused transaction leaves the group as it was.
    if planned.len() < actions.len() {
        return Err(StoreError::TransactionCanceled { reasons });
    }
    for (inner, p) in &planned {
        apply(inner, tx, p).inspect_err(|_| batch.unsound = true)?;
    }
    Ok(())
}

/// A digest of a transaction's actions, the same for equal requests: what a client token
/// is checked against.
pub(super) fn digest(actions: &[TransactAction]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for action in actions {
        match action {
            // The only part kept in a map, whose order is not fixed: sorted first.
            TransactAction::Put(p) => {
                format!("{:?}", p.item.iter().collect::<BTreeMap<_, _>>()).hash(&mut h);
                format!("{:?}{}", p.condition, p.return_old_on_condition_failure).hash(&mut h);
            }
            other => format!("{other:?}").hash(&mut h),
        }
    }
    h.finish()
}
