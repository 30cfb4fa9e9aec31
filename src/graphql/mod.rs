//! The GraphQL API: schema, resolvers and what each request carries. It knows nothing of
//! HTTP: [`execute`] runs a request against a store and is what the HTTP layer and the
//! tests both call.
//!
//! The schema is built at start from a chart (`charts/itemgraph.toml` unless `--chart`
//! names another):
//!
//! - [`schema`]: the chart's types and roots on async-graphql's dynamic schema, built once
//!   at start; [`resolve`] its fields' resolvers (root fields reading ahead, connections,
//!   references, `node`); [`read`] the reads, each its pattern's resolved plan filled in;
//!   [`record`] items decoded and named by global id; [`mutate`] the mutations, each
//!   running its resolved plan; [`live`] the subscriptions, their streams in
//!   [`subscription`], over [`crate::live`]; [`cost`] what a document may read;
//!   [`examples`] the playground's tabs; [`generate`] the inputs of `seed --generate`;
//! - [`connection`]: Relay paging from last-seen keys, names no entity;
//! - [`context`]: what a request carries; [`loaders`]: the DataLoader batches;
//! - [`input`]: the check every mutation makes on a text;
//! - [`cursor`], [`errors`]: opaque cursors, error codes (global ids: [`record`]);
//!   [`scalars`]: money as exact `Cents`;
//! - [`limits`] and [`operation`]: what one request may cost, enforced on the document;
//!   [`document_cache`]: the cache of parsed and validated documents;
//!   [`request_metrics`]: each request's outcome handed to [`crate::metrics`];
//!   [`null_propagation`]: the spec's null propagation for fields that fail.

pub(crate) mod connection;
mod context;
pub mod cost;
mod cursor;
mod document_cache;
mod errors;
mod examples;
pub mod generate;
mod input;
mod limits;
mod live;
mod loader_wait;
mod loaders;
pub(crate) mod mutate;
mod null_propagation;
mod operation;
pub(crate) mod read;
pub mod record;
mod request_metrics;
mod resolve;
pub(crate) mod scalars;
mod schema;
#[cfg(test)]
pub(crate) mod served;
mod subscription;

use std::sync::Arc;
use std::time::Instant;

use async_graphql::parser::types::OperationType;
use async_graphql::registry::Registry;
use async_graphql::{Name, SchemaEnv, ValidationMode, Value};
use futures::{Stream, StreamExt};
use opentelemetry::trace::SpanKind;
use tracing::Instrument;

use crate::auth::Access;
use crate::live::Hub;
use crate::store::trace::{Trace, TracedStore};
use crate::store::Store;
use crate::telemetry;

pub use context::RequestContext;
pub use cursor::{CursorCodec, InvalidCursor};
pub use errors::ApiError;
pub(crate) use limits::check_text;
pub use limits::{page_cost, Limits, MAX_PERSISTED_QUERY_BYTES};
pub use operation::selected_operation;
pub use subscription::TokenExpiry;

pub use examples::{examples, write_examples};
pub(crate) use mutate::shard_items;
pub use read::{connection_of, item_loader, pattern_query, ItemLoader};
pub use resolve::{Conn, Obj};
use schema::{argument, connection_arguments, map_elements, type_ref};
pub use schema::{build, types, ErrorPaths, SchemaType};
pub(crate) use schema::{lower_first, upper_first};

/// What runs requests: async-graphql's dynamic schema, built from a chart.
pub(crate) type Runner = async_graphql::dynamic::Schema;

/// The executable schema: the one that runs requests (no extensions, so no per-field
/// hooks, and validation in async-graphql's fast mode), the one that checks each new
/// document in full ([`document_cache::Check`]), and the cache of documents they share. Cheap
/// to clone.
#[derive(Clone)]
pub struct ItemgraphSchema(Arc<Parts>);

struct Parts {
    runner: Runner,
    checker: Runner,
    env: SchemaEnv,
    documents: document_cache::Documents,
    limits: Limits,
    /// The chart's lists, by (type, field), for the cost of a document ([`cost`]).
    lists: Arc<Vec<(String, String)>>,
}

impl ItemgraphSchema {
    /// The schema's SDL.
    pub fn sdl(&self) -> String {
        self.0.runner.sdl()
    }

    fn registry(&self) -> &Registry {
        &self.0.env.registry
    }

    /// The request's document from the cache, or prepared now ([`document_cache`]).
    async fn prepare(
        &self,
        request: &mut async_graphql::Request,
    ) -> Result<Arc<document_cache::Prepared>, document_cache::Refused> {
        let parts = &self.0;
        parts
            .documents
            .prepare(&parts.checker, self.registry(), request, &parts.lists)
            .await
    }
}

/// Builds the schema with the default [`Limits`]. Request-specific data comes with each
/// request (see [`execute`]).
pub fn schema() -> ItemgraphSchema {
    schema_with(&Limits::default())
}

/// Builds the schema enforcing `limits`: the built-in chart's ([`chart_schema`]), its
/// reads, mutations and subscriptions.
pub fn schema_with(limits: &Limits) -> ItemgraphSchema {
    chart_schema(crate::chart::builtin(), limits)
        .unwrap_or_else(|e| panic!("the built-in chart's schema: {e}"))
}

/// The schema built from `chart` at start, enforcing `limits`: its types and roots
/// ([`schema`]).
pub fn chart_schema(
    chart: Arc<crate::chart::Chart>,
    limits: &Limits,
) -> Result<ItemgraphSchema, async_graphql::dynamic::SchemaError> {
    // The chart's schema has no per-field cost of its own: the checker computes it
    // ([`cost`]), so async-graphql's uniform count stays off.
    let mut runner = schema::build(chart.clone())
        .extension(schema::ErrorPaths)
        .validation_mode(ValidationMode::Fast)
        .limit_depth(limits.max_depth);
    let env = Arc::new(std::sync::OnceLock::new());
    let lists: Vec<(String, String)> = chart
        .entities
        .values()
        .flat_map(|e| e.lists.keys().map(|l| (e.name.clone(), l.clone())))
        .collect();
    let lists = Arc::new(lists);
    let mut checker = schema::build(chart).extension(document_cache::Check {
        limits: *limits,
        env: env.clone(),
        cost: lists.clone(),
    });
    if !limits.introspection {
        runner = runner.disable_introspection();
        checker = checker.disable_introspection();
    }
    Ok(finish(
        runner.finish()?,
        checker.finish()?,
        &env,
        limits,
        lists,
    ))
}

fn finish(
    runner: Runner,
    checker: Runner,
    env: &std::sync::OnceLock<SchemaEnv>,
    limits: &Limits,
    lists: Arc<Vec<(String, String)>>,
) -> ItemgraphSchema {
    // The checker hands out the schema's environment (its type registry) when it first
    // validates; nothing in this request waits on anything.
    futures::executor::block_on(checker.execute(async_graphql::Request::new("{ __typename }")));
    let env = env
        .get()
        .cloned()
        .expect("the checker validates `{ __typename }` and records the schema's environment");
    ItemgraphSchema(Arc::new(Parts {
        runner,
        checker,
        env,
        documents: document_cache::Documents::new(*limits),
        limits: *limits,
        lists,
    }))
}

/// The schema's SDL, exactly as served (also `itemgraph schema` and `schema.graphql`).
pub fn sdl() -> String {
    schema().sdl()
}

/// async-graphql's own messages for its depth and complexity limits, which the runner
/// meets only when other variables make a cached document cost more.
const GENERIC_LIMIT_MESSAGES: [&str; 2] = ["Query is too complex.", "Query is nested too deep."];

/// Runs one GraphQL request for a caller with `access`. With `trace`, every store call it
/// makes is listed in `extensions.dynamodb` (without item counts for a tenant). Every
/// error in the response carries `extensions.code`. A subscription is refused here: it
/// runs through [`subscribe`]. The request runs in a `graphql` span, records its
/// metrics, and is cancelled at the deadline ([`Limits::request_timeout`]).
pub async fn execute(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    access: Access,
    request: async_graphql::Request,
    trace: bool,
) -> async_graphql::Response {
    let span = request_metrics::span();
    let started = Instant::now();
    let requested = request.operation_name.clone();
    let named = std::sync::OnceLock::new();
    let deadline = schema.0.limits.request_timeout;
    let otel = telemetry::child("graphql", SpanKind::Internal, || {
        request_attributes(&access)
    });
    let run = run(
        schema, store, cursors, access, request, trace, &named, &span,
    );
    let run = loader_wait::in_place(run.instrument(span.clone()));
    let run = telemetry::within(otel.as_ref(), tokio::time::timeout(deadline, run));
    let mut resp = match run.await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::warn!(parent: &span, ?deadline, "request cancelled at its deadline");
            let millis = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX);
            async_graphql::Response::from_errors(vec![
                errors::ApiError::Timeout { millis }.server_error()
            ])
        }
    };
    errors::ensure_codes(&mut resp);
    let (operation, ty) = match named.get() {
        Some((name, ty)) => (name.as_deref().or(requested.as_deref()), Some(*ty)),
        None => (requested.as_deref(), None),
    };
    request_metrics::record(&span, operation, ty, &resp, started.elapsed());
    if let Some(otel) = otel {
        request_metrics::end_span(&otel, &resp);
    }
    resp
}

/// What a traced request's span holds from the start: the caller's organization, where
/// the operator allowed it ([`telemetry::ORGANIZATION_ATTRIBUTE`]).
fn request_attributes(access: &Access) -> Vec<opentelemetry::KeyValue> {
    let records = opentelemetry::Context::map_current(|cx| {
        cx.get::<telemetry::Telemetry>()
            .is_some_and(telemetry::Telemetry::records_organization)
    });
    match access {
        Access::Tenant { org, .. } if records => vec![opentelemetry::KeyValue::new(
            telemetry::ORGANIZATION_ATTRIBUTE,
            org.to_string(),
        )],
        _ => Vec::new(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn run(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    access: Access,
    request: async_graphql::Request,
    trace: bool,
    named: &std::sync::OnceLock<(Option<String>, OperationType)>,
    span: &tracing::Span,
) -> async_graphql::Response {
    let recorder = trace.then(|| Arc::new(Trace::default()));
    let store: Arc<dyn Store> = match &recorder {
        Some(t) => Arc::new(TracedStore::new(store, t.clone())),
        None => store,
    };
    let tenant = matches!(access, Access::Tenant { .. });
    let mut resp = respond(schema, store, cursors, access, request, named, span).await;
    errors::ensure_codes(&mut resp);
    if let Some(t) = recorder {
        resp.extensions
            .insert("dynamodb".to_owned(), trace_extension(&t.entries(), tenant));
    }
    resp
}

/// `extensions.dynamodb`: the request count and the calls, written straight into GraphQL
/// values (no `serde_json` tree in between), keys in alphabetical order as before. A
/// read's item count (or the capacity it consumed, which grows with what it read) would
/// tell a tenant that another organization's ticket or order exists where the answer says
/// it does not, and a Scan's items read would count other tenants' items: tenants see the
/// requests only.
fn trace_extension(requests: &[crate::store::trace::TraceEntry], tenant: bool) -> Value {
    let calls = requests
        .iter()
        .map(|r| {
            let mut call = async_graphql::to_value(r).unwrap_or_default();
            if let Value::Object(fields) = &mut call {
                if tenant {
                    fields.shift_remove("itemCount");
                    fields.shift_remove("scannedCount");
                    fields.shift_remove("consumedCapacity");
                }
                fields.sort_keys();
            }
            call
        })
        .collect();
    let mut ext = async_graphql::indexmap::IndexMap::new();
    ext.insert(Name::new("requestCount"), Value::from(requests.len()));
    ext.insert(Name::new("requests"), Value::List(calls));
    Value::Object(ext)
}

/// The request's document prepared ([`document_cache`]), then run by the runner, with null
/// propagation applied.
async fn respond(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    access: Access,
    mut request: async_graphql::Request,
    named: &std::sync::OnceLock<(Option<String>, OperationType)>,
    span: &tracing::Span,
) -> async_graphql::Response {
    let parts = &schema.0;
    let prepared = match schema.prepare(&mut request).await {
        Ok(prepared) => prepared,
        Err(refused) => {
            if let Some(op) = refused.operation {
                let _ = named.set(op);
            }
            return async_graphql::Response::from_errors(refused.errors);
        }
    };
    let _ = named.set((prepared.operation.clone(), prepared.ty));
    request_metrics::name(span, prepared.operation.as_deref(), Some(prepared.ty));
    if telemetry::recording() {
        let (name, mut attributes) =
            request_metrics::span_naming(prepared.operation.as_deref(), prepared.ty);
        attributes.push(opentelemetry::KeyValue::new(
            "graphql.document.hash",
            document_hash(&request.query),
        ));
        telemetry::annotate(Some(name), || attributes);
    }
    let Some(operation) = prepared.selected() else {
        return async_graphql::Response::from_errors(vec![async_graphql::ServerError::new(
            "Operation name required in request.",
            None,
        )]);
    };
    // Kept only for the rare request that other variables make cost more than its
    // document did: the checker then says by how much.
    let variables =
        (!operation.node.variable_definitions.is_empty()).then(|| request.variables.clone());
    request.set_parsed_query(prepared.doc.clone());
    let ctx = RequestContext::new(store, cursors, access);
    let mut resp = parts.runner.execute(request.data(ctx)).await;
    if let Some(variables) = variables {
        let refused = matches!(resp.data, async_graphql::Value::Null)
            && resp
                .errors
                .iter()
                .any(|e| GENERIC_LIMIT_MESSAGES.contains(&e.message.as_str()));
        if refused {
            let errors = document_cache::full_validation(
                &parts.checker,
                &prepared.doc,
                prepared.operation.clone(),
                variables,
            )
            .await;
            if !errors.is_empty() {
                return async_graphql::Response::from_errors(errors);
            }
        }
    }
    null_propagation::propagate(schema.registry(), &prepared.doc, &operation.node, &mut resp);
    resp
}

/// The errors that refuse a request before any of it runs (its document does not parse,
/// breaks a limit or does not validate, its variables do not fit), coded as an answer
/// carries them; `None` when it may run. The check is cached, so running the request
/// after it checks nothing twice.
pub async fn refusal(
    schema: &ItemgraphSchema,
    request: &mut async_graphql::Request,
) -> Option<Vec<async_graphql::ServerError>> {
    let refused = schema.prepare(request).await.err()?;
    let mut resp = async_graphql::Response::from_errors(refused.errors);
    errors::ensure_codes(&mut resp);
    Some(resp.errors)
}

/// Runs one subscription for a caller with `access` (whose token expires at `expiry`):
/// its responses, one per event, each with null propagation applied and every error
/// given its `extensions.code`, as [`execute`] does. The changes come from `hub`.
#[allow(clippy::too_many_arguments)]
pub fn subscribe(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    hub: Arc<Hub>,
    access: Access,
    expiry: subscription::TokenExpiry,
    mut request: async_graphql::Request,
    trace: bool,
) -> impl Stream<Item = async_graphql::Response> + Send + 'static {
    let schema = schema.clone();
    // With the trace, each event carries the store calls resolving it made (drained from
    // one recorder as each event leaves) and, but for a tenant, where in the change
    // stream it was read.
    let recorder = trace.then(|| Arc::new(Trace::default()));
    let store: Arc<dyn Store> = match &recorder {
        Some(t) => Arc::new(TracedStore::new(store, t.clone())),
        None => store,
    };
    let tenant = matches!(access, Access::Tenant { .. });
    let position = subscription::EventPosition::default();
    futures::stream::once(async move {
        let prepared = match schema.prepare(&mut request).await {
            Ok(prepared) => prepared,
            Err(refused) => {
                let mut resp = async_graphql::Response::from_errors(refused.errors);
                errors::ensure_codes(&mut resp);
                return futures::stream::once(async { resp }).boxed();
            }
        };
        request.set_parsed_query(prepared.doc.clone());
        let traced = telemetry::recording().then(|| {
            let (name, mut attributes) =
                request_metrics::span_naming(prepared.operation.as_deref(), prepared.ty);
            attributes.push(opentelemetry::KeyValue::new(
                "graphql.document.hash",
                document_hash(&request.query),
            ));
            attributes.extend(request_attributes(&access));
            (telemetry::current(), name, attributes)
        });
        let slot = telemetry::EventSlot::default();
        let ctx = RequestContext::new(store, cursors, access);
        let mut request = request.data(ctx).data(hub).data(expiry);
        if recorder.is_some() {
            request = request.data(position.clone());
        }
        if let Some((_, name, attributes)) = &traced {
            request = request.data(EventSpan {
                slot: slot.clone(),
                name: name.clone(),
                attributes: attributes.clone(),
            });
        }
        let events = schema.0.runner.execute_stream(request);
        let events = match traced {
            Some((base, _, _)) => telemetry::per_event(base, slot, events, |cx, resp| {
                request_metrics::end_span(cx, resp)
            })
            .boxed(),
            None => events.boxed(),
        };
        let schema = schema.clone();
        events
            .map(move |mut resp| {
                if let Some(operation) = prepared.selected() {
                    null_propagation::propagate(
                        schema.registry(),
                        &prepared.doc,
                        &operation.node,
                        &mut resp,
                    );
                }
                errors::ensure_codes(&mut resp);
                if let Some(t) = &recorder {
                    let mut ext = trace_extension(&t.take(), tenant);
                    if let (Value::Object(fields), Some((shard, sequence)), false) =
                        (&mut ext, position.take(), tenant)
                    {
                        let mut at = async_graphql::indexmap::IndexMap::new();
                        at.insert(Name::new("sequence"), Value::from(sequence));
                        at.insert(Name::new("shard"), Value::from(shard));
                        fields.insert(Name::new("stream"), Value::Object(at));
                    }
                    resp.extensions.insert("dynamodb".to_owned(), ext);
                }
                resp
            })
            .boxed()
    })
    .flatten()
}

/// How a traced subscription names the span of each of its events
/// ([`telemetry::EventSlot`]): as its operation, so an event reads like a request.
#[derive(Clone)]
pub(crate) struct EventSpan {
    pub slot: telemetry::EventSlot,
    pub name: String,
    pub attributes: Vec<opentelemetry::KeyValue>,
}

/// `graphql.document.hash`: the SHA-256 of the document's text, in hex, as automatic
/// persisted queries name it; the text itself (and its literals) stays out of the span.
fn document_hash(text: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
