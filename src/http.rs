//! The HTTP surface: [`app`] builds the router (tests call it without a socket) and
//! [`serve`] runs it on a listener until the shutdown future completes.
//!
//! Routes: `GET /healthz` (the process is up) and `GET /readyz` (the table can be used).
//! The GraphQL routes are added here later.

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::trace::TraceLayer;

use crate::store::Store;

/// What every handler shares. Cloned per request, so it is only an `Arc`.
#[derive(Clone)]
pub struct AppState {
    store: Arc<dyn Store>,
}

impl AppState {
    pub fn new(store: Arc<dyn Store>) -> Self {
        AppState { store }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}

/// The router with every route and the request tracing layer.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Liveness: answers as long as the process serves requests; touches no store, so a store
/// outage never gets the process restarted.
async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: 200 when the table exists and accepts requests (DynamoDB status `ACTIVE` or
/// `UPDATING`), 503 otherwise, so a load balancer holds traffic back until then.
async fn readyz(State(state): State<AppState>) -> (StatusCode, String) {
    match state.store.describe_table().await {
        Ok(Some(table)) if matches!(table.status.as_str(), "ACTIVE" | "UPDATING") => {
            (StatusCode::OK, "ready".into())
        }
        Ok(Some(table)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("table {} is {}", table.name, table.status),
        ),
        Ok(None) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("table {} does not exist", state.store.table_name()),
        ),
        Err(error) => {
            tracing::warn!(%error, "readiness check: DescribeTable failed");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable".into())
        }
    }
}

/// Serves [`app`] on `listener` until `shutdown` completes, then lets in-flight requests
/// finish before returning.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::store::TableSchema;

    /// One HTTP/1.1 request over a fresh connection; returns the status line and body.
    async fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        conn.write_all(req.as_bytes()).await.unwrap();
        let mut raw = String::new();
        conn.read_to_string(&mut raw).await.unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_owned(), body.to_owned())
    }

    /// Health, readiness before and after the table exists, and a clean shutdown.
    #[tokio::test]
    async fn health_and_readiness_follow_the_table() {
        let store = Arc::new(EmbeddedStore::in_memory("t", TableSchema::itemgraph()).unwrap());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, AppState::new(store.clone()), async {
            let _ = stopped.await;
        }));

        assert_eq!(
            get(addr, "/healthz").await,
            ("HTTP/1.1 200 OK".into(), "ok".into())
        );
        let (status, body) = get(addr, "/readyz").await;
        assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
        assert_eq!(body, "table t does not exist");

        store.create_table().await.unwrap();
        assert_eq!(
            get(addr, "/readyz").await,
            ("HTTP/1.1 200 OK".into(), "ready".into())
        );
        assert_eq!(get(addr, "/nope").await.0, "HTTP/1.1 404 Not Found");

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
