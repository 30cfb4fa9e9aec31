//! The limits on the work of one request. [`super::document_cache`] enforces them on each
//! new document (the text before parsing, aliases and fields after, depth and complexity
//! in validation), [`super::execute`] the deadline around the whole request.

use std::time::Duration;

use async_graphql::ServerResult;

use super::connection::DEFAULT_PAGE_SIZE;
use super::errors::ApiError;
use super::operation::{text_shape, TextShape};
use crate::chart::MAX_PAGE_SIZE;

/// What one request may cost. Every limit but the deadline is checked on the document,
/// before any store request; a request over one fails whole, with `data` null and the
/// code its [`super::ApiError`] variant names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest field nesting (`{ a { b } }` is 2). A client's introspection query reaches
    /// 13 (GraphiQL's `args { type { ofType … } }`), so the default leaves it room.
    pub max_depth: usize,
    /// Tokens in the document's text (names, numbers, strings, punctuators), counted in
    /// one pass before it is parsed.
    pub max_tokens: usize,
    /// How deep anything the server walks may nest: `{`, `[` and `(` in the text (values,
    /// objects, selections), and selection sets with fragment spreads once fragments are
    /// expanded. Bounds every recursion over what a client sends.
    pub max_nesting: usize,
    /// Fields selected once fragments are expanded where they are spread, counted with
    /// each fragment measured once: bounds what validation and look-ahead walk.
    pub max_fields: usize,
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
        max_tokens: 15_000,
        max_nesting: 64,
        max_fields: 5_000,
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
    let size = first.or(last).map_or(DEFAULT_PAGE_SIZE as usize, |n| {
        n.clamp(1, MAX_PAGE_SIZE as i32) as usize
    });
    size.saturating_mul(child_complexity).saturating_add(1)
}

/// Refuses a document whose text holds too many tokens or nests too deep, before anything
/// parses it: the parser recurses over nested values and selections.
pub fn check_text(text: &str, limits: &Limits) -> ServerResult<()> {
    match text_shape(text, limits.max_tokens, limits.max_nesting) {
        TextShape::Fits => Ok(()),
        TextShape::TooManyTokens => Err(ApiError::TooManyTokens {
            max: limits.max_tokens,
        }
        .server_error()),
        TextShape::TooDeep => Err(ApiError::NestingTooDeep {
            max: limits.max_nesting,
        }
        .server_error()),
    }
}
