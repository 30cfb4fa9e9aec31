//! GraphQL over HTTP: `POST /graphql` and `GET /graphql`, their bodies and parameters, and
//! the response as the GraphQL-over-HTTP spec shapes it.

use std::collections::BTreeMap;

use async_graphql::parser::types::OperationType;
use async_graphql::{ServerError, Value, Variables};
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use crate::auth::Access;
use crate::graphql::{self};

use super::errors::HttpError;
use super::negotiate::{prefers_html, Media};
use super::state::{AppState, LongLived};
use super::{live, playground_page, ConnectionScope, JSON, TRACE_HEADER};

/// `POST /graphql`.
pub(super) async fn graphql_post(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let media = Media::negotiate(&headers);
    let stream = live::wants_event_stream(&headers);
    // Authentication first: a caller without a valid token learns nothing, not even
    // whether their request would have parsed, and its body is not read. An event stream
    // is opened for pages of allowed origins only, before its body is read.
    let session = match state
        .header_session(&headers)
        .await
        .and_then(|session| check_json_content_type(&headers).map(|()| session))
        .and_then(|session| {
            if stream {
                refuse_long_lived(&state)?;
                live::check_origin(&state, &headers, parts.uri.authority().map(|a| a.as_str()))?;
            }
            Ok(session)
        }) {
        Ok(session) => session,
        Err(e) => return e.respond(media),
    };
    let request = read_body(&state, body)
        .await
        .and_then(|body| parse_body(&body))
        .and_then(|request| refuse_subscription(&state, request));
    if stream {
        let scope = parts.extensions.get::<ConnectionScope>().cloned();
        let mut session = session;
        session.trace = wants_trace(&headers);
        return live::event_stream(&state, &headers, scope, session, request);
    }
    match request {
        Ok(request) => {
            run(
                &state,
                session.access,
                request,
                wants_trace(&headers),
                media,
            )
            .await
        }
        Err(e) => e.respond(media),
    }
}

/// The whole body, within `--max-body-bytes` and `--body-read-timeout-ms` from now: a
/// deadline for all of it, so a body trickled a byte at a time cannot hold the request.
pub(super) async fn read_body(state: &AppState, body: Body) -> Result<Bytes, HttpError> {
    let options = state.options();
    let timeout = options.connections.body_read_timeout;
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, options.max_body_bytes)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            Err(if too_large {
                HttpError::PayloadTooLarge
            } else {
                HttpError::BadRequest(format!("the body could not be read: {e}"))
            })
        }
        Err(_) => Err(HttpError::BodyTimeout {
            millis: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }),
    }
}

/// `GET /graphql`: GraphiQL for a browser, otherwise a query from the URL.
pub(super) async fn graphql_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    scope: Option<axum::Extension<ConnectionScope>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    params: Result<Query<GetParams>, QueryRejection>,
) -> Response {
    let scope = scope.map(|axum::Extension(s)| s);
    let authority = uri.authority().map(|a| a.as_str());
    // By its header, not the extractor: where no connection can be upgraded (Lambda),
    // the extractor fails, and the request must not pass for a plain GET.
    let asks_upgrade = headers
        .get_all(header::UPGRADE)
        .iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    if asks_upgrade {
        if let Err(e) = refuse_long_lived(&state) {
            return e.respond(Media::negotiate(&headers));
        }
    }
    if let Ok(ws) = upgrade {
        return live::websocket(state, &headers, authority, scope, ws);
    }
    if state.options().graphiql && prefers_html(&headers) {
        return playground_page(&state, &headers);
    }
    if live::wants_event_stream(&headers) {
        // The caller and its origin first: nothing of the request is parsed before.
        let media = Media::negotiate(&headers);
        let session = match state
            .header_session(&headers)
            .await
            .and_then(|session| refuse_long_lived(&state).map(|()| session))
            .and_then(|session| live::check_origin(&state, &headers, authority).map(|()| session))
        {
            Ok(session) => session,
            Err(e) => return e.respond(media),
        };
        // GET must not change anything, as an event stream too (an `EventSource` sends
        // GET with this `Accept`).
        let request = params
            .map_err(|e| HttpError::BadRequest(e.body_text()))
            .and_then(|Query(p)| p.into_request())
            .and_then(
                |mut request| match operation_type(&mut request, &state.options().limits) {
                    Some(OperationType::Mutation) => Err(HttpError::MutationOverGet),
                    _ => Ok(request),
                },
            );
        let mut session = session;
        session.trace = wants_trace(&headers);
        return live::event_stream(&state, &headers, scope, session, request);
    }
    let media = Media::negotiate(&headers);
    let access = match state.access(&headers).await {
        Ok(access) => access,
        Err(e) => return e.respond(media),
    };
    let request = params
        .map_err(|e| HttpError::BadRequest(e.body_text()))
        .and_then(|Query(p)| p.into_request())
        .and_then(|mut request| {
            // GET must not change anything (GraphQL over HTTP: 405 for a mutation).
            match operation_type(&mut request, &state.options().limits) {
                Some(OperationType::Mutation) => Err(HttpError::MutationOverGet),
                _ => refuse_subscription(&state, request),
            }
        });
    match request {
        Ok(request) => run(&state, access, request, wants_trace(&headers), media).await,
        Err(e) => e.respond(media),
    }
}

/// Refuses a WebSocket or an event stream where the deployment holds no long-lived
/// connection ([`LongLived::Refused`]).
fn refuse_long_lived(state: &AppState) -> Result<(), HttpError> {
    match state.options().long_lived {
        LongLived::Served => Ok(()),
        LongLived::Refused(why) => Err(HttpError::LongLivedRefused(why)),
    }
}

/// Refuses a subscription sent as a plain request where the deployment holds no
/// long-lived connection. Where it does, async-graphql answers one itself (subscriptions
/// are not run over a plain request).
fn refuse_subscription(
    state: &AppState,
    mut request: async_graphql::Request,
) -> Result<async_graphql::Request, HttpError> {
    if let LongLived::Refused(why) = state.options().long_lived {
        if operation_type(&mut request, &state.options().limits)
            == Some(OperationType::Subscription)
        {
            return Err(HttpError::LongLivedRefused(why));
        }
    }
    Ok(request)
}

/// The body of `POST /graphql`. Unknown members are ignored. `query` may be left out
/// only by an automatic persisted query (`extensions.persistedQuery`) sending its hash.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PostBody {
    query: Option<String>,
    operation_name: Option<String>,
    /// Read straight into GraphQL values (`null` is none), not through a JSON tree.
    #[serde(default)]
    variables: Variables,
    extensions: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The member of `extensions` that carries an automatic persisted query's hash.
pub(super) const PERSISTED_QUERY: &str = "persistedQuery";

pub(super) fn parse_body(body: &[u8]) -> Result<async_graphql::Request, HttpError> {
    // Batching is not supported: one request is one operation, so each limit (deadline,
    // complexity) bounds one request's work.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(HttpError::BadRequest(
            "batched requests (a JSON array) are not supported: send one operation per request"
                .into(),
        ));
    }
    let body: PostBody = serde_json::from_slice(body).map_err(|e| {
        HttpError::BadRequest(format!("the body is not a GraphQL request object: {e}"))
    })?;
    let persisted = body
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(PERSISTED_QUERY));
    let query = match body.query {
        Some(query) => query,
        None if persisted => String::new(),
        None => {
            return Err(HttpError::BadRequest(
                "the `query` member is missing".into(),
            ))
        }
    };
    let mut request = async_graphql::Request::new(query);
    if let Some(name) = body.operation_name {
        request = request.operation_name(name);
    }
    request = request.variables(body.variables);
    if let Some(pq) = body.extensions.and_then(|mut e| e.remove(PERSISTED_QUERY)) {
        request.extensions.insert(
            PERSISTED_QUERY.to_owned(),
            Value::from_json(pq).unwrap_or_default(),
        );
    }
    Ok(request)
}

/// The URL parameters of `GET /graphql`; `variables` is JSON text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GetParams {
    query: Option<String>,
    operation_name: Option<String>,
    variables: Option<String>,
}

impl GetParams {
    pub(super) fn into_request(self) -> Result<async_graphql::Request, HttpError> {
        let query = self
            .query
            .ok_or_else(|| HttpError::BadRequest("the `query` parameter is missing".into()))?;
        let mut request = async_graphql::Request::new(query);
        if let Some(name) = self.operation_name.filter(|n| !n.is_empty()) {
            request = request.operation_name(name);
        }
        if let Some(text) = self.variables.filter(|v| !v.trim().is_empty()) {
            let vars = match serde_json::from_str(&text) {
                Ok(serde_json::Value::Null) => serde_json::Map::new(),
                Ok(serde_json::Value::Object(vars)) => vars,
                Ok(_) => {
                    return Err(HttpError::BadRequest(
                        "`variables` must be a JSON object".into(),
                    ))
                }
                Err(e) => {
                    return Err(HttpError::BadRequest(format!(
                        "`variables` is not valid JSON: {e}"
                    )))
                }
            };
            request = request.variables(Variables::from_json(serde_json::Value::Object(vars)));
        }
        Ok(request)
    }
}

/// The type of the operation the request would run; `None` when the document does not
/// parse or names no single operation (execution then reports why).
pub(super) fn operation_type(
    request: &mut async_graphql::Request,
    limits: &graphql::Limits,
) -> Option<OperationType> {
    // Never parse what the limits refuse: execution then refuses it with their code.
    graphql::check_text(&request.query, limits).ok()?;
    let name = request.operation_name.clone();
    let doc = request.parsed_query().ok()?;
    graphql::selected_operation(doc, name.as_deref()).map(|(_, op)| op.node.ty)
}

/// Runs the request and writes the GraphQL response in the negotiated media type.
pub(super) async fn run(
    state: &AppState,
    access: Access,
    request: async_graphql::Request,
    trace: bool,
    media: Media,
) -> Response {
    let inner = &state.0;
    let resp = graphql::execute(
        &inner.schema,
        inner.store.clone(),
        inner.cursors.clone(),
        access,
        request,
        trace,
    )
    .await;
    let wire = WireResponse::of(&resp);
    let status = match media {
        Media::GraphqlResponseJson if wire.data.is_none() => StatusCode::BAD_REQUEST,
        Media::GraphqlResponseJson if timed_out(&resp) => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::OK,
    };
    let mut response = match serde_json::to_vec(&wire) {
        Ok(body) => media.response(status, body),
        Err(error) => {
            tracing::error!(%error, "serializing a GraphQL response");
            return HttpError::Internal.respond(media);
        }
    };
    for (name, value) in resp.http_headers.iter() {
        response.headers_mut().append(name.clone(), value.clone());
    }
    response
}

/// A GraphQL response as sent: `data` is left out for a request error, as the GraphQL
/// spec asks (async-graphql's own serializer writes `"data": null`).
#[derive(Serialize)]
pub(super) struct WireResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "no_errors")]
    errors: &'a [ServerError],
    #[serde(skip_serializing_if = "no_extensions")]
    extensions: &'a BTreeMap<String, Value>,
}

/// Whether the deadline cancelled the request: it was valid and ran, so `data` is there
/// (null).
pub(super) fn timed_out(resp: &async_graphql::Response) -> bool {
    resp.errors
        .iter()
        .any(|e| e.extensions.as_ref().and_then(|x| x.get("code")) == Some(&Value::from("TIMEOUT")))
}

impl<'a> WireResponse<'a> {
    pub(super) fn of(resp: &'a async_graphql::Response) -> Self {
        // A request error (the document did not parse or validate, variables did not
        // coerce, a limit refused it) stops before execution: no error has a path, and
        // there is no data at all.
        let request_error = !timed_out(resp)
            && matches!(resp.data, Value::Null)
            && !resp.errors.is_empty()
            && resp.errors.iter().all(|e| e.path.is_empty());
        WireResponse {
            data: (!request_error).then_some(&resp.data),
            errors: &resp.errors,
            extensions: &resp.extensions,
        }
    }
}

pub(super) fn no_errors(e: &&[ServerError]) -> bool {
    e.is_empty()
}

pub(super) fn no_extensions(e: &&BTreeMap<String, Value>) -> bool {
    e.is_empty()
}

pub(super) fn wants_trace(headers: &HeaderMap) -> bool {
    headers
        .get(TRACE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

pub(super) fn check_json_content_type(headers: &HeaderMap) -> Result<(), HttpError> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    match essence.as_deref() {
        Some(JSON) => Ok(()),
        Some(other) => Err(HttpError::BadRequest(format!(
            "Content-Type must be {JSON}, got {other}"
        ))),
        None => Err(HttpError::BadRequest(format!(
            "Content-Type must be {JSON}"
        ))),
    }
}
