//! Which browser pages may open a WebSocket or an event stream, and which hosts an
//! auth-off server answers on at all.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;

use crate::http::{AppState, CorsOrigins, HttpError, Media};

/// Every `/graphql` request (POST, GET, a WebSocket upgrade, an event stream) on an
/// auth-off server is refused with 403 `FORBIDDEN` when its `Host` is a name a page could
/// have rebound: DNS rebinding points a name the page's site controls at 127.0.0.1, and
/// its requests are then same-origin (no preflight, and a GET no `Origin`) to a server
/// that lets every caller read and write every organization. An IP address, `localhost`
/// and the names of `--allowed-host` cannot be so rebound. A request without a host at
/// all comes from no browser, and passes.
pub(in crate::http) async fn refuse_rebound_host(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if state.0.authenticator.is_none() {
        let headers = request.headers();
        let host = match headers.get(header::HOST) {
            Some(value) => Some(value.to_str().unwrap_or("")),
            None => request.uri().authority().map(|a| a.as_str()),
        };
        if host.is_some_and(|host| !answers_on(&state, host)) {
            crate::metrics::record_error("FORBIDDEN");
            return HttpError::Forbidden(
                "authentication is off, so this server answers only requests sent to an IP \
                 address, `localhost` or an --allowed-host name: another name could have been \
                 pointed at this machine by a page's DNS"
                    .into(),
            )
            .respond(Media::negotiate(headers));
        }
    }
    next.run(request).await
}

/// Whether an auth-off server answers a request sent to `host` (`name[:port]`): an IP
/// address, `localhost`, or a name of `--allowed-host`.
fn answers_on(state: &AppState, host: &str) -> bool {
    unrebindable(host) || {
        let name = host_name(host);
        state
            .options()
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
    }
}

/// The name of a `Host` value, without its port.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split(']').next().map_or(host, |v6| &host[..=v6.len()]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

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
        if !auth_off || host.is_some_and(|host| answers_on(state, host)) {
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
        None => host_name(host),
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
