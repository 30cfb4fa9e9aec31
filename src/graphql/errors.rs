//! The errors clients see: every one carries `extensions.code`.

use async_graphql::ErrorExtensions;

use crate::collections::RepoError;
use crate::graphql::cursor::InvalidCursor;
use crate::keys::KeyError;
use crate::store::StoreError;

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
    /// `UNAVAILABLE`: the store cannot be reached, or throttles past the retry budget.
    #[error("the data store is unavailable; try again")]
    Unavailable,
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
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::Unavailable => "UNAVAILABLE",
            ApiError::Internal => "INTERNAL",
        }
    }
}

impl ErrorExtensions for ApiError {
    fn extend(&self) -> async_graphql::Error {
        async_graphql::Error::new(self.to_string()).extend_with(|_, e| {
            e.set("code", self.code());
            if let ApiError::BadUserInput {
                field: Some(field), ..
            } = self
            {
                e.set("field", field.as_str());
            }
        })
    }
}

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> Self {
        ApiError::BadUserInput {
            field: Some(e.field().to_owned()),
            message: e.to_string(),
        }
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
            StoreError::Unavailable(_)
            | StoreError::Throttled(_)
            | StoreError::TableNotFound(_) => {
                tracing::warn!(error = %e, "store unavailable");
                ApiError::Unavailable
            }
            other => {
                tracing::error!(error = %other, "store error");
                ApiError::Internal
            }
        }
    }
}

impl From<RepoError> for ApiError {
    fn from(e: RepoError) -> Self {
        match e {
            RepoError::Key(k) => k.into(),
            RepoError::InvalidPage(_) => {
                ApiError::InvalidCursor("the cursor does not belong to this connection")
            }
            RepoError::Invalid(message) => ApiError::BadUserInput {
                message,
                field: None,
            },
            RepoError::NotFound(what) => ApiError::NotFound(what.to_owned()),
            RepoError::Store(s) => s.into(),
            other => {
                tracing::error!(error = %other, "repository error");
                ApiError::Internal
            }
        }
    }
}

/// Errors that reach the client without a code (GraphQL parse and validation errors
/// raised by the executor itself) get one, so every error carries `extensions.code`.
pub fn ensure_codes(resp: &mut async_graphql::Response) {
    let request_failed = matches!(resp.data, async_graphql::Value::Null);
    for err in &mut resp.errors {
        let has_code = err
            .extensions
            .as_ref()
            .is_some_and(|e| e.get("code").is_some());
        if !has_code {
            let code = if request_failed && err.path.is_empty() {
                "GRAPHQL_VALIDATION_FAILED"
            } else {
                "INTERNAL"
            };
            err.extensions
                .get_or_insert_with(Default::default)
                .set("code", code);
        }
    }
}
