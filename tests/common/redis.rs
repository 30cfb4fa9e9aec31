//! A Redis server of a test's own, from Debian's `redis-server` (which `scripts/test`
//! installs): on a free loopback port, nothing saved to disk, killed when dropped.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// `scripts/test` names the binary; outside it, `redis-server` on the PATH.
pub const SERVER_VAR: &str = "ITEMGRAPH_TEST_REDIS_SERVER";

pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A plain connection, for what a test does to the server behind the relay's back.
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// `key` as it is now (`DUMP`), to be put back by [`Redis::restore`].
    pub async fn dump(&self, key: &str) -> Vec<u8> {
        redis::cmd("DUMP")
            .arg(key)
            .query_async(&mut self.connection().await)
            .await
            .unwrap()
    }

    /// Puts back `key` as [`Redis::dump`] copied it, whatever it holds now: the server
    /// restored from an older copy (a failover to a replica that missed the tail).
    pub async fn restore(&self, key: &str, copy: Vec<u8>) {
        let _: () = redis::cmd("RESTORE")
            .arg(key)
            .arg(0)
            .arg(copy)
            .arg("REPLACE")
            .query_async(&mut self.connection().await)
            .await
            .unwrap();
    }

    /// Kills the server (SIGKILL), as a crashed cache node goes.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// A fresh server, or `None` (after a loud `SKIPPED` line) when there is no
/// `redis-server` outside CI. Panics under `CI` or when `scripts/test` named a binary.
pub async fn start() -> Option<Redis> {
    start_with(None, |port| vec!["--port".into(), port.to_string()]).await
}

/// A fresh, empty server on `port` (where another was killed: a restart without its data).
pub async fn start_on(port: u16) -> Option<Redis> {
    start_with(Some(port), |port| vec!["--port".into(), port.to_string()]).await
}

/// A fresh server that speaks TLS only, with the certificate and key in those PEM files
/// (clients are not asked for certificates).
pub async fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Option<Redis> {
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    start_with(None, move |port| {
        vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            cert.clone(),
            "--tls-key-file".into(),
            key.clone(),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    })
    .await
}

async fn start_with(port: Option<u16>, listen: impl Fn(u16) -> Vec<String>) -> Option<Redis> {
    let named = std::env::var(SERVER_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let binary = named.clone().unwrap_or_else(|| "redis-server".into());
    let port = port.unwrap_or_else(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    });
    let spawned = Command::new(&binary)
        .args(listen(port))
        .args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let why = format!("{binary} does not start: {e}");
            if named.is_some() || std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
                panic!("{why}");
            }
            eprintln!("SKIPPED: {why}");
            return None;
        }
    };
    let redis = Redis { child, port };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(redis);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "redis-server did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
