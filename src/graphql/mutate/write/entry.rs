//! A write of one entry of a map attribute (`put-entry`, `remove-entry`): one UpdateItem
//! of the entry's path (`SET map.key = :value`, `REMOVE map.key`), conditioned as its plan
//! says: the item there and the caller's, at the version given, the map there and, for a
//! new key, with room. A put on an item made without the map writes the map whole, with
//! the one entry, in a second UpdateItem conditioned on the map still not being there.
//!
//! With a version, the write's own retry after a lost reply meets the version it wrote:
//! the item returned by the failed condition, one version on and holding the entry as
//! written (or without it, for a remove), is this write's, and answers it.

use super::*;
use crate::chart::Entry;
use crate::graphql::mutate::input::MAP_KEY_CHARS;

pub(super) async fn write(
    rc: &RequestContext,
    chart: &Arc<Chart>,
    m: &Mutation,
    e: &Entity,
    input: &IndexMap<Name, Value>,
) -> Result<Written> {
    let entry = m.entry.as_ref().ok_or(ApiError::Internal)?;
    let (_, place) = target(rc, chart, m, e, input)?;
    let expected = expected_version(input, e.writes.version.is_some())?;
    let key = entry_key(entry, input)?;
    let value = match (entry.remove, input.get("value")) {
        (true, _) => None,
        (false, None | Some(Value::Null)) => {
            return Err(ApiError::bad_input("value", "value is required"))
        }
        (false, Some(v)) => Some(stored(chart, &entry.map, &entry.of, v)?),
    };
    let at = match place {
        Place::Key(at) => at,
        place => {
            let found = locate(rc, chart, e, &place, expected).await?;
            chart.key_of(&found).ok_or(ApiError::Internal)?
        }
    };
    let plan = &chart.plans[&m.name];
    let step = plan.steps.first().ok_or(ApiError::Internal)?;
    let values = Values {
        expected,
        entry: Some(&key),
        ..Values::of_caller(rc)
    };
    let missing = || ApiError::Missing {
        field: lower(&e.name).into(),
    };
    for _ in 0..ATTEMPTS {
        let mut u = UpdateExpr::default();
        u = match &value {
            Some(v) => u.set_entry(entry.map.clone(), key.clone(), v.clone()),
            None => u.remove_entry(entry.map.clone(), key.clone()),
        };
        let first = step.acts.first().ok_or(ApiError::Internal)?;
        let mut req = Update::new(at.clone(), kept(e, u)).returning(ReturnValues::AllNew);
        req.condition = conditions::condition(&first.when, &values);
        req.return_old_on_condition_failure = true;
        let found = match rc.store_of(chart, e)?.update_item(req).await {
            Ok(Some(item)) => return Ok(written(item)),
            Ok(None) => return Err(ApiError::Internal),
            Err(StoreError::ConditionFailed { item: Some(found) })
                if visible_item(rc, chart, e, &found) =>
            {
                *found
            }
            Err(StoreError::ConditionFailed { .. }) => return Err(missing()),
            Err(err) => return Err(err.into()),
        };
        let held = holds(entry, &found, &key, value.as_ref());
        if let (Some(v), Some(attr)) = (expected, &e.writes.version) {
            let now = number(found.get(attr));
            if now == v + 1 && held {
                // This write's own, applied by an attempt whose reply was lost.
                return Ok(written(found));
            }
            if now != v {
                return Err(version_mismatch(e, v, Some(&found)));
            }
        }
        let map = found.get(&entry.map);
        match (map, &value) {
            // Nothing to remove from a map that is not there: the item as it is.
            (None, None) => return Ok(written(found)),
            // The first entry of an item made without the map: the map, whole.
            (None, Some(v)) => {
                let Some(act) = step.acts.get(1) else {
                    return Err(ApiError::Internal);
                };
                let whole = AttributeValue::M([(key.clone(), v.clone())].into_iter().collect());
                let u = kept(e, UpdateExpr::default().set(entry.map.clone(), whole));
                let mut req = Update::new(at.clone(), u).returning(ReturnValues::AllNew);
                req.condition = conditions::condition(&act.when, &values);
                req.return_old_on_condition_failure = true;
                match rc.store_of(chart, e)?.update_item(req).await {
                    Ok(Some(item)) => return Ok(written(item)),
                    Ok(None) => return Err(ApiError::Internal),
                    // Changed since: built again from the top.
                    Err(StoreError::ConditionFailed { item: Some(found) })
                        if visible_item(rc, chart, e, &found) =>
                    {
                        continue
                    }
                    Err(StoreError::ConditionFailed { .. }) => return Err(missing()),
                    Err(err) => return Err(err.into()),
                }
            }
            (Some(AttributeValue::M(entries)), Some(_)) => {
                if let Some(max) = entry.max_items.filter(|m| entries.len() >= *m) {
                    if !entries.contains_key(&key) {
                        return Err(ApiError::bad_input(
                            "key",
                            format!(
                                "{} holds at most {max} entries: remove one before adding `{key}`",
                                entry.map
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
        // Changed between (its tenant, its expiry, its map): sent again, at most ATTEMPTS
        // times.
    }
    Err(ApiError::Contention)
}

/// The entry key given: one line of text, of the kind the mutation declares.
fn entry_key(entry: &Entry, input: &IndexMap<Name, Value>) -> Result<String> {
    let Some(Value::String(k)) = input.get("key") else {
        return Err(ApiError::bad_input("key", "key is required"));
    };
    match &entry.key_kind {
        Some(kind) => kind
            .validate("key", k)
            .map_err(|msg| ApiError::bad_input("key", msg)),
        None => crate::graphql::input::text("key", k, MAP_KEY_CHARS, false),
    }
}

/// Whether `item`'s map holds the entry as this write leaves it: `value` at `key`, or no
/// `key` for a remove.
fn holds(entry: &Entry, item: &Item, key: &str, value: Option<&AttributeValue>) -> bool {
    let entries = match item.get(&entry.map) {
        Some(AttributeValue::M(m)) => Some(m),
        _ => None,
    };
    match value {
        Some(v) => entries
            .and_then(|m| m.get(key))
            .is_some_and(|x| crate::store::value::equal(x, v)),
        None => entries.is_none_or(|m| !m.contains_key(key)),
    }
}

fn written(item: Item) -> Written {
    Written {
        item,
        lists: Vec::new(),
        replayed: false,
    }
}
