//! `schema.graphql` at the repository root is the schema's golden file: frontend tooling
//! reads it, and a change to the API shows up in review as a change to it. These tests
//! fail when it drifts from what the server serves.

use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");
const HINT: &str = "run `cargo run -- schema > schema.graphql`";

/// The differing middle of two texts, as `-`/`+` lines under an `@@` header: the common
/// head and tail are cut, so the hunk is exactly what changed (at most 60 lines shown).
fn diff_hint(old: &str, new: &str) -> String {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let removed = &old[head..old.len() - tail];
    let added = &new[head..new.len() - tail];
    let mut out = format!(
        "--- schema.graphql\n+++ graphql::sdl()\n@@ -{},{} +{},{} @@\n",
        head + 1,
        removed.len(),
        head + 1,
        added.len()
    );
    let lines = removed
        .iter()
        .map(|l| format!("-{l}"))
        .chain(added.iter().map(|l| format!("+{l}")));
    for (i, line) in lines.enumerate() {
        if i == 60 {
            out.push_str("…\n");
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `schema.graphql` is byte for byte the SDL the server serves.
#[test]
fn schema_graphql_matches_the_served_sdl() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema.graphql");
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; {HINT}", path.display()));
    let served = itemgraph::graphql::sdl();
    if committed != served {
        panic!(
            "schema.graphql is out of date with the schema; {HINT}\n\n{}",
            diff_hint(&committed, &served)
        );
    }
}

/// `itemgraph schema` prints exactly `graphql::sdl()` and nothing else on stdout, so the
/// hint above regenerates the golden file faithfully.
#[test]
fn the_schema_command_prints_exactly_the_sdl() {
    let out = std::process::Command::new(BIN)
        .arg("schema")
        .env("RUST_LOG", "debug")
        .output()
        .expect("run itemgraph schema");
    assert!(
        out.status.success(),
        "itemgraph schema failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let served = itemgraph::graphql::sdl();
    assert!(printed == served, "{}", diff_hint(&printed, &served));
}

#[test]
fn the_diff_hint_shows_only_what_changed() {
    assert_eq!(
        diff_hint("a\nb\nc\nd\n", "a\nB\nc\nd\n"),
        "--- schema.graphql\n+++ graphql::sdl()\n@@ -2,1 +2,1 @@\n-b\n+B\n"
    );
    assert_eq!(
        diff_hint("a\n", "a\nb\n"),
        "--- schema.graphql\n+++ graphql::sdl()\n@@ -2,0 +2,1 @@\n+b\n"
    );
}
