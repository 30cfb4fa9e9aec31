//! What the writes of every aggregate share: the meaning of a failed condition (which
//! action, which error the caller sees), puts of new items, and counter bumps on items
//! that must exist.

use super::error::RepoError;
use crate::keys::PK;
use crate::model::Ticket;
pub(super) use crate::store::failed_condition;
use crate::store::{
    AttributeValue, Condition, Item, PrimaryKey, Put, StoreError, TransactAction, Update,
    UpdateExpr,
};

/// What a failed condition of one transaction action means to the caller.
#[derive(Debug, Clone, Copy)]
pub(super) enum OnFail {
    AlreadyExists(&'static str),
    NotFound(&'static str),
    /// A version condition: absent item means not found, present means changed.
    Version {
        entity: &'static str,
        expected: u32,
    },
    /// The condition guards the table's own consistency (a marker that must point at the
    /// user being changed): failing it means the table holds something no writer made.
    /// `INTERNAL`; `itemgraph check` names the item.
    Corrupt(&'static str),
}

impl OnFail {
    fn error(self, current: Option<&Item>) -> RepoError {
        match self {
            OnFail::AlreadyExists(what) => RepoError::AlreadyExists(what),
            OnFail::NotFound(what) => RepoError::NotFound(what),
            OnFail::Version { entity, expected } => match current {
                None => RepoError::NotFound(entity),
                Some(item) => RepoError::VersionMismatch {
                    entity,
                    expected,
                    current: version_of(item),
                },
            },
            OnFail::Corrupt(what) => RepoError::Store(StoreError::Internal(what.to_owned())),
        }
    }
}

/// The `version` attribute of an item a failed condition returned.
fn version_of(item: &Item) -> Option<u32> {
    match item.get(VERSION)? {
        AttributeValue::N(n) => n.parse().ok(),
        _ => None,
    }
}

/// The version attribute of tickets and orders.
pub(super) const VERSION: &str = Ticket::VERSION;

/// The highest version a ticket or order is written at: what GraphQL's 32-bit `Int`
/// holds, so every client reads it exactly.
pub const MAX_VERSION: u32 = i32::MAX as u32;

/// The version after `current`; `Invalid` past [`MAX_VERSION`].
pub(super) fn next_version(current: u32, entity: &str) -> Result<u32, RepoError> {
    current
        .checked_add(1)
        .filter(|v| *v <= MAX_VERSION)
        .ok_or_else(|| RepoError::Invalid(format!("the {entity} is at its last version")))
}

/// Maps a failed write to what its conditions meant; anything else passes through.
pub(super) fn explain(err: StoreError, meanings: &[OnFail]) -> RepoError {
    let single = matches!(err, StoreError::ConditionFailed { .. });
    match failed_condition(&err) {
        Some((i, item)) if !single || meanings.len() == 1 => match meanings.get(i) {
            Some(meaning) => meaning.error(item),
            None => RepoError::Store(err),
        },
        _ => RepoError::Store(err),
    }
}

pub(super) fn put_new(item: Item) -> TransactAction {
    TransactAction::Put(Put::new(item).when(Condition::not_exists(PK)))
}

pub(super) fn bump(key: PrimaryKey, update: UpdateExpr) -> TransactAction {
    TransactAction::Update(Update::new(key, update).when(Condition::exists(PK)))
}

pub(super) fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

pub(super) fn n(v: u32) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_stop_at_what_a_32_bit_int_holds() {
        assert_eq!(next_version(1, "ticket").unwrap(), 2);
        assert_eq!(
            next_version(MAX_VERSION - 1, "ticket").unwrap(),
            MAX_VERSION
        );
        for last in [MAX_VERSION, u32::MAX] {
            assert!(matches!(
                next_version(last, "order"),
                Err(RepoError::Invalid(m)) if m.contains("last version")
            ));
        }
    }
}
