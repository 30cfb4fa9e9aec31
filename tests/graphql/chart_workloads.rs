//! The API differential of the access-pattern charts' writes: seeded random workloads of
//! `examples/charts/session-store.toml` (sessions started and ended, one at a time and in
//! bulk), `arcade-awards.toml` (awards given and taken, which move scores in and out of the
//! sparse index its Scan reads; controls saved and cleared one map entry at a time) and
//! `repo-stars.toml` (stars and unstars, which count on both sides of the link), each run
//! on both engines: every answer, error and request the same, and `itemgraph check` clean on
//! both after.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::common::graphql::{example_chart, requests, Api};

/// The requests an answer made, as a set: pages read concurrently start in either order.
fn operations(r: &Value) -> Vec<String> {
    let mut ops: Vec<String> = requests(r)
        .iter()
        .map(|s| s["operation"].as_str().unwrap_or_default().to_owned())
        .collect();
    ops.sort();
    ops
}

fn pick<'a>(rng: &mut ChaCha8Rng, of: &[&'a str]) -> &'a str {
    of[rng.random_range(0..of.len())]
}

/// Runs `steps` of `next` on both engines of `chart`, comparing each answer, then
/// `everything` and `check`.
async fn differential(
    name: &str,
    chart: Arc<itemgraph::chart::Chart>,
    steps: usize,
    everything: &str,
    next: impl Fn(&mut ChaCha8Rng, usize) -> (&'static str, Value),
) {
    for seed in [1u64, 2, 3] {
        let Some(dynamo) = Api::chart(chart.clone(), Some(name)).await else {
            return;
        };
        let embedded = Api::chart(chart.clone(), None)
            .await
            .expect("the embedded engine");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut answered = 0;
        for step in 0..steps {
            let (query, vars) = next(&mut rng, step);
            let a = embedded.run_with(query, vars.clone()).await;
            let b = dynamo.run_with(query, vars.clone()).await;
            let at = format!("{name} seed {seed} step {step}: {query} {vars}");
            assert_eq!(a.get("data"), b.get("data"), "{at}");
            assert_eq!(a.get("errors"), b.get("errors"), "{at}");
            assert_eq!(operations(&a), operations(&b), "{at}");
            answered += usize::from(a.get("errors").is_none());
        }
        // The workload writes, as well as being refused.
        assert!(
            answered > steps / 5,
            "{name} seed {seed}: {answered} of {steps} answered"
        );
        let (a, b) = (embedded.run(everything).await, dynamo.run(everything).await);
        assert!(a.get("errors").is_none(), "{a:#}");
        assert_eq!(a["data"], b["data"], "{name} seed {seed}");
        embedded.assert_clean(&chart).await;
        dynamo.assert_clean(&chart).await;
        embedded.finish().await;
        dynamo.finish().await;
    }
}

#[tokio::test]
async fn the_session_stores_workload_answers_the_same_on_both_engines() {
    const START: &str = r#"mutation($input: StartSessionInput!) { startSession(input: $input) { session { username device } } }"#;
    const END_ALL: &str = r#"mutation($input: EndAccountSessionsInput!) { endAccountSessions(input: $input) { deletedCount more } }"#;
    const COUNT: &str = r#"{ app(slug: "harbor") { accounts(first: 10) { nodes { username sessions(first: 100) { nodes { username device } } } } } }"#;
    differential(
        "workload_sessions",
        example_chart("session-store"),
        40,
        COUNT,
        |rng, step| match rng.random_range(0..10) {
            0..=6 => (
                START,
                json!({"input": {"app": "harbor", "username": pick(rng, &["ada-l", "grace-h", "nobody"]), "device": format!("Device {step}")}}),
            ),
            7..=8 => (
                END_ALL,
                json!({"input": {"app": pick(rng, &["harbor", "elsewhere"]), "username": pick(rng, &["ada-l", "grace-h"])}}),
            ),
            _ => (COUNT, Value::Null),
        },
    )
    .await;
}

#[tokio::test]
async fn the_arcade_awards_workload_answers_the_same_on_both_engines() {
    const AWARD: &str = r#"mutation($input: AwardScoreInput!) { awardScore(input: $input) { score { handle game award } } }"#;
    const SAVE: &str = r#"mutation($input: SaveControlsInput!) { saveControls(input: $input) { player { handle controls { key value { jump fire invertY } } } } }"#;
    const CLEAR: &str = r#"mutation($input: ClearControlsInput!) { clearControls(input: $input) { player { handle controls { key } } } }"#;
    const WINNERS: &str = r#"{ awardWinners(first: 2) { nodes { handle game award points } pageInfo { hasNextPage } } }"#;
    const EVERYTHING: &str = r#"{ awardWinners(first: 100) { nodes { handle award } }
        league(slug: "harbor") { players(first: 10) { nodes { handle controls { key value { jump } } scores(first: 10) { nodes { award } } } } } }"#;
    let scores = [
        ("harbor", "ada-l", "01JD8Y5J3M0000000000000001"),
        ("harbor", "ada-l", "01JD8Y5J3M0000000000000002"),
        ("harbor", "grace-h", "01JD8Y5J3M0000000000000003"),
        ("harbor", "grace-h", "01JD8Y5J3M0000000000000004"),
        ("dockside", "alan-t", "01JD8Y5J3M0000000000000005"),
        ("harbor", "nobody", "01JD8Y5J3M0000000000000009"),
    ];
    differential(
        "workload_arcade",
        example_chart("arcade-awards"),
        60,
        EVERYTHING,
        move |rng, _| match rng.random_range(0..10) {
            0..=3 => {
                let (league, handle, id) = scores[rng.random_range(0..scores.len())];
                let award = match rng.random_range(0..4) {
                    0 => Value::Null,
                    n => json!(["GOLD", "SILVER", "BRONZE"][n - 1]),
                };
                (
                    AWARD,
                    json!({"input": {"league": league, "handle": handle, "scoreId": id, "award": award}}),
                )
            }
            4..=6 => (
                SAVE,
                json!({"input": {"league": "harbor", "handle": pick(rng, &["ada-l", "grace-h", "nobody"]),
                    "key": pick(rng, &["galaxy-run", "tile-drop", "g1", "g2", "g3", "g4", "g5", "g6", "g7", "Bad Key"]),
                    "value": {"jump": pick(rng, &["UP", "SPACE"]), "fire": "CTRL", "invertY": rng.random_bool(0.5)}}}),
            ),
            7..=8 => (
                CLEAR,
                json!({"input": {"league": "harbor", "handle": pick(rng, &["ada-l", "grace-h"]),
                    "key": pick(rng, &["galaxy-run", "tile-drop", "g1", "g2"])}}),
            ),
            _ => (WINNERS, Value::Null),
        },
    )
    .await;
}

#[tokio::test]
async fn the_repo_stars_workload_answers_the_same_on_both_engines() {
    const STAR: &str = r#"mutation($input: StarRepoInput!) { starRepo(input: $input) { star { repo username } } }"#;
    const UNSTAR: &str =
        r#"mutation($input: UnstarRepoInput!) { unstarRepo(input: $input) { deletedStarId } }"#;
    const REPO: &str = r#"mutation($input: CreateRepoInput!) { createRepo(input: $input) { repo { repo starCount } } }"#;
    const EVERYTHING: &str = r#"{ org(slug: "acme") { users(first: 10) { nodes { username starredCount starred(first: 10) { totalCount nodes { repository { repo starCount } } } } } }
        rocket: repository(org: "acme", repo: "rocket") { starCount stargazers(first: 10) { nodes { user { username } } } }
        parser: repository(org: "acme", repo: "parser") { starCount stargazers(first: 10) { nodes { user { username } } } } }"#;
    differential(
        "workload_stars",
        example_chart("repo-stars"),
        60,
        EVERYTHING,
        |rng, _| {
            let pair = json!({"org": "acme",
                "repo": pick(rng, &["rocket", "parser", "engine", "missing"]),
                "username": pick(rng, &["ada-l", "grace-h", "linus-t", "nobody"])});
            match rng.random_range(0..10) {
                0..=5 => (STAR, json!({"input": pair})),
                6..=8 => (UNSTAR, json!({"input": pair})),
                _ => (
                    REPO,
                    json!({"input": {"org": "acme", "repo": pick(rng, &["engine", "rocket"])}}),
                ),
            }
        },
    )
    .await;
}
