//! The container image runs what this suite runs. No container engine runs on the test
//! machines, so the `Dockerfile` is read instead (`scripts/test` lints it with hadolint):
//! its runtime stage's entrypoint, command, environment and health check are run here
//! with the binary the build stage builds, on a DynamoDB Local table, with only what a
//! deployer adds (table, endpoint, secrets) and the listen addresses moved to loopback.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::process::Command;

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");
const JWT_SECRET: &str = "an-image-jwt-secret-of-at-least-32-bytes";
const CURSOR_SECRET: &str = "an-image-cursor-secret-of-at-least-32-bytes";

/// What the runtime stage of the `Dockerfile` says.
#[derive(Debug, Default)]
struct Image {
    /// The build stage's `RUN` lines.
    build: Vec<String>,
    /// `COPY --from=build <from> <to>` of the runtime stage.
    copies: Vec<(String, String)>,
    env: BTreeMap<String, String>,
    expose: Vec<u16>,
    user: String,
    healthcheck: Vec<String>,
    stopsignal: String,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
}

/// The instructions of a Dockerfile, continuation lines joined, comments dropped.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (current.is_empty() && trimmed.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head.trim());
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (word, rest) = current.split_once(' ').unwrap_or((&current, ""));
                out.push((word.to_ascii_uppercase(), rest.trim().to_owned()));
                current.clear();
            }
        }
    }
    out
}

/// A JSON-array (exec) form, which is the only form the image uses.
fn exec_form(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not the exec form ({e}): {text}"))
}

fn read_image() -> Image {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile");
    let text = std::fs::read_to_string(&path).expect("the Dockerfile");
    let mut image = Image::default();
    let mut stage = 0;
    for (word, rest) in instructions(&text) {
        match word.as_str() {
            "FROM" => stage += 1,
            "RUN" if stage == 1 => image.build.push(rest),
            "COPY" if stage == 2 => {
                let parts: Vec<&str> = rest.split_whitespace().collect();
                assert_eq!(parts.len(), 3, "COPY --from=build <from> <to>: {rest}");
                assert_eq!(parts[0], "--from=build");
                image.copies.push((parts[1].into(), parts[2].into()));
            }
            "ENV" if stage == 2 => {
                for pair in rest.split_whitespace() {
                    let (k, v) = pair.split_once('=').expect("ENV K=V");
                    image.env.insert(k.into(), v.into());
                }
            }
            "EXPOSE" if stage == 2 => image.expose.extend(
                rest.split_whitespace()
                    .map(|p| p.parse::<u16>().expect("a port")),
            ),
            "USER" if stage == 2 => image.user = rest,
            "HEALTHCHECK" if stage == 2 => {
                let (_, cmd) = rest.split_once("CMD ").expect("HEALTHCHECK … CMD [...]");
                image.healthcheck = exec_form(cmd);
            }
            "STOPSIGNAL" if stage == 2 => image.stopsignal = rest,
            "ENTRYPOINT" if stage == 2 => image.entrypoint = exec_form(&rest),
            "CMD" if stage == 2 => image.cmd = exec_form(&rest),
            _ => {}
        }
    }
    assert_eq!(stage, 2, "a build stage and a runtime stage");
    image
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The image's program and arguments, with the installed path swapped for this build's.
fn local(argv: &[String], installed: &str) -> (String, Vec<String>) {
    assert_eq!(
        argv[0], installed,
        "runs the binary the build stage installs"
    );
    (BIN.to_owned(), argv[1..].to_vec())
}

#[test]
fn the_image_builds_the_server_binary_from_the_lock_file_and_runs_it_unprivileged() {
    let image = read_image();
    assert!(
        image.build.iter().any(|run| run
            .contains("cargo build --release --locked --package itemgraph --bin itemgraph")),
        "{:?}",
        image.build
    );
    assert_eq!(
        image.copies,
        [(
            "/usr/local/bin/itemgraph".to_owned(),
            "/usr/local/bin/itemgraph".to_owned()
        )]
    );
    let uid = image.user.split(':').next().unwrap_or_default();
    assert!(
        uid.parse::<u32>().is_ok_and(|uid| uid != 0),
        "a numeric, non-root user: {}",
        image.user
    );
    assert_eq!(image.stopsignal, "SIGTERM");
    // Every variable the image sets is one the binary reads.
    let help = std::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .expect("itemgraph serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    for name in image.env.keys() {
        assert!(
            help.contains(&format!("env: {name}=")),
            "{name} is not a serve variable"
        );
    }
}

#[tokio::test]
async fn the_image_command_serves_passes_its_health_check_and_stops_on_sigterm() {
    let Some(store) = common::dynamo_local::store("image").await else {
        return;
    };
    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    crate::common::demo::seed_demo(&store)
        .await
        .expect("seeding");
    let image = read_image();
    let installed = &image.copies[0].1;

    // The image's environment, with its every-interface addresses moved to loopback
    // (tests bind loopback only) on the ports the image exposes, here free ones.
    let (api_port, metrics_port) = (free_port(), free_port());
    let mut env = image.env.clone();
    for (var, port) in [
        ("ITEMGRAPH_LISTEN", api_port),
        ("ITEMGRAPH_METRICS_LISTEN", metrics_port),
    ] {
        let value = env
            .get(var)
            .unwrap_or_else(|| panic!("the image sets {var}"));
        let (host, exposed) = value.rsplit_once(':').expect("host:port");
        assert_eq!(
            host, "0.0.0.0",
            "{var} listens on every interface in a container"
        );
        assert!(
            image.expose.contains(&exposed.parse().expect("a port")),
            "{var}'s port is exposed"
        );
        env.insert(var.into(), format!("127.0.0.1:{port}"));
    }
    // What a deployer adds: the table, its endpoint, the secrets, AWS's credentials.
    let table = itemgraph::store::Store::table_name(&store).to_owned();
    for (k, v) in [
        ("ITEMGRAPH_TABLE", table.as_str()),
        ("ITEMGRAPH_ENDPOINT", endpoint.as_str()),
        ("ITEMGRAPH_JWT_SECRET", JWT_SECRET),
        ("ITEMGRAPH_CURSOR_SECRET", CURSOR_SECRET),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("NO_COLOR", "1"),
    ] {
        env.insert(k.into(), v.into());
    }
    let command = |argv: &[String]| {
        let (program, args) = local(argv, installed);
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    };
    let healthy = || async {
        let out = command(&image.healthcheck)
            .output()
            .await
            .expect("the health check runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // Nothing listens yet: the health check says so.
    let (ok, why) = healthy().await;
    assert!(!ok && why.contains("unhealthy"), "{why}");

    let argv: Vec<String> = image.entrypoint.iter().chain(&image.cmd).cloned().collect();
    let mut server = command(&argv)
        .stderr(Stdio::null())
        .spawn()
        .expect("the image's command");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if healthy().await.0 {
            break;
        }
        if let Ok(Some(status)) = server.try_wait() {
            panic!("the image's command exited before it was healthy: {status}");
        }
        assert!(Instant::now() < deadline, "not healthy within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let token = {
        let out = std::process::Command::new(BIN)
            .args(["token", "--jwt-secret", JWT_SECRET, "--org", "acme"])
            .output()
            .expect("itemgraph token");
        String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_owned()
    };
    let client = reqwest::Client::new();
    let answer: Value = client
        .post(format!("http://127.0.0.1:{api_port}/graphql"))
        .bearer_auth(&token)
        .json(&json!({ "query": r#"{ organization(slug: "acme") { name } }"# }))
        .send()
        .await
        .expect("POST /graphql")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        answer["data"]["organization"]["name"], "Acme Corporation",
        "{answer}"
    );
    let metrics = client
        .get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .send()
        .await
        .expect("GET /metrics");
    assert_eq!(metrics.status(), 200);

    let pid = server.id().expect("running").to_string();
    assert_eq!(image.stopsignal, "SIGTERM");
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let exit = tokio::time::timeout(Duration::from_secs(30), server.wait())
        .await
        .expect("stopped within 30 s of SIGTERM")
        .expect("wait");
    assert!(exit.success(), "exited with {exit}");
    assert!(!healthy().await.0, "unhealthy once stopped");
}
