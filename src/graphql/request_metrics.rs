//! The GraphQL side of the metrics: an async-graphql extension that classifies each
//! request (operation name and type, outcome, error codes) and hands plain values to
//! [`crate::metrics`], which knows nothing of GraphQL.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextExecute, NextParseQuery, NextPrepareRequest,
    NextRequest,
};
use async_graphql::parser::types::{ExecutableDocument, OperationType};
use async_graphql::{ServerResult, Value, Variables};
use tracing::Instrument;

use super::document::selected_operation;
use super::{errors, nulls};
use crate::metrics::{operation_label, record_error, record_request};

/// The extension that records [`crate::metrics::GRAPHQL_REQUESTS`],
/// [`crate::metrics::GRAPHQL_REQUEST_DURATION`] and [`crate::metrics::GRAPHQL_ERRORS`], and runs each request in a `graphql` span (`operation`, `type`,
/// `outcome`) inside the HTTP request's span, so every store call's span and every log
/// line of the request nest under it. Registered first, so it sees the whole request,
/// the deadline's `TIMEOUT` included.
pub struct RequestMetrics;

impl ExtensionFactory for RequestMetrics {
    fn create(&self) -> Arc<dyn Extension> {
        // Called per request, inside the caller's span: the new span nests there.
        Arc::new(RequestMetricsExtension {
            span: tracing::info_span!(
                "graphql",
                operation = tracing::field::Empty,
                r#type = tracing::field::Empty,
                outcome = tracing::field::Empty,
            ),
            state: Mutex::default(),
        })
    }
}

struct RequestMetricsExtension {
    span: tracing::Span,
    /// A std Mutex is fine: held only to read or write the fields, never across an await.
    state: Mutex<RequestState>,
}

#[derive(Default)]
struct RequestState {
    /// `operationName` as the request gave it.
    requested: Option<String>,
    /// The operation's name and type once the document parsed.
    operation: Option<String>,
    ty: Option<OperationType>,
    /// Whether null propagation will null `data` whole (a failed non-null root field):
    /// the client then sees no data, so the outcome is `error`, not `partial`.
    data_nulled: bool,
}

impl RequestMetricsExtension {
    fn state(&self) -> std::sync::MutexGuard<'_, RequestState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl Extension for RequestMetricsExtension {
    async fn request(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextRequest<'_>,
    ) -> async_graphql::Response {
        let started = Instant::now();
        let resp = next.run(ctx).instrument(self.span.clone()).await;
        let took = started.elapsed();

        let (name, ty, data_nulled) = {
            let state = self.state();
            let name = state.operation.clone().or_else(|| state.requested.clone());
            (name, state.ty, state.data_nulled)
        };
        let codes = client_codes(&resp, data_nulled);
        let no_data = matches!(resp.data, Value::Null) || data_nulled;
        let outcome = if codes.is_empty() {
            "ok"
        } else if codes.iter().any(|c| c == "TIMEOUT") {
            "timeout"
        } else if no_data {
            "error"
        } else {
            "partial"
        };
        let operation = operation_label(name.as_deref());
        let kind = type_label(ty);
        self.span.record("operation", operation.as_str());
        self.span.record("type", kind);
        self.span.record("outcome", outcome);
        tracing::debug!(parent: &self.span, micros = took.as_micros() as u64, "graphql request done");
        record_request(&operation, kind, outcome, took);
        for code in &codes {
            record_error(code);
        }
        resp
    }

    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        request: async_graphql::Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<async_graphql::Request> {
        self.state().requested = request.operation_name.clone();
        next.run(ctx, request).await
    }

    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        let doc = next.run(ctx, query, variables).await?;
        let mut state = self.state();
        if let Some((name, op)) = selected_operation(&doc, state.requested.as_deref()) {
            state.operation = name.map(|n| n.to_string());
            state.ty = Some(op.node.ty);
            // Now, so the request's log lines from here on name their operation.
            self.span.record(
                "operation",
                operation_label(name.map(|n| n.as_str())).as_str(),
            );
            self.span.record("type", type_label(state.ty));
        }
        drop(state);
        Ok(doc)
    }

    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> async_graphql::Response {
        let resp = next.run(ctx, operation_name).await;
        if !resp.errors.is_empty() && !matches!(resp.data, Value::Null) {
            // `graphql::execute` applies null propagation after the extensions have run;
            // ask it now, on a copy, whether the client will see any data. Only responses
            // with errors pay for the copy.
            if let Some(nulls) = ctx.data_opt::<Arc<nulls::NullState>>() {
                let mut data = resp.data.clone();
                nulls.apply(&mut data);
                self.state().data_nulled = matches!(data, Value::Null);
            }
        }
        resp
    }
}

/// The `extensions.code` of each error as the client will see it: `graphql::execute` gives
/// the executor's own errors their codes after the extensions ran, with
/// [`errors::ensure_codes`], which is asked here on a copy of the errors.
fn client_codes(resp: &async_graphql::Response, data_nulled: bool) -> Vec<String> {
    if resp.errors.is_empty() {
        return Vec::new();
    }
    let mut probe = async_graphql::Response::from_errors(resp.errors.clone());
    if !matches!(resp.data, Value::Null) && !data_nulled {
        // Only whether `data` is null matters to `ensure_codes`.
        probe.data = Value::Object(Default::default());
    }
    errors::ensure_codes(&mut probe);
    probe
        .errors
        .iter()
        .map(
            |e| match e.extensions.as_ref().and_then(|x| x.get("code")) {
                Some(Value::String(code)) => code.clone(),
                _ => "INTERNAL".to_owned(),
            },
        )
        .collect()
}

fn type_label(ty: Option<OperationType>) -> &'static str {
    match ty {
        Some(OperationType::Query) => "query",
        Some(OperationType::Mutation) => "mutation",
        Some(OperationType::Subscription) => "subscription",
        None => "unknown",
    }
}
