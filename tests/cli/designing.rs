//! `docs/DESIGNING.md` runs as written: every `$ command` of its `console` blocks is run by
//! bash (`pipefail` on) with this build's `itemgraph` first on the PATH and no `ITEMGRAPH_`
//! variable of the caller's, in a directory that holds the repository's `charts/` and
//! `examples/` (so a step's files stay out of the checkout), within two minutes; it must
//! exit as the guide says (`# exits N` after it; 0 otherwise) and print what the guide
//! shows under it, line for line: `...` stands for any lines left out, a line ending in
//! `…` for the rest of a line. A command ending in `&` is a server: started, waited for on
//! its port (and refused if it exits first), stopped at the end. The guide's ports
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

/// Whether `actual` is `expected` line for line, `...` matching any run of lines (none
/// too) and a line ending in `…` any line that starts with what comes before it; else the
/// first expected line that could not be matched.
fn shows(actual: &str, expected: &[String]) -> Result<(), String> {
    let actual: Vec<&str> = actual.lines().map(str::trim_end).collect();
    let expected: Vec<&str> = expected
        .iter()
        .map(String::as_str)
        .filter(|l| !l.is_empty())
        .collect();
    let actual: Vec<&str> = actual.into_iter().filter(|l| !l.is_empty()).collect();
    // The furthest expected line reached, for the message.
    let mut furthest = 0;
    fn matches(a: &[&str], e: &[&str], at: usize, furthest: &mut usize) -> bool {
        *furthest = (*furthest).max(at);
        match e.first() {
            None => a.is_empty(),
            Some(&"...") => {
                (0..=a.len()).any(|skip| matches(&a[skip..], &e[1..], at + 1, furthest))
            }
            Some(want) => {
                let Some(line) = a.first() else {
                    return false;
                };
                let ok = match want.strip_suffix('…') {
                    Some(start) => line.starts_with(start),
                    None => line == want,
                };
                ok && matches(&a[1..], &e[1..], at + 1, furthest)
            }
        }
    }
    if matches(&actual, &expected, 0, &mut furthest) {
        Ok(())
    } else {
        Err(expected
            .get(furthest.min(expected.len().saturating_sub(1)))
            .map_or_else(|| "(the end of the output)".to_owned(), |l| (*l).to_owned()))
    }
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

/// Runs `command` to its end, its output read as it goes; `None` (and the command killed)
/// past `limit`.
fn run_within(mut command: Command, limit: Duration) -> Option<std::process::Output> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(std::process::Output {
        status,
        stdout: reader.join().unwrap().unwrap_or_default(),
        stderr: Vec::new(),
    })
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
    // Each port the guide names, and the free one it stands for here: all bound at once,
    // so no two are the same, then let go for the servers to take.
    let named = regex::Regex::new(r"127\.0\.0\.1:(40[0-9][0-9])").unwrap();
    let mut held = Vec::new();
    let mut ports: Vec<(String, String)> = Vec::new();
    for m in named.captures_iter(&guide) {
        if !ports.iter().any(|(p, _)| *p == m[1]) {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            ports.push((m[1].to_owned(), l.local_addr().unwrap().port().to_string()));
            held.push(l);
        }
    }
    drop(held);
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
            c.args(["-c", &format!("set -o pipefail\n{script}")])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .env("RUST_LOG", "warn");
            for (k, _) in std::env::vars_os() {
                if k.to_string_lossy().starts_with("ITEMGRAPH_") {
                    c.env_remove(k);
                }
            }
            c
        };
        if let Some(server) = command.trim_end().strip_suffix('&') {
            // `exec`: the server is the process stopped at the end, not a shell around it.
            let log = dir.path().join(format!("server-{}.log", step.line));
            let child = bash(&format!("exec {server}"))
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
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
                let exited = servers.0.last_mut().unwrap().try_wait().unwrap();
                assert!(
                    exited.is_none() && started.elapsed() < Duration::from_secs(120),
                    "{GUIDE}:{}: `{}` did not listen on its port ({exited:?}): {}",
                    step.line,
                    step.command,
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        }
        let out = run_within(
            bash(&format!("exec 2>&1\n{command}")),
            Duration::from_secs(120),
        )
        .unwrap_or_else(|| {
            panic!(
                "{GUIDE}:{}: `{}` did not finish in two minutes",
                step.line, step.command
            )
        });
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

/// The harness itself: what a block shows is held to line for line, `...` skipping any
/// run of lines and `…` ending a line's start.
#[test]
fn a_guides_output_is_held_line_by_line() {
    let guide = "text\n```console\n$ echo a  # exits 0\na\n...\nc\nd…\n$ false  # exits 1\n```\n";
    let steps = steps(guide);
    assert_eq!(steps.len(), 2);
    assert_eq!(
        (steps[0].command.as_str(), steps[0].exit, steps[0].line),
        ("echo a", 0, 3)
    );
    assert_eq!(steps[1].exit, 1);
    let e = &steps[0].expected;
    assert!(shows("a\nb\nb\nc\ndone\n", e).is_ok());
    assert!(shows("a\nc\ndone\n", e).is_ok());
    // Out of order, a line too many, a line's start that is not there.
    assert!(shows("c\na\nd\n", e).is_err());
    assert!(shows("a\nc\ndone\nmore\n", e).is_err());
    assert_eq!(shows("a\nc\ne\n", e), Err("d…".into()));
    // Without `...`, lines must follow one another.
    let tight = vec!["x".to_owned(), "y".to_owned()];
    assert!(shows("x\ny\n", &tight).is_ok());
    assert!(shows("x\nz\ny\n", &tight).is_err());
    assert!(shows("w\nx\ny\n", &tight).is_err());
}
