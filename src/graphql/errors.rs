//! The errors clients see: every one carries `extensions.code`.

use async_graphql::ErrorExtensions;
use std::borrow::Cow;

use super::cursor::InvalidCursor;
use crate::auth::Forbidden;
use crate::chart::kinds::KeyError;
use crate::store::{is_conflict, only_conflicts, CancelReason, StoreError};

/// What went wrong, as a GraphQL error. Each variant names its `extensions.code`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// `BAD_USER_INPUT`: an argument is malformed or out of range; `field` names it.
    #[error("{message}")]
    BadUserInput {
        message: String,
        field: Option<String>,
    },
    /// `INVALID_CURSOR`: a cursor was altered, forged or belongs to another connection.
    #[error("invalid cursor: {0}")]
    InvalidCursor(&'static str),
    /// `NOT_FOUND`: a non-null reference points at nothing.
    #[error("{0} not found")]
    NotFound(String),
    /// `NOT_FOUND`, from a mutation: the entity it changes, or one it needs (the
    /// organization, the requester, the assignee, the buyer), does not exist; `field`
    /// names which: `organization`, `user`, `requester`, `assignee`, `buyer`, `ticket`,
    /// `order`.
    #[error("{field} not found")]
    Missing { field: Cow<'static, str> },
    /// `CONFLICT`: a unique value is taken (`slug`, `username`, `email`), or the entity
    /// is still in use; `field` names what.
    #[error("{message}")]
    Conflict {
        message: String,
        field: Cow<'static, str>,
    },
    /// `VERSION_MISMATCH`: the entity changed since the client read it. The client reads
    /// it again (`extensions.currentVersion` says where it is now) and retries.
    #[error("{entity} changed since version {expected}{}: read it again and retry", current_text(.current))]
    VersionMismatch {
        entity: Cow<'static, str>,
        expected: u32,
        current: Option<u32>,
    },
    /// `INVALID_TRANSITION`: the status cannot move from `from` to `to`.
    #[error("cannot change the status from {from} to {to}")]
    InvalidTransition { from: String, to: String },
    /// `FORBIDDEN`: the caller's role may not do this (only an organization's admins
    /// manage users and change orders). Checked before anything is read.
    #[error("{0}")]
    Forbidden(String),
    /// `UNAVAILABLE` (retryable): the store cannot be reached or timed out. A mutation's
    /// write may or may not have happened: read again before retrying it (or retry with
    /// the same `clientToken`).
    #[error("the data store is unavailable; try again")]
    Unavailable,
    /// `THROTTLED` (retryable): the store refused the request for its throughput past
    /// the retry budget; nothing was written. Try again after a pause.
    #[error("the data store is throttling requests; try again after a pause")]
    Throttled,
    /// `CONTENTION` (retryable): concurrent writes to the same items kept cancelling this
    /// one past the retry budget; nothing was written. Try again.
    #[error("concurrent writes to the same items kept cancelling this write; try again")]
    Contention,
    /// `QUERY_TOO_DEEP`: fields nest deeper than `--max-depth`; nothing was read.
    #[error("the query nests fields {depth} deep; at most {max} are allowed")]
    QueryTooDeep { depth: usize, max: usize },
    /// `TOO_MANY_ALIASES`: the document aliases more fields than `--max-aliases`; nothing
    /// was read.
    #[error("the query has {count} aliased fields; at most {max} are allowed")]
    TooManyAliases { count: usize, max: usize },
    /// `QUERY_TOO_COMPLEX`: the query's cost (about the items it would read) is over
    /// `--max-complexity`; nothing was read. Ask for smaller pages or fewer fields.
    #[error("the query costs {complexity}; at most {max} is allowed: ask for smaller pages or fewer nested connections")]
    QueryTooComplex { complexity: usize, max: usize },
    /// `TOO_MANY_TOKENS`: the document holds more than `--max-tokens` tokens; refused
    /// before it is parsed.
    #[error("the document holds more than {max} tokens")]
    TooManyTokens { max: usize },
    /// `NESTING_TOO_DEEP`: braces, brackets or parentheses nest deeper than
    /// `--max-nesting` (a value like `[[[…]]]`, an object in an object …), or selection
    /// sets and fragment spreads do once fragments are expanded; refused before the
    /// structure is walked.
    #[error("the document nests deeper than {max} levels")]
    NestingTooDeep { max: usize },
    /// `TOO_MANY_FIELDS`: with its fragments expanded where they are spread, the document
    /// selects more than `--max-fields` fields; refused before validation walks them.
    #[error("with its fragments expanded the document selects {count} fields; at most {max} are allowed")]
    TooManyFields { count: usize, max: usize },
    /// `INTROSPECTION_DISABLED`: the query selects `__schema` or `__type` and the server
    /// runs with `--introspection off`; nothing was read.
    #[error("introspection is disabled on this server")]
    IntrospectionDisabled,
    /// `TIMEOUT`: the request ran past `--request-timeout-ms` and was cancelled, its
    /// outstanding store calls with it. A mutation's write may or may not have happened:
    /// read again before retrying (or retry with the same `clientToken`).
    #[error("the request did not finish within {millis} ms and was cancelled")]
    Timeout { millis: u64 },
    /// `EVENTS_EXPIRED`: a subscription's `after` cursor points at changes the stream no
    /// longer holds (or too far back to catch up), or the server lost changes: refetch
    /// what the subscription kept current, then subscribe without `after`.
    #[error("{0}")]
    EventsExpired(String),
    /// `SUBSCRIBER_TOO_SLOW` (retryable): the subscriber fell too far behind the changes;
    /// subscribe again with the last event's cursor as `after`.
    #[error("{0}; subscribe again with the last event's cursor")]
    SubscriberTooSlow(String),
    /// `TOO_MANY_SUBSCRIPTIONS` (retryable): the connection or the server holds as many
    /// subscriptions as it may.
    #[error("{0}")]
    TooManySubscriptions(String),
    /// `TOO_MANY_REPLAYS` (retryable): as many resumed subscriptions of the organization
    /// are catching up on this server as it allows at once; resume again shortly.
    #[error("{0}")]
    TooManyReplays(String),
    /// `EVENTS_UNAVAILABLE` (retryable): the table's change stream cannot be read now (or
    /// the table has none).
    #[error("live updates are unavailable: {0}")]
    EventsUnavailable(String),
    /// `UNAUTHENTICATED`: the token a subscription was started with has expired.
    #[error("{0}")]
    Unauthenticated(String),
    /// `INTERNAL`: anything else. The detail is logged, never sent.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn bad_input(field: &str, message: impl Into<String>) -> Self {
        ApiError::BadUserInput {
            message: message.into(),
            field: Some(field.to_owned()),
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadUserInput { .. } => "BAD_USER_INPUT",
            ApiError::InvalidCursor(_) => "INVALID_CURSOR",
            ApiError::NotFound(_) | ApiError::Missing { .. } => "NOT_FOUND",
            ApiError::Conflict { .. } => "CONFLICT",
            ApiError::VersionMismatch { .. } => "VERSION_MISMATCH",
            ApiError::InvalidTransition { .. } => "INVALID_TRANSITION",
            ApiError::Forbidden(_) => "FORBIDDEN",
            ApiError::Unavailable => "UNAVAILABLE",
            ApiError::Throttled => "THROTTLED",
            ApiError::Contention => "CONTENTION",
            ApiError::QueryTooDeep { .. } => "QUERY_TOO_DEEP",
            ApiError::TooManyAliases { .. } => "TOO_MANY_ALIASES",
            ApiError::QueryTooComplex { .. } => "QUERY_TOO_COMPLEX",
            ApiError::TooManyTokens { .. } => "TOO_MANY_TOKENS",
            ApiError::NestingTooDeep { .. } => "NESTING_TOO_DEEP",
            ApiError::TooManyFields { .. } => "TOO_MANY_FIELDS",
            ApiError::IntrospectionDisabled => "INTROSPECTION_DISABLED",
            ApiError::Timeout { .. } => "TIMEOUT",
            ApiError::EventsExpired(_) => "EVENTS_EXPIRED",
            ApiError::SubscriberTooSlow(_) => "SUBSCRIBER_TOO_SLOW",
            ApiError::TooManySubscriptions(_) => "TOO_MANY_SUBSCRIPTIONS",
            ApiError::TooManyReplays(_) => "TOO_MANY_REPLAYS",
            ApiError::EventsUnavailable(_) => "EVENTS_UNAVAILABLE",
            ApiError::Unauthenticated(_) => "UNAUTHENTICATED",
            ApiError::Internal => "INTERNAL",
        }
    }

    /// The error as a request error: no location, no path (a limit refuses the request as
    /// a whole).
    /// Whether the same request may simply be sent again (`extensions.retryable`).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            ApiError::Unavailable
                | ApiError::Throttled
                | ApiError::Contention
                | ApiError::SubscriberTooSlow(_)
                | ApiError::TooManySubscriptions(_)
                | ApiError::TooManyReplays(_)
                | ApiError::EventsUnavailable(_)
        )
    }

    pub fn server_error(&self) -> async_graphql::ServerError {
        let mut err = async_graphql::ServerError::new(self.to_string(), None);
        err.extensions = self.extend().extensions;
        err
    }
}

impl ErrorExtensions for ApiError {
    fn extend(&self) -> async_graphql::Error {
        async_graphql::Error::new(self.to_string()).extend_with(|_, e| {
            e.set("code", self.code());
            if self.retryable() {
                e.set("retryable", true);
            }
            match self {
                ApiError::BadUserInput {
                    field: Some(field), ..
                } => e.set("field", field.as_str()),
                ApiError::Missing { field } | ApiError::Conflict { field, .. } => {
                    e.set("field", field.as_ref())
                }
                ApiError::VersionMismatch {
                    expected, current, ..
                } => {
                    e.set("expectedVersion", *expected);
                    e.set(
                        "currentVersion",
                        current.map_or(async_graphql::Value::Null, async_graphql::Value::from),
                    );
                }
                ApiError::InvalidTransition { from, to } => {
                    e.set("from", from.as_str());
                    e.set("to", to.as_str());
                }
                ApiError::QueryTooDeep { depth: actual, max }
                | ApiError::TooManyAliases { count: actual, max }
                | ApiError::QueryTooComplex {
                    complexity: actual,
                    max,
                }
                | ApiError::TooManyFields { count: actual, max } => {
                    e.set("limit", *max as u64);
                    e.set("actual", *actual as u64);
                }
                ApiError::TooManyTokens { max } | ApiError::NestingTooDeep { max } => {
                    e.set("limit", *max as u64)
                }
                ApiError::Timeout { millis } => e.set("limitMs", *millis),
                _ => {}
            }
        })
    }
}

fn current_text(current: &Option<u32>) -> String {
    current.map_or_else(String::new, |c| format!(" (it is at version {c} now)"))
}

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> Self {
        ApiError::BadUserInput {
            field: Some(e.field().to_owned()),
            message: e.to_string(),
        }
    }
}

impl From<Forbidden> for ApiError {
    fn from(Forbidden(message): Forbidden) -> Self {
        ApiError::Forbidden(message)
    }
}

impl From<InvalidCursor> for ApiError {
    fn from(_: InvalidCursor) -> Self {
        ApiError::InvalidCursor("the cursor was not issued by this server for this connection")
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(_) | StoreError::TableNotFound(_) => {
                tracing::warn!(error = %e, "store unavailable");
                ApiError::Unavailable
            }
            StoreError::Throttled(_) => {
                tracing::warn!(error = %e, "store throttled past the retry budget");
                ApiError::Throttled
            }
            StoreError::TransactionCanceled { ref reasons }
                if only_conflicts(reasons)
                    && reasons.iter().any(|r| matches!(r, CancelReason::Throttled)) =>
            {
                tracing::warn!(error = %e, "transaction throttled past the retry budget");
                ApiError::Throttled
            }
            // Concurrent writes kept cancelling the write past the engine's retry budget:
            // contention, not a bug; the client may try again.
            ref conflict if is_conflict(conflict) => {
                tracing::warn!(error = %e, "write contention past the retry budget");
                ApiError::Contention
            }
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::Internal
            }
        }
    }
}

/// The message of async-graphql's automatic persisted queries when it does not know a
/// hash: the client sends the query again with its hash (Apollo's protocol).
pub(super) const PERSISTED_QUERY_NOT_FOUND: &str = "PersistedQueryNotFound";

/// How async-graphql's message starts when an argument passed validation but its value
/// does not fit its type once read, e.g. an `Int` literal past 32 bits inside an input
/// object literal: the client's input, reported on the field.
const ARGUMENT_PARSE_FAILED: &str = "Failed to parse \"";

/// Errors that reach the client without a code (GraphQL parse and validation errors
/// raised by the executor itself) get one, so every error carries `extensions.code`:
/// `PERSISTED_QUERY_NOT_FOUND` for an unknown persisted-query hash (the code Apollo
/// clients look for), `GRAPHQL_VALIDATION_FAILED` for any other request error,
/// `BAD_USER_INPUT` for a field's argument that does not parse as its type.
pub fn ensure_codes(resp: &mut async_graphql::Response) {
    let request_failed = matches!(resp.data, async_graphql::Value::Null);
    for err in &mut resp.errors {
        let has_code = err
            .extensions
            .as_ref()
            .is_some_and(|e| e.get("code").is_some());
        if !has_code {
            let code = if request_failed && err.path.is_empty() {
                if err.message == PERSISTED_QUERY_NOT_FOUND {
                    "PERSISTED_QUERY_NOT_FOUND"
                } else {
                    "GRAPHQL_VALIDATION_FAILED"
                }
            } else if err.message.starts_with(ARGUMENT_PARSE_FAILED) {
                "BAD_USER_INPUT"
            } else {
                "INTERNAL"
            };
            err.extensions
                .get_or_insert_with(Default::default)
                .set("code", code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::CancelReason;

    fn extensions(e: ApiError) -> serde_json::Value {
        let err = e.extend();
        serde_json::to_value(err.extensions.expect("extensions")).expect("json")
    }

    #[test]
    fn refusals_reach_clients_with_their_code_and_details() {
        let conflict = |field: &'static str| ApiError::Conflict {
            message: format!("this {field} is already taken"),
            field: field.into(),
        };
        let cases = [
            (
                conflict("email"),
                serde_json::json!({ "code": "CONFLICT", "field": "email" }),
            ),
            (
                ApiError::Missing {
                    field: "requester".into(),
                },
                serde_json::json!({ "code": "NOT_FOUND", "field": "requester" }),
            ),
            (
                ApiError::VersionMismatch {
                    entity: "ticket".into(),
                    expected: 2,
                    current: Some(3),
                },
                serde_json::json!({
                    "code": "VERSION_MISMATCH", "expectedVersion": 2, "currentVersion": 3
                }),
            ),
            (
                ApiError::VersionMismatch {
                    entity: "order".into(),
                    expected: 2,
                    current: None,
                },
                serde_json::json!({
                    "code": "VERSION_MISMATCH", "expectedVersion": 2, "currentVersion": null
                }),
            ),
            (
                ApiError::InvalidTransition {
                    from: "DELIVERED".into(),
                    to: "PAID".into(),
                },
                serde_json::json!({ "code": "INVALID_TRANSITION", "from": "DELIVERED", "to": "PAID" }),
            ),
            (
                ApiError::BadUserInput {
                    message: "no".into(),
                    field: None,
                },
                serde_json::json!({ "code": "BAD_USER_INPUT" }),
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(extensions(error), expected);
        }
    }

    #[test]
    fn contention_and_throttling_are_retryable_and_other_cancellations_internal() {
        let cancelled = |reasons| StoreError::TransactionCanceled { reasons };
        let contention = cancelled(vec![CancelReason::None, CancelReason::TransactionConflict]);
        assert!(matches!(ApiError::from(contention), ApiError::Contention));
        let single = StoreError::TransactionConflict("ongoing".into());
        assert!(matches!(ApiError::from(single), ApiError::Contention));
        assert!(matches!(
            ApiError::from(StoreError::Throttled("slow down".into())),
            ApiError::Throttled
        ));
        for (err, code) in [
            (StoreError::Throttled("x".into()), "THROTTLED"),
            (StoreError::TransactionConflict("x".into()), "CONTENTION"),
            (StoreError::Unavailable("x".into()), "UNAVAILABLE"),
        ] {
            assert_eq!(
                extensions(err.into()),
                serde_json::json!({ "code": code, "retryable": true })
            );
        }
        let odd = cancelled(vec![
            CancelReason::TransactionConflict,
            CancelReason::ValidationError("x".into()),
        ]);
        assert!(matches!(ApiError::from(odd), ApiError::Internal));
        assert!(matches!(
            ApiError::from(cancelled(vec![CancelReason::None])),
            ApiError::Internal
        ));
    }
}
