//! The server has one feature set, however it is built: alone (`cargo run --release`,
//! `cargo build -p itemgraph`) or with the workspace (`cargo build --workspace --bins`, as
//! `scripts/bench` does). Where the other members turn on a feature of a crate the server
//! uses, the server asks it too (Cargo.toml says which), or Cargo would build the server
//! and everything under it twice, once per feature set.

use std::collections::BTreeSet;
use std::process::Command;

/// `cargo tree` of `selection`: each package with its features, one per line.
fn resolved(selection: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--locked", "--offline", "-e", "normal,build"])
        .args(["--prefix", "none", "-f", "{p} [{f}]"])
        .args(selection)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {selection:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end_matches(" (*)").to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_server_resolves_the_same_features_alone_and_with_the_workspace() {
    let alone = resolved(&["-p", "itemgraph"]);
    let workspace = resolved(&["--workspace"]);
    assert!(alone.iter().any(|l| l.starts_with("tokio ")), "{alone:?}");
    let parted: Vec<&String> = alone.difference(&workspace).collect();
    assert!(
        parted.is_empty(),
        "built alone, these have other features than in the workspace's build (ask the \
         workspace's features in Cargo.toml): {parted:#?}"
    );
}
