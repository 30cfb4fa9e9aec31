//! The benchmark driver keeps working: `itemgraph-bench --smoke` (a tiny data set, the
//! embedded engine, about a second per phase) seeds, runs the floor, serves with the real
//! `itemgraph` binary, drives every operation shape (once more beside hostile clients,
//! whose every document must be refused with its code), runs the scaling phase and writes its
//! report, with no error and every shape at the store request count README's
//! access-pattern table promises, and runs the full mix with tracing off, at 1 % and at
//! 100 %, every trace of the last reaching the driver's OTLP receiver. No timing is
//! asserted: speed is what the benchmark itself reports (`scripts/bench`,
//! docs/BENCHMARKS.md). Nor does any assertion depend on it: each smoke run measures on past
//! its window until it has measured a few operations (within a deadline it fails past), so
//! a run measures some on a machine of any speed, however loaded.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn the_smoke_benchmark_reports_no_error_and_the_promised_request_counts() {
    let out = tempfile::tempdir().unwrap();
    let bench = Path::new(env!("CARGO_BIN_EXE_itemgraph-bench"));
    // The server binary of the workspace, built beside the bench's by `cargo build
    // --workspace` (and by the test command, which builds every target of the workspace).
    let server = bench.with_file_name(format!("itemgraph{}", std::env::consts::EXE_SUFFIX));
    assert!(
        server.is_file(),
        "no server binary at {}: build it first (cargo build --workspace)",
        server.display()
    );
    let status = Command::new(bench)
        .arg("--smoke")
        .args(["--shapes-alone", "1"])
        .arg("--server")
        .arg(&server)
        .arg("--out")
        .arg(out.path())
        .status()
        .expect("itemgraph-bench runs");
    assert!(status.success(), "itemgraph-bench --smoke failed: {status}");

    for file in ["report.json", "report.md", "latency.png"] {
        let meta = std::fs::metadata(out.path().join(file))
            .unwrap_or_else(|e| panic!("{file} was not written: {e}"));
        assert!(meta.len() > 0, "{file} is empty");
    }
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["total_errors"], 0, "{report:#}");

    let engines = report["engines"].as_array().unwrap();
    assert_eq!(engines.len(), 1);
    let engine = &engines[0];
    assert_eq!(engine["engine"], "embedded");
    let counts = engine["requests_per_op"].as_array().unwrap();
    assert_eq!(counts.len(), 10, "every shape of the mix is traced");
    for c in counts {
        assert_eq!(c["measured"], c["expected"], "{c}");
    }
    for run in engine["runs"].as_array().unwrap() {
        assert!(run["stats"]["ops"].as_u64().unwrap() > 0, "{run}");
        assert_eq!(run["stats"]["errors"], 0, "{run}");
    }
    let hostile = &engine["under_hostile"];
    assert!(
        hostile["run"]["stats"]["ops"].as_u64().unwrap() > 0,
        "{hostile}"
    );
    assert_eq!(hostile["run"]["stats"]["errors"], 0, "{hostile}");
    assert!(
        hostile["hostile"]["requests"].as_u64().unwrap() > 0,
        "{hostile}"
    );
    assert_eq!(
        hostile["hostile"]["unexpected"], 0,
        "every hostile document is refused with its code: {hostile}"
    );
    let alone = engine["alone"].as_array().unwrap();
    assert_eq!(alone.len(), 10, "each shape run alone");
    for run in alone {
        assert!(run["stats"]["ops"].as_u64().unwrap() > 0, "{run}");
        assert_eq!(run["stats"]["errors"], 0, "{run}");
        assert!(run["server_cpu_ms_per_op"].as_f64().unwrap() > 0.0, "{run}");
    }
    assert!(engine["floor"]["ops"].as_u64().unwrap() > 0);
    assert_eq!(engine["floor"]["errors"], 0);
    assert!(engine["server_peak_rss_mib"].as_f64().unwrap() > 0.0);

    let tracing = report["tracing"].as_array().unwrap();
    let sampling: Vec<&str> = tracing
        .iter()
        .map(|r| r["sampling"].as_str().unwrap())
        .collect();
    assert_eq!(sampling, ["off", "1%", "100%", "100%", "1%", "off"]);
    for r in tracing {
        assert!(r["stats"]["ops"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["stats"]["errors"], 0, "{r}");
        if r["sampling"] == "off" {
            assert_eq!(r["spans_exported"], 0.0, "{r}");
            assert_eq!(r["otlp_posts"], 0, "{r}");
        }
        if r["sampling"] == "100%" {
            // Every operation's spans reach the receiver: a server span and a GraphQL
            // request span at least.
            assert!(
                r["spans_exported"].as_f64().unwrap() >= 2.0 * r["stats"]["ops"].as_f64().unwrap(),
                "{r}"
            );
            assert!(r["otlp_posts"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["spans_dropped"], 0.0, "{r}");
        }
    }

    // One busy organization under the item limit, against the same writes spread: both
    // runs wrote, and refusals are only the retryable codes of a limit.
    let hot = &report["hot_org"];
    let runs = hot["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{hot}");
    assert_eq!(runs[0]["organizations"], 1);
    for r in runs {
        assert!(r["writes"].as_u64().unwrap() > 0, "{r}");
    }
    assert_eq!(hot["unexpected"], 0, "{hot}");

    let scaling = report["scaling"]["points"].as_array().unwrap();
    assert_eq!(scaling.len(), 2);
    for p in scaling {
        assert_eq!(p["errors"], 0, "{p}");
    }
    let markdown = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(markdown.contains("## Targets"), "{markdown}");
}
