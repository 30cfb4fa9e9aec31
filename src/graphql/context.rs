//! What every resolver of one request reaches: the store, the DataLoader, the cursor
//! codec and the caller's access.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::Context;
use tokio::sync::{Mutex, OnceCell};

use super::cursor::CursorCodec;
use super::errors::ApiError;
use super::loaders::{entity_loader, EntityLoader};
use crate::auth::Access;
use crate::keys::Slug;
use crate::model::{self, Entity, Record};
use crate::store::{PrimaryKey, Store};

/// What every resolver of one request reaches through the context.
pub struct RequestContext {
    /// The store, wrapped by the tracer when the request asked for a trace.
    pub store: Arc<dyn Store>,
    /// The request's own DataLoader: its cache lives and dies with the request, and its
    /// reads run inside the request's futures, so a request cancelled at its deadline
    /// leaves no read behind.
    pub loader: EntityLoader,
    pub cursors: CursorCodec,
    /// Who is asking: what they may see ([`RequestContext::sees`], and every entity
    /// [`RequestContext::load`] returns) and do.
    pub access: Access,
    /// Organizations read with their counter shards ([`RequestContext::counted_org`]), at
    /// most once each per request.
    counted: Mutex<HashMap<Slug, Arc<OnceCell<CountedOrg>>>>,
    /// What a chart's fields read through, made when one first asks
    /// ([`RequestContext::items`]): nothing for the built-in design's.
    charted: std::sync::OnceLock<Charted>,
}

/// A chart's loader, and its items read with their counter shards (at most once each per
/// request).
struct Charted {
    chart: Arc<crate::chart::Chart>,
    items: super::charted::ItemLoader,
    counted: Mutex<HashMap<PrimaryKey, Arc<OnceCell<CountedItem>>>>,
}

/// An item of a chart as read with its counter shards; `None` when it does not exist.
pub type CountedItem = Result<Option<Arc<super::charted::record::Record>>, Arc<ApiError>>;

/// An organization as read with its counters; `None` when it does not exist.
pub type CountedOrg = Result<Option<Arc<model::Organization>>, Arc<ApiError>>;

impl RequestContext {
    /// A fresh context (its own DataLoader cache) for one request.
    pub fn new(store: Arc<dyn Store>, cursors: CursorCodec, access: Access) -> Self {
        RequestContext {
            loader: entity_loader(store.clone()),
            store,
            cursors,
            access,
            counted: Mutex::default(),
            charted: std::sync::OnceLock::new(),
        }
    }

    fn charted(&self, chart: &Arc<crate::chart::Chart>) -> &Charted {
        self.charted.get_or_init(|| Charted {
            chart: chart.clone(),
            items: super::charted::item_loader(self.store.clone(), chart.clone()),
            counted: Mutex::default(),
        })
    }

    /// The request's loader of `chart`'s items (one per request, made on first use).
    pub fn items(&self, chart: &Arc<crate::chart::Chart>) -> &super::charted::ItemLoader {
        &self.charted(chart).items
    }

    /// An item of `chart` with its counter shards, read by `read` at most once per
    /// request.
    pub async fn counted_item(
        &self,
        chart: &Arc<crate::chart::Chart>,
        key: PrimaryKey,
        read: impl std::future::Future<Output = CountedItem>,
    ) -> CountedItem {
        let cell = self
            .charted(chart)
            .counted
            .lock()
            .await
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| read).await.clone()
    }

    /// The organization with its counts (its item and its counter shards, one Query),
    /// read once per request however many fields ask (until a write of the request).
    pub async fn counted_org(&self, org: &Slug) -> CountedOrg {
        if !self.sees(org) {
            return Ok(None);
        }
        let cell = self
            .counted
            .lock()
            .await
            .entry(org.clone())
            .or_default()
            .clone();
        cell.get_or_init(|| async {
            crate::collections::get_org_counted(self.store.as_ref(), org)
                .await
                .map(|o| o.map(Arc::new))
                .map_err(|e| Arc::new(ApiError::from(e)))
        })
        .await
        .clone()
    }

    /// Forgets every entity this request has read, then remembers `written` (what a
    /// mutation just wrote, exactly as stored): a mutation changes what earlier fields of
    /// the same request read (a counter, the entity itself), so references resolved after
    /// it are read again rather than served stale.
    pub async fn after_write(&self, written: Vec<Entity>) {
        self.loader.clear_all().await;
        self.counted.lock().await.clear();
        if let Some(c) = self.charted.get() {
            c.items.clear_all().await;
            c.counted.lock().await.clear();
            // What was written, as the chart's records: an entity the chart does not
            // declare (a uniqueness marker) is not read through it.
            let primed: Vec<_> = written
                .iter()
                .filter_map(|e| {
                    let rec = super::charted::record::Record::decode(&c.chart, e.to_item()).ok()?;
                    Some((e.primary_key(), Ok(Some(Arc::new(rec)))))
                })
                .collect();
            c.items.prime_many(primed).await;
        }
        self.loader
            .prime_many(written.into_iter().map(|e| (e.primary_key(), Ok(Some(e)))))
            .await;
    }

    /// Whether the caller may see organization `org`. Every read of a partition that
    /// names an organization asks first, and reads nothing when the answer is no: another
    /// organization's data is answered exactly as if it did not exist.
    pub fn sees(&self, org: &Slug) -> bool {
        self.access.sees(org)
    }

    /// Loads one entity by key through the DataLoader (batched with every other key asked
    /// for while the executor yields; a key whose read is running joins it).
    pub async fn load(&self, key: PrimaryKey) -> Result<Option<Entity>, Arc<ApiError>> {
        let read = self.loader.try_load(key).await.unwrap_or_else(|e| {
            // Only when the resolver that started the batch was dropped mid-read.
            tracing::error!(error = %e, "the DataLoader lost a key's answer");
            Err(Arc::new(ApiError::Internal))
        })?;
        // A key need not name its organization (a ticket's does not): what is read is
        // checked, and another organization's entity is as absent as a missing one.
        Ok(read.filter(|e| self.access.sees_entity(e)))
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
        .prime_many(
            records
                .iter()
                .map(|r| (r.primary_key(), Ok(Some(r.clone().into())))),
        )
        .await;
}
