//! Relay connections over item collections.
//!
//! `first`/`after` pages forward in the connection's order, `last`/`before` backward by
//! flipping the scan direction; edges always come back in the connection's order. A cursor
//! is the key of its item (the last-seen sort key and what `ExclusiveStartKey` needs),
//! signed for its connection ([`super::cursor`]). `hasNextPage` going forward and
//! `hasPreviousPage` going backward are exact: each Query reads one item more than the page.

use super::cursor::CursorCodec;
use super::errors::ApiError;
use crate::chart::MAX_PAGE_SIZE;
use crate::store::PageKey;

pub use crate::chart::DEFAULT_PAGE_SIZE;

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
        assert_eq!((b.size, b.forward), (0, false));
    }
}
