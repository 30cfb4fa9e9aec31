//! Hostile clients on the live surfaces (WebSocket, both protocols, and Server-Sent
//! Events), each reproduced against a real server over real sockets with a raw WebSocket
//! client written here (it can stop reading, skip pongs, and send what no library would).
//! Every case runs beside a normal subscriber (`Bystander`) whose events must keep
//! arriving on time.

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::server::TestServer;
use itemgraph::auth::{issue_token, Authenticator, Claims, Role};
use itemgraph::graphql::CursorCodec;
use itemgraph::http::{AppState, ConnectionLimits, Cors, CorsOrigins, Options};
use itemgraph::live::{LiveOptions, Pos, Position};
use itemgraph::store::Store;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const JWT_SECRET: &[u8] = b"hostile-live-test-jwt-secret-0123456789";
const CURSOR_SECRET: &str = "hostile live cursor secret";

const TICKETS: &str = r#"subscription($org: String!, $after: String) {
  ticketEvents(org: $org, after: $after) { kind cursor ticket { ticketId title } }
}"#;

/// About 40 KB of answer each.
const INTROSPECTION: &str =
    "{ __schema { types { name description fields { name description type { name kind } } } } }";

fn token_until(org: &str, role: Role, exp: u64) -> String {
    issue_token(
        JWT_SECRET,
        &Claims {
            sub: Some("hostile-live".into()),
            org: org.into(),
            role,
            exp,
            iat: None,
            iss: None,
            aud: None,
        },
    )
    .unwrap()
}

fn token(org: &str) -> String {
    token_until(
        org,
        Role::Admin,
        itemgraph::auth::expiring_in(Duration::from_secs(3600)),
    )
}

fn live(f: impl FnOnce(&mut LiveOptions)) -> LiveOptions {
    let mut live = LiveOptions {
        poll: Duration::from_millis(100),
        keepalive: Duration::from_secs(5),
        ..LiveOptions::DEFAULT
    };
    f(&mut live);
    live
}

struct Server {
    http: TestServer,
    state: AppState,
    store: Arc<dyn Store>,
}

impl Server {
    async fn start(auth: bool, live: LiveOptions, tweak: impl FnOnce(&mut Options)) -> Server {
        let store: Arc<dyn Store> = Arc::new(common::engines::embedded_demo().await);
        let mut options = Options {
            live,
            ..Options::default()
        };
        tweak(&mut options);
        let state = AppState::with_options(store.clone(), CursorCodec::new(CURSOR_SECRET), options)
            .with_authenticator(auth.then(|| Authenticator::hs256(JWT_SECRET)));
        Server {
            http: TestServer::start(state.clone()).await,
            state,
            store,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.http.addr
    }

    /// A ticket created in `org` through `POST /graphql`; its id.
    async fn create_ticket(&self, org: &str, title: &str) -> String {
        let requester = if org == "acme" {
            "wile-e-coyote"
        } else {
            "homer-simpson"
        };
        let body = self
            .http
            .post(json!({
                "query": "mutation($input: CreateTicketInput!) { createTicket(input: $input) { ticket { ticketId } } }",
                "variables": { "input": { "org": org, "title": title, "body": "Hostile test.", "requester": requester, "priority": "NORMAL" } },
            }))
            .bearer_auth(token(org))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap();
        body["data"]["createTicket"]["ticket"]["ticketId"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_owned()
    }
}

// --- a raw WebSocket client ------------------------------------------------------------------

/// A WebSocket client of a few lines: the handshake, masked frames out, frames in. Pings
/// are answered only when `answer_pings`.
struct Raw {
    stream: TcpStream,
    answer_pings: bool,
}

#[derive(Debug)]
enum Got {
    Text(Value),
    Close(u16, String),
    /// The connection ended without a close frame.
    Gone,
}

impl Raw {
    /// Upgrades `GET /graphql` with `protocol` and `headers`; the status and body when the
    /// server answers anything but 101. `recv_buffer`: a small receive buffer, for a
    /// client that stops reading.
    async fn connect(
        addr: SocketAddr,
        protocol: &str,
        headers: &[(&str, &str)],
        recv_buffer: Option<u32>,
    ) -> Result<Raw, (u16, String)> {
        let socket = TcpSocket::new_v4().unwrap();
        if let Some(size) = recv_buffer {
            socket.set_recv_buffer_size(size).unwrap();
        }
        let mut stream = socket.connect(addr).await.unwrap();
        let mut request = format!(
            "GET /graphql HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Protocol: {protocol}\r\n"
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            if stream.read(&mut b).await.unwrap() == 0 {
                return Err((0, String::from_utf8_lossy(&head).into_owned()));
            }
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let status: u16 = head[9..12].parse().unwrap();
        if status != 101 {
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            stream.read_exact(&mut body).await.unwrap();
            return Err((status, String::from_utf8_lossy(&body).into_owned()));
        }
        Ok(Raw {
            stream,
            answer_pings: true,
        })
    }

    /// A `graphql-transport-ws` socket through `connection_init` with `token`.
    async fn ready(addr: SocketAddr, token: Option<&str>) -> Raw {
        let mut raw = Raw::connect(addr, "graphql-transport-ws", &[], None)
            .await
            .expect("upgraded");
        raw.init(token).await;
        raw
    }

    async fn init(&mut self, token: Option<&str>) {
        let payload = token.map_or(
            json!({}),
            |t| json!({ "Authorization": format!("Bearer {t}") }),
        );
        self.send(&json!({ "type": "connection_init", "payload": payload }))
            .await;
        match self.next(Duration::from_secs(5)).await {
            Got::Text(m) if m["type"] == "connection_ack" => {}
            other => panic!("no ack: {other:?}"),
        }
    }

    async fn frame_out(&mut self, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
        let mut f = vec![0x80 | opcode];
        let len = payload.len();
        if len < 126 {
            f.push(0x80 | len as u8);
        } else if len < 65536 {
            f.push(0x80 | 126);
            f.extend((len as u16).to_be_bytes());
        } else {
            f.push(0x80 | 127);
            f.extend((len as u64).to_be_bytes());
        }
        let mask = [0x12, 0x34, 0x56, 0x78];
        f.extend(mask);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&f).await
    }

    async fn send_text(&mut self, text: &str) {
        let _ = self.frame_out(0x1, text.as_bytes()).await;
    }

    async fn send(&mut self, message: &Value) {
        self.send_text(&message.to_string()).await;
    }

    async fn subscribe(&mut self, id: &str, query: &str, variables: Value) {
        self.send(&json!({ "id": id, "type": "subscribe", "payload": { "query": query, "variables": variables } }))
            .await;
    }

    /// One frame: its opcode and payload; `None` at the end of the connection.
    async fn frame_in(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 2];
        self.stream.read_exact(&mut h).await.ok()?;
        let mut len = u64::from(h[1] & 0x7f);
        if len == 126 {
            let mut l = [0u8; 2];
            self.stream.read_exact(&mut l).await.ok()?;
            len = u64::from(u16::from_be_bytes(l));
        } else if len == 127 {
            let mut l = [0u8; 8];
            self.stream.read_exact(&mut l).await.ok()?;
            len = u64::from_be_bytes(l);
        }
        let mut payload = vec![0u8; len as usize];
        self.stream.read_exact(&mut payload).await.ok()?;
        Some((h[0] & 0x0f, payload))
    }

    /// The next text message or the end, within `within`.
    async fn next(&mut self, within: Duration) -> Got {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.frame_in())
                .await
                .expect("a message in time");
            match frame {
                None => return Got::Gone,
                Some((0x1, text)) => return Got::Text(serde_json::from_slice(&text).unwrap()),
                Some((0x8, body)) => {
                    let code = if body.len() >= 2 {
                        u16::from_be_bytes([body[0], body[1]])
                    } else {
                        0
                    };
                    return Got::Close(
                        code,
                        String::from_utf8_lossy(&body[2.min(body.len())..]).into_owned(),
                    );
                }
                Some((0x9, payload)) if self.answer_pings => {
                    let _ = self.frame_out(0xA, &payload).await;
                }
                Some(_) => {}
            }
        }
    }

    /// Reads past every text message to the close: its code and reason.
    async fn closed(&mut self, within: Duration) -> (u16, String) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Got::Close(code, reason) => return (code, reason),
                Got::Gone => return (0, String::new()),
                Got::Text(_) => {}
            }
        }
    }

    /// The next message for operation `id` (a `next`, `error` or `complete`).
    /// A socket with a small receive buffer, initialised as globex, that asks 300
    /// introspection queries: enough answers to fill every buffer between the server and
    /// a client that reads none of them.
    async fn flooding(server: &Server) -> Raw {
        let mut raw = Raw::connect(server.addr(), "graphql-transport-ws", &[], Some(4096))
            .await
            .unwrap();
        raw.init(Some(&token("globex"))).await;
        for i in 0..300 {
            raw.subscribe(&format!("q{i}"), INTROSPECTION, json!({}))
                .await;
        }
        raw
    }

    async fn result(&mut self, id: &str) -> Value {
        loop {
            match self.next(Duration::from_secs(10)).await {
                Got::Text(m) if m["id"] == id => return m,
                Got::Text(_) => {}
                other => panic!("the socket ended: {other:?}"),
            }
        }
    }
}

/// A normal subscriber to acme's tickets: each hostile case runs beside one.
struct Bystander(Raw);

impl Bystander {
    async fn start(server: &Server) -> Bystander {
        let mut raw = Raw::ready(server.addr(), Some(&token("acme"))).await;
        raw.subscribe("b", TICKETS, json!({ "org": "acme" })).await;
        wait_for(|| server.state.hub().open_for(&tenant("acme")) >= 1).await;
        Bystander(raw)
    }

    /// A ticket created now reaches it within three seconds (on loopback it takes
    /// milliseconds; the bound leaves room for a loaded machine).
    async fn still_served(&mut self, server: &Server) {
        let id = server.create_ticket("acme", "bystander probe").await;
        let sent = Instant::now();
        loop {
            let m = self.0.result("b").await;
            assert_eq!(m["type"], "next", "{m}");
            if m["payload"]["data"]["ticketEvents"]["ticket"]["ticketId"] == id.as_str() {
                break;
            }
        }
        assert!(
            sent.elapsed() < Duration::from_secs(3),
            "the normal subscriber waited {:?}",
            sent.elapsed()
        );
    }
}

fn tenant(s: &str) -> itemgraph::chart::kinds::Tenant {
    itemgraph::chart::kinds::Tenant::parse(s).unwrap()
}

async fn wait_for(mut condition: impl FnMut() -> bool) {
    for _ in 0..500 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the condition did not hold in time");
}

// --- 1. clients that do not read ---------------------------------------------------------------

/// 300 introspection queries sent and never read: the server stops running them once its
/// queue for the client is full, and disconnects the client once a write waits the send
/// timeout; what the client then finds in its buffers is bounded.
#[tokio::test]
async fn a_client_that_does_not_read_is_disconnected() {
    let server = Server::start(
        true,
        live(|l| {
            l.send_timeout = Duration::from_secs(1);
            l.send_queue_bytes = 64 * 1024;
            l.max_per_connection = 400;
            l.keepalive = Duration::from_secs(20);
        }),
        |_| {},
    )
    .await;
    let mut bystander = Bystander::start(&server).await;
    let mut hostile = Raw::flooding(&server).await;
    let sent = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    bystander.still_served(&server).await;
    // Still not reading (reading would make it a client that reads): the server says
    // when it disconnected it, its writer having waited the send timeout. A loaded machine
    // may take a while to fill the buffers first.
    let not_reading = || {
        itemgraph::metrics::render()
            .expect("the recorder is installed")
            .lines()
            .any(|l| {
                l.starts_with("itemgraph_graphql_errors_total")
                    && l.contains("code=\"CLIENT_NOT_READING\"")
            })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !not_reading() {
        assert!(
            Instant::now() < deadline,
            "not disconnected {:?} after the last send",
            sent.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Then everything there is, to the end.
    let mut bytes = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match hostile.stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => bytes += n,
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the connection was still open {:?} after the last send",
        sent.elapsed()
    );
    assert!(
        bytes < 12 * 1024 * 1024,
        "{bytes} bytes were buffered for the client"
    );
    bystander.still_served(&server).await;
}

/// A WebSocket and an event stream whose clients do not read cannot hold a stop past
/// `--shutdown-timeout`.
#[tokio::test]
async fn clients_that_do_not_read_never_hold_shutdown() {
    let server = Server::start(
        true,
        live(|l| {
            l.send_timeout = Duration::from_secs(120);
            l.keepalive = Duration::from_secs(120);
            l.max_per_connection = 400;
        }),
        |o| o.connections.shutdown_timeout = Duration::from_secs(1),
    )
    .await;
    let mut hostile = Raw::connect(server.addr(), "graphql-transport-ws", &[], Some(4096))
        .await
        .unwrap();
    hostile.init(Some(&token("globex"))).await;
    for i in 0..300 {
        hostile
            .subscribe(&format!("q{i}"), INTROSPECTION, json!({}))
            .await;
    }
    // An event stream of the same, over a raw connection that never reads.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut sse = socket.connect(server.addr()).await.unwrap();
    let body = json!({ "query": INTROSPECTION }).to_string();
    sse.write_all(
        format!(
            "POST /graphql HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\
             Content-Type: application/json\r\nAuthorization: Bearer {}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            server.addr(),
            token("globex"),
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // The stream is open (its head read); from now on nothing is read.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        assert_eq!(
            sse.read(&mut b).await.unwrap(),
            1,
            "the event stream's head"
        );
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let stopping = Instant::now();
    tokio::time::timeout(Duration::from_secs(6), server.http.stop())
        .await
        .expect("the server stopped");
    assert!(
        stopping.elapsed() < Duration::from_secs(4),
        "stopping took {:?}",
        stopping.elapsed()
    );
}

// --- 2. origins ----------------------------------------------------------------------------------

async fn upgrade_status(server: &Server, origin: Option<&str>) -> u16 {
    let headers: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
    match Raw::connect(server.addr(), "graphql-transport-ws", &headers, None).await {
        Ok(_) => 101,
        Err((status, body)) => {
            if status == 403 {
                assert!(body.contains("FORBIDDEN"), "{body}");
            }
            status
        }
    }
}

async fn event_stream_status(server: &Server, origin: &str, auth: Option<&str>) -> (u16, u16) {
    let client = &server.http.client;
    let mut post = client
        .post(server.http.url("/graphql"))
        .header("accept", "text/event-stream")
        .header("origin", origin)
        .json(&json!({ "query": "{ __typename }" }));
    let mut get = client
        .get(server.http.url("/graphql?query=%7B__typename%7D"))
        .header("accept", "text/event-stream")
        .header("origin", origin);
    if let Some(t) = auth {
        post = post.bearer_auth(t);
        get = get.bearer_auth(t);
    }
    (
        post.send().await.unwrap().status().as_u16(),
        get.send().await.unwrap().status().as_u16(),
    )
}

/// With auth off, a page of another origin can open neither a socket nor an event stream,
/// whatever `--cors-origin` says; the server's own pages (the playground) and clients that
/// are no browser can. With auth on, the `--cors-origin` list decides.
#[tokio::test]
async fn cross_origin_upgrades_and_event_streams_are_refused() {
    let cors = Cors {
        origins: CorsOrigins::List(vec!["https://app.example".parse().unwrap()]),
        max_age: None,
    };
    let open = Server::start(false, live(|_| {}), |o| o.cors = cors.clone()).await;
    let own = format!("http://{}", open.addr());
    assert_eq!(
        upgrade_status(&open, Some("https://evil.example")).await,
        403
    );
    assert_eq!(
        upgrade_status(&open, Some("https://app.example")).await,
        403
    );
    assert_eq!(upgrade_status(&open, Some("null")).await, 403);
    assert_eq!(upgrade_status(&open, Some(&own)).await, 101);
    assert_eq!(upgrade_status(&open, None).await, 101);
    assert_eq!(
        event_stream_status(&open, "https://evil.example", None).await,
        (403, 403)
    );
    assert_eq!(
        event_stream_status(&open, "https://app.example", None).await,
        (403, 403)
    );
    assert_eq!(event_stream_status(&open, &own, None).await, (200, 200));

    let guarded = Server::start(true, live(|_| {}), |o| o.cors = cors.clone()).await;
    let mut bystander = Bystander::start(&guarded).await;
    let t = token("acme");
    assert_eq!(
        upgrade_status(&guarded, Some("https://evil.example")).await,
        403
    );
    assert_eq!(
        upgrade_status(&guarded, Some("https://app.example")).await,
        101
    );
    assert_eq!(
        event_stream_status(&guarded, "https://evil.example", Some(&t)).await,
        (403, 403)
    );
    assert_eq!(
        event_stream_status(&guarded, "https://app.example", Some(&t)).await,
        (200, 200)
    );
    bystander.still_served(&guarded).await;
}

// --- 3. one root field, slots per organization ----------------------------------------------------

/// The spec's "single root field" rule: 30 aliased `ticketEvents` (or two through
/// fragments, or `__typename`, or one response key twice) are refused before any slot is
/// taken.
#[tokio::test]
async fn a_subscription_selects_exactly_one_root_field() {
    let server = Server::start(true, live(|_| {}), |_| {}).await;
    let mut bystander = Bystander::start(&server).await;
    let mut raw = Raw::ready(server.addr(), Some(&token("globex"))).await;
    let aliased: String = (0..30)
        .map(|i| format!("a{i}: ticketEvents(org: \"globex\") {{ kind }} "))
        .collect();
    let refused = [
        format!("subscription {{ {aliased} }}"),
        "subscription { ...A ... on Subscription { b: ticketEvents(org: \"globex\") { kind } } } \
         fragment A on Subscription { ticketEvents(org: \"globex\") { kind } }"
            .to_owned(),
        "subscription { __typename }".to_owned(),
    ];
    // graphql-transport-ws answers a validation failure with one `error` message (its
    // payload the errors), which ends the operation: no `complete` after it.
    for (i, query) in refused.iter().enumerate() {
        let id = format!("r{i}");
        raw.subscribe(&id, query, json!({})).await;
        let m = raw.result(&id).await;
        assert_eq!(m["type"], "error", "{query}: {m}");
        assert_eq!(
            m["payload"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
            "{query}: {m}"
        );
    }
    assert_eq!(server.state.hub().open_for(&tenant("globex")), 0);
    // Over SSE too.
    let answer = server
        .http
        .post(json!({ "query": refused[0] }))
        .header("accept", "text/event-stream")
        .bearer_auth(token("globex"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(answer.contains("GRAPHQL_VALIDATION_FAILED"), "{answer}");
    // One response key twice is refused too (the executor would run both).
    raw.subscribe(
        "twice",
        "subscription { t: ticketEvents(org: \"globex\") { kind } t: ticketEvents(org: \"globex\") { kind } }",
        json!({}),
    )
    .await;
    let m = raw.result("twice").await;
    assert_eq!(m["type"], "error", "{m}");
    assert_eq!(
        m["payload"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{m}"
    );
    // One field, aliased. Nothing else reaches the socket before its event: no
    // `complete` of a refused one.
    raw.subscribe(
        "one",
        "subscription { t: ticketEvents(org: \"globex\") { kind } }",
        json!({}),
    )
    .await;
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 1).await;
    server.create_ticket("globex", "one event").await;
    let m = loop {
        match raw.next(Duration::from_secs(10)).await {
            Got::Text(m) if m["id"] == "one" => break m,
            Got::Text(m) if m["type"] == "ping" || m["type"] == "pong" => {}
            other => panic!("before the event: {other:?}"),
        }
    };
    assert_eq!(m["payload"]["data"]["t"]["kind"], "CREATED", "{m}");
    bystander.still_served(&server).await;
}

/// One organization cannot take every slot: past `--max-subscriptions-per-org` its next
/// subscription is refused with the retryable `TOO_MANY_SUBSCRIPTIONS`, and another
/// organization still subscribes.
#[tokio::test]
async fn one_organization_cannot_take_every_slot() {
    let server = Server::start(true, live(|l| l.max_per_org = 2), |_| {}).await;
    let mut bystander = Bystander::start(&server).await;
    let mut first = Raw::ready(server.addr(), Some(&token("globex"))).await;
    let mut second = Raw::ready(server.addr(), Some(&token("globex"))).await;
    first
        .subscribe("1", TICKETS, json!({ "org": "globex" }))
        .await;
    second
        .subscribe("2", TICKETS, json!({ "org": "globex" }))
        .await;
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 2).await;
    second
        .subscribe("3", TICKETS, json!({ "org": "globex" }))
        .await;
    let m = second.result("3").await;
    assert_eq!(
        m["payload"]["errors"][0]["extensions"]["code"], "TOO_MANY_SUBSCRIPTIONS",
        "{m}"
    );
    // acme holds one (the bystander) and may open another.
    let mut acme = Raw::ready(server.addr(), Some(&token("acme"))).await;
    acme.subscribe("a", TICKETS, json!({ "org": "acme" })).await;
    wait_for(|| server.state.hub().open_for(&tenant("acme")) == 2).await;
    bystander.still_served(&server).await;
    // A slot given back is taken again.
    drop(first);
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 1).await;
    second
        .subscribe("4", TICKETS, json!({ "org": "globex" }))
        .await;
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 2).await;
}

/// Suspected and confirmed: event streams were not counted per connection, and HTTP/2
/// multiplexes any number on one. Now at most `max_per_connection` run on one connection;
/// one more is refused with `TOO_MANY_SUBSCRIPTIONS`, and another connection still opens.
#[tokio::test]
async fn event_streams_are_counted_per_http2_connection() {
    let server = Server::start(true, live(|l| l.max_per_connection = 2), |_| {}).await;
    let mut bystander = Bystander::start(&server).await;
    let connect = || async {
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let (client, connection) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(connection);
        client
    };
    let addr = server.addr();
    let open = |client: h2::client::SendRequest<axum::body::Bytes>| async move {
        let mut client = client.ready().await.unwrap();
        let request = axum::http::Request::builder()
            .method("POST")
            .uri(format!("http://{addr}/graphql"))
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", token("globex")))
            .body(())
            .unwrap();
        let (response, mut body) = client.send_request(request, false).unwrap();
        let query = json!({ "query": TICKETS, "variables": { "org": "globex" } }).to_string();
        body.send_data(query.into(), true).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), 200);
        response.into_body()
    };
    let client = connect().await;
    let _first = open(client.clone()).await;
    let _second = open(client.clone()).await;
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 2).await;
    let mut third = open(client.clone()).await;
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(5), third.data())
        .await
        .expect("the refusal in time")
    {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert!(text.contains("TOO_MANY_SUBSCRIPTIONS"), "{text}");
    assert_eq!(server.state.hub().open_for(&tenant("globex")), 2);
    let _other = open(connect().await).await;
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 3).await;
    bystander.still_served(&server).await;
}

// --- 4. ids, messages and close frames ---------------------------------------------------------------

/// Ids of at most 128 bytes, one per running operation (a reused id closes with 4409
/// instead of replacing the running one), messages within their own bound (1009), and
/// close reasons from a fixed list: a 500 KB malformed message is not echoed.
#[tokio::test]
async fn ids_messages_and_close_reasons_are_bounded() {
    let server = Server::start(
        true,
        live(|l| {
            l.max_per_connection = 1;
            l.max_message_bytes = 1024 * 1024;
        }),
        |_| {},
    )
    .await;
    let mut bystander = Bystander::start(&server).await;
    for protocol in ["graphql-transport-ws", "graphql-ws"] {
        let connect = || async {
            let mut raw = Raw::connect(server.addr(), protocol, &[], None)
                .await
                .unwrap();
            raw.init(Some(&token("globex"))).await;
            raw
        };
        let subscribe_type = if protocol == "graphql-ws" {
            "start"
        } else {
            "subscribe"
        };
        let sub = |id: String| json!({ "id": id, "type": subscribe_type, "payload": { "query": TICKETS, "variables": { "org": "globex" } } });

        let mut raw = connect().await;
        raw.send(&sub("x".repeat(129))).await;
        assert_eq!(
            raw.closed(Duration::from_secs(5)).await,
            (4400, "subscription id longer than 128 bytes".into()),
            "{protocol}"
        );

        // At the per-socket cap, a reused id neither replaces the running subscription
        // nor is kept: the socket closes with 4409.
        let mut raw = connect().await;
        raw.send(&sub("same".into())).await;
        wait_for(|| server.state.hub().open_for(&tenant("globex")) == 1).await;
        raw.send(&sub("same".into())).await;
        assert_eq!(
            raw.closed(Duration::from_secs(5)).await,
            (4409, "an operation with this id is running".into()),
            "{protocol}"
        );
        wait_for(|| server.state.hub().open_for(&tenant("globex")) == 0).await;

        let mut raw = connect().await;
        let garbage = format!("{{\"type\":\"subscribe\",\"id\":{}", "\"x".repeat(250_000));
        raw.send_text(&garbage).await;
        let (code, reason) = raw.closed(Duration::from_secs(5)).await;
        assert_eq!(
            (code, reason.as_str()),
            (4400, "invalid message"),
            "{protocol}"
        );

        let mut raw = connect().await;
        raw.send_text(&"y".repeat(1024 * 1024 + 1)).await;
        assert_eq!(
            raw.closed(Duration::from_secs(5)).await,
            (1009, "message too big".into()),
            "{protocol}"
        );
    }
    // The default bound of a socket's message is far under a POST body's.
    let defaults = Options::default();
    assert!(LiveOptions::DEFAULT.max_message_bytes < defaults.max_body_bytes);
    bystander.still_served(&server).await;
}

// --- 5. sockets before connection_init, keep-alive --------------------------------------------------

/// Upgraded sockets that never send `connection_init` are idle for the connection limit
/// (the first closed, so requests are still served) and capped in number: past the cap,
/// the one waiting longest is closed (1013), so they cannot keep real clients out.
#[tokio::test]
async fn sockets_awaiting_init_are_idle_and_capped() {
    let server = Server::start(
        true,
        live(|l| {
            l.max_awaiting_init = 4;
            l.init_timeout = Duration::from_secs(30);
        }),
        |o| {
            o.connections = ConnectionLimits {
                max_connections: 4,
                ..ConnectionLimits::DEFAULT
            }
        },
    )
    .await;
    let mut tokenless = Vec::new();
    for _ in 0..4 {
        tokenless.push(
            Raw::connect(server.addr(), "graphql-transport-ws", &[], None)
                .await
                .unwrap(),
        );
    }
    // A query still answers: it evicts the socket idle longest.
    let answer = server
        .http
        .post(json!({ "query": "{ __typename }" }))
        .bearer_auth(token("acme"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        tokenless[0].closed(Duration::from_secs(5)).await,
        (
            1013,
            "the server is at its connection limit; try again".into()
        )
    );
    drop(tokenless);

    let server = Server::start(
        true,
        live(|l| {
            l.max_awaiting_init = 3;
            l.init_timeout = Duration::from_secs(30);
        }),
        |_| {},
    )
    .await;
    let mut bystander = Bystander::start(&server).await;
    let mut waiting = Vec::new();
    for _ in 0..3 {
        waiting.push(
            Raw::connect(server.addr(), "graphql-transport-ws", &[], None)
                .await
                .unwrap(),
        );
    }
    // A fourth pushes out the one waiting longest; so does a fifth, the next.
    let mut fourth = Raw::connect(server.addr(), "graphql-transport-ws", &[], None)
        .await
        .expect("upgraded");
    let bumped = (
        1013,
        "too many sockets awaiting connection_init; try again".to_owned(),
    );
    assert_eq!(waiting[0].closed(Duration::from_secs(5)).await, bumped);
    let _fifth = Raw::connect(server.addr(), "graphql-transport-ws", &[], None)
        .await
        .expect("upgraded");
    assert_eq!(waiting[1].closed(Duration::from_secs(5)).await, bumped);
    // One through init leaves the list, and is not pushed out.
    fourth.init(Some(&token("acme"))).await;
    for _ in 0..3 {
        Raw::connect(server.addr(), "graphql-transport-ws", &[], None)
            .await
            .expect("upgraded");
    }
    fourth
        .subscribe("f", TICKETS, json!({ "org": "acme" }))
        .await;
    wait_for(|| server.state.hub().open_for(&tenant("acme")) == 2).await;
    bystander.still_served(&server).await;
}

/// A client that neither reads nor answers pings is closed by the keep-alive rule (three
/// intervals, then a second for what is queued), not after a send timeout spent behind a
/// write it never takes.
#[tokio::test]
async fn a_client_that_neither_reads_nor_answers_pings_is_closed_by_the_keepalive_rule() {
    let server = Server::start(
        true,
        live(|l| {
            l.keepalive = Duration::from_millis(300);
            l.send_timeout = Duration::from_secs(20);
            l.send_queue_bytes = 64 * 1024;
            l.max_per_connection = 400;
        }),
        |_| {},
    )
    .await;
    let silent_closes = || {
        itemgraph::metrics::render()
            .expect("the recorder is installed")
            .lines()
            .find(|l| {
                l.starts_with("itemgraph_websocket_closes_total") && l.contains("code=\"3008\"")
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    itemgraph::metrics::install();
    let before = silent_closes();
    // Reads nothing from now on, pings included.
    let hostile = Raw::flooding(&server).await;
    let started = Instant::now();
    while silent_closes() == before {
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "still open {:?} later: the close waits behind the blocked write",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(hostile);
}

/// A client that answers no ping is closed after three keep-alive intervals, on the old
/// protocol too (it has no pongs of its own: WebSocket ping frames are the rule).
#[tokio::test]
async fn silent_clients_are_closed_on_both_protocols() {
    let server = Server::start(
        true,
        live(|l| l.keepalive = Duration::from_millis(300)),
        |_| {},
    )
    .await;
    for protocol in ["graphql-ws", "graphql-transport-ws"] {
        let mut raw = Raw::connect(server.addr(), protocol, &[], None)
            .await
            .unwrap();
        raw.init(Some(&token("acme"))).await;
        raw.answer_pings = false;
        let started = Instant::now();
        let (code, _) = raw.closed(Duration::from_secs(5)).await;
        assert_eq!(code, 3008, "{protocol}");
        // Three intervals of 300 ms, and the check's own tick: well under 4 s.
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{protocol}: {:?}",
            started.elapsed()
        );
        // One that answers pings stays.
        let mut raw = Raw::connect(server.addr(), protocol, &[], None)
            .await
            .unwrap();
        raw.init(Some(&token("acme"))).await;
        let quiet = tokio::time::timeout(
            Duration::from_millis(1500),
            raw.closed(Duration::from_secs(2)),
        )
        .await;
        assert!(
            quiet.is_err(),
            "{protocol}: closed although it answers pings: {quiet:?}"
        );
    }
}

// --- 6. one expiry rule -----------------------------------------------------------------------------

/// A token 30 s past its `exp` is refused on every transport (no leeway anywhere).
#[tokio::test]
async fn an_expired_token_is_refused_on_every_transport() {
    let server = Server::start(true, live(|_| {}), |_| {}).await;
    let mut bystander = Bystander::start(&server).await;
    let expired = token_until(
        "acme",
        Role::Admin,
        itemgraph::auth::expiring_in(Duration::ZERO) - 30,
    );
    let post = server
        .http
        .post(json!({ "query": "{ __typename }" }))
        .bearer_auth(&expired)
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 401);
    let (sse_post, sse_get) = event_stream_status(
        &server,
        &format!("http://{}", server.addr()),
        Some(&expired),
    )
    .await;
    assert_eq!((sse_post, sse_get), (401, 401));
    for protocol in ["graphql-transport-ws", "graphql-ws"] {
        let mut raw = Raw::connect(server.addr(), protocol, &[], None)
            .await
            .unwrap();
        raw.send(&json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {expired}") } }))
            .await;
        assert_eq!(
            raw.closed(Duration::from_secs(5)).await.0,
            4403,
            "{protocol}"
        );
    }
    // GET with an event stream authenticates before it parses: no token, no parse.
    let unparsed = server
        .http
        .client
        .get(server.http.url("/graphql?query=%7B"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(unparsed.status(), 401);
    bystander.still_served(&server).await;
}

// --- 7. event cursors -------------------------------------------------------------------------------

/// Two cursors around another organization's writes tell nothing of them (they are
/// sealed: the stream position inside shows only to the server), and both resume without
/// gap or duplicate; an event cursor signed before sealing still resumes.
#[tokio::test]
async fn event_cursors_reveal_nothing_of_the_stream() {
    let server = Server::start(true, live(|_| {}), |_| {}).await;
    let mut globex = Raw::ready(server.addr(), Some(&token("globex"))).await;
    globex
        .subscribe("g", TICKETS, json!({ "org": "globex" }))
        .await;
    wait_for(|| server.state.hub().open_for(&tenant("globex")) == 1).await;
    let cursor = |m: &Value| {
        m["payload"]["data"]["ticketEvents"]["cursor"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    server.create_ticket("globex", "before").await;
    let first = cursor(&globex.result("g").await);
    for i in 0..21 {
        server.create_ticket("acme", &format!("acme {i}")).await;
    }
    let after = server.create_ticket("globex", "after").await;
    let second = cursor(&globex.result("g").await);

    let codec = CursorCodec::new(CURSOR_SECRET);
    for c in [&first, &second] {
        let raw = URL_SAFE_NO_PAD.decode(c).unwrap();
        let plain = codec.open("events:globex", c).unwrap();
        let position = Position::from_bytes(&plain).unwrap();
        for pos in position.shards.values() {
            if let Pos::Seq(seq) = pos {
                let digits = seq.trim_start_matches('0');
                assert!(
                    !raw.windows(digits.len()).any(|w| w == digits.as_bytes()),
                    "the sequence number {seq} shows in the cursor"
                );
            }
        }
        assert!(!raw.windows(5).any(|w| w == b"shard"), "a shard id shows");
    }
    // Resumes: after the first, exactly the second ticket of globex's.
    let mut resumed = Raw::ready(server.addr(), Some(&token("globex"))).await;
    resumed
        .subscribe("r", TICKETS, json!({ "org": "globex", "after": first }))
        .await;
    let m = resumed.result("r").await;
    assert_eq!(
        m["payload"]["data"]["ticketEvents"]["ticket"]["ticketId"],
        after.as_str(),
        "{m}"
    );
    // A cursor in the signed format of before.
    let plain = codec.open("events:globex", &first).unwrap();
    let signed = codec.sign("events:globex", &plain);
    resumed
        .subscribe("s", TICKETS, json!({ "org": "globex", "after": signed }))
        .await;
    let m = resumed.result("s").await;
    assert_eq!(
        m["payload"]["data"]["ticketEvents"]["ticket"]["ticketId"],
        after.as_str(),
        "{m}"
    );
    // Another organization's cursor is refused.
    let mut acme = Raw::ready(server.addr(), Some(&token("acme"))).await;
    acme.subscribe("x", TICKETS, json!({ "org": "acme", "after": first }))
        .await;
    let m = acme.result("x").await;
    assert_eq!(
        m["payload"]["errors"][0]["extensions"]["code"], "INVALID_CURSOR",
        "{m}"
    );
}

/// Suspected and confirmed: a position that is a time (`Pos::Since`) read its shard from
/// the oldest record without the `--max-replay` bound. Every record read now counts.
#[tokio::test]
async fn a_resume_from_a_time_is_bounded_by_max_replay() {
    let server = Server::start(true, live(|l| l.max_replay = 5), |_| {}).await;
    for i in 0..12 {
        server.create_ticket("globex", &format!("old {i}")).await;
    }
    let stream = server.store.change_stream().unwrap();
    let shards = stream.shards().await.unwrap();
    let mut position = Position::default();
    for shard in shards {
        position.shards.insert(shard.id, Pos::Since(u64::MAX / 2));
    }
    let after = CursorCodec::new(CURSOR_SECRET).seal("events:globex", &position.to_bytes());
    let mut raw = Raw::ready(server.addr(), Some(&token("globex"))).await;
    raw.subscribe("r", TICKETS, json!({ "org": "globex", "after": after }))
        .await;
    let m = raw.result("r").await;
    assert_eq!(
        m["payload"]["errors"][0]["extensions"]["code"], "EVENTS_EXPIRED",
        "{m}"
    );
}

// --- 8. what the review of the first version found ----------------------------------------------

/// A client that closes gets the closing handshake's answer (a close frame), not a
/// dropped connection; a socket whose token expires is closed (4403), not kept busy.
#[tokio::test]
async fn a_client_close_is_answered_and_an_expired_token_closes_the_socket() {
    let server = Server::start(true, live(|_| {}), |_| {}).await;
    for protocol in ["graphql-transport-ws", "graphql-ws"] {
        let mut raw = Raw::connect(server.addr(), protocol, &[], None)
            .await
            .unwrap();
        raw.init(Some(&token("acme"))).await;
        raw.frame_out(0x8, &1000u16.to_be_bytes()).await.unwrap();
        let (code, _) = raw.closed(Duration::from_secs(5)).await;
        assert_eq!(code, 1000, "{protocol}: no close frame in answer");
    }
    let soon = token_until(
        "acme",
        Role::Admin,
        itemgraph::auth::expiring_in(Duration::from_secs(2)),
    );
    let mut raw = Raw::ready(server.addr(), Some(&soon)).await;
    assert_eq!(
        raw.closed(Duration::from_secs(6)).await,
        (4403, "the token has expired".into())
    );
}

/// An HTTP/2 client that grants no flow-control window never takes its events: its
/// connection is closed after the send timeout instead of staying busy for ever.
#[tokio::test]
async fn an_http2_event_stream_without_window_is_disconnected() {
    let server = Server::start(
        true,
        live(|l| l.send_timeout = Duration::from_millis(500)),
        |_| {},
    )
    .await;
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, axum::body::Bytes>(tcp)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(format!("http://{}/graphql", server.addr()))
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {}", token("acme")))
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(request, false).unwrap();
    body.send_data(json!({ "query": INTROSPECTION }).to_string().into(), true)
        .unwrap();
    let _response = response.await.unwrap();
    // The server ends the connection: the client's connection task finishes.
    let ended = tokio::time::timeout(Duration::from_secs(5), connection)
        .await
        .expect("the server closed the connection");
    // Closed by the server: the client's connection ended, cleanly or with an error.
    let _ = ended.expect("the connection task did not panic");
}

/// With auth off, a page of the server's own origin is let in on an IP address or
/// `localhost` only: on another name, DNS rebinding could have pointed it here.
#[tokio::test]
async fn with_auth_off_a_rebindable_host_is_refused() {
    let open = Server::start(false, live(|_| {}), |_| {}).await;
    let port = open.addr().port();
    let upgrade = |host: String| {
        let addr = open.addr();
        async move {
            let origin = format!("http://{host}");
            let headers = [("Origin", origin.as_str())];
            // `Raw::connect` sends the socket address as `Host`; this one names `host`.
            let socket = TcpSocket::new_v4().unwrap();
            let mut stream = socket.connect(addr).await.unwrap();
            let mut request = format!(
                "GET /graphql HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
                 Sec-WebSocket-Protocol: graphql-transport-ws\r\n"
            );
            for (name, value) in headers {
                request.push_str(&format!("{name}: {value}\r\n"));
            }
            request.push_str("\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut status = [0u8; 12];
            stream.read_exact(&mut status).await.unwrap();
            String::from_utf8_lossy(&status[9..12])
                .parse::<u16>()
                .unwrap()
        }
    };
    assert_eq!(upgrade(format!("attacker.example:{port}")).await, 403);
    assert_eq!(upgrade(format!("localhost:{port}")).await, 101);
    assert_eq!(upgrade(format!("127.0.0.1:{port}")).await, 101);
    assert_eq!(upgrade(format!("[::1]:{port}")).await, 101);
}

/// The status line's code and the body of one raw HTTP/1.1 request sent to `addr`.
async fn raw_exchange(addr: SocketAddr, request: String) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    // To the end, or to the end of the head of a `101 Switching Protocols` (the socket
    // then stays open).
    let mut answer = Vec::new();
    let read = async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&chunk[..n]);
            if answer.starts_with(b"HTTP/1.1 101") && answer.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer:?}"));
    (status, answer)
}

/// With auth off, every `/graphql` request sent to a name DNS rebinding could have
/// pointed here is refused, with or without an `Origin`: a plain POST (same-origin after
/// rebinding, so no preflight), a plain GET, an event stream and an upgrade. On an IP
/// address, `localhost` or an `--allowed-host` name they are served; with auth on, the
/// token decides.
#[tokio::test]
async fn with_auth_off_every_graphql_request_on_a_rebindable_host_is_refused() {
    let body = json!({ "query": "{ organization(slug: \"acme\") { name } }" }).to_string();
    let requests = |host: &str, token: Option<String>| {
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let post = format!(
            "POST /graphql HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n{auth}Connection: close\r\n\r\n{body}",
            body.len()
        );
        let get = format!(
            "GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: {host}\r\nAccept: \
             application/json\r\n{auth}Connection: close\r\n\r\n"
        );
        let stream = format!(
            "GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: {host}\r\nAccept: \
             text/event-stream\r\n{auth}Connection: close\r\n\r\n"
        );
        let upgrade = format!(
            "GET /graphql HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: \
             Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: \
             13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n{auth}\r\n"
        );
        [
            ("POST", post),
            ("GET", get),
            ("event stream", stream),
            ("upgrade", upgrade),
        ]
    };
    let open = Server::start(false, live(|_| {}), |o| {
        o.allowed_hosts = vec!["itemgraph.internal".to_owned()];
    })
    .await;
    let port = open.addr().port();
    for (what, request) in requests(&format!("rebind.example:{port}"), None) {
        let (status, answer) = raw_exchange(open.addr(), request).await;
        assert_eq!(status, 403, "{what}: {answer}");
        assert!(answer.contains("FORBIDDEN"), "{what}: {answer}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("itemgraph.internal:{port}"),
    ] {
        for (what, request) in requests(&host, None) {
            let (status, answer) = raw_exchange(open.addr(), request).await;
            let served = if what == "upgrade" { 101 } else { 200 };
            assert_eq!(status, served, "{what} on {host}: {answer}");
        }
    }
    // With auth on, the name is not what protects the API: the token is.
    let closed = Server::start(true, live(|_| {}), |_| {}).await;
    let host = format!("rebind.example:{}", closed.addr().port());
    for (what, request) in requests(&host, None) {
        let (status, answer) = raw_exchange(closed.addr(), request).await;
        if what != "upgrade" {
            assert_eq!(status, 401, "{what}: {answer}");
        }
    }
    for (what, request) in requests(&host, Some(token("acme"))) {
        let (status, answer) = raw_exchange(closed.addr(), request).await;
        let served = if what == "upgrade" { 101 } else { 200 };
        assert_eq!(status, served, "{what}: {answer}");
    }
}
