//! Relay connections over item collections.
//!
//! `first`/`after` pages forward in the connection's order, `last`/`before` backward by
//! flipping the scan direction; edges always come back in the connection's order. A cursor
//! is the key of its item (the last-seen sort key and what `ExclusiveStartKey` needs),
//! signed for its connection ([`super::cursor`]). `hasNextPage` going forward and
//! `hasPreviousPage` going backward are exact: each Query reads one item more than the page.

use std::sync::Arc;

use async_graphql::{Object, OutputType};

use super::cursor::CursorCodec;
use super::errors::ApiError;
use crate::collections::{Page as RepoPage, MAX_PAGE_SIZE};
use crate::store::PageKey;

/// Page size when neither `first` nor `last` is given.
pub const DEFAULT_PAGE_SIZE: u32 = 20;

/// The Relay paging arguments of one connection field, as the client sent them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PageArgs {
    pub first: Option<i64>,
    pub after: Option<String>,
    pub last: Option<i64>,
    pub before: Option<String>,
}

/// The arguments checked and the cursor verified: what to ask the store for.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Edges asked for, 0..=100.
    pub size: u32,
    pub start: Option<PageKey>,
    /// `true` for `first`/`after`.
    pub forward: bool,
}

impl Resolved {
    /// The repository page: at least one item is read, so even `first: 0` learns whether
    /// a next page exists.
    pub fn repo_page(&self) -> RepoPage {
        RepoPage {
            limit: self.size.max(1),
            start: self.start.clone(),
            forward: self.forward,
        }
    }

    /// A first page in the connection's own order: the one that can carry the parent.
    pub fn is_first_forward(&self) -> bool {
        self.forward && self.start.is_none()
    }
}

fn size(field: &str, n: Option<i64>) -> Result<Option<u32>, ApiError> {
    match n {
        None => Ok(None),
        Some(n) if (0..=i64::from(MAX_PAGE_SIZE)).contains(&n) => Ok(Some(n as u32)),
        Some(n) => Err(ApiError::bad_input(
            field,
            format!("`{field}` must be between 0 and {MAX_PAGE_SIZE}, got {n}"),
        )),
    }
}

impl PageArgs {
    /// Checks the arguments and the cursor, before any request is made.
    pub fn resolve(&self, cursors: &CursorCodec, connection: &str) -> Result<Resolved, ApiError> {
        let first = size("first", self.first)?;
        let last = size("last", self.last)?;
        if first.is_some() && last.is_some() {
            return Err(ApiError::bad_input(
                "last",
                "`first` and `last` cannot be used together: page forward with `first`/`after` or backward with `last`/`before`",
            ));
        }
        if self.after.is_some() && self.before.is_some() {
            return Err(ApiError::bad_input(
                "before",
                "`after` and `before` cannot be used together",
            ));
        }
        if self.after.is_some() && last.is_some() {
            return Err(ApiError::bad_input(
                "after",
                "`after` pages forward: use it with `first`",
            ));
        }
        if self.before.is_some() && first.is_some() {
            return Err(ApiError::bad_input(
                "before",
                "`before` pages backward: use it with `last`",
            ));
        }
        let forward = !(last.is_some() || self.before.is_some());
        let cursor = if forward { &self.after } else { &self.before };
        let start = match cursor {
            Some(c) => Some(cursors.decode(connection, c)?),
            None => None,
        };
        Ok(Resolved {
            size: first.or(last).unwrap_or(DEFAULT_PAGE_SIZE),
            start,
            forward,
        })
    }

    /// The paging arguments among a field's arguments as look-ahead reads them (variables
    /// resolved), and the others, as given.
    pub fn from_arguments(
        arguments: Vec<(async_graphql::Name, async_graphql::Value)>,
    ) -> (PageArgs, Vec<(async_graphql::Name, async_graphql::Value)>) {
        use async_graphql::Value;
        let mut args = PageArgs::default();
        let mut rest = Vec::new();
        for (name, value) in arguments {
            match (name.as_str(), value) {
                ("first", Value::Number(n)) => args.first = n.as_i64(),
                ("last", Value::Number(n)) => args.last = n.as_i64(),
                ("after", Value::String(s)) => args.after = Some(s),
                ("before", Value::String(s)) => args.before = Some(s),
                (_, value) => rest.push((name, value)),
            }
        }
        (args, rest)
    }

    /// A key that names these arguments (plus `extra`, e.g. a status), so a page fetched
    /// ahead by the parent's resolver is found again by the field's own resolver.
    pub fn key(&self, extra: &str) -> String {
        format!(
            "{:?}|{:?}|{:?}|{:?}|{extra}",
            self.first, self.after, self.last, self.before
        )
    }
}

/// Children read for one page, in the order the Query returned them.
#[derive(Debug, Clone)]
pub struct Fetched<R> {
    pub items: Vec<R>,
    /// More items follow in the direction of travel.
    pub more: bool,
}

/// The cursors of one page's edges, each signed only when a client selects it (an edge's
/// `cursor`, `pageInfo { startCursor endCursor }`): most clients select `nodes` alone.
#[derive(Debug)]
pub struct PageCursors {
    codec: CursorCodec,
    connection: String,
    keys: Vec<PageKey>,
}

impl PageCursors {
    /// The cursors of a page whose edges end at `keys`, signed for `connection`.
    pub fn new(codec: CursorCodec, connection: String, keys: Vec<PageKey>) -> Self {
        PageCursors {
            codec,
            connection,
            keys,
        }
    }

    /// How many edges the page has.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn cursor(&self, index: usize) -> Option<String> {
        self.keys
            .get(index)
            .map(|key| self.codec.encode(&self.connection, key))
    }
}

/// How far a page reaches, and the cursors at its ends.
#[derive(Debug, Clone)]
pub struct PageInfo {
    has_next_page: bool,
    has_previous_page: bool,
    cursors: Arc<PageCursors>,
}

/// Information about pagination in a connection.
#[Object]
impl PageInfo {
    /// When paging forward: whether more edges follow. When paging backward: whether an
    /// edge follows the `before` cursor.
    async fn has_next_page(&self) -> bool {
        self.has_next_page
    }

    /// When paging backward: whether more edges precede. When paging forward: whether an
    /// edge precedes the `after` cursor.
    async fn has_previous_page(&self) -> bool {
        self.has_previous_page
    }

    /// The cursor of the first edge, to page backward from.
    async fn start_cursor(&self) -> Option<String> {
        self.cursors.cursor(0)
    }

    /// The cursor of the last edge, to page forward from.
    async fn end_cursor(&self) -> Option<String> {
        let last = self.cursors.keys.len().checked_sub(1)?;
        self.cursors.cursor(last)
    }
}

/// A connection type of the schema: built from its page by [`build`].
pub trait ConnectionType {
    type Node: OutputType + Clone;
    fn new(
        nodes: Vec<Self::Node>,
        cursors: Arc<PageCursors>,
        page_info: PageInfo,
        total_count: i32,
    ) -> Self;
}

/// Declares the connection and edge types of one node type (`UserConnection`, `UserEdge`).
/// A page holds its nodes once: `nodes` answers them as they are, `edges` wraps each
/// with its cursor, signed when selected.
macro_rules! connection_type {
    ($node:ident, $conn:ident, $edge:ident) => {
        #[derive(Clone)]
        pub struct $edge {
            cursors: std::sync::Arc<$crate::graphql::connection::PageCursors>,
            index: usize,
            node: $node,
        }

        #[doc = concat!("An edge: a `", stringify!($node), "` and the cursor that points at it.")]
        #[async_graphql::Object]
        impl $edge {
            /// Opaque; pass it as `after` or `before` to page from this node.
            async fn cursor(&self) -> String {
                $crate::graphql::connection::edge_cursor(&self.cursors, self.index)
            }

            async fn node(&self) -> &$node {
                &self.node
            }
        }

        #[derive(Clone)]
        pub struct $conn {
            nodes: Vec<$node>,
            cursors: std::sync::Arc<$crate::graphql::connection::PageCursors>,
            page_info: $crate::graphql::connection::PageInfo,
            total_count: i32,
        }

        #[doc = concat!("A page of `", stringify!($node), "`s (Relay Cursor Connections).")]
        #[async_graphql::Object]
        impl $conn {
            async fn edges(&self) -> Vec<$edge> {
                self.nodes
                    .iter()
                    .enumerate()
                    .map(|(index, node)| $edge {
                        cursors: self.cursors.clone(),
                        index,
                        node: node.clone(),
                    })
                    .collect()
            }

            /// The nodes of `edges`, for clients that need no cursors.
            async fn nodes(&self) -> &Vec<$node> {
                &self.nodes
            }

            async fn page_info(&self) -> &$crate::graphql::connection::PageInfo {
                &self.page_info
            }

            /// How many nodes the whole connection holds, from the parent's counter:
            /// costs no request.
            async fn total_count(&self) -> i32 {
                self.total_count
            }
        }

        impl $crate::graphql::connection::ConnectionType for $conn {
            type Node = $node;
            fn new(
                nodes: Vec<$node>,
                cursors: std::sync::Arc<$crate::graphql::connection::PageCursors>,
                page_info: $crate::graphql::connection::PageInfo,
                total_count: i32,
            ) -> Self {
                $conn {
                    nodes,
                    cursors,
                    page_info,
                    total_count,
                }
            }
        }
    };
}

pub(crate) use connection_type;

/// The cursor of edge `index` of a page (an edge always has one).
pub fn edge_cursor(cursors: &PageCursors, index: usize) -> String {
    cursors.cursor(index).unwrap_or_default()
}

/// Builds the connection from the items a Query returned: cuts the extra item, restores
/// the connection's order, keeps each edge's key for its cursor.
pub fn build<R, C: ConnectionType>(
    cursors: &CursorCodec,
    connection: &str,
    args: &Resolved,
    fetched: Fetched<R>,
    total: u32,
    key: impl Fn(&R) -> PageKey,
    wrap: impl Fn(R) -> C::Node,
) -> C {
    let Fetched { mut items, more } = fetched;
    let more = more || items.len() > args.size as usize;
    items.truncate(args.size as usize);
    if !args.forward {
        items.reverse();
    }
    let keys = items.iter().map(&key).collect();
    let nodes = items.into_iter().map(wrap).collect();
    let cursors = Arc::new(PageCursors {
        codec: cursors.clone(),
        connection: connection.to_owned(),
        keys,
    });
    let from_cursor = args.start.is_some();
    let page_info = PageInfo {
        has_next_page: if args.forward { more } else { from_cursor },
        has_previous_page: if args.forward { from_cursor } else { more },
        cursors: cursors.clone(),
    };
    C::new(
        nodes,
        cursors,
        page_info,
        i32::try_from(total).unwrap_or(i32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(
        first: Option<i64>,
        after: Option<&str>,
        last: Option<i64>,
        before: Option<&str>,
    ) -> PageArgs {
        PageArgs {
            first,
            after: after.map(Into::into),
            last,
            before: before.map(Into::into),
        }
    }

    #[test]
    fn page_sizes_and_combinations_are_checked() {
        let c = CursorCodec::new("s");
        let code = |a: PageArgs| a.resolve(&c, "x").err().map(|e| e.code());
        assert_eq!(
            code(args(Some(101), None, None, None)),
            Some("BAD_USER_INPUT")
        );
        assert_eq!(
            code(args(Some(-1), None, None, None)),
            Some("BAD_USER_INPUT")
        );
        assert_eq!(
            code(args(None, None, Some(101), None)),
            Some("BAD_USER_INPUT")
        );
        assert_eq!(
            code(args(Some(1), None, Some(1), None)),
            Some("BAD_USER_INPUT")
        );
        assert_eq!(
            code(args(None, Some("a"), Some(1), None)),
            Some("BAD_USER_INPUT")
        );
        assert_eq!(
            code(args(Some(1), Some("junk"), None, None)),
            Some("INVALID_CURSOR")
        );
        let d = args(None, None, None, None).resolve(&c, "x").unwrap();
        assert_eq!((d.size, d.forward), (DEFAULT_PAGE_SIZE, true));
        let b = args(None, None, Some(0), None).resolve(&c, "x").unwrap();
        assert_eq!((b.size, b.forward, b.repo_page().limit), (0, false, 1));
    }
}
