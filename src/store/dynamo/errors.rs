//! The one place SDK errors become the port's [`StoreError`]s.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::CancellationReason;

use super::convert::from_sdk_item;
use crate::store::{CancelReason, StoreError, StoreResult};

/// A request the SDK refused to build: a bug here, never the caller's input.
pub(super) fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(format!("building the DynamoDB request: {e}"))
}

/// The one place SDK errors become [`StoreError`]s, for every operation: transport failures
/// by `SdkError` variant, service errors by DynamoDB's error code, and the two errors that
/// carry items (`ConditionalCheckFailedException`, `TransactionCanceledException`) through
/// the SDK's service-wide [`aws_sdk_dynamodb::Error`], which every operation error converts to.
pub(super) fn store_error<E, R>(table: &str, err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: RawStatus + std::fmt::Debug + Send + Sync + 'static,
    aws_sdk_dynamodb::Error: From<SdkError<E, R>>,
{
    let detail = DisplayErrorContext(&err).to_string();
    let server_side = match &err {
        SdkError::ServiceError(e) => e.raw().server_error(),
        SdkError::ConstructionFailure(_) => return StoreError::Internal(detail),
        // Timeouts, refused or reset connections, and responses cut off mid-way.
        _ => return StoreError::Unavailable(detail),
    };
    let message = err.message().unwrap_or_default().to_owned();
    match err.code().unwrap_or_default() {
        "ResourceNotFoundException" => StoreError::TableNotFound(table.to_owned()),
        "ProvisionedThroughputExceededException"
        | "RequestLimitExceeded"
        | "ThrottlingException" => StoreError::Throttled(message),
        "ValidationException" => StoreError::Validation(message),
        "TransactionConflictException" => StoreError::TransactionConflict(message),
        // The same client request token is still being applied (an earlier attempt timed
        // out): past the SDK's retries the outcome is unknown.
        "TransactionInProgressException" => StoreError::Unavailable(detail),
        // The service failing, not the request: what the retries did not get past is an
        // outage for the client, who may try again, not a bug to look for in the log.
        "ServiceUnavailable" | "InternalServerError" => StoreError::Unavailable(detail),
        // A 5xx without a DynamoDB error body: a proxy or load balancer in front of the
        // endpoint answering for a service it cannot reach.
        "" if server_side => StoreError::Unavailable(detail),
        _ => match aws_sdk_dynamodb::Error::from(err) {
            aws_sdk_dynamodb::Error::ConditionalCheckFailedException(e) => {
                match e.item.map(from_sdk_item).transpose() {
                    Ok(item) => StoreError::ConditionFailed {
                        item: item.map(Box::new),
                    },
                    Err(e) => e,
                }
            }
            aws_sdk_dynamodb::Error::TransactionCanceledException(e) => {
                match e
                    .cancellation_reasons
                    .unwrap_or_default()
                    .into_iter()
                    .map(cancel_reason)
                    .collect()
                {
                    Ok(reasons) => StoreError::TransactionCanceled { reasons },
                    Err(e) => e,
                }
            }
            _ => StoreError::Internal(detail),
        },
    }
}

/// The HTTP status class of a raw response, which [`store_error`] needs for a service
/// error without a DynamoDB error code.
pub(super) trait RawStatus {
    /// Whether the status is 5xx.
    fn server_error(&self) -> bool;
}

impl RawStatus for HttpResponse {
    fn server_error(&self) -> bool {
        self.status().is_server_error()
    }
}

pub(super) fn cancel_reason(r: CancellationReason) -> StoreResult<CancelReason> {
    let message = r.message.unwrap_or_default();
    Ok(match r.code.as_deref() {
        None | Some("None") => CancelReason::None,
        Some("ConditionalCheckFailed") => CancelReason::ConditionalCheckFailed {
            item: r.item.map(from_sdk_item).transpose()?,
        },
        Some("TransactionConflict") => CancelReason::TransactionConflict,
        Some("ThrottlingError" | "ProvisionedThroughputExceeded") => CancelReason::Throttled,
        Some("ValidationError") => CancelReason::ValidationError(message),
        Some(code) => CancelReason::Other {
            code: code.to_owned(),
            message,
        },
    })
}
