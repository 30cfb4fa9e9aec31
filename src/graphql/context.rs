//! What every resolver of one request reaches: the store, the DataLoader, the cursor
//! codec, the event bus and the caller's access.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::dataloader::{DataLoader, HashMapCache};
use async_graphql::Context;
use futures::future::{BoxFuture, Shared};
use futures::FutureExt;

use super::cursor::CursorCodec;
use super::errors::ApiError;
use super::loaders::EntityLoader;
use crate::auth::Access;
use crate::events::EventBus;
use crate::keys::Slug;
use crate::model::{Entity, Record};
use crate::store::validate::MAX_BATCH_GET_KEYS;
use crate::store::{PrimaryKey, Store};

/// A key being read: every resolver that asks for it while it is in flight awaits the same
/// read, so one request never reads one item twice.
type InFlight = Shared<BoxFuture<'static, Result<Option<Entity>, Arc<ApiError>>>>;

/// What every resolver of one request reaches through the context.
pub struct RequestContext {
    /// The store, wrapped by the tracer when the request asked for a trace.
    pub store: Arc<dyn Store>,
    pub loader: Arc<DataLoader<EntityLoader, HashMapCache>>,
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
            EntityLoader {
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
        .max_batch_size(MAX_BATCH_GET_KEYS);
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
    pub fn sees(&self, org: &Slug) -> bool {
        self.access.sees(org)
    }

    /// Loads one entity by key through the DataLoader (batched with every other key asked
    /// for in the same tick). The DataLoader alone would read a key again when it is asked
    /// for while its first read is still running; here that second ask joins the first.
    pub async fn load(&self, key: PrimaryKey) -> Result<Option<Entity>, Arc<ApiError>> {
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

/// The request's context, which [`super::execute`] always provides.
pub fn rc<'a>(ctx: &Context<'a>) -> &'a RequestContext {
    ctx.data_unchecked::<RequestContext>()
}

/// Loads a referenced entity through the DataLoader; `None` when absent.
pub async fn load(ctx: &Context<'_>, key: PrimaryKey) -> async_graphql::Result<Option<Entity>> {
    use async_graphql::ErrorExtensions;
    rc(ctx).load(key).await.map_err(|e| e.as_ref().extend())
}

/// Feeds what a request read into its DataLoader, so references to it cost nothing.
pub async fn prime<R: Record + Clone + Into<Entity>>(rc: &RequestContext, records: &[R]) {
    rc.loader
        .feed_many(records.iter().map(|r| (r.primary_key(), r.clone().into())))
        .await;
}
