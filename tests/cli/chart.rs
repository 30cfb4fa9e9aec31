//! `itemgraph chart check`: the server's start-up check of a chart, run on its own, on the
//! built-in chart, the second chart of `examples/charts/`, and a chart that breaks a rule.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");

fn chart_check(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["chart", "check"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run itemgraph chart check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_builtin_and_the_second_chart_hold_every_rule() {
    let (code, out, err) = chart_check(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("charts/itemgraph.toml (built in): chart `itemgraph`: 8 entities, 2 indexes, 9 access patterns: every rule holds"),
        "{out}"
    );
    let (code, out, err) = chart_check(&["charts/itemgraph.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("every rule holds"), "{out}");
    let (code, out, err) = chart_check(&["examples/charts/store-locator.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("chart `store-locator`: 2 entities, 0 indexes, 5 access patterns"),
        "{out}"
    );
}

#[test]
fn a_chart_that_breaks_a_rule_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/store-locator.toml"),
    )
    .unwrap();
    // The chain sorted above its stores: reading forward from it never meets them after it.
    let broken = source.replace(
        "key = [\"CHAIN#{slug}\", \"CHAIN#{slug}\"]",
        "key = [\"CHAIN#{slug}\", \"~CHAIN#{slug}\"]",
    );
    assert_ne!(broken, source);
    let path = dir.path().join("broken.toml");
    std::fs::write(&path, broken).unwrap();
    let (code, out, err) = chart_check(&[path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("the chart breaks"), "{err}");
    assert!(
        err.contains("pattern 2: Chain (`~CHAIN#{slug}`) does not sort below every Store")
            && err.contains("[parent-at-edge]"),
        "{err}"
    );
    let (code, _, err) = chart_check(&["no/such/chart.toml"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read no/such/chart.toml"), "{err}");
}
