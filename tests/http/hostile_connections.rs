//! Hostile connections: half-open (headers never finished), silent, idle kept-alive,
//! bodies trickled a byte at a time, more connections than allowed, and open-file
//! exhaustion of a real `itemgraph serve` under a 1 024 open-file limit. Each is closed or
//! refused as documented, and a normal request sent alongside is answered.
//!
//! Waits are bounded polls, never sleeps that assume a speed: a closed connection is one
//! whose read returns end-of-file (or a reset) before the bound.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::server::TestServer;
use itemgraph::graphql::CursorCodec;
use itemgraph::http::{self, AppState, ConnectionLimits};
use itemgraph::store::Store;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far longer than any timeout under test: what "closed" waits for at most.
const BOUND: Duration = Duration::from_secs(30);

async fn start(store: Arc<dyn Store>, connections: ConnectionLimits) -> TestServer {
    TestServer::start(AppState::with_options(
        store,
        CursorCodec::new("connections test secret"),
        http::Options {
            connections,
            ..http::Options::default()
        },
    ))
    .await
}

async fn demo() -> Arc<dyn Store> {
    Arc::new(common::engines::embedded_demo().await)
}

/// Whether the server closes `stream` within [`BOUND`]: its read ends (0 bytes or an
/// error) rather than hanging. Whatever the server sent before closing is returned.
async fn closed_by_server(stream: &mut TcpStream) -> Option<String> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(BOUND, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok()
        .map(|()| String::from_utf8_lossy(&seen).into_owned())
}

fn limits(header_ms: u64, body_ms: u64, max: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_millis(header_ms),
        body_read_timeout: Duration::from_millis(body_ms),
        max_connections: max,
        ..ConnectionLimits::DEFAULT
    }
}

#[tokio::test]
async fn half_open_silent_and_idle_connections_are_closed_by_the_header_timeout() {
    let server = start(demo().await, limits(300, 10_000, 100)).await;

    // A request line and one header, then nothing.
    let mut half_open = TcpStream::connect(server.addr).await.unwrap();
    half_open
        .write_all(b"POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .unwrap();
    // Not a byte.
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    // One whole request, kept alive, then idle.
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 17];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200 OK\r\n");

    server.answers_normally().await;
    for (what, stream) in [
        ("half-open", &mut half_open),
        ("silent", &mut silent),
        ("idle keep-alive", &mut idle),
    ] {
        assert!(
            closed_by_server(stream).await.is_some(),
            "the {what} connection is still open"
        );
    }
    server.answers_normally().await;
    server.stop().await;
}

#[tokio::test]
async fn a_trickled_body_is_cut_off_at_the_body_deadline() {
    let server = start(demo().await, limits(10_000, 500, 100)).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            b"POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    // A byte at a time, each well inside any per-read timeout, until answered.
    let (mut reader, mut writer) = stream.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..1000 {
            if writer.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut answer = String::new();
    let read = tokio::time::timeout(BOUND, reader.read_to_string(&mut answer)).await;
    trickle.abort();
    assert!(read.is_ok(), "no answer to the trickled body");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":\"BAD_REQUEST\""), "{answer}");
    server.answers_normally().await;
    server.stop().await;
}

#[tokio::test]
async fn past_the_connection_limit_the_idle_are_closed_for_the_new() {
    let server = start(demo().await, limits(60_000, 10_000, 20)).await;
    let mut half_open = Vec::new();
    for _ in 0..50 {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        s.write_all(b"GET /graphql HTTP/1.1\r\n").await.unwrap();
        half_open.push(s);
    }
    // The normal request gets a connection: an idle one was closed for it.
    server.answers_normally().await;
    // The oldest half-open ones were closed to make room, with nothing sent to them.
    for (i, s) in half_open.iter_mut().take(25).enumerate() {
        let sent = closed_by_server(s)
            .await
            .unwrap_or_else(|| panic!("half-open connection {i} is still open"));
        assert_eq!(sent, "", "connection {i}");
    }
    server.answers_normally().await;
    server.stop().await;
}

#[tokio::test]
async fn when_every_connection_is_busy_one_more_is_refused_with_503() {
    let stalled = common::stalled::Stalled::over(demo().await);
    let server = start(stalled.clone(), limits(10_000, 10_000, 2)).await;
    // Two requests stuck on a store that never answers, each on its own connection.
    let stuck: Vec<_> = (0..2)
        .map(|_| {
            let client = reqwest::Client::new();
            let url = server.url("/graphql");
            tokio::spawn(async move {
                let _ = client
                    .post(url)
                    .json(&json!({ "query": r#"{ organization(slug: "acme") { name } }"# }))
                    .send()
                    .await;
            })
        })
        .collect();
    while stalled.started.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    let answer = closed_by_server(&mut third)
        .await
        .expect("the third connection is answered and closed");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("\"code\":\"UNAVAILABLE\""), "{answer}");
    for s in stuck {
        s.abort();
    }
    server.stop().await;
}

/// The real binary under a 1 024 open-file limit, 1 100 half-open connections: a normal
/// request is still answered, and the half-open ones are closed by the header timeout.
#[tokio::test]
async fn open_file_exhaustion_does_not_stop_the_server() {
    // This process holds the 1 100 connections: it needs the files for them.
    let mut own = rlimit::increase_nofile_limit(u64::MAX).unwrap();
    if own < 4_096 {
        // Past the hard limit only a privileged process may go (CI runs as root).
        let _ = rlimit::setrlimit(rlimit::Resource::NOFILE, 4_096, 4_096);
        own = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap().0;
    }
    assert!(
        own >= 2_400,
        "the test needs 2 400 open files, the limit is {own}"
    );

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_itemgraph"));
    command
        .args(["serve", "--in-memory", "--auth", "off", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--header-read-timeout-ms", "2000", "--metrics", "off"])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| rlimit::setrlimit(rlimit::Resource::NOFILE, 1024, 1024));
    }
    let mut child = command.spawn().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    // No connection is kept between requests: the one the readiness probe used is idle
    // longest once the half-open ones fill the limit, so the server closes it for theirs,
    // and a request sent on it as it closes would meet a reset rather than the server.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut ready = false;
    for _ in 0..300 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "the server did not start");

    let mut half_open = Vec::with_capacity(1_100);
    for _ in 0..1_100 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let _ = s
            .write_all(b"POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            .await;
        half_open.push(s);
    }
    let answer: Value = client
        .post(format!("{base}/graphql"))
        .json(&json!({ "query": r#"{ organization(slug: "acme") { name } }"# }))
        .send()
        .await
        .expect("a normal request is answered under 1 100 half-open connections")
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer,
        json!({ "data": { "organization": { "name": "Acme Corporation" } } })
    );
    for (i, s) in half_open.iter_mut().enumerate() {
        assert!(
            closed_by_server(s).await.is_some(),
            "half-open connection {i} is still open"
        );
    }
    assert!(child.try_wait().unwrap().is_none(), "the server exited");
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !log.contains("Too many open files"),
        "the server ran out of files: {log:.2000}"
    );
}
