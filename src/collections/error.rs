//! Why a repository call failed, with the GraphQL `code` each variant becomes.

use crate::keys::KeyError;
use crate::model::ModelError;
use crate::store::StoreError;

/// Why a repository call failed. Each variant names the GraphQL `code` clients see.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// A bad identifier. `BAD_USER_INPUT`, naming the field.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A page size out of range or a cursor that belongs to another connection.
    /// `BAD_USER_INPUT`.
    #[error("invalid page: {0}")]
    InvalidPage(String),
    /// Input that is well formed but inconsistent (an order whose total is not the sum of
    /// its lines, too many keys in one batch). `BAD_USER_INPUT`.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The entity a write changes, or one it needs, does not exist (`what` names it:
    /// `organization`, `user`, `requester`, `assignee`, `buyer`, `ticket`, `order`).
    /// `NOT_FOUND`.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A unique value is taken (`slug`, `username`, `email`, or an id: `ticket`, `order`,
    /// `order line`). `CONFLICT`.
    #[error("{0} already exists")]
    AlreadyExists(&'static str),
    /// The record changed since the caller read it at version `expected`; `current` is the
    /// version it is at now, read from the item the failed condition returned (`None`
    /// when the store did not say). `VERSION_MISMATCH`.
    #[error("{entity} was changed concurrently: expected version {expected}{}", match .current {
        Some(c) => format!(", it is at version {c}"),
        None => String::new(),
    })]
    VersionMismatch {
        entity: &'static str,
        expected: u32,
        current: Option<u32>,
    },
    /// A status change the entity's life cycle does not allow (`from` and `to` are the
    /// stored status names). `INVALID_TRANSITION`.
    #[error("cannot change the status from {from} to {to}")]
    InvalidTransition { from: String, to: String },
    /// The entity cannot be deleted while others reference it (`what` names them: a
    /// user's requested `tickets`, `assignedTickets`, `orders`). `CONFLICT`.
    #[error("still in use by its {0}")]
    InUse(&'static str),
    /// The table holds an item this code cannot read. `INTERNAL`, detail logged.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The store failed; the store error's doc names the code.
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type RepoResult<T> = Result<T, RepoError>;
