//! The errors answered before GraphQL runs (bad requests, auth, limits, panics), each with
//! its status and a GraphQL-shaped body whose `extensions.code` names it.

use std::any::Any;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Serialize;

use crate::auth::AuthError;

use super::negotiate::Media;

/// Why a request was answered without running GraphQL. Each variant names the status and
/// the `extensions.code` of the GraphQL-shaped body the client gets.
#[derive(Debug, thiserror::Error)]
pub(super) enum HttpError {
    /// 400 `BAD_REQUEST`: not GraphQL over HTTP (malformed JSON, wrong content type, no
    /// `query`, `variables` not an object).
    #[error("{0}")]
    BadRequest(String),
    /// 413 `BAD_REQUEST`: the body is larger than the server accepts.
    #[error("the request body is too large")]
    PayloadTooLarge,
    /// 405 `BAD_REQUEST`, with `Allow: POST`: a mutation sent with GET.
    #[error("mutations are accepted with POST only")]
    MutationOverGet,
    /// 401 `UNAUTHENTICATED`, with `WWW-Authenticate: Bearer`: auth is on and the request
    /// carries no valid bearer token.
    #[error("{0}")]
    Unauthenticated(AuthError),
    /// 408 `BAD_REQUEST`: the body did not arrive whole within `--body-read-timeout-ms`.
    #[error("the request body did not arrive within {millis} ms")]
    BodyTimeout { millis: u64 },
    /// 403 `FORBIDDEN`: a page of another origin asked for a WebSocket or an event
    /// stream it may not open.
    #[error("{0}")]
    Forbidden(String),
    /// 501 `SUBSCRIPTIONS_UNAVAILABLE`: a WebSocket, an event stream or a subscription
    /// where the deployment holds no long-lived connection ([`super::LongLived::Refused`]).
    #[error("{0}")]
    LongLivedRefused(&'static str),
    /// 500 `INTERNAL`: a handler panicked or a response could not be written; logged.
    #[error("internal error")]
    Internal,
}

impl HttpError {
    pub(super) fn status(&self) -> StatusCode {
        match self {
            HttpError::BadRequest(_) => StatusCode::BAD_REQUEST,
            HttpError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            HttpError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            HttpError::MutationOverGet => StatusCode::METHOD_NOT_ALLOWED,
            HttpError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            HttpError::Forbidden(_) => StatusCode::FORBIDDEN,
            HttpError::LongLivedRefused(_) => StatusCode::NOT_IMPLEMENTED,
            HttpError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub(super) fn code(&self) -> &'static str {
        match self {
            HttpError::Internal => "INTERNAL",
            HttpError::Unauthenticated(_) => AuthError::CODE,
            HttpError::Forbidden(_) => "FORBIDDEN",
            HttpError::LongLivedRefused(_) => "SUBSCRIPTIONS_UNAVAILABLE",
            _ => "BAD_REQUEST",
        }
    }

    pub(super) fn respond(self, media: Media) -> Response {
        tracing::debug!(error = %self, "request refused");
        crate::metrics::record_error(self.code());
        let message = self.to_string();
        let body = ErrorBody {
            errors: [ErrorEntry {
                message: &message,
                extensions: ErrorCode { code: self.code() },
            }],
        };
        let body = serde_json::to_vec(&body).expect("strings serialize");
        let mut response = media.response(self.status(), body);
        match self {
            HttpError::MutationOverGet => {
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST"));
            }
            // RFC 6750: a token was sent but is not good is `invalid_token`.
            HttpError::Unauthenticated(e) => {
                let challenge = match e {
                    AuthError::Missing | AuthError::NotBearer => "Bearer",
                    _ => r#"Bearer error="invalid_token""#,
                };
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(challenge),
                );
            }
            _ => {}
        }
        response
    }
}

/// `{"errors":[{"message":…,"extensions":{"code":…}}]}`, in that key order.
#[derive(Serialize)]
pub(super) struct ErrorBody<'a> {
    errors: [ErrorEntry<'a>; 1],
}

#[derive(Serialize)]
pub(super) struct ErrorEntry<'a> {
    message: &'a str,
    extensions: ErrorCode,
}

#[derive(Serialize)]
pub(super) struct ErrorCode {
    code: &'static str,
}

/// What a panic becomes: the detail goes to the log, the client gets `INTERNAL`.
pub(super) fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = detail, "a request handler panicked");
    HttpError::Internal.respond(Media::Json)
}
