//! Starting and stopping `itemgraph serve` on a free loopback port, and reading its peak
//! resident set size.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::process::{Child, Command};

/// How long a server may take to answer its first request.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `itemgraph serve`, killed when dropped if not stopped before.
pub struct Server {
    child: Child,
    pub pid: u32,
    /// `http://127.0.0.1:PORT/graphql`.
    pub url: String,
}

/// Where the data is for one server.
pub enum Backend<'a> {
    Embedded { data: &'a Path },
    DynamoDb { endpoint: &'a str, table: &'a str },
}

/// Which of `flags` this server build's `serve` has (builds of before a flag are measured
/// too).
fn has_flags<const N: usize>(exe: &Path, flags: [&str; N]) -> anyhow::Result<[bool; N]> {
    let out = std::process::Command::new(exe)
        .args(["serve", "--help"])
        .output()
        .with_context(|| format!("running {} serve --help", exe.display()))?;
    let help = String::from_utf8_lossy(&out.stdout);
    Ok(flags.map(|f| help.contains(f)))
}

impl Server {
    /// Starts the server and waits until it answers a query. Its log goes to `log`.
    pub async fn start(
        exe: &Path,
        backend: Backend<'_>,
        cursor_secret: &str,
        log: PathBuf,
    ) -> anyhow::Result<Server> {
        Self::start_with(exe, backend, cursor_secret, log, &[]).await
    }

    /// [`Server::start`] with more arguments for `serve`.
    pub async fn start_with(
        exe: &Path,
        backend: Backend<'_>,
        cursor_secret: &str,
        log: PathBuf,
        extra: &[&str],
    ) -> anyhow::Result<Server> {
        let port = free_port()?;
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .args(extra)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--seed", "none"])
            .args(["--cursor-secret", cursor_secret]);
        match backend {
            Backend::Embedded { data } => {
                cmd.args(["--store", "embedded", "--data"]).arg(data);
            }
            Backend::DynamoDb { endpoint, table } => {
                cmd.args(["--store", "dynamodb", "--endpoint", endpoint])
                    .args(["--table", table, "--region", "us-east-1"]);
            }
        }
        // Auth off: the bench measures the data path, not token checks. A send timeout of
        // a second: the hostile run's client that never reads is cut within the run.
        let [auth, send_timeout] = has_flags(exe, ["--auth", "--send-timeout-ms"])?;
        if auth {
            cmd.args(["--auth", "off"]);
        }
        if send_timeout {
            cmd.args(["--send-timeout-ms", "1000"]);
        }
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        // Warnings only: a log line per request would measure the terminal, not the server.
        cmd.env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .kill_on_drop(true);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let pid = child.id().context("the server exited at once")?;
        let mut server = Server {
            child,
            pid,
            url: format!("http://127.0.0.1:{port}/graphql"),
        };
        server.wait_ready(&log).await?;
        Ok(server)
    }

    async fn wait_ready(&mut self, log: &Path) -> anyhow::Result<()> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the server exited with {status} before answering; log: {}\n{}",
                    log.display(),
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            let ok = client
                .post(&self.url)
                .header("content-type", "application/json")
                .body(r#"{"query":"{ __typename }"}"#)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the server did not answer within {READY_TIMEOUT:?}; log: {}",
                    log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Peak and current resident set size in KiB (`VmHWM`, `VmRSS`).
    pub fn memory_kib(&self) -> anyhow::Result<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .context("reading the server's /proc status")?;
        let field = |name: &str| -> anyhow::Result<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("{name} missing from /proc/{}/status", self.pid))
        };
        Ok((field("VmHWM:")?, field("VmRSS:")?))
    }

    /// CPU time the server has used so far (user + system).
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        cpu_time_of(&format!("/proc/{}/stat", self.pid))
    }

    /// Stops the server with SIGTERM (it drains in-flight requests), SIGKILL after 10 s.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(status) => {
                status?;
            }
            Err(_) => {
                self.child.kill().await?;
            }
        }
        Ok(())
    }
}

/// A loopback port nothing listens on (bound, then released for the server to take).
fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// CPU time (user + system) of the process whose `stat` file is `path`. Fields 14 and 15
/// of `/proc/PID/stat` count clock ticks, 100 a second on Linux.
pub fn cpu_time_of(path: &str) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    // The command name (field 2) may hold spaces; the fields after it are plain numbers.
    let rest = stat.rsplit_once(')').map_or(stat.as_str(), |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .with_context(|| format!("{path}: no field {}", i + 3))
    };
    // After the name, field 3 (state) is index 0, so utime (14) is 11 and stime (15) 12.
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}
