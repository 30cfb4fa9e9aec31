//! Content negotiation: which media type a client gets (the GraphQL-over-HTTP one, plain
//! JSON, or GraphiQL's page).

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::{GRAPHQL_RESPONSE_JSON, JSON};

/// The media type of a GraphQL response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Media {
    /// `application/json`: always 200, for clients that predate the GraphQL-over-HTTP spec.
    Json,
    /// `application/graphql-response+json`: 4xx when the request fails before execution.
    GraphqlResponseJson,
}

impl Media {
    /// `application/graphql-response+json` when the client lists it and does not prefer
    /// `application/json` to it; `application/json` otherwise.
    pub(super) fn negotiate(headers: &HeaderMap) -> Media {
        let accept = accept_header(headers);
        let spec = quality(accept, GRAPHQL_RESPONSE_JSON, true);
        if spec > 0.0 && spec >= quality(accept, JSON, false) {
            Media::GraphqlResponseJson
        } else {
            Media::Json
        }
    }

    pub(super) fn content_type(self) -> &'static str {
        match self {
            Media::Json => "application/json",
            Media::GraphqlResponseJson => "application/graphql-response+json; charset=utf-8",
        }
    }

    pub(super) fn response(self, status: StatusCode, body: Vec<u8>) -> Response {
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type()),
        );
        response
    }
}

pub(super) fn accept_header(headers: &HeaderMap) -> &str {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Whether the client (a browser) would rather have HTML than JSON.
pub(super) fn prefers_html(headers: &HeaderMap) -> bool {
    let accept = accept_header(headers);
    let html = quality(accept, "text/html", false);
    html > 0.0
        && html > quality(accept, JSON, false)
        && html > quality(accept, GRAPHQL_RESPONSE_JSON, false)
}

/// The quality an `Accept` header gives `media`: that of the most specific range that
/// matches it (`type/subtype`, then `type/*`, then `*/*`), 0 when none does. With `exact`,
/// only a range naming `media` itself counts.
pub(super) fn quality(accept: &str, media: &str, exact: bool) -> f32 {
    let (ty, _) = media.split_once('/').unwrap_or((media, ""));
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let specificity = if name == media {
            2
        } else if exact {
            continue;
        } else if name.strip_suffix("/*") == Some(ty) {
            1
        } else if name == "*/*" {
            0
        } else {
            continue;
        };
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0.0, |(_, q)| q)
}
