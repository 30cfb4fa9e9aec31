//! The look-ahead that makes each access pattern one request.
//!
//! A root resolver looks at the selection below it before reading anything: every
//! connection selected under the entity (with its arguments) becomes one Query, all of
//! them issued concurrently; a first page in the connection's own order carries the parent
//! in the same Query (the parent sits at the edge of its children's item collection). Only
//! when no such Query reads the parent is it loaded on its own, through the DataLoader,
//! concurrently with the pages. The pages are handed down to the entity ([`Prefetched`]),
//! whose connection fields then serve them ([`PageRequest::serve`]) without another request.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::{Context, ErrorExtensions, Result, Value};
use futures::future::BoxFuture;

use super::connection::{build, ConnectionType, Fetched, PageArgs, Resolved};
use super::context::rc;
use super::errors::ApiError;
use crate::model;
use crate::store::PageKey;

/// A parent (when the page carried it) and a page of its children, or why not.
pub type Fetch<P, C> = std::result::Result<(Option<P>, Fetched<C>), ApiError>;

/// One page to read ahead: its arguments' key, whether it can carry the parent, the read.
pub type Job<'a, P, C> = (String, bool, BoxFuture<'a, Fetch<P, C>>);

/// A page as the store returned it.
pub fn fetched<C>(items: Vec<C>, last_evaluated_key: Option<PageKey>) -> Fetched<C> {
    Fetched {
        items,
        more: last_evaluated_key.is_some(),
    }
}

/// What a read of a partition the caller may not see answers, without reading it: what
/// a missing parent with no children answers (no existence oracle).
pub fn unseen<P, C>() -> Fetch<P, C> {
    Ok((None, fetched(Vec::new(), None)))
}

/// A prefetched page, or why it could not be read.
pub type PageSlot<R> = std::result::Result<Fetched<R>, Arc<ApiError>>;

/// Pages a parent's resolver read ahead, keyed by [`PageArgs::key`].
#[derive(Default)]
pub struct Prefetched {
    pub users: HashMap<String, PageSlot<model::User>>,
    pub orders: HashMap<String, PageSlot<model::Order>>,
    pub tickets: HashMap<String, PageSlot<model::Ticket>>,
    pub lines: Option<Vec<model::OrderLine>>,
}

/// The arguments of every selection of `field` under the current field (aliases and
/// fragments included), as far as they can be read ahead; repeats are dropped.
pub fn selected(ctx: &Context<'_>, field: &str) -> Vec<(PageArgs, Option<model::TicketStatus>)> {
    let mut out: Vec<(PageArgs, Option<model::TicketStatus>)> = Vec::new();
    for sel in ctx.look_ahead().field(field).selection_fields() {
        let Ok(arguments) = sel.arguments() else {
            continue;
        };
        let (args, rest) = PageArgs::from_arguments(arguments);
        let mut status = None;
        for (name, value) in rest {
            match (name.as_str(), value) {
                ("status", Value::Enum(s)) => status = s.as_str().parse().ok(),
                ("status", Value::String(s)) => status = s.parse().ok(),
                _ => {}
            }
        }
        if !out.contains(&(args.clone(), status)) {
            out.push((args, status));
        }
    }
    out
}

/// The parent found by the pages read ahead: `Some(None)` when a first page showed it
/// does not exist, `None` when no page read it.
pub type Parent<P> = Option<Option<P>>;

/// Reads ahead, concurrently, every page of one connection kind selected below the
/// current field, keeping the parent when a first page brought it.
pub async fn read_ahead<P: Send, C: Send>(
    jobs: Vec<Job<'_, P, C>>,
) -> (Parent<P>, Vec<(String, PageSlot<C>)>) {
    let (keys, futs): (Vec<(String, bool)>, Vec<_>) = jobs
        .into_iter()
        .map(|(k, first, f)| ((k, first), f))
        .unzip();
    let results = futures::future::join_all(futs).await;
    let mut parent = None;
    let mut slots = Vec::new();
    for ((key, first_forward), result) in keys.into_iter().zip(results) {
        match result {
            Ok((p, page)) => {
                if first_forward && parent.is_none() {
                    parent = Some(p);
                }
                slots.push((key, Ok(page)));
            }
            Err(e) => slots.push((key, Err(Arc::new(e)))),
        }
    }
    (parent, slots)
}

/// One connection field being resolved: its cursor namespace, the paging arguments as the
/// client sent them, and those arguments checked with their cursor verified.
pub struct PageRequest {
    pub connection: String,
    pub args: PageArgs,
    pub resolved: Resolved,
}

impl PageRequest {
    /// Checks a connection field's paging arguments and verifies its cursor for
    /// `connection`, before any request.
    pub fn new(
        ctx: &Context<'_>,
        connection: String,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> Result<Self> {
        let args = PageArgs {
            first: first.map(i64::from),
            after,
            last: last.map(i64::from),
            before,
        };
        let resolved = args
            .resolve(&rc(ctx).cursors, &connection)
            .map_err(|e| e.extend())?;
        Ok(PageRequest {
            connection,
            args,
            resolved,
        })
    }

    /// Serves the field: the page its parent's resolver read ahead for these arguments
    /// (found in `prefetched` under [`PageArgs::key`] with `extra`), else one read now with
    /// `fetch`; then the connection, counted by `total`, each edge's cursor from `key`.
    pub async fn serve<R, C, Fut>(
        self,
        ctx: &Context<'_>,
        (prefetched, extra): (&HashMap<String, PageSlot<R>>, &str),
        fetch: impl FnOnce(Resolved) -> Fut,
        total: u32,
        key: impl Fn(&R) -> PageKey,
        wrap: impl Fn(R) -> C::Node,
    ) -> Result<C>
    where
        R: Clone,
        C: ConnectionType,
        Fut: std::future::Future<Output = std::result::Result<Fetched<R>, ApiError>>,
    {
        let fetched = match prefetched.get(&self.args.key(extra)) {
            Some(Ok(page)) => page.clone(),
            Some(Err(e)) => return Err(e.as_ref().extend()),
            None => fetch(self.resolved.clone()).await.map_err(|e| e.extend())?,
        };
        Ok(build(
            &rc(ctx).cursors,
            &self.connection,
            &self.resolved,
            fetched,
            total,
            key,
            wrap,
        ))
    }
}
