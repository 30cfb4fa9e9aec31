//! Paging shared by every connection: a parent and a page of its children in one Query on
//! their shared partition, later pages from the last-seen key, in both directions.

use super::error::{RepoError, RepoResult};
use crate::model::Record;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use crate::store::{Item, PageKey, Query, SortCondition, Store, StoreError, TableSchema};
use crate::telemetry;

pub use crate::chart::MAX_PAGE_SIZE;

/// One page of a connection.
///
/// `forward` is the connection's own order (users by username, orders and tickets newest
/// first, lines by number): `true` serves GraphQL `first`/`after`, `false` reads the other
/// way for `last`/`before` and returns children in that reversed order.
///
/// Each read asks for one item more than `limit` (and one more still on a first forward
/// page, where the parent takes a slot), so a full page knows whether more follows.
/// `start` is the key of the last child of the previous page: later pages query only the
/// children's sort-key prefix, so they never re-read the parent.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub limit: u32,
    pub start: Option<PageKey>,
    pub forward: bool,
}

impl Page {
    /// The first `limit` children, with the parent.
    pub fn first(limit: u32) -> Self {
        Page {
            limit,
            start: None,
            forward: true,
        }
    }
    /// The `limit` children after `start`.
    pub fn after(limit: u32, start: PageKey) -> Self {
        Page {
            limit,
            start: Some(start),
            forward: true,
        }
    }
    /// The last `limit` children (no parent), last first.
    pub fn last(limit: u32) -> Self {
        Page {
            limit,
            start: None,
            forward: false,
        }
    }
    /// The `limit` children before `start`, nearest first.
    pub fn before(limit: u32, start: PageKey) -> Self {
        Page {
            limit,
            start: Some(start),
            forward: false,
        }
    }
}

/// One connection: a partition whose children share a sort-key prefix, with the parent
/// (if any) at one end of them in the connection's natural order.
pub(super) struct Connection {
    pub(super) index: Option<&'static str>,
    pub(super) partition: String,
    /// `ScanIndexForward` for the natural order.
    pub(super) natural_forward: bool,
    /// The key condition that reads the parent and then its children, in natural order.
    pub(super) parent: Option<SortCondition>,
    /// Sort-key prefix of every child.
    pub(super) children: &'static str,
    /// Items besides the parent that sit between it and its children (an organization's
    /// counter shards), read with it and folded into it.
    pub(super) beside_parent: u32,
}

impl Connection {
    /// The one Query that serves `page`.
    pub(super) fn query(&self, page: &Page) -> RepoResult<Query> {
        if !(1..=MAX_PAGE_SIZE).contains(&page.limit) {
            return Err(RepoError::InvalidPage(format!(
                "page size must be between 1 and {MAX_PAGE_SIZE}, got {}",
                page.limit
            )));
        }
        if let Some(start) = &page.start {
            self.check_cursor(start)?;
        }
        let (sort, limit) = match (&self.parent, page.forward, &page.start) {
            // Parent (and what sits beside it), `limit` children, and one more to learn
            // whether a next page exists.
            (Some(parent), true, None) => (parent.clone(), page.limit + 2 + self.beside_parent),
            _ => (
                SortCondition::BeginsWith(self.children.to_owned()),
                page.limit + 1,
            ),
        };
        Ok(Query {
            index: self.index.map(str::to_owned),
            partition: self.partition.clone(),
            sort: Some(sort),
            forward: page.forward == self.natural_forward,
            limit: Some(limit),
            start: page.start.clone(),
            consistent_read: false,
        })
    }

    /// A cursor must be a child of this very connection: anything else would make the
    /// store reject the request, or read another collection.
    fn check_cursor(&self, start: &PageKey) -> RepoResult<()> {
        let key = match (self.index, &start.index) {
            (None, None) => Some((&start.table.pk, &start.table.sk)),
            (Some(_), Some(ik)) => Some((&ik.pk, &ik.sk)),
            _ => None,
        };
        match key {
            Some((pk, sk)) if *pk == self.partition && sk.starts_with(self.children) => Ok(()),
            _ => Err(RepoError::InvalidPage(
                "the cursor does not belong to this connection".into(),
            )),
        }
    }

    /// The sort value of an item in this connection's partition.
    fn sort_value<'i>(&self, schema: &TableSchema, item: &'i Item) -> Option<&'i str> {
        let attr = match self.index {
            None => &schema.sk,
            Some(name) => &schema.index(name)?.sk,
        };
        match item.get(attr)? {
            crate::store::AttributeValue::S(s) => Some(s),
            _ => None,
        }
    }

    /// Splits what the Query returned into the parent, at most `limit` children, and the
    /// cursor of the next page: the key of the last child returned, when more may follow
    /// (more was read, or the store cut the page at its size limit).
    fn split(
        &self,
        schema: &TableSchema,
        page: &Page,
        mut items: Vec<Item>,
        store_cut: bool,
    ) -> RepoResult<(Option<Item>, Vec<Item>, Option<PageKey>)> {
        // Everything before the first child: the parent, with its counter shards.
        let head = match &self.parent {
            Some(_) => items
                .iter()
                .take_while(|item| {
                    !self
                        .sort_value(schema, item)
                        .is_some_and(|s| s.starts_with(self.children))
                })
                .count(),
            None => 0,
        };
        let parent = super::counters::parent_of(items.drain(..head).collect());
        let limit = page.limit as usize;
        let more = items.len() > limit || store_cut;
        items.truncate(limit);
        let cursor = match items.last() {
            Some(last) if more => Some(self.page_key(schema, last)?),
            _ => None,
        };
        Ok((parent, items, cursor))
    }

    fn page_key(&self, schema: &TableSchema, item: &Item) -> RepoResult<PageKey> {
        let missing = || StoreError::Internal("a queried item lacks its key attributes".into());
        let table = schema.key_of(item).ok_or_else(missing)?;
        let index = match self.index {
            None => None,
            Some(name) => {
                let index = schema.index(name).ok_or_else(missing)?;
                Some(schema.index_key_of(index, item).ok_or_else(missing)?)
            }
        };
        Ok(PageKey { table, index })
    }
}

pub(super) async fn read_connection<P: Record, C: Record>(
    store: &dyn Store,
    conn: &Connection,
    page: &Page,
) -> RepoResult<(Option<P>, Vec<C>, Option<PageKey>)> {
    let query = conn.query(page)?;
    let otel = telemetry::child("connection page", SpanKind::Internal, || {
        vec![
            KeyValue::new("itemgraph.page.children", conn.children),
            KeyValue::new("itemgraph.page.size", i64::from(page.limit)),
            KeyValue::new("itemgraph.page.forward", page.forward),
            KeyValue::new("itemgraph.page.from_cursor", page.start.is_some()),
        ]
    });
    let out = telemetry::within(otel.as_ref(), store.query(query)).await;
    if let Some(cx) = &otel {
        let (items, more, error) = match &out {
            Ok(out) => (out.items.len(), out.last_evaluated_key.is_some(), None),
            Err(e) => (
                0,
                false,
                Some(crate::store::metered::store_outcome::<()>(&Err(e.clone())).into()),
            ),
        };
        telemetry::end(
            cx,
            vec![
                KeyValue::new("itemgraph.page.items_read", items as i64),
                KeyValue::new("itemgraph.page.cut", more),
            ],
            error,
        );
    }
    let out = out?;
    let (parent, children, cursor) = conn.split(
        store.schema(),
        page,
        out.items,
        out.last_evaluated_key.is_some(),
    )?;
    let parent = parent.map(P::from_item).transpose()?;
    let children = children
        .into_iter()
        .map(C::from_item)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((parent, children, cursor))
}
