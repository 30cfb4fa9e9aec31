//! The GraphQL side of the metrics: each request classified once its response is final
//! (operation name and type, outcome, error codes) and handed as plain values to
//! [`crate::metrics`], which knows nothing of GraphQL.

use std::time::Duration;

use async_graphql::parser::types::OperationType;
use async_graphql::Value;

use crate::metrics::{operation_label, record_error, record_request};

/// A request's span: `graphql` (`operation`, `type`, `outcome`) inside the HTTP
/// request's span, so every store call's span and every log line of the request nest
/// under it.
pub fn span() -> tracing::Span {
    tracing::info_span!(
        "graphql",
        operation = tracing::field::Empty,
        r#type = tracing::field::Empty,
        outcome = tracing::field::Empty,
    )
}

/// Names the request's operation in its span, as soon as it is known, so the request's
/// log lines from there on name it.
pub fn name(span: &tracing::Span, operation: Option<&str>, ty: Option<OperationType>) {
    span.record("operation", operation_label(operation).as_str());
    span.record("type", type_label(ty));
}

/// Records [`crate::metrics::GRAPHQL_REQUESTS`], [`crate::metrics::GRAPHQL_REQUEST_DURATION`]
/// and [`crate::metrics::GRAPHQL_ERRORS`] for a response as the client sees it (null
/// propagation applied, every error with its code), `took` after it started.
pub fn record(
    span: &tracing::Span,
    operation: Option<&str>,
    ty: Option<OperationType>,
    resp: &async_graphql::Response,
    took: Duration,
) {
    let (outcome, codes) = outcome(resp);
    let operation = operation_label(operation);
    let kind = type_label(ty);
    span.record("operation", operation.as_str());
    span.record("type", kind);
    span.record("outcome", outcome);
    tracing::debug!(parent: span, micros = took.as_micros() as u64, "graphql request done");
    record_request(&operation, kind, outcome, took);
    for code in codes {
        record_error(code);
    }
}

/// A response's `outcome` (`ok`, `partial`, `error`, `timeout`) and each error's code.
pub fn outcome(resp: &async_graphql::Response) -> (&'static str, Vec<&str>) {
    let codes: Vec<&str> = resp
        .errors
        .iter()
        .map(
            |e| match e.extensions.as_ref().and_then(|x| x.get("code")) {
                Some(Value::String(code)) => code.as_str(),
                _ => "INTERNAL",
            },
        )
        .collect();
    let outcome = if codes.is_empty() {
        "ok"
    } else if codes.contains(&"TIMEOUT") {
        "timeout"
    } else if matches!(resp.data, Value::Null) {
        "error"
    } else {
        "partial"
    };
    (outcome, codes)
}

/// Ends a GraphQL request's OpenTelemetry span (or a subscription event's) with its
/// outcome and error codes; an error status when no data came back.
pub fn end_span(cx: &opentelemetry::Context, resp: &async_graphql::Response) {
    use opentelemetry::{KeyValue, StringValue, Value as Otel};
    let (outcome, codes) = outcome(resp);
    let mut attributes = vec![KeyValue::new("itemgraph.graphql.outcome", outcome)];
    if !codes.is_empty() {
        let values: Vec<StringValue> = codes.iter().map(|c| (*c).to_owned().into()).collect();
        attributes.push(KeyValue::new(
            "itemgraph.graphql.error_codes",
            Otel::Array(values.into()),
        ));
    }
    let error = matches!(outcome, "error" | "timeout")
        .then(|| std::borrow::Cow::Owned(codes.first().copied().unwrap_or("INTERNAL").to_owned()));
    crate::telemetry::end(cx, attributes, error);
}

/// The span name and attributes the GraphQL semantic conventions give an operation.
/// The operation's name is cut to [`crate::telemetry::MAX_OPERATION_NAME_BYTES`].
pub fn span_naming(
    operation: Option<&str>,
    ty: OperationType,
) -> (String, Vec<opentelemetry::KeyValue>) {
    use opentelemetry::KeyValue;
    let kind = type_label(Some(ty));
    let mut attributes = vec![KeyValue::new("graphql.operation.type", kind)];
    let name = match operation {
        Some(op) => {
            // Client-chosen, as long as the body: cut before it is copied twice.
            let op = crate::telemetry::truncated(op, crate::telemetry::MAX_OPERATION_NAME_BYTES);
            attributes.push(KeyValue::new("graphql.operation.name", op.to_owned()));
            format!("{kind} {op}")
        }
        None => kind.to_owned(),
    };
    (name, attributes)
}

fn type_label(ty: Option<OperationType>) -> &'static str {
    match ty {
        Some(OperationType::Query) => "query",
        Some(OperationType::Mutation) => "mutation",
        Some(OperationType::Subscription) => "subscription",
        None => "unknown",
    }
}
