//! `itemgraph snapshot` as a frontend repository's CI runs it: the binary, operation
//! files, snapshots beside them. The committed `examples/` snapshots hold on both engines;
//! a changed response fails with a diff and `--update` accepts it; a request budget fails
//! even with `--update`; persisted-operations maps work; bad input names its file.

use crate::common;

use std::path::Path;
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_itemgraph");

async fn snapshot(dir: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(BIN)
        .arg("snapshot")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("ITEMGRAPH_JWT_SECRET")
        .output()
        .await
        .expect("itemgraph runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The committed snapshots of `examples/` hold, budgets included, on the embedded engine
/// and on DynamoDB Local (a fresh table, seeded by the command).
#[tokio::test]
async fn the_examples_match_their_committed_snapshots_on_both_engines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = snapshot(root, &["examples/"]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("8 operations"), "{}", text(&out));
    assert!(
        !text(&out).contains("new "),
        "every example has its snapshot: {}",
        text(&out)
    );

    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name("snapshot");
    let out = tokio::process::Command::new(BIN)
        .args([
            "snapshot",
            "examples/",
            "--store",
            "dynamodb",
            "--endpoint",
            &endpoint,
        ])
        .args(["--table", &table])
        .current_dir(root)
        .env("AWS_REGION", "us-east-1")
        .output()
        .await
        .unwrap();
    let store = common::dynamo_local::connect(&endpoint, &table).await;
    common::dynamo_local::drop_table(&store).await;
    assert!(out.status.success(), "{}", text(&out));
}

/// The second chart's operations (`examples/charts/store-locator/`) hold their snapshots
/// and request budgets on both engines, served from the chart with no code of its own.
#[tokio::test]
async fn the_second_charts_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("store-locator", 4).await;
}

/// The sensor log's operations (`examples/charts/sensor-log/`: ranges of a sort key with
/// either end open) hold their snapshots and request budgets on both engines.
#[tokio::test]
async fn the_sensor_logs_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("sensor-log", 3).await;
}

/// The session store's operations (`examples/charts/session-store/`: a keys-only index
/// read as a Query and a BatchGetItem of the keys) hold their snapshots and request budgets
/// on both engines.
#[tokio::test]
async fn the_session_stores_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("session-store", 2).await;
}

/// A table served as another app stored it (`examples/charts/corner-shop/`: its own names,
/// type values, numbers as strings, ids only in keys) and one with a simple primary key and
/// an index keyed by a partition key alone (`examples/charts/auth-sessions/`) and a log whose
/// sort key holds a time of its own form (`examples/charts/device-log/`) hold their
/// snapshots and request budgets on both engines.
#[tokio::test]
async fn the_stored_tables_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("corner-shop", 4).await;
    charts_operations_match("auth-sessions", 2).await;
    charts_operations_match("device-log", 3).await;
}

/// The award winners' Scan of a sparse index (`examples/charts/arcade-awards/`) holds its
/// snapshot and request budget on both engines, which answer an index's Scan in its key
/// order alike.
#[tokio::test]
async fn the_arcade_awards_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("arcade-awards", 2).await;
}

/// The stars that link users and repositories (`examples/charts/repo-stars/`: many to
/// many, read from both sides) hold their snapshots and request budgets on both engines.
#[tokio::test]
async fn the_repo_stars_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("repo-stars", 5).await;
}

/// A design of two tables (`examples/charts/box-office/`: venues and events in one,
/// bookings keyed by a number in another) holds its snapshots and request budgets on both
/// engines: one BatchGetItem reads both tables, and a booking and its event's count are
/// one TransactWriteItems across them.
#[tokio::test]
async fn the_box_offices_operations_match_their_snapshots_on_both_engines() {
    charts_operations_match("box-office", 5).await;
}

/// `examples/charts/{name}/`'s `operations` operations, served from
/// `examples/charts/{name}.toml` and its samples, match their snapshots and budgets on the
/// embedded engine and on DynamoDB Local.
async fn charts_operations_match(name: &str, operations: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (file, dir) = (
        format!("examples/charts/{name}.toml"),
        format!("examples/charts/{name}/"),
    );
    let chart = ["--chart", file.as_str()];
    let out = snapshot(root, &[&chart[..], &[dir.as_str()]].concat()).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{operations} operations")),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("new "), "{}", text(&out));

    let Some(endpoint) = common::dynamo_local::endpoint().await else {
        return;
    };
    let table = common::dynamo_local::unique_table_name(&format!("snapshot-{name}"));
    let charted = itemgraph::config::load_chart(Some(&root.join(chart[1]))).unwrap();
    // Each of a chart of several tables under a name of this run's too.
    let others: Vec<(String, String)> = charted.tables[1..]
        .iter()
        .map(|t| {
            let stored = common::dynamo_local::unique_table_name(&format!("snapshot-{}", t.name));
            (t.name.clone(), stored)
        })
        .collect();
    let renames: Vec<String> = others.iter().map(|(c, s)| format!("{c}={s}")).collect();
    let out = tokio::process::Command::new(BIN)
        .arg("snapshot")
        .args(chart)
        .args([dir.as_str(), "--store", "dynamodb"])
        .args(["--endpoint", &endpoint, "--table", &table])
        .args(renames.iter().flat_map(|r| ["--table-name", r.as_str()]))
        .current_dir(root)
        .env("AWS_REGION", "us-east-1")
        .output()
        .await
        .unwrap();
    let store = common::dynamo_local::connect_with(&endpoint, &table, charted.table_schema()).await;
    common::dynamo_local::drop_table(&store).await;
    for (t, (_, stored)) in others.iter().enumerate() {
        let store =
            common::dynamo_local::connect_with(&endpoint, stored, charted.schema_of(t + 1)).await;
        common::dynamo_local::drop_table(&store).await;
    }
    assert!(out.status.success(), "{}", text(&out));
}

#[tokio::test]
async fn a_changed_response_fails_with_a_diff_until_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("org.graphql"),
        "# dynamodb-requests: 1\nquery Org { organization(slug: \"acme\") { name } }\n",
    )
    .unwrap();
    let first = snapshot(d, &["org.graphql"]).await;
    assert!(first.status.success(), "{}", text(&first));
    assert!(text(&first).contains("new      org"), "{}", text(&first));
    let snap = std::fs::read_to_string(d.join("__snapshots__/org.snap")).unwrap();
    assert!(
        snap.starts_with("---\nsource: itemgraph snapshot\n"),
        "{snap}"
    );
    assert!(snap.contains("\"name\": \"Acme Corporation\""), "{snap}");
    assert!(snap.contains("\"operation\": \"GetItem\""), "{snap}");

    let again = snapshot(d, &["org.graphql"]).await;
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("ok       org"), "{}", text(&again));

    std::fs::write(
        d.join("org.graphql"),
        "# dynamodb-requests: 1\nquery Org { organization(slug: \"acme\") { name plan } }\n",
    )
    .unwrap();
    let changed = snapshot(d, &["org.graphql"]).await;
    assert!(!changed.status.success());
    let report = text(&changed);
    assert!(report.contains("CHANGED  org"), "{report}");
    assert!(
        report.contains("+        \"plan\": \"ENTERPRISE\""),
        "{report}"
    );
    assert!(d.join("__snapshots__/org.snap.new").exists());

    let accepted = snapshot(d, &["org.graphql", "--update"]).await;
    assert!(accepted.status.success(), "{}", text(&accepted));
    assert!(text(&accepted).contains("updated  org"));
    assert!(!d.join("__snapshots__/org.snap.new").exists());
    assert!(snapshot(d, &["org.graphql"]).await.status.success());
}

/// A budget the operation exceeds fails the run, `--update` or not, naming the
/// operation and its requests: an N+1 is caught in review.
#[tokio::test]
async fn a_request_budget_fails_even_with_update() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("tickets.graphql"),
        "# dynamodb-requests: <= 1\nquery T { user(org: \"acme\", username: \"wile-e-coyote\") { tickets(first: 5) { nodes { assignee { name } } } } }\n",
    )
    .unwrap();
    for args in [
        &["tickets.graphql"][..],
        &["tickets.graphql", "--update"][..],
    ] {
        let out = snapshot(d, args).await;
        assert!(!out.status.success());
        let report = text(&out);
        assert!(
            report.contains("BUDGET   tickets")
                && report.contains("2 DynamoDB requests, budget <= 1"),
            "{report}"
        );
        assert!(report.contains("BatchGetItem"), "{report}");
    }
    assert!(!d.join("__snapshots__/tickets.snap").exists());
}

/// A persisted-operations map (id → document, as Relay's compiler writes it) is a test
/// set; mutations mint ids and times that the snapshot makes stable, so it passes twice
/// on fresh data; a tenant (`--org`) sees only its organization.
#[tokio::test]
async fn persisted_operation_maps_mutations_and_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("persisted.json"),
        serde_json::json!({
            "a1b2c3": "query Orgs { acme: organization(slug: \"acme\") { name } globex: organization(slug: \"globex\") { name } }",
            "d4e5f6": "mutation New { createTicket(input: {org: \"acme\", requester: \"wile-e-coyote\", title: \"Anvil\", body: \"Heavy\", priority: HIGH}) { ticket { id ticketId createdAt title } } }"
        })
        .to_string(),
    )
    .unwrap();
    for _ in 0..2 {
        let out = snapshot(d, &["persisted.json", "--org", "acme", "--role", "member"]).await;
        assert!(out.status.success(), "{}", text(&out));
    }
    let orgs = std::fs::read_to_string(d.join("__snapshots__/a1b2c3.snap")).unwrap();
    assert!(
        orgs.contains("\"globex\": null"),
        "a tenant sees its own organization only: {orgs}"
    );
    let created = std::fs::read_to_string(d.join("__snapshots__/d4e5f6.snap")).unwrap();
    assert!(
        created.contains("\"ticketId\": \"<new id 1>\""),
        "{created}"
    );
    assert!(created.contains("\"createdAt\": \"<now>\""), "{created}");
}

/// Bad input is a clear error naming the file, and nothing runs.
#[tokio::test]
async fn bad_input_names_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        (
            "two.graphql",
            "query A { __typename }\nquery B { __typename }\n",
            "two.graphql: holds 2 operations",
        ),
        (
            "broken.graphql",
            "query { organization(slug: ",
            "broken.graphql: not valid GraphQL",
        ),
        (
            "budget.graphql",
            "# dynamodb-requests: lots\n{ __typename }",
            "budget.graphql: `# dynamodb-requests: lots`",
        ),
    ];
    for (name, body, says) in cases {
        std::fs::write(d.join(name), body).unwrap();
        let out = snapshot(d, &[name]).await;
        assert!(!out.status.success());
        assert!(text(&out).contains(says), "{name}: {}", text(&out));
        std::fs::remove_file(d.join(name)).unwrap();
    }
    std::fs::write(d.join("v.graphql"), "query V($n: Int) { __typename }").unwrap();
    std::fs::write(d.join("v.variables.json"), "{ not json").unwrap();
    let out = snapshot(d, &["v.graphql"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("v.variables.json: not JSON"),
        "{}",
        text(&out)
    );
    let out = snapshot(d, &["notes.txt"]).await;
    assert!(
        text(&out).contains("notes.txt: not a .graphql file"),
        "{}",
        text(&out)
    );
}

/// `--fixture`: the data is the user's, as items in the table's design or as setup
/// mutations; the demo data is not loaded.
#[tokio::test]
async fn fixtures_replace_the_demo_data() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("items.json"),
        serde_json::json!([{
            "PK": { "S": "ORG#tiny" }, "SK": { "S": "ORG#tiny" }, "Type": { "S": "Organization" },
            "slug": { "S": "tiny" }, "name": { "S": "Tiny Co" }, "plan": { "S": "FREE" },
            "createdAt": { "S": "2024-01-01T00:00:00.000Z" }
        }])
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        d.join("setup.graphql"),
        "mutation { createOrganization(input: {slug: \"tiny\", name: \"Tiny Co\", plan: FREE}) { organization { slug } } }",
    )
    .unwrap();
    std::fs::create_dir(d.join("ops")).unwrap();
    std::fs::write(
        d.join("ops/orgs.graphql"),
        "query Orgs { tiny: organization(slug: \"tiny\") { name plan } acme: organization(slug: \"acme\") { name } }",
    )
    .unwrap();
    for fixture in ["items.json", "setup.graphql"] {
        let out = snapshot(d, &["ops/", "--fixture", fixture, "--update"]).await;
        assert!(out.status.success(), "{fixture}: {}", text(&out));
        let snap = std::fs::read_to_string(d.join("ops/__snapshots__/orgs.snap")).unwrap();
        assert!(snap.contains("\"name\": \"Tiny Co\""), "{fixture}: {snap}");
        assert!(
            snap.contains("\"acme\": null"),
            "{fixture}: no demo data: {snap}"
        );
    }
    // What the setup mutations mint is made stable too: the same snapshot run after run.
    std::fs::create_dir(d.join("minted")).unwrap();
    std::fs::write(
        d.join("minted/created.graphql"),
        "query C { organization(slug: \"tiny\") { createdAt } }",
    )
    .unwrap();
    for _ in 0..2 {
        let out = snapshot(d, &["minted/", "--fixture", "setup.graphql"]).await;
        assert!(out.status.success(), "{}", text(&out));
    }
    let snap = std::fs::read_to_string(d.join("minted/__snapshots__/created.snap")).unwrap();
    assert!(snap.contains("\"createdAt\": \"<now>\""), "{snap}");
}

/// `--store dynamodb` runs mutations, so it needs an explicit endpoint.
#[tokio::test]
async fn dynamodb_needs_an_explicit_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("q.graphql"), "{ __typename }").unwrap();
    let out = snapshot(dir.path(), &["q.graphql", "--store", "dynamodb"]).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("give --endpoint"), "{}", text(&out));
}

/// `--token` runs as the caller a token names, checked with `--jwt-secret`; a forged one
/// is refused before anything runs.
#[tokio::test]
async fn a_token_names_the_caller() {
    const SECRET: &str = "snapshot-test-secret-0123456789abcdef";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let minted = tokio::process::Command::new(BIN)
        .args([
            "token",
            "--org",
            "globex",
            "--role",
            "member",
            "--jwt-secret",
            SECRET,
        ])
        .output()
        .await
        .unwrap();
    assert!(minted.status.success(), "{}", text(&minted));
    let token = String::from_utf8(minted.stdout).unwrap().trim().to_owned();
    std::fs::write(
        d.join("orgs.graphql"),
        "query Orgs { acme: organization(slug: \"acme\") { name } globex: organization(slug: \"globex\") { name } }",
    )
    .unwrap();
    let out = snapshot(
        d,
        &["orgs.graphql", "--token", &token, "--jwt-secret", SECRET],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let snap = std::fs::read_to_string(d.join("__snapshots__/orgs.snap")).unwrap();
    assert!(
        snap.contains("\"acme\": null") && snap.contains("Globex"),
        "{snap}"
    );
    let forged = snapshot(
        d,
        &[
            "orgs.graphql",
            "--token",
            &token,
            "--jwt-secret",
            "another-secret-0123456789abcdef0",
        ],
    )
    .await;
    assert!(!forged.status.success());
    assert!(text(&forged).contains("--token"), "{}", text(&forged));
}
