//! What every resolver of one request reaches: the store, the DataLoader, the cursor
//! codec and the caller's access.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::Context;
use tokio::sync::{Mutex, OnceCell};

use super::cursor::CursorCodec;
use super::errors::ApiError;
use super::record::ItemKey;
use crate::auth::Access;
use crate::store::Store;

/// What every resolver of one request reaches through the context.
pub struct RequestContext {
    /// The store, wrapped by the tracer when the request asked for a trace.
    pub store: Arc<dyn Store>,
    pub cursors: CursorCodec,
    /// Who is asking: what they may see ([`RequestContext::sees`]) and do.
    pub access: Access,
    /// What the chart's fields read through, made when one first asks
    /// ([`RequestContext::items`]).
    reads: std::sync::OnceLock<Reads>,
}

/// The request's own DataLoader of the chart's items (its cache lives and dies with the
/// request, and its reads run inside the request's futures, so a request cancelled at its
/// deadline leaves no read behind), and its items read with their counter shards (at most
/// once each per request).
struct Reads {
    chart: Arc<crate::chart::Chart>,
    items: super::read::ItemLoader,
    counted: Mutex<HashMap<ItemKey, Arc<OnceCell<CountedItem>>>>,
}

/// An item of a chart as read with its counter shards; `None` when it does not exist.
pub type CountedItem = Result<Option<Arc<super::record::Record>>, Arc<ApiError>>;

impl RequestContext {
    /// A fresh context (its own DataLoader cache) for one request.
    pub fn new(store: Arc<dyn Store>, cursors: CursorCodec, access: Access) -> Self {
        RequestContext {
            store,
            cursors,
            access,
            reads: std::sync::OnceLock::new(),
        }
    }

    /// The store of `chart`'s table `t` (its place in the chart's tables): the request's
    /// own for the first, else its sibling on the same connection, decorated alike.
    pub fn store_in(
        &self,
        chart: &crate::chart::Chart,
        t: usize,
    ) -> Result<Arc<dyn Store>, ApiError> {
        Ok(chart.store_of(&self.store, t)?)
    }

    /// The store of `e`'s table.
    pub fn store_of(
        &self,
        chart: &crate::chart::Chart,
        e: &crate::chart::Entity,
    ) -> Result<Arc<dyn Store>, ApiError> {
        self.store_in(chart, e.table)
    }

    fn reads(&self, chart: &Arc<crate::chart::Chart>) -> &Reads {
        self.reads.get_or_init(|| Reads {
            chart: chart.clone(),
            items: super::read::item_loader(self.store.clone(), chart.clone()),
            counted: Mutex::default(),
        })
    }

    /// The request's loader of `chart`'s items (one per request, made on first use).
    pub fn items(&self, chart: &Arc<crate::chart::Chart>) -> &super::read::ItemLoader {
        &self.reads(chart).items
    }

    /// An item of `chart` with its counter shards, read by `read` at most once per
    /// request.
    pub async fn counted_item(
        &self,
        chart: &Arc<crate::chart::Chart>,
        key: ItemKey,
        read: impl std::future::Future<Output = CountedItem>,
    ) -> CountedItem {
        let cell = self
            .reads(chart)
            .counted
            .lock()
            .await
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| read).await.clone()
    }

    /// Forgets every item this request has read, then remembers `written` (what a
    /// mutation just wrote, exactly as stored): a mutation changes what earlier fields of
    /// the same request read (a counter, the entity itself), so references resolved after
    /// it are read again rather than served stale. An item the chart does not serve (a
    /// uniqueness marker) is not remembered.
    pub async fn after_write_items(&self, written: Vec<crate::store::Item>) {
        let Some(c) = self.reads.get() else {
            return;
        };
        c.items.clear_all().await;
        c.counted.lock().await.clear();
        let primed: Vec<_> = written
            .into_iter()
            .filter_map(|item| {
                let rec = super::record::Record::decode(&c.chart, item).ok()?;
                Some((rec.item_key(&c.chart)?, Ok(Some(Arc::new(rec)))))
            })
            .collect();
        c.items.prime_many(primed).await;
    }

    /// Whether the caller may see organization `org`. Every read of a partition that
    /// names an organization asks first, and reads nothing when the answer is no: another
    /// organization's data is answered exactly as if it did not exist.
    pub fn sees<T: AsRef<str> + ?Sized>(&self, org: &T) -> bool {
        self.access.sees(org)
    }
}

/// The request's context, which [`super::execute`] always provides.
pub fn rc<'a>(ctx: &Context<'a>) -> &'a RequestContext {
    ctx.data_unchecked::<RequestContext>()
}
