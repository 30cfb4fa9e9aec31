//! An OTLP/HTTP receiver on loopback, as a collector is to the server: it takes
//! `POST /v1/traces` (protobuf), decodes every span with the OpenTelemetry protocol's own
//! types and keeps it. It can also stop answering (a hung collector), or hold exports
//! unanswered for a while (a collector that stalls, then recovers).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;
use serde_json::Value;
use tokio::task::JoinHandle;

use itemgraph::telemetry::{BatchSettings, ParentTrust, SamplerSetting, Settings, WireProtocol};

/// One span as received.
#[derive(Debug, Clone)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// 1 internal, 2 server, 3 client.
    pub kind: i32,
    pub attributes: BTreeMap<String, Value>,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub status_message: String,
    pub service_name: String,
    /// The W3C `tracestate` the span carries (empty for none).
    pub trace_state: String,
    /// The spans it links to: (trace id, span id).
    pub links: Vec<(String, String)>,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Value::as_str)
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.attr(key).and_then(Value::as_i64)
    }
}

#[derive(Default)]
struct Shared {
    spans: Mutex<Vec<Span>>,
    hung: AtomicBool,
    paused: AtomicBool,
    posts: std::sync::atomic::AtomicUsize,
}

pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/v1/traces", post(receive))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { addr, shared, task }
    }

    /// The URL the server is configured with (`--otlp-traces-endpoint`).
    pub fn traces_url(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    /// From now on, every export is read and never answered.
    pub fn hang(&self) {
        self.shared.hung.store(true, Ordering::SeqCst);
    }

    /// From now on, exports are read and held unanswered until [`Receiver::resume`]: a
    /// collector that stalls, then recovers.
    pub fn pause(&self) {
        self.shared.paused.store(true, Ordering::SeqCst);
    }

    /// Exports held by [`Receiver::pause`] are taken and answered, and later ones at once.
    pub fn resume(&self) {
        self.shared.paused.store(false, Ordering::SeqCst);
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.shared.spans.lock().unwrap().clone()
    }

    /// The spans of one trace.
    pub fn trace(&self, trace_id: &str) -> Vec<Span> {
        self.spans()
            .into_iter()
            .filter(|s| s.trace_id == trace_id)
            .collect()
    }

    /// Export requests received (answered or not).
    pub fn posts(&self) -> usize {
        self.shared.posts.load(Ordering::SeqCst)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(State(shared): State<Arc<Shared>>, body: Bytes) -> impl IntoResponse {
    shared.posts.fetch_add(1, Ordering::SeqCst);
    if shared.hung.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    while shared.paused.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let mut got = Vec::new();
    for resource_spans in request.resource_spans {
        let service_name = resource_spans
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .map(|kv| value_of(kv).as_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                let status = span.status.unwrap_or_default();
                got.push(Span {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    name: span.name,
                    kind: span.kind,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), value_of(kv)))
                        .collect(),
                    status_code: status.code,
                    status_message: status.message,
                    service_name: service_name.clone(),
                    trace_state: span.trace_state,
                    links: span
                        .links
                        .iter()
                        .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                        .collect(),
                });
            }
        }
    }
    shared.spans.lock().unwrap().extend(got);
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

fn value_of(kv: &KeyValue) -> Value {
    fn any(v: &Option<Any>) -> Value {
        match v {
            Some(Any::StringValue(s)) => Value::from(s.clone()),
            Some(Any::IntValue(i)) => Value::from(*i),
            Some(Any::DoubleValue(d)) => Value::from(*d),
            Some(Any::BoolValue(b)) => Value::from(*b),
            Some(Any::ArrayValue(a)) => {
                Value::Array(a.values.iter().map(|v| any(&v.value)).collect())
            }
            Some(other) => Value::from(format!("{other:?}")),
            None => Value::Null,
        }
    }
    any(&kv.value.as_ref().and_then(|v| v.value.clone()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Tracing settings for a test: every trace kept, exported within `schedule_delay_ms`.
pub fn settings(traces_url: &str) -> Settings {
    Settings {
        traces_endpoint: traces_url.to_owned(),
        protocol: WireProtocol::HttpProtobuf,
        service_name: "itemgraph-test".into(),
        resource_attributes: vec![("deployment.environment".into(), "test".into())],
        sampler: SamplerSetting::ParentBasedAlwaysOn,
        batch: BatchSettings {
            schedule_delay: std::time::Duration::from_millis(50),
            ..BatchSettings::DEFAULT
        },
        record_organization: false,
        parent_trust: ParentTrust::Authenticated,
    }
}
