//! The GraphQL API: schema, resolvers and what each request carries.
//!
//! - [`types`]: thin `#[Object]` newtypes over the model records, one per entity.
//! - [`connection`]: Relay connections over item collections, paging from last-seen keys.
//! - [`query`]: the root fields and the look-ahead that turns a parent and the first page
//!   of its children into one Query.
//! - [`mutation`]: the root mutations: input checked before any request, one write each,
//!   a domain event published on success.
//! - [`loaders`]: the per-request DataLoader batching GetItem into BatchGetItem.
//! - [`cursor`], [`ids`], [`errors`]: opaque cursors, global ids, error codes.
//! - [`nulls`]: the spec's null propagation for fields that fail.
//!
//! It knows nothing of HTTP: [`execute`] runs a request against a store and is what the
//! HTTP layer and the tests both call.

pub mod connection;
pub mod cursor;
pub mod errors;
pub mod ids;
pub mod loaders;
pub mod mutation;
pub mod nulls;
pub mod query;
pub mod types;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::dataloader::{DataLoader, HashMapCache};
use async_graphql::{EmptySubscription, Schema};

use futures::future::{BoxFuture, Shared};
use futures::FutureExt;

use crate::events::EventBus;
use crate::model::Entity;
use crate::store::trace::{Trace, TracedStore};
use crate::store::{PrimaryKey, Store};

pub use cursor::CursorCodec;

/// The executable schema.
pub type ItemgraphSchema = Schema<query::Query, mutation::Mutation, EmptySubscription>;

/// Builds the schema. Request-specific data comes with each request (see [`execute`]).
pub fn schema() -> ItemgraphSchema {
    Schema::build(query::Query, mutation::Mutation, EmptySubscription)
        .extension(nulls::NullPropagation)
        .finish()
}

/// The schema's SDL, exactly as served (also `itemgraph schema` and `schema.graphql`).
pub fn sdl() -> String {
    schema().sdl()
}

/// A key being read: every resolver that asks for it while it is in flight awaits the same
/// read, so one request never reads one item twice.
type InFlight = Shared<BoxFuture<'static, Result<Option<Entity>, Arc<errors::ApiError>>>>;

/// What every resolver of one request reaches through the context.
pub struct RequestContext {
    /// The store, wrapped by the tracer when the request asked for a trace.
    pub store: Arc<dyn Store>,
    pub loader: Arc<DataLoader<loaders::EntityLoader, HashMapCache>>,
    pub cursors: CursorCodec,
    /// Where mutations publish what they changed, once it is written.
    pub events: EventBus,
    /// A std Mutex is fine: held only to look up or insert, never across an await.
    in_flight: Mutex<HashMap<PrimaryKey, InFlight>>,
}

impl RequestContext {
    /// A fresh context (its own DataLoader cache) for one request.
    pub fn new(store: Arc<dyn Store>, cursors: CursorCodec, events: EventBus) -> Self {
        let loader = DataLoader::with_cache(
            loaders::EntityLoader {
                store: store.clone(),
            },
            tokio::spawn,
            HashMapCache::default(),
        )
        .max_batch_size(crate::store::validate::MAX_BATCH_GET_KEYS);
        RequestContext {
            store,
            loader: Arc::new(loader),
            cursors,
            events,
            in_flight: Mutex::default(),
        }
    }

    /// Forgets every entity this request has read, then remembers `written` (what a
    /// mutation just wrote, exactly as stored): a mutation changes what earlier fields of
    /// the same request read (a counter, the entity itself), so references resolved after
    /// it are read again rather than served stale.
    pub async fn after_write(&self, written: Vec<Entity>) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.loader.clear::<PrimaryKey>();
        self.loader
            .feed_many(written.into_iter().map(|e| (e.primary_key(), e)))
            .await;
    }

    /// Loads one entity by key through the DataLoader (batched with every other key asked
    /// for in the same tick). The DataLoader alone would read a key again when it is asked
    /// for while its first read is still running; here that second ask joins the first.
    pub async fn load(&self, key: PrimaryKey) -> Result<Option<Entity>, Arc<errors::ApiError>> {
        let read = {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            in_flight
                .entry(key.clone())
                .or_insert_with(|| {
                    let loader = self.loader.clone();
                    async move { loader.load_one(key).await }.boxed().shared()
                })
                .clone()
        };
        read.await
    }
}

/// Runs one GraphQL request. With `trace`, every store call it makes is listed in
/// `extensions.dynamodb`. Every error in the response carries `extensions.code`.
/// Mutations publish their domain events on `events`.
pub async fn execute(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    events: EventBus,
    request: async_graphql::Request,
    trace: bool,
) -> async_graphql::Response {
    let recorder = trace.then(|| Arc::new(Trace::default()));
    let store: Arc<dyn Store> = match &recorder {
        Some(t) => Arc::new(TracedStore::new(store, t.clone())),
        None => store,
    };
    let ctx = RequestContext::new(store, cursors, events);
    let nulls = Arc::new(nulls::NullState::default());
    let mut resp = schema.execute(request.data(ctx).data(nulls.clone())).await;
    nulls.apply(&mut resp.data);
    errors::ensure_codes(&mut resp);
    if let Some(t) = recorder {
        let requests = t.entries();
        let value = serde_json::json!({
            "requestCount": requests.len(),
            "requests": requests,
        });
        resp.extensions.insert(
            "dynamodb".to_owned(),
            async_graphql::Value::from_json(value).unwrap_or_default(),
        );
    }
    resp
}
