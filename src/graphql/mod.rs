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
//! [`Limits`] bound the work one request can cause; [`schema_with`] builds a schema that
//! enforces them, before any store request except for the deadline.
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
use std::time::Duration;

use async_graphql::dataloader::{DataLoader, HashMapCache};
use async_graphql::extensions::apollo_persisted_queries::{
    ApolloPersistedQueries, LruCacheStorage,
};
use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextPrepareRequest, NextRequest,
    NextValidation,
};
use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{
    EmptySubscription, Positioned, Schema, ServerError, ServerResult, ValidationResult, Variables,
};

use futures::future::{BoxFuture, Shared};
use futures::FutureExt;

use crate::auth::Access;
use crate::events::EventBus;
use crate::model::Entity;
use crate::store::trace::{Trace, TracedStore};
use crate::store::{PrimaryKey, Store};

pub use cursor::CursorCodec;

/// The executable schema.
pub type ItemgraphSchema = Schema<query::Query, mutation::Mutation, EmptySubscription>;

/// What one request may cost. Every limit but the deadline is checked on the document,
/// before any store request; a request over one fails whole, with `data` null and the
/// code its [`errors::ApiError`] variant names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest field nesting (`{ a { b } }` is 2). A client's introspection query reaches
    /// 13 (GraphiQL's `args { type { ofType … } }`), so the default leaves it room.
    pub max_depth: usize,
    /// Aliased fields in the document, fragments included: aliases are how one request
    /// asks for the same expensive field many times.
    pub max_aliases: usize,
    /// Cost: every field 1, a connection its page size (`first`/`last`, else 20) times
    /// what it selects per node (see [`page_cost`]): an estimate of the items read.
    pub max_complexity: usize,
    /// The whole request, parse to last resolver. When it passes, the execution is
    /// dropped, and with it every store call still outstanding.
    pub request_timeout: Duration,
    /// Whether `__schema` and `__type` answer (`__typename` always does).
    pub introspection: bool,
    /// Documents the automatic persisted query cache holds (LRU); 0 turns APQ off.
    pub persisted_queries: usize,
}

impl Limits {
    /// The defaults, also those of the command line.
    pub const DEFAULT: Limits = Limits {
        max_depth: 15,
        max_aliases: 30,
        max_complexity: 5000,
        request_timeout: Duration::from_secs(10),
        introspection: true,
        persisted_queries: 1000,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Longest query text that automatic persisted queries keep: the cache holds parsed
/// documents, so this bounds its memory (with [`Limits::persisted_queries`]). A longer
/// query still runs; it is just not cached, and its hash alone stays unknown.
pub const MAX_PERSISTED_QUERY_BYTES: usize = 16 * 1024;

/// The complexity of a connection field: its page size (`first` or `last`, 20 when
/// neither; clamped to 1–100 as paging reads at least one item and at most 100) times
/// what each node selects, plus the field itself. So `users(first: 100) { nodes {
/// tickets(first: 100) { nodes { id } } } }` costs about 100 × 100.
pub fn page_cost(first: Option<i32>, last: Option<i32>, child_complexity: usize) -> usize {
    let size = first
        .or(last)
        .map_or(connection::DEFAULT_PAGE_SIZE as usize, |n| {
            n.clamp(1, crate::collections::MAX_PAGE_SIZE as i32) as usize
        });
    size.saturating_mul(child_complexity).saturating_add(1)
}

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
    let mut builder = Schema::build(query::Query, mutation::Mutation, EmptySubscription)
        .extension(crate::metrics::RequestMetrics)
        .extension(RequestLimits(*limits));
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

/// The extension enforcing [`Limits`]: aliases after parsing, depth and complexity after
/// validation (async-graphql computes both there), the deadline around the whole request.
struct RequestLimits(Limits);

impl ExtensionFactory for RequestLimits {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(RequestLimits(self.0))
    }
}

#[async_trait::async_trait]
impl Extension for RequestLimits {
    async fn request(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextRequest<'_>,
    ) -> async_graphql::Response {
        let deadline = self.0.request_timeout;
        match tokio::time::timeout(deadline, next.run(ctx)).await {
            Ok(resp) => resp,
            Err(_) => {
                tracing::warn!(?deadline, "request cancelled at its deadline");
                let millis = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX);
                async_graphql::Response::from_errors(vec![
                    errors::ApiError::Timeout { millis }.server_error()
                ])
            }
        }
    }

    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: async_graphql::Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<async_graphql::Request> {
        if request.query.len() > MAX_PERSISTED_QUERY_BYTES {
            request.extensions.remove("persistedQuery");
        }
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
        // async-graphql's own switch answers `__schema: null` without a word; say why.
        if !self.0.introspection && selects_introspection(&doc) {
            return Err(errors::ApiError::IntrospectionDisabled.server_error());
        }
        let count = count_aliases(&doc);
        if count > self.0.max_aliases {
            return Err(errors::ApiError::TooManyAliases {
                count,
                max: self.0.max_aliases,
            }
            .server_error());
        }
        Ok(doc)
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<ServerError>> {
        let result = next.run(ctx).await?;
        if result.depth > self.0.max_depth {
            return Err(vec![errors::ApiError::QueryTooDeep {
                depth: result.depth,
                max: self.0.max_depth,
            }
            .server_error()]);
        }
        if result.complexity > self.0.max_complexity {
            return Err(vec![errors::ApiError::QueryTooComplex {
                complexity: result.complexity,
                max: self.0.max_complexity,
            }
            .server_error()]);
        }
        Ok(result)
    }
}

/// The operation a request runs: the one named `name`, or the document's only one when
/// no name is given; `None` when there is no such single operation (execution then says
/// why). With its name, when it has one.
pub fn selected_operation<'a>(
    doc: &'a ExecutableDocument,
    name: Option<&str>,
) -> Option<(
    Option<&'a async_graphql::Name>,
    &'a Positioned<async_graphql::parser::types::OperationDefinition>,
)> {
    let mut ops = doc.operations.iter();
    match name {
        Some(name) => ops.find(|(n, _)| n.is_some_and(|n| n.as_str() == name)),
        None => match (ops.next(), ops.next()) {
            (Some(op), None) => Some(op),
            _ => None,
        },
    }
}

/// Whether an operation selects `__schema` or `__type` at its root, directly or through
/// fragments (each followed once, so a fragment cycle, refused later, ends here too).
fn selects_introspection(doc: &ExecutableDocument) -> bool {
    fn in_set<'a>(
        doc: &'a ExecutableDocument,
        set: &'a SelectionSet,
        seen: &mut std::collections::HashSet<&'a str>,
    ) -> bool {
        set.items.iter().any(|item| match &item.node {
            Selection::Field(f) => matches!(f.node.name.node.as_str(), "__schema" | "__type"),
            Selection::InlineFragment(f) => in_set(doc, &f.node.selection_set.node, seen),
            Selection::FragmentSpread(s) => {
                let name = s.node.fragment_name.node.as_str();
                seen.insert(name)
                    && doc
                        .fragments
                        .get(&s.node.fragment_name.node)
                        .is_some_and(|f| in_set(doc, &f.node.selection_set.node, seen))
            }
        })
    }
    doc.operations
        .iter()
        .any(|(_, op)| in_set(doc, &op.node.selection_set.node, &mut Default::default()))
}

/// Aliased fields anywhere in the document: every operation and every fragment, each
/// counted once however often it is spread (complexity counts the spreads).
fn count_aliases(doc: &ExecutableDocument) -> usize {
    fn in_set(set: &Positioned<SelectionSet>) -> usize {
        set.node
            .items
            .iter()
            .map(|item| match &item.node {
                Selection::Field(f) => {
                    usize::from(f.node.alias.is_some()) + in_set(&f.node.selection_set)
                }
                Selection::InlineFragment(f) => in_set(&f.node.selection_set),
                Selection::FragmentSpread(_) => 0,
            })
            .sum()
    }
    doc.operations
        .iter()
        .map(|(_, op)| in_set(&op.node.selection_set))
        .chain(
            doc.fragments
                .values()
                .map(|f| in_set(&f.node.selection_set)),
        )
        .sum()
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
    /// Who is asking: what they may see ([`RequestContext::sees`], and every entity
    /// [`RequestContext::load`] returns) and do.
    pub access: Access,
    /// A std Mutex is fine: held only to look up or insert, never across an await.
    in_flight: Mutex<HashMap<PrimaryKey, InFlight>>,
    /// The DataLoader's batch reads, which run as tasks of their own: aborted when the
    /// request ends, so a request cancelled at its deadline leaves no read behind.
    loads: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Drop for RequestContext {
    fn drop(&mut self) {
        // Finished reads are no-ops to abort; a request that completes leaves only those.
        for load in self
            .loads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            load.abort();
        }
    }
}

impl RequestContext {
    /// A fresh context (its own DataLoader cache) for one request.
    pub fn new(
        store: Arc<dyn Store>,
        cursors: CursorCodec,
        events: EventBus,
        access: Access,
    ) -> Self {
        let loads: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let spawned = loads.clone();
        let loader = DataLoader::with_cache(
            loaders::EntityLoader {
                store: store.clone(),
            },
            move |load| {
                // In the request's span, so the batch read's store span nests under it.
                let handle =
                    tokio::spawn(tracing::Instrument::in_current_span(load)).abort_handle();
                // A std Mutex is fine: held only to push, never across an await.
                let mut loads = spawned.lock().unwrap_or_else(|p| p.into_inner());
                loads.retain(|l| !l.is_finished());
                loads.push(handle);
            },
            HashMapCache::default(),
        )
        .max_batch_size(crate::store::validate::MAX_BATCH_GET_KEYS);
        RequestContext {
            store,
            loader: Arc::new(loader),
            cursors,
            events,
            access,
            in_flight: Mutex::default(),
            loads,
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

    /// Whether the caller may see organization `org`. Every read of a partition that
    /// names an organization asks first, and reads nothing when the answer is no: another
    /// organization's data is answered exactly as if it did not exist.
    pub fn sees(&self, org: &crate::keys::Slug) -> bool {
        self.access.sees(org)
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
        // A key need not name its organization (a ticket's does not): what is read is
        // checked, and another organization's entity is as absent as a missing one.
        Ok(read.await?.filter(|e| self.access.sees_entity(e)))
    }
}

/// Runs one GraphQL request for a caller with `access`. With `trace`, every store call it
/// makes is listed in `extensions.dynamodb` (without item counts for a tenant). Every
/// error in the response carries `extensions.code`. Mutations publish their domain events
/// on `events`.
pub async fn execute(
    schema: &ItemgraphSchema,
    store: Arc<dyn Store>,
    cursors: CursorCodec,
    events: EventBus,
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
    let ctx = RequestContext::new(store, cursors, events, access);
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
            // A read's item count would tell a tenant that another organization's ticket
            // or order exists where the answer says it does not: tenants see the requests
            // only.
            if let Some(requests) = value["requests"].as_array_mut() {
                for r in requests
                    .iter_mut()
                    .filter_map(serde_json::Value::as_object_mut)
                {
                    r.remove("itemCount");
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
