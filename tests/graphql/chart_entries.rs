//! Map entries written one at a time: `examples/charts/arcade-awards.toml` keeps a
//! player's controls for each game in a map on the player (at most 8), saved
//! (`saveControls`, `put-entry`) and cleared (`clearControls`, `remove-entry`) one game at
//! a time, on both engines:
//!
//! - a save or a clear is one UpdateItem of that entry's path: the other entries stay as
//!   they are, whatever another write did to them;
//! - a player with no map yet gets it whole, with the one entry: a second UpdateItem;
//! - a ninth game is refused, naming `key`, and the map is unchanged; a saved game can
//!   still be changed;
//! - a key not of its kind is refused before anything is sent; another league's player
//!   is as missing as one that is not there.

use std::sync::Arc;

use serde_json::{json, Value};

use itemgraph::auth::{Access, Role};

use crate::common::graphql::{example_chart, requests, Api};

fn chart() -> Arc<itemgraph::chart::Chart> {
    example_chart("arcade-awards")
}

on_both_engines_of!(chart;
    an_entry_is_saved_and_cleared_alone,
    a_player_without_the_map_gets_it_with_the_one_entry,
    a_full_map_takes_no_new_key,
    a_bad_key_or_another_leagues_player_is_refused_unsent,
);

const SAVE: &str = r#"mutation($input: SaveControlsInput!) {
    saveControls(input: $input) { player { controls { key value { jump fire invertY } } } } }"#;
const CLEAR: &str = r#"mutation($input: ClearControlsInput!) {
    clearControls(input: $input) { player { controls { key } } } }"#;

fn save(handle: &str, game: &str, jump: &str) -> Value {
    json!({"input": {"league": "harbor", "handle": handle, "key": game,
        "value": {"jump": jump, "fire": "CTRL", "invertY": true}}})
}

fn clear(handle: &str, game: &str) -> Value {
    json!({"input": {"league": "harbor", "handle": handle, "key": game}})
}

/// The games of the controls the answer holds, and the requests it made.
fn games(r: &Value, field: &str) -> (Vec<String>, Vec<String>) {
    assert!(r.get("errors").is_none(), "{r:#}");
    let games = r["data"][field]["player"]["controls"]
        .as_array()
        .map(|a| {
            let mut g: Vec<String> = a
                .iter()
                .map(|e| e["key"].as_str().unwrap().to_owned())
                .collect();
            g.sort();
            g
        })
        .unwrap_or_default();
    let ops = requests(r)
        .iter()
        .map(|s| s["operation"].as_str().unwrap().to_owned())
        .collect();
    (games, ops)
}

async fn an_entry_is_saved_and_cleared_alone(api: &Api) {
    let r = api.run_with(SAVE, save("ada-l", "tile-drop", "UP")).await;
    let (g, ops) = games(&r, "saveControls");
    assert_eq!(g, ["galaxy-run", "tile-drop"]);
    assert_eq!(ops, ["UpdateItem"]);
    let sent = &requests(&r)[0];
    assert!(
        sent["keyCondition"]
            .as_str()
            .unwrap()
            .contains("PLAYER#ada-l"),
        "{sent}"
    );
    // Saved again: replaced, the other entry untouched.
    let r = api.run_with(SAVE, save("ada-l", "galaxy-run", "W")).await;
    let (g, ops) = games(&r, "saveControls");
    assert_eq!(g, ["galaxy-run", "tile-drop"]);
    assert_eq!(ops, ["UpdateItem"]);
    let saved: Vec<&Value> = r["data"]["saveControls"]["player"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["key"] == "galaxy-run")
        .collect();
    assert_eq!(
        saved[0]["value"],
        json!({"jump": "W", "fire": "CTRL", "invertY": true})
    );

    let r = api.run_with(CLEAR, clear("ada-l", "galaxy-run")).await;
    let (g, ops) = games(&r, "clearControls");
    assert_eq!(g, ["tile-drop"]);
    assert_eq!(ops, ["UpdateItem"]);
    // A game with nothing saved: nothing to clear.
    let r = api.run_with(CLEAR, clear("ada-l", "galaxy-run")).await;
    let (g, _) = games(&r, "clearControls");
    assert_eq!(g, ["tile-drop"]);
    api.assert_clean(&chart()).await;
}

async fn a_player_without_the_map_gets_it_with_the_one_entry(api: &Api) {
    let r = api.run_with(SAVE, save("grace-h", "tile-drop", "UP")).await;
    let (g, ops) = games(&r, "saveControls");
    assert_eq!(g, ["tile-drop"]);
    assert_eq!(ops, ["UpdateItem", "UpdateItem"]);
    let r = api
        .run_with(SAVE, save("grace-h", "galaxy-run", "UP"))
        .await;
    let (g, ops) = games(&r, "saveControls");
    assert_eq!(g, ["galaxy-run", "tile-drop"]);
    assert_eq!(ops, ["UpdateItem"]);
    // Clearing a game of a player with no map: the player as is, one request.
    let r = api
        .run_with(
            CLEAR,
            json!({"input": {"league": "dockside", "handle": "alan-t", "key": "tile-drop"}}),
        )
        .await;
    let (g, ops) = games(&r, "clearControls");
    assert!(g.is_empty());
    assert_eq!(ops, ["UpdateItem"]);
    api.assert_clean(&chart()).await;
}

async fn a_full_map_takes_no_new_key(api: &Api) {
    for i in 1..8 {
        let r = api
            .run_with(SAVE, save("ada-l", &format!("game-{i}"), "UP"))
            .await;
        assert!(r.get("errors").is_none(), "{r:#}");
    }
    let r = api.run_with(SAVE, save("ada-l", "game-9", "UP")).await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{r:#}"
    );
    assert_eq!(r["errors"][0]["extensions"]["field"], "key", "{r:#}");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("at most 8"),
        "{r:#}"
    );
    assert_eq!(requests(&r).len(), 1, "{r:#}");
    // One saved already may change.
    let r = api.run_with(SAVE, save("ada-l", "game-3", "DOWN")).await;
    let (g, _) = games(&r, "saveControls");
    assert_eq!(g.len(), 8);
    api.assert_clean(&chart()).await;
}

async fn a_bad_key_or_another_leagues_player_is_refused_unsent(api: &Api) {
    let r = api.run_with(SAVE, save("ada-l", "Not A Slug!", "UP")).await;
    assert_eq!(
        r["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{r:#}"
    );
    assert_eq!(r["errors"][0]["extensions"]["field"], "key", "{r:#}");
    assert!(requests(&r).is_empty(), "{r:#}");

    let dockside = Access::Tenant {
        org: itemgraph::chart::kinds::Tenant::parse("dockside").unwrap(),
        role: Role::Member,
        subject: None,
    };
    let r = api
        .run_as(&dockside, SAVE, save("ada-l", "tile-drop", "UP"))
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "NOT_FOUND", "{r:#}");
    assert!(requests(&r).is_empty(), "{r:#}");
    let r = api
        .run_as(&dockside, CLEAR, clear("ada-l", "galaxy-run"))
        .await;
    assert_eq!(r["errors"][0]["extensions"]["code"], "NOT_FOUND", "{r:#}");
    // Still there.
    let r = api
        .run_with(SAVE, save("ada-l", "galaxy-run", "SPACE"))
        .await;
    let (g, _) = games(&r, "saveControls");
    assert_eq!(g, ["galaxy-run"]);
}
