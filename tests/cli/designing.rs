//! `docs/DESIGNING.md` runs as written: every `$ command` of its `console` blocks is run by
//! bash with this build's `itemgraph` first on the PATH, in a directory that holds the
//! repository's `charts/` and `examples/` (so a step's files stay out of the checkout), and
//! must exit as the guide says (`# exits N` after it; 0 otherwise) and print every line the
//! guide shows under it, in order (`...` stands for lines left out, a line ending in `…`
//! for the rest of a line). A command ending in
//! `&` is a server: started, waited for on its port, stopped at the end. The guide's ports
//! (`127.0.0.1:40NN`) become free ones.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");
const GUIDE: &str = "docs/DESIGNING.md";

struct Step {
    /// The guide's line it is on (1-based), for a failure to point at.
    line: usize,
    command: String,
    exit: i32,
    expected: Vec<String>,
}

/// The `$ command`s of the guide's `console` blocks, each with what it must print.
fn steps(guide: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut in_block = false;
    let mut continued = false;
    for (i, line) in guide.lines().enumerate() {
        if !in_block {
            in_block = line.trim_end() == "```console";
            continue;
        }
        if line.trim_end() == "```" {
            in_block = false;
            continue;
        }
        if continued {
            let step = out.last_mut().expect("a continued command");
            step.command.push('\n');
            step.command.push_str(line);
            continued = line.ends_with('\\');
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            let (command, exit) = match command.rsplit_once("  # exits ") {
                Some((c, code)) => (c, code.trim().parse().expect("`# exits N`")),
                None => (command, 0),
            };
            continued = command.ends_with('\\');
            out.push(Step {
                line: i + 1,
                command: command.to_owned(),
                exit,
                expected: Vec::new(),
            });
        } else if let Some(step) = out.last_mut() {
            step.expected.push(line.trim_end().to_owned());
        }
    }
    out
}

/// Whether `actual` holds every line of `expected` (but `...`), in order; a line ending in
/// `…` stands for every line that starts with what comes before it.
fn shows(actual: &str, expected: &[String]) -> Result<(), String> {
    let mut lines = actual.lines().map(str::trim_end);
    for want in expected.iter().filter(|l| *l != "..." && !l.is_empty()) {
        let found = match want.strip_suffix('…') {
            Some(start) => lines.any(|l| l.starts_with(start)),
            None => lines.any(|l| l == want),
        };
        if !found {
            return Err(want.clone());
        }
    }
    Ok(())
}

/// The servers the guide starts, stopped whatever happens.
struct Servers(Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn the_design_guide_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join(GUIDE)).unwrap();
    let steps = steps(&guide);
    assert!(steps.len() >= 10, "{GUIDE} has {} commands", steps.len());
    let dir = tempfile::tempdir().unwrap();
    for d in ["charts", "examples"] {
        std::os::unix::fs::symlink(root.join(d), dir.path().join(d)).unwrap();
    }
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Each port the guide names, and the free one it stands for here.
    let named = regex::Regex::new(r"127\.0\.0\.1:(40[0-9][0-9])").unwrap();
    let mut ports: Vec<(String, String)> = Vec::new();
    for m in named.captures_iter(&guide) {
        if !ports.iter().any(|(p, _)| *p == m[1]) {
            let free = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            ports.push((m[1].to_owned(), free.to_string()));
        }
    }
    let local = |s: &str| {
        named
            .replace_all(s, |c: &regex::Captures<'_>| {
                let free = &ports.iter().find(|(p, _)| *p == c[1]).expect("named").1;
                format!("127.0.0.1:{free}")
            })
            .into_owned()
    };
    let mut servers = Servers(Vec::new());
    for step in &steps {
        let command = local(&step.command);
        let bash = |script: &str| {
            let mut c = Command::new("bash");
            c.args(["-c", script])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .env_remove("ITEMGRAPH_CHART")
                .env("RUST_LOG", "warn");
            c
        };
        if let Some(server) = command.trim_end().strip_suffix('&') {
            let child = bash(server)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("bash runs");
            servers.0.push(child);
            let listen = named
                .captures(&step.command)
                .map(|c| local(&c[0]))
                .unwrap_or_else(|| {
                    panic!("{GUIDE}:{}: a server names no 127.0.0.1:40NN", step.line)
                });
            let started = Instant::now();
            while std::net::TcpStream::connect(&listen).is_err() {
                assert!(
                    started.elapsed() < Duration::from_secs(120),
                    "{GUIDE}:{}: `{}` did not listen on its port",
                    step.line,
                    step.command
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        }
        let out = bash(&format!("exec 2>&1\n{command}"))
            .output()
            .expect("bash runs");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(step.exit),
            "{GUIDE}:{}: `{}` exited {:?}, the guide says {}:\n{printed}",
            step.line,
            step.command,
            out.status.code(),
            step.exit
        );
        let expected: Vec<String> = step.expected.iter().map(|l| local(l)).collect();
        if let Err(missing) = shows(&printed, &expected) {
            panic!(
                "{GUIDE}:{}: `{}` did not print, in the guide's order:\n{missing}\n\nIt printed:\n{printed}",
                step.line, step.command
            );
        }
    }
}

/// The harness itself: what a block says it must print is held to in order, and `...`
/// skips lines.
#[test]
fn a_guides_output_is_held_line_by_line_in_order() {
    let guide = "text\n```console\n$ echo a  # exits 0\na\n...\nc\nd…\n$ false  # exits 1\n```\n";
    let steps = steps(guide);
    assert_eq!(steps.len(), 2);
    assert_eq!(
        (steps[0].command.as_str(), steps[0].exit, steps[0].line),
        ("echo a", 0, 3)
    );
    assert_eq!(steps[1].exit, 1);
    assert!(shows("a\nb\nc\ndone\n", &steps[0].expected).is_ok());
    assert_eq!(shows("c\na\n", &steps[0].expected), Err("c".into()));
    assert_eq!(shows("a\nc\ne\n", &steps[0].expected), Err("d…".into()));
}
