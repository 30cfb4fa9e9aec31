//! The GraphQL API: schema, resolvers and what each request carries. It knows nothing of
//! HTTP: [`execute`] runs a request against a store and is what the HTTP layer and the
//! tests both call.
//!
//! Data flows one way: the entity files resolve fields through the shared files below
//! them, which read through [`crate::collections`]; no file imports an entity file.
//!
//! - One file per entity, each holding its type's fields, its root query fields and its
//!   mutations: [`org`] (`Organization`), [`user`] (`User`), [`ticket`] (`Ticket`),
//!   [`order`] (`Order`, `OrderLine`); [`node`] answers `node` and `nodes`.
//! - [`objects`]: the type catalogue, thin newtypes over the model records, and the
//!   loading of references between them.
//! - [`prefetch`]: the look-ahead that turns a parent and the first page of its children
//!   into one Query, and the pages it hands down.
//! - [`connection`]: Relay connections over item collections, paging from last-seen keys;
//!   names no entity.
//! - [`context`]: what a request carries; [`loaders`]: its DataLoader batching GetItem
//!   into BatchGetItem.
//! - [`input`]: the checks every mutation makes before any request.
//! - [`cursor`], [`ids`], [`errors`]: opaque cursors, global ids, error codes;
//!   [`scalars`]: money as exact `Cents`, every `Int` within 32 bits.
//! - [`limits`] and [`document`]: what one request may cost, enforced on the document;
//!   [`request_metrics`]: the extension that hands each request's outcome to
//!   [`crate::metrics`]; [`nulls`]: the spec's null propagation for fields that fail.

pub mod connection;
pub mod context;
pub mod cursor;
pub mod document;
pub mod errors;
pub mod ids;
pub mod input;
pub mod limits;
pub mod loaders;
pub mod node;
pub mod nulls;
pub mod objects;
pub mod order;
pub mod org;
pub mod prefetch;
pub mod request_metrics;
pub mod scalars;
pub mod subscription;
pub mod ticket;
pub mod user;

use std::sync::Arc;

use async_graphql::extensions::apollo_persisted_queries::{
    ApolloPersistedQueries, LruCacheStorage,
};
use async_graphql::{MergedObject, Schema};
use futures::{Stream, StreamExt};

use crate::auth::Access;
use crate::live::Hub;
use crate::store::trace::{Trace, TracedStore};
use crate::store::Store;

pub use context::RequestContext;
pub use document::selected_operation;
pub use limits::{page_cost, Limits, MAX_PERSISTED_QUERY_BYTES};

// The root query: the fields of each entity's file, in this order in the schema. (Plain
// comments: a doc comment here would become a description in the SDL.)
#[derive(MergedObject, Default)]
pub struct Query(
    org::OrgQuery,
    user::UserQuery,
    ticket::TicketQuery,
    order::OrderQuery,
    node::NodeQuery,
);

// The root mutations. Each takes one `…Input` object and answers a `…Payload` holding
// what it changed, Relay style, in three steps: **check** the whole input before any
// request ([`input`]); **write** with the one access pattern of [`crate::collections`]
// that does it; **answer** what it wrote. Subscribers learn of the write from the table's
// change stream ([`subscription`]), not from here. Mutations of one request run one after the other (the spec's serial
// execution of the mutation root), and each makes the request forget what it had read
// before, so the fields selected under a payload see the write (see
// [`RequestContext::after_write`]).
#[derive(MergedObject, Default)]
pub struct Mutation(
    org::OrgMutation,
    user::UserMutation,
    ticket::TicketMutation,
    order::OrderMutation,
);

pub use cursor::CursorCodec;

/// The executable schema.
pub type ItemgraphSchema = Schema<Query, Mutation, subscription::Subscription>;

/// Builds the schema with the default [`Limits`]. Request-specific data comes with each
/// request (see [`execute`]).
pub fn schema() -> ItemgraphSchema {
    schema_with(&Limits::default())
}

/// Builds the schema enforcing `limits`.
pub fn schema_with(limits: &Limits) -> ItemgraphSchema {
    // Metrics outermost, so they see the deadline's TIMEOUT; then the limits: their
    // deadline covers every other extension too, and their persisted-query size check
    // runs before APQ caches anything.
    let mut builder = Schema::build(
        Query::default(),
        Mutation::default(),
        subscription::Subscription,
    )
    .extension(request_metrics::RequestMetrics)
    .extension(limits::RequestLimits(*limits));
    if limits.persisted_queries > 0 {
        builder = builder.extension(ApolloPersistedQueries::new(LruCacheStorage::new(
            limits.persisted_queries,
        )));
    }
    if !limits.introspection {
        builder = builder.disable_introspection();
    }
    builder.extension(nulls::NullPropagation).finish()
}

/// The schema's SDL, exactly as served (also `itemgraph schema` and `schema.graphql`).
pub fn sdl() -> String {
    schema().sdl()
}

/// Runs one GraphQL request for a caller with `access`. With `trace`, every store call it
/// makes is listed in `extensions.dynamodb` (without item counts for a tenant). Every
/// error in the response carries `extensions.code`. A subscription is refused here: it
/// runs through [`subscribe`].
pub async fn execute(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    access: Access,
    request: async_graphql::Request,
    trace: bool,
) -> async_graphql::Response {
    let recorder = trace.then(|| Arc::new(Trace::default()));
    let store: Arc<dyn Store> = match &recorder {
        Some(t) => Arc::new(TracedStore::new(store, t.clone())),
        None => store,
    };
    let tenant = matches!(access, Access::Tenant { .. });
    let ctx = RequestContext::new(store, cursors, access);
    let nulls = Arc::new(nulls::NullState::default());
    let mut resp = schema.execute(request.data(ctx).data(nulls.clone())).await;
    nulls.apply(&mut resp.data);
    errors::ensure_codes(&mut resp);
    if let Some(t) = recorder {
        let requests = t.entries();
        let mut value = serde_json::json!({
            "requestCount": requests.len(),
            "requests": requests,
        });
        if tenant {
            // A read's item count (or the capacity it consumed, which grows with what it
            // read) would tell a tenant that another organization's ticket or order exists
            // where the answer says it does not: tenants see the requests only.
            if let Some(requests) = value["requests"].as_array_mut() {
                for r in requests
                    .iter_mut()
                    .filter_map(serde_json::Value::as_object_mut)
                {
                    r.remove("itemCount");
                    r.remove("consumedCapacity");
                }
            }
        }
        resp.extensions.insert(
            "dynamodb".to_owned(),
            async_graphql::Value::from_json(value).unwrap_or_default(),
        );
    }
    resp
}

/// Runs one subscription for a caller with `access` (whose token expires at `expiry`):
/// its responses, one per event, each with null propagation applied and every error
/// given its `extensions.code`, as [`execute`] does. The changes come from `hub`.
pub fn subscribe(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    hub: Arc<Hub>,
    access: Access,
    expiry: subscription::TokenExpiry,
    request: async_graphql::Request,
) -> impl Stream<Item = async_graphql::Response> + Send + 'static {
    let ctx = RequestContext::new(store, cursors, access);
    let nulls = Arc::new(nulls::NullState::default());
    let request = request.data(ctx).data(nulls.clone()).data(hub).data(expiry);
    schema.execute_stream(request).map(move |mut resp| {
        nulls.apply_and_reset(&mut resp.data);
        errors::ensure_codes(&mut resp);
        resp
    })
}
