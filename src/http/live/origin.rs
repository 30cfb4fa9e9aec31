//! Which browser pages may open a WebSocket or an event stream.

use axum::http::{header, HeaderMap, HeaderValue};

use crate::http::{AppState, CorsOrigins, HttpError};

/// Whether a browser page may open a socket or an event stream here: no `Origin` (not a
/// browser), the server's own origin (the playground), or one `--cors-origin` lets in;
/// while auth is off, no other origin at all (any page could use the server as its
/// visitor's, whatever CORS says: it does not apply to WebSockets).
pub(in crate::http) fn check_origin(
    state: &AppState,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), HttpError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(authority);
    let auth_off = state.0.authenticator.is_none();
    if same_origin(origin, host) {
        // With auth off, a page on a name DNS rebinding can point here would be "same
        // origin": only hosts that cannot be rebound (an IP address, `localhost`) count.
        if !auth_off || host.is_some_and(unrebindable) {
            return Ok(());
        }
    }
    let refused = |why: &str| {
        crate::metrics::record_error("FORBIDDEN");
        Err(HttpError::Forbidden(format!(
            "pages of another origin may not open a WebSocket or an event stream here: {why}"
        )))
    };
    if auth_off {
        return refused("auth is off");
    }
    match &state.options().cors.origins {
        CorsOrigins::Any => Ok(()),
        CorsOrigins::List(list) if list.iter().any(|o| o == origin) => Ok(()),
        _ => refused("the origin is not one --cors-origin names"),
    }
}

/// Whether a `Host` names this machine in a way no DNS answer can change: an IP address
/// or `localhost` (and its subdomains, which resolvers keep on loopback).
fn unrebindable(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => {
            return v6
                .split(']')
                .next()
                .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok())
        }
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
}

/// Whether `origin` (`scheme://host[:port]`) names the host the request was sent to.
fn same_origin(origin: &HeaderValue, host: Option<&str>) -> bool {
    let (Ok(origin), Some(host)) = (origin.to_str(), host) else {
        return false;
    };
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => return false,
    };
    let bare = |a: &str| {
        let a = a.to_ascii_lowercase();
        a.strip_suffix(default_port).map(str::to_owned).unwrap_or(a)
    };
    bare(authority) == bare(host)
}
