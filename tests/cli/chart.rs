//! `itemgraph chart check`: the server's start-up check of a chart, run on its own, on the
//! built-in chart, the second chart of `examples/charts/`, and a chart that breaks a rule.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");

fn chart_check(args: &[&str]) -> (i32, String, String) {
    chart_command("check", args)
}

/// `itemgraph chart COMMAND ARGS…` in the repository: its exit code, stdout and stderr.
fn chart_command(command: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["chart", command])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // A pipe gets no colour unless forced.
        .env_remove("CLICOLOR_FORCE")
        .output()
        .expect("run itemgraph chart");
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
        out.contains("charts/itemgraph.toml (built in): chart `itemgraph`: 8 entities, 2 indexes, 17 access patterns, 8 mutations: every rule holds"),
        "{out}"
    );
    let (code, out, err) = chart_check(&["charts/itemgraph.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("every rule holds"), "{out}");
    let (code, out, err) = chart_check(&["examples/charts/store-locator.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("chart `store-locator`: 4 entities, 0 indexes, 10 access patterns, 5 mutations: every rule holds"),
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

/// `itemgraph serve --chart FILE` serves that chart's API over HTTP, its samples loaded;
/// `ITEMGRAPH_CHART` names it the same way; a chart that breaks a rule stops the start.
#[tokio::test]
async fn serve_takes_a_chart_by_flag_or_variable_and_refuses_a_broken_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for by_variable in [false, true] {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(["serve", "--in-memory", "--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .current_dir(root)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        if by_variable {
            cmd.env("ITEMGRAPH_CHART", "examples/charts/store-locator.toml");
        } else {
            cmd.args(["--chart", "examples/charts/store-locator.toml"]);
        }
        let mut child = cmd.spawn().expect("start itemgraph");
        let (addr, log) = crate::commands::listening(&mut child).await;
        assert!(
            log.iter()
                .any(|l| l.contains("the chart's samples loaded") && l.contains("written=9")),
            "{log:#?}"
        );
        let resp: serde_json::Value = reqwest::Client::new()
            .post(format!("http://{addr}/graphql"))
            .header("x-itemgraph-trace", "1")
            .json(&serde_json::json!({
                "query": "{ chain(slug: \"tea-leaf\") { name stores { nodes { city } } } }"
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            resp["data"],
            serde_json::json!({"chain": {"name": "Tea Leaf", "stores": {"nodes": [{"city": "SEATTLE"}]}}}),
            "{resp:#}"
        );
        assert_eq!(resp["extensions"]["dynamodb"]["requestCount"], 1);
        child.kill().await.unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    let source = std::fs::read_to_string(root.join("examples/charts/store-locator.toml")).unwrap();
    std::fs::write(
        &broken,
        source.replace(
            "\"CHAIN#{slug}\", \"CHAIN#{slug}\"",
            "\"CHAIN#{slug}\", \"~CHAIN#{slug}\"",
        ),
    )
    .unwrap();
    let out = tokio::process::Command::new(BIN)
        .args(["serve", "--in-memory", "--listen", "127.0.0.1:0", "--chart"])
        .arg(&broken)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), out)
        .await
        .expect("a broken chart stops the start: serve did not exit within 30 s")
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the chart breaks") && err.contains("[parent-at-edge]"),
        "{err}"
    );
}

/// The store commands take the chart as `serve` does: `create-table` makes the chart's
/// table, `seed` loads its samples (none overwritten on a second run), `check` refuses it
/// (it knows the built-in chart's invariants only); on DynamoDB Local.
#[tokio::test]
async fn the_store_commands_take_the_chart() {
    let Some(endpoint) = crate::common::dynamo_local::endpoint().await else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = crate::common::dynamo_local::unique_table_name("chart-store");
    // A command on the table, with the second chart or the chart file given.
    let run_with = |command: &'static str, chart: String| {
        let table = table.clone();
        let endpoint = endpoint.clone();
        async move {
            tokio::process::Command::new(BIN)
                .args([
                    command,
                    "--store",
                    "dynamodb",
                    "--endpoint",
                    &endpoint,
                    "--table",
                    &table,
                ])
                .args(["--chart", &chart])
                .current_dir(root)
                .env("AWS_REGION", "us-east-1")
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env("NO_COLOR", "1")
                .output()
                .await
                .unwrap()
        }
    };
    let run =
        |command: &'static str| run_with(command, "examples/charts/store-locator.toml".to_owned());
    let out = run("create-table").await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Six stores, two chains and the marker of the one phone given.
    for written in ["written=9", "written=0"] {
        let out = run("seed").await;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success() && log.contains(written), "{log}");
    }
    // `check` verifies what the chart implies: clean as seeded (and the chart that
    // `create-table` recorded in the table, the tenth item).
    let out = run("check").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("checked 10 items: no violations"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `migrate` plans from the chart recorded at create: the same chart, nothing to do.
    let out = run("migrate").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !stdout.contains("plan:"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A chart with a required attribute the stores lack: the plan printed, refused,
    // nothing written.
    let dir = tempfile::tempdir().unwrap();
    let later = dir.path().join("later.toml");
    std::fs::write(
        &later,
        // (Its samples left out: they lack it too.)
        std::fs::read_to_string(root.join("examples/charts/store-locator.toml"))
            .unwrap()
            .split("# --- sample data")
            .next()
            .unwrap()
            .replace(
                "address = { type = \"string\", max_length = 200 }",
                "manager = \"username\"\naddress = { type = \"string\", max_length = 200 }",
            ),
    )
    .unwrap();
    let out = run_with("migrate", later.to_str().unwrap().to_owned()).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("plan: refused attribute Store.manager: items written before it lack it")
            && stderr.contains("nothing written"),
        "{stdout}{stderr}"
    );
    let chart =
        itemgraph::config::load_chart(Some(&root.join("examples/charts/store-locator.toml")))
            .unwrap();
    let store =
        crate::common::dynamo_local::connect_with(&endpoint, &table, chart.table_schema()).await;
    let items = itemgraph::store::Store::query(
        &store,
        itemgraph::store::Query::partition("CHAIN#bean-there"),
    )
    .await
    .unwrap()
    .items;
    assert_eq!(items.len(), 6, "the chain and its five stores");
    // A store gone behind the writes' back (its phone's marker left): the chain's counts
    // and the marker are reported.
    let pike = items
        .iter()
        .find(|i| i.get("name") == Some(&itemgraph::store::AttributeValue::S("Pike Place".into())))
        .unwrap();
    let key = itemgraph::store::PrimaryKey::new(
        match &pike["PK"] {
            itemgraph::store::AttributeValue::S(s) => s.clone(),
            _ => unreachable!(),
        },
        match &pike["SK"] {
            itemgraph::store::AttributeValue::S(s) => s.clone(),
            _ => unreachable!(),
        },
    );
    itemgraph::store::Store::delete_item(&store, itemgraph::store::Delete::new(key))
        .await
        .unwrap();
    let out = run("check").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("counter-mismatch Chain (CHAIN#bean-there | CHAIN#bean-there): storeCount is 5, but 4 stores belong to it"),
        "{stdout}"
    );
    assert!(
        stdout.contains("counter-mismatch Chain (CHAIN#bean-there | CHAIN#bean-there): openStoreCount is 5, but 4 OPEN stores belong to it"),
        "{stdout}"
    );
    assert!(
        stdout.contains("orphan-marker StorePhone (PHONE#bean-there#+1 206 555 0101 | PHONE#bean-there#+1 206 555 0101): names the store bean-there/US/WA/SEATTLE/1001, which does not exist"),
        "{stdout}"
    );
    assert!(stdout.contains("checked 9 items: 3 violations"), "{stdout}");
    crate::common::dynamo_local::drop_table(&store).await;
}

/// `seed --generate N` writes N items of every entity a create mutation makes, through
/// the chart's mutations: after the built-in chart's demo data on the embedded engine,
/// after the second chart's samples on DynamoDB Local; `check` clean after each run, a
/// second run making N more with values of their own.
#[tokio::test]
async fn seed_generates_the_data_a_chart_describes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("generated.redb");
    let embedded = |command: &str, extra: &[&str]| {
        let out = Command::new(BIN)
            .args([command, "--data", data.to_str().unwrap()])
            .args(extra)
            .env("NO_COLOR", "1")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    for first in [true, false] {
        let (ok, log) = embedded("seed", &["--generate", "4"]);
        assert!(ok, "{log}");
        assert!(
            log.contains(if first {
                "demo data loaded"
            } else {
                "demo data already present"
            }),
            "{log}"
        );
        for (entity, mutation) in [
            ("Organization", "createOrganization"),
            ("User", "createUser"),
            ("Ticket", "createTicket"),
            ("Order", "placeOrder"),
        ] {
            assert!(
                log.contains(&format!(
                    "entity={entity} mutation={mutation} made=4 refused=0"
                )),
                "{log}"
            );
        }
        let (ok, log) = embedded("check", &[]);
        assert!(ok && log.contains("no violations"), "{log}");
    }
    // Past its bound, refused before anything is written.
    let (ok, log) = embedded("seed", &["--generate", "100001"]);
    assert!(!ok && log.contains("--generate"), "{log}");

    let Some(endpoint) = crate::common::dynamo_local::endpoint().await else {
        return;
    };
    let table = crate::common::dynamo_local::unique_table_name("chart-generate");
    let dynamo = |command: &str, extra: &[&str]| {
        let out = Command::new(BIN)
            .args([command, "--store", "dynamodb", "--endpoint", &endpoint])
            .args(["--table", &table])
            .args(["--chart", "examples/charts/store-locator.toml"])
            .args(extra)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    // The samples (nine items), the chart's record, then three chains, three stores and
    // their phones' markers; then as many again.
    for (run, items) in [(1, 19), (2, 28)] {
        let (ok, log) = dynamo("seed", &["--generate", "3"]);
        assert!(ok, "run {run}: {log}");
        assert!(
            log.contains("entity=Chain mutation=createChain made=3 refused=0")
                && log.contains("entity=Store mutation=createStore made=3 refused=0"),
            "run {run}: {log}"
        );
        let (ok, log) = dynamo("check", &[]);
        assert!(
            ok && log.contains(&format!("checked {items} items: no violations")),
            "run {run}: {log}"
        );
    }
    let chart = itemgraph::config::load_chart(Some(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts/store-locator.toml"),
    ))
    .unwrap();
    let store =
        crate::common::dynamo_local::connect_with(&endpoint, &table, chart.table_schema()).await;
    crate::common::dynamo_local::drop_table(&store).await;
}

fn chart_explain(args: &[&str]) -> (i32, String, String) {
    chart_command("explain", args)
}

/// `itemgraph chart explain`: the built-in chart's entity chart and access patterns with
/// their costs, by DynamoDB's arithmetic (a write's items as the write path writes them:
/// the counts agree with the data model's action counts), as Markdown and as JSON.
#[test]
fn explain_writes_the_entity_chart_and_the_patterns_with_their_costs() {
    let (code, out, err) = chart_explain(&[]);
    assert_eq!(code, 0, "{err}");
    for row in [
        "| User | `ORG#<org>` | `USER#<username>` | `ORG#<org>#USER#<username>` | `USER#<username>` | | |",
        "| Ticket | `TICKET#<ticketId>` | `TICKET#<ticketId>` | `ORG#<org>#USER#<requester>` | `TICKET#<ticketId>` | `ORG#<org>#STATUS#<status>` | `TICKET#<ticketId>` |",
        // One item of 1 KB, eventually consistent.
        "| 1 | Organization by slug | GetItem | `PK = ORG#<slug>, SK = ORG#<slug>; with its counts: Query PK = ORG#<slug> AND SK BETWEEN ORG#<slug> AND ORG#<slug>#COUNT#~` | one organization; with its counts, its 32 counter shards too | 0.5–4.5 RCU",
        // The organization, its 32 shards and 20 users: 53 KB, 14 units of 4 KB.
        "| 2 | Organization and a page of its users | Query, forward | `PK = ORG#<slug> AND SK >= ORG#<slug>` | the organization, its 32 counter shards and a page of users (20 by default, 100 at most) | 7–17 RCU",
        // The user, its email's marker, a counter shard of its organization: 3 items in a
        // transaction.
        "| 10 | Create user, unique on username and email | TransactWriteItems | — | writes one user | 6 WCU",
        // The ticket, a shard, the requester, the assignee when there is one.
        "| 11 | Create ticket, bump counters | TransactWriteItems | — | writes one ticket | 6–8 WCU",
        // The order, 1 to 96 lines, a shard, the buyer, a client token's marker.
        "| 12 | Place order with its lines, bump counters; at most once per client token | TransactWriteItems | — | writes one order | 8–200 WCU",
        // The organization and its 32 shards.
        "| 14 | Create organization, unique on slug, with its counter shards | TransactWriteItems | — | writes one organization | 66 WCU",
    ] {
        assert!(out.contains(row), "no row {row}\n{out}");
    }
    // Larger items cost more: 5 000 B is two units of 4 KB.
    let (code, out, _) = chart_explain(&["--item-bytes", "5000", "--format", "json"]);
    assert_eq!(code, 0);
    let x: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(x["itemBytes"], 5000);
    assert_eq!(x["patterns"].as_array().unwrap().len(), 17);
    assert_eq!(x["patterns"][4]["name"], "Ticket by id");
    assert_eq!(x["patterns"][4]["cost"]["least"], 1.0);
    assert_eq!(x["patterns"][13]["cost"]["most"], 330.0);
    // The second chart, and a chart that breaks a rule: refused as `chart check` does.
    let (code, out, err) = chart_explain(&["examples/charts/store-locator.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| Store | `CHAIN#<chain>` |"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "name = \"x\"").unwrap();
    let (code, _, err) = chart_explain(&[broken.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
}

/// The README's and DATA_MODEL's entity chart and access-pattern table are `chart
/// explain`'s output for the built-in chart, between their markers:
/// `UPDATE_DOCS=1 cargo nextest run --test cli explains_output` writes them.
#[test]
fn the_readme_and_the_data_models_tables_are_explains_output() {
    let chart = itemgraph::chart::builtin();
    let explained = itemgraph::chart::explain::explain(&chart, 1024);
    let tables = [
        (
            "entity chart",
            itemgraph::chart::explain::entity_table(&explained),
        ),
        (
            "access patterns",
            itemgraph::chart::explain::pattern_table(&explained),
        ),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["README.md", "docs/DATA_MODEL.md"] {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut written = text.clone();
        for (name, table) in &tables {
            let open = format!("<!-- itemgraph chart explain: {name}.");
            let close = format!("<!-- end of {name} -->");
            let start = written
                .find(&open)
                .unwrap_or_else(|| panic!("{file} has no `{open}` marker"));
            let body = start + written[start..].find('\n').unwrap() + 1;
            let end = body
                + written[body..]
                    .find(&close)
                    .unwrap_or_else(|| panic!("{file} has no `{close}` marker"));
            written.replace_range(body..end, table);
        }
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &written).unwrap();
        }
        assert!(
            written == text,
            "{file}'s tables are not `itemgraph chart explain`'s: run UPDATE_DOCS=1 cargo nextest run --test cli explains_output"
        );
    }
}

/// `chart check`'s advice as the command prints it (each rule on a chart built to break
/// it: `src/chart/tests/advice.rs`): the built-in chart gets the four it deserves, grouped
/// by entity; the second chart one (its chains' store counts are on the chain's one item:
/// about 500 new stores a second in one chain, which a store locator does not meet);
/// `--deny-warnings` fails on any; `--format json` for a tool; no colour in a pipe.
#[test]
fn check_advises_on_hot_partitions_and_unbounded_items() {
    let (code, out, err) = chart_check(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("every rule holds; 4 warnings\nOrder:\n  warning [consistent-read] pattern 7: `Query.order` reads an order through GSI1"), "{out}");
    assert!(
        out.contains("\nTicket:\n  warning [hot-partition] every createTicket"),
        "{out}"
    );
    assert_eq!(
        out.matches("  warning [page-size] pattern ").count(),
        2,
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "colour in a pipe: {out}");
    // Colour where a terminal is, or where it is asked for (anstream's CLICOLOR_FORCE).
    let coloured = Command::new(BIN)
        .args(["chart", "check", "examples/charts/store-locator.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let text = String::from_utf8(coloured.stdout).unwrap();
    assert!(
        text.contains("\u{1b}[1m\u{1b}[33mwarning [hot-partition]\u{1b}[0m"),
        "{text:?}"
    );
    let (code, _, _) = chart_check(&["--deny-warnings"]);
    assert_eq!(code, 1);
    let (code, out, err) = chart_check(&["examples/charts/store-locator.toml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("every rule holds; 1 warning\nChain:\n  warning [hot-partition] every createStore of one chain updates its storeCount, openStoreCount on the chain's one item"), "{out}");
    assert!(out.contains("about 500 new stores a second"), "{out}");
    let (code, _, _) = chart_check(&["--deny-warnings", "examples/charts/store-locator.toml"]);
    assert_eq!(code, 1);
    // The hours without a bound: the item can outgrow 400 KB.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("examples/charts/store-locator.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let unbounded = dir.path().join("unbounded.toml");
    std::fs::write(
        &unbounded,
        text.replace(
            "hours = { type = \"list\", of = \"Hours\", max_items = 7,",
            "hours = { type = \"list\", of = \"Hours\",",
        ),
    )
    .unwrap();
    let (code, out, err) = chart_check(&["--format", "json", unbounded.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let x: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(x["holds"], true);
    let rules: Vec<(&str, &str)> = x["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["rule"].as_str().unwrap(), w["entity"].as_str().unwrap()))
        .collect();
    // Items of up to 400 KB: a page of them is past 1 MB too, on both patterns that read
    // stores.
    assert_eq!(
        rules,
        [
            ("hot-partition", "Chain"),
            ("item-size", "Store"),
            ("page-size", "Store"),
            ("page-size", "Store")
        ],
        "{out}"
    );
    assert_eq!(x["warnings"][2]["pattern"], 2, "{out}");
    assert!(
        x["warnings"][2]["message"]
            .as_str()
            .unwrap()
            .contains("of up to 400 KB each (`hours`, which nothing bounds)"),
        "{out}"
    );
    assert!(
        x["warnings"][1]["message"]
            .as_str()
            .unwrap()
            .starts_with("`hours` has no `max_items`"),
        "{out}"
    );
    // A chart that breaks a rule: refused, in JSON too.
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "name = \"x\"").unwrap();
    let (code, out, _) = chart_check(&["--format", "json", broken.to_str().unwrap()]);
    assert_eq!(code, 1);
    let x: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(x["holds"], false);
    assert!(!x["refusals"].as_array().unwrap().is_empty(), "{out}");
}

/// `chart import` drafts a chart from a NoSQL Workbench model that `chart check` passes;
/// `chart export` writes a chart as a model `chart import` reads back; a model's TODOs are
/// named by `chart check` as warnings, which `--deny-warnings` fails on; `seed
/// --workbench` loads a model's items as they are, none overwritten, and `check --chart`
/// finds the table clean.
#[test]
fn workbench_models_go_in_and_out() {
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("shop.toml");
    let chart_arg = chart.to_str().unwrap();
    let (code, out, err) = chart_command(
        "import",
        &["examples/models/shop.json", "--output", chart_arg],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("a chart drafted; `itemgraph chart check` it"),
        "{err}"
    );
    let (code, out, err) = chart_check(&[chart_arg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("chart `garden-shop`: 3 entities"), "{out}");

    // Without --output, the chart on stdout.
    let (code, drafted, _) = chart_command("import", &["examples/models/device-log.json"]);
    assert_eq!(code, 0);
    assert!(
        drafted.contains("partition_key = \"DeviceID\""),
        "{drafted}"
    );

    // A model with what a chart cannot say: a TODO, named by the check.
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/models/shop.json"),
    )
    .unwrap()
    .replace(
        r#""Quantity": { "N": "2" }"#,
        r#""Quantity": { "N": "2.5" }"#,
    );
    let odd = dir.path().join("odd.json");
    std::fs::write(&odd, model).unwrap();
    let (code, drafted, err) = chart_command("import", &[odd.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(err.contains("with 1 TODO"), "{err}");
    let odd_chart = dir.path().join("odd.toml");
    std::fs::write(&odd_chart, drafted).unwrap();
    let (code, out, _) = chart_check(&[odd_chart.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("warning [import-todo]"), "{out}");
    assert!(out.contains("numbers with a fraction"), "{out}");
    let (code, ..) = chart_check(&[odd_chart.to_str().unwrap(), "--deny-warnings"]);
    assert_eq!(code, 1);

    // A chart out as a model, and back.
    let model = dir.path().join("corner-shop.json");
    let (code, _, err) = chart_command(
        "export",
        &[
            "examples/charts/corner-shop.toml",
            "--output",
            model.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(json["ModelMetadata"]["Version"], "3.0");
    assert_eq!(json["DataModel"][0]["TableName"], "shop");
    let facets: Vec<&str> = json["DataModel"][0]["TableFacets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["FacetName"].as_str().unwrap())
        .collect();
    assert_eq!(facets, ["Customer", "Product", "Order"]);
    assert_eq!(
        json["DataModel"][0]["TableFacets"][1]["TableData"][0]["Price"],
        serde_json::json!({ "S": "1250" })
    );
    let (code, back, err) = chart_command("import", &[model.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let back_chart = dir.path().join("back.toml");
    std::fs::write(&back_chart, back).unwrap();
    let (code, _, err) = chart_check(&[back_chart.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");

    // The model's items into a table, as they are, then checked against the chart.
    let data = dir.path().join("shop.redb");
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        // The log, wherever it goes, without its colours.
        let log = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let mut plain = String::new();
        let mut chars = log.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                plain.push(c);
            }
        }
        (out.status.code().unwrap_or(-1), plain.clone(), plain)
    };
    let seed = [
        "seed",
        "--chart",
        chart_arg,
        "--workbench",
        "examples/models/shop.json",
        "--data",
        data.to_str().unwrap(),
    ];
    let (code, _, err) = run(&seed);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("written=7 of=7"), "{err}");
    let (code, _, err) = run(&seed);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("written=0 of=7"), "{err}");
    let (code, out, err) = run(&[
        "check",
        "--chart",
        chart_arg,
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // The 7 and the chart recorded in the table `seed` created.
    assert!(out.contains("checked 8 items: no violations"), "{out}");
}

/// `check --max-rcu` on a table being adopted: it reads the table as far as the budget
/// takes it, checks each item read alone (what it is, its keys, its attributes), counts
/// what does not conform by kind, and writes nothing.
#[test]
fn check_within_a_read_budget_counts_what_does_not_conform() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("shop.redb");
    let chart = dir.path().join("shop.toml");
    let (code, _, err) = chart_command(
        "import",
        &[
            "examples/models/shop.json",
            "--output",
            chart.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    // The model's items, and one the chart's entities do not have: a stray cart.
    let odd = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/models/shop.json"),
    )
    .unwrap()
    .replace(
        r#"{ "PK": { "S": "p#SHEARS" }"#,
        r#"{ "PK": { "S": "cart#1" }, "SK": { "S": "cart#1" }, "EntityType": { "S": "cart" } },
            { "PK": { "S": "p#SHEARS" }"#,
    );
    let model = dir.path().join("odd.json");
    std::fs::write(&model, odd).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, _) = run(&[
        "seed",
        "--chart",
        chart.to_str().unwrap(),
        "--workbench",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    // The whole table within the budget: every check.
    let (code, out) = run(&[
        "check",
        "--chart",
        chart.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--max-rcu",
        "1000",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "undecodable cart (cart#1 | cart#1): does not decode: an item of unknown type `cart`"
        ),
        "{out}"
    );
    assert!(out.contains("by kind: undecodable 1"), "{out}");
    assert!(out.contains("checked 9 items: 1 violation"), "{out}");
    // A budget of one unit: one page read (the embedded engine's pages are 100 items).
    let (_, out) = run(&[
        "check",
        "--chart",
        chart.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--max-rcu",
        "1",
    ]);
    assert!(out.contains("checked 9 items"), "{out}");
}

/// A model of several tables drafts a chart of them all by default (`[[tables]]`; a TODO
/// where their items do not name their entity alike), any one of them by `--table NAME`;
/// a name it does not have is refused with those it has.
#[test]
fn a_model_of_two_tables_is_drafted_whole_or_a_table_at_a_time() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(name)).unwrap()).unwrap()
    };
    let mut model = read("examples/models/shop.json");
    let sessions = read("examples/models/sessions.json");
    let more = sessions["DataModel"].as_array().unwrap().clone();
    model["DataModel"].as_array_mut().unwrap().extend(more);
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.json");
    std::fs::write(&both, serde_json::to_string_pretty(&model).unwrap()).unwrap();
    let both = both.to_str().unwrap();

    let (code, drafted, err) = chart_command("import", &[both]);
    assert_eq!(code, 0, "{err}");
    assert!(
        drafted.contains("[[tables]]\nname = \"GardenShop\"")
            && drafted.contains("[[tables]]\nname = \"Sessions\""),
        "{drafted}"
    );
    // The sessions are in their table.
    assert!(drafted.contains("table = \"Sessions\""), "{drafted}");
    assert!(
        err.contains("the tables name their items' entity apart (`GardenShop` in `EntityType`, `Sessions` in none)"),
        "{err}"
    );

    let chart = dir.path().join("sessions.toml");
    let (code, _, err) = chart_command(
        "import",
        &[
            both,
            "--table",
            "Sessions",
            "--output",
            chart.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("TODO"), "{err}");
    let (code, out, err) = chart_check(&[chart.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("every rule holds"), "{out}");
    assert!(std::fs::read_to_string(&chart)
        .unwrap()
        .contains("partition_key = \"SessionToken\""),);

    let (code, _, err) = chart_command("import", &[both, "--table", "Orders"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("the model has no table `Orders` (it has `GardenShop`, `Sessions`)"),
        "{err}"
    );
}
