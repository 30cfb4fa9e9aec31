//! An in-process HTTP server on a loopback port for the tests that speak real HTTP.

use std::net::SocketAddr;

use itemgraph::http::{serve, AppState};
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server stopped through its shutdown future.
pub struct TestServer {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    /// Serves `state` on `127.0.0.1:0`; ready as soon as this returns, since the listener
    /// is bound before the server task starts.
    pub async fn start(state: AppState) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, state, async {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            client: reqwest::Client::new(),
            stop,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `POST /graphql` with a JSON body.
    pub fn post(&self, body: Value) -> reqwest::RequestBuilder {
        self.client.post(self.url("/graphql")).json(&body)
    }

    /// `POST /graphql` with `body`; the answer as JSON.
    pub async fn answer(&self, body: Value) -> Value {
        self.post(body)
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("a JSON answer")
    }

    /// Asserts that a plain query over the demo data is answered correctly.
    pub async fn answers_normally(&self) {
        assert_eq!(
            self.answer(
                serde_json::json!({ "query": r#"{ organization(slug: "acme") { name } }"# })
            )
            .await,
            serde_json::json!({ "data": { "organization": { "name": "Acme Corporation" } } })
        );
    }

    /// Stops the server through its shutdown future and waits for it to finish.
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}

/// Status, `Content-Type` and the body: JSON when it parses, else the text as a string.
pub async fn read(resp: reqwest::RequestBuilder) -> (u16, String, Value) {
    let resp = resp.send().await.expect("request");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, content_type, body)
}
