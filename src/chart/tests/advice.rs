//! `chart check`'s advice: each rule on a chart built to break it (and only that rule's
//! warning added), the built-in and second charts with the warnings they deserve.

use super::*;
use crate::chart::advice::{advise, Advice};

const LOCATOR: &str = include_str!("../../../examples/charts/store-locator.toml");

/// A chart with each `(from, to)` replaced (each `from` must be there), which must hold
/// every start-up rule.
fn changed(source: &str, edits: &[(&str, &str)]) -> std::sync::Arc<Chart> {
    let mut text = source.to_owned();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    accepted(&text)
}

/// The `(rule, entity, pattern)` of each warning.
fn rules(advice: &[Advice]) -> Vec<(&str, &str, Option<u32>)> {
    advice
        .iter()
        .map(|a| (a.rule, a.entity.as_str(), a.pattern))
        .collect()
}

/// The warning of `rule` on `entity`; its message must hold each of `says`.
#[track_caller]
fn warned<'a>(advice: &'a [Advice], rule: &str, entity: &str, says: &[&str]) -> &'a Advice {
    let a = advice
        .iter()
        .find(|a| a.rule == rule && a.entity == entity)
        .unwrap_or_else(|| panic!("no [{rule}] on {entity} in {advice:#?}"));
    for s in says {
        assert!(a.message.contains(s), "`{s}` not in: {}", a.message);
    }
    a
}

/// The second chart with an index of its stores by status within their chain: a
/// partition per chain (every store opened in one chain writes into it), sorted by a
/// status `updateStore` changes.
const BY_STATUS: &[(&str, &str)] = &[
    (
        "[tenant]",
        "[indexes.GSI1]\npartition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = \"ALL\"\n\n[tenant]",
    ),
    (
        "version = \"version\"\nunique = { phone = \"StorePhone\" }",
        "indexes.GSI1 = [\"CHAIN#{chain}\", \"STATUS#{status}#STORE#{country}#{state}#{city}#{number}\"]\nversion = \"version\"\nunique = { phone = \"StorePhone\" }",
    ),
    (
        "storesIn = { pattern = 3,",
        "byStatus = { pattern = 11, description = \"The chain's stores in one status.\" }\nstoresIn = { pattern = 3,",
    ),
    (
        "[mutations.createChain]",
        "[patterns.11]\nname = \"A chain's stores in one status\"\nrequest = \"Query\"\nkey = \"GSI1PK = CHAIN#{slug} AND begins_with(GSI1SK, STATUS#{status}#STORE#)\"\nchildren = \"Store\"\nfield = \"Chain.byStatus\"\n\n[mutations.createChain]",
    ),
];

/// The built-in chart deserves four warnings, each explained in `docs/CHART.md`: its
/// ticket queues take every new ticket of an organization in one GSI2 partition; a page
/// of 100 tickets with the longest bodies passes 1 MB; `Query.order` reads GSI1.
#[test]
fn the_builtin_chart_gets_the_warnings_it_deserves() {
    let advice = advise(&builtin());
    assert_eq!(
        rules(&advice),
        [
            ("consistent-read", "Order", Some(7)),
            ("hot-partition", "Ticket", None),
            ("page-size", "Ticket", Some(4)),
            ("page-size", "Ticket", Some(6)),
        ],
        "{advice:#?}"
    );
    warned(
        &advice,
        "hot-partition",
        "Ticket",
        &[
            "every createTicket of one organization writes its GSI2 keys into one partition (`ORG#<org>#STATUS#<status>`, `status` OPEN)",
            "about 1 000 new tickets a second",
        ],
    );
    warned(
        &advice,
        "page-size",
        "Ticket",
        &["up to 100 tickets of up to 41 KB each (`body` up to 40 KB)"],
    );
    warned(
        &advice,
        "consistent-read",
        "Order",
        &[
            "`Query.order` reads an order through GSI1, which cannot be read consistently",
            "`placeOrder`",
        ],
    );
}

/// The second chart: its chains' store counts on the chain's one item, and nothing else.
#[test]
fn the_second_chart_gets_the_one_it_deserves() {
    let advice = advise(&parse(LOCATOR).unwrap());
    assert_eq!(
        rules(&advice),
        [("hot-partition", "Chain", None)],
        "{advice:#?}"
    );
}

#[test]
fn an_index_partition_every_create_of_a_tenant_writes_is_a_hot_partition() {
    let advice = advise(&changed(LOCATOR, BY_STATUS));
    warned(
        &advice,
        "hot-partition",
        "Store",
        &["every createStore of one chain writes its GSI1 keys into one partition (`CHAIN#<chain>`)"],
    );
    // With a status in it, the one every create gives.
    let mut edits = BY_STATUS.to_vec();
    edits[1].1 = "indexes.GSI1 = [\"CHAIN#{chain}#STATUS#{status}\", \"STORE#{country}#{state}#{city}#{number}\"]\nversion = \"version\"\nunique = { phone = \"StorePhone\" }";
    edits[3].1 = "[patterns.11]\nname = \"A chain's stores in one status\"\nrequest = \"Query\"\nkey = \"GSI1PK = CHAIN#{slug}#STATUS#{status} AND begins_with(GSI1SK, STORE#)\"\nchildren = \"Store\"\nfield = \"Chain.byStatus\"\n\n[mutations.createChain]";
    let advice = advise(&changed(LOCATOR, &edits));
    warned(
        &advice,
        "hot-partition",
        "Store",
        &["(`CHAIN#<chain>#STATUS#<status>`, `status` OPEN)"],
    );
    // A partition per status alone takes every chain's new stores.
    edits[1].1 = "indexes.GSI1 = [\"STATUS#{status}\", \"STORE#{chain}#{country}#{state}#{city}#{number}\"]\nversion = \"version\"\nunique = { phone = \"StorePhone\" }";
    edits[3].1 = "[patterns.11]\nname = \"Stores in one status\"\nrequest = \"Query\"\nkey = \"GSI1PK = STATUS#{status} AND begins_with(GSI1SK, STORE#)\"\nchildren = \"Store\"\nfield = \"Chain.byStatus\"\n\n[mutations.createChain]";
    warned(
        &advise(&changed(LOCATOR, &edits)),
        "hot-partition",
        "Store",
        &["every createStore of the whole table writes its GSI1 keys into one partition (`STATUS#<status>`, `status` OPEN)"],
    );
    // A partition per store's city is not one per chain.
    edits[1].1 = "indexes.GSI1 = [\"CHAIN#{chain}#CITY#{city}\", \"STORE#{country}#{state}#{number}\"]\nversion = \"version\"\nunique = { phone = \"StorePhone\" }";
    edits[3].1 = "[patterns.11]\nname = \"A chain's stores in one city\"\nrequest = \"Query\"\nkey = \"GSI1PK = CHAIN#{slug}#CITY#{city} AND begins_with(GSI1SK, STORE#)\"\nchildren = \"Store\"\nfield = \"Chain.byStatus\"\n\n[mutations.createChain]";
    edits[2].1 = "byStatus = { pattern = 11, description = \"The chain's stores in one city.\" }\nstoresIn = { pattern = 3,";
    let advice = advise(&changed(LOCATOR, &edits));
    assert!(
        !advice
            .iter()
            .any(|a| a.rule == "hot-partition" && a.entity == "Store"),
        "{advice:#?}"
    );
}

#[test]
fn an_index_sort_key_built_from_what_a_mutation_changes_is_advised_against() {
    let advice = advise(&changed(LOCATOR, BY_STATUS));
    warned(
        &advice,
        "changing-sort-key",
        "Store",
        &["its GSI1 sort key `STATUS#<status>#STORE#<country>#<state>#<city>#<number>` is built from `status`, which `updateStore` changes", "(pattern 11)"],
    );
    // Sorted by what does not change: no warning.
    let advice = advise(&builtin());
    assert!(!advice.iter().any(|a| a.rule == "changing-sort-key"));
}

#[test]
fn a_transaction_that_can_pass_4_mb_is_advised_against() {
    // 96 lines of up to 20 000 characters each: up to 80 KB a line, 7.5 MB an order.
    let chart = changed(
        BUILTIN_SOURCE,
        &[(
            "description = { type = \"string\", max_length = 500, one_line = true }",
            "description = { type = \"string\", max_length = 20000 }",
        )],
    );
    let advice = advise(&chart);
    let a = warned(
        &advice,
        "transaction-size",
        "Order",
        &[
            "`placeOrder` writes up to 100 items in one TransactWriteItems",
            "96 order lines of up to 79 KB each: `description` up to 79 KB",
        ],
    );
    assert_eq!(a.pattern, Some(12));
    // The lines are read whole with their order in one Query too: past 1 MB.
    warned(&advice, "page-size", "OrderLine", &["up to 96 order lines"]);
}

#[test]
fn a_first_page_past_1_mb_is_advised_against() {
    // Addresses of up to 5 000 characters: a page of 100 stores, up to 2 MB.
    let chart = changed(
        LOCATOR,
        &[(
            "address = { type = \"string\", max_length = 200 }",
            "address = { type = \"string\", max_length = 5000 }",
        )],
    );
    let advice = advise(&chart);
    assert_eq!(
        rules(&advice),
        [
            ("hot-partition", "Chain", None),
            ("page-size", "Store", Some(2)),
            ("page-size", "Store", Some(3)),
        ],
        "{advice:#?}"
    );
    warned(
        &advice,
        "page-size",
        "Store",
        &[
            "Chain and a page of its stores reads the chain and up to 100 stores",
            "`address` up to 20 KB",
            "so DynamoDB stops after about",
        ],
    );
}

#[test]
fn a_batch_get_page_past_16_mb_is_advised_against() {
    const SESSIONS: &str = include_str!("../../../examples/charts/session-store.toml");
    // The session store as written: its keys-only page, and the sessions read whole, fit.
    let advice = advise(&parse(SESSIONS).unwrap());
    assert!(!advice.iter().any(|a| a.rule == "page-size"), "{advice:#?}");
    // Devices described in up to 90 000 characters: 100 sessions, up to 35 MB.
    let chart = changed(
        SESSIONS,
        &[(
            "device = { type = \"string\", max_length = 100,",
            "device = { type = \"string\", max_length = 90000,",
        )],
    );
    let advice = advise(&chart);
    let a = warned(
        &advice,
        "page-size",
        "Session",
        &[
            "reads up to 100 sessions whole by one BatchGetItem",
            "past the 16 MB one BatchGetItem returns",
        ],
    );
    assert_eq!(a.pattern, Some(4));
    assert!(a.why.contains("UnprocessedKeys"), "{a:#?}");
}

#[test]
fn index_keys_no_pattern_reads_are_advised_against() {
    let mut edits = BY_STATUS.to_vec();
    edits.push((
        "[entities.StorePhone]\nkey = [\"PHONE#{chain}#{phone}\", \"PHONE#{chain}#{phone}\"]",
        "[entities.StorePhone]\nkey = [\"PHONE#{chain}#{phone}\", \"PHONE#{chain}#{phone}\"]\nindexes.GSI1 = [\"PHONES#{chain}\", \"PHONE#{phone}\"]",
    ));
    let advice = advise(&changed(LOCATOR, &edits));
    warned(
        &advice,
        "sparse-index",
        "StorePhone",
        &["it carries GSI1 keys (`PHONES#<chain>` / `PHONE#<phone>`), and no pattern reads store phones from GSI1"],
    );
    // The stores are read from it (pattern 11): no warning on them.
    assert!(
        !advice
            .iter()
            .any(|a| a.rule == "sparse-index" && a.entity == "Store"),
        "{advice:#?}"
    );
}

#[test]
fn an_item_that_can_outgrow_400_kb_is_advised_against() {
    // Opening hours without a bound: the store grows with them.
    let unbounded = changed(
        LOCATOR,
        &[(
            "hours = { type = \"list\", of = \"Hours\", max_items = 7,",
            "hours = { type = \"list\", of = \"Hours\",",
        )],
    );
    warned(
        &advise(&unbounded),
        "item-size",
        "Store",
        &["`hours` has no `max_items`: the item grows with it"],
    );
    // Every attribute bounded, but together past 400 KB: 60 000 characters of a name and
    // as many of an address, up to 4 bytes each.
    let large = changed(
        LOCATOR,
        &[
            (
                "address = { type = \"string\", max_length = 200 }",
                "address = { type = \"string\", max_length = 60000 }",
            ),
            (
                "name = { type = \"string\", max_length = 100 }\naddress",
                "name = { type = \"string\", max_length = 60000 }\naddress",
            ),
        ],
    );
    warned(
        &advise(&large),
        "item-size",
        "Store",
        &["its attributes at their largest take 470 KB (`address` up to 235 KB), past the 400 KB of one item"],
    );
    // The second chart as it is: no item can.
    assert!(!advise(&parse(LOCATOR).unwrap())
        .iter()
        .any(|a| a.rule == "item-size"));
}

#[test]
fn a_tenants_own_item_in_an_index_is_no_hot_partition() {
    // The organization in a GSI1 partition of its own: created once, so no hot partition
    // (only keys no pattern reads).
    let chart = changed(
        BUILTIN_SOURCE,
        &[(
            "[entities.Organization]\nkey = [\"ORG#{slug}\", \"ORG#{slug}\"]",
            "[entities.Organization]\nkey = [\"ORG#{slug}\", \"ORG#{slug}\"]\nindexes.GSI1 = [\"ORG#{slug}\", \"ORG#{slug}\"]",
        )],
    );
    let advice = advise(&chart);
    assert!(
        !advice
            .iter()
            .any(|a| a.rule == "hot-partition" && a.entity == "Organization"),
        "{advice:#?}"
    );
    warned(
        &advice,
        "sparse-index",
        "Organization",
        &["it carries GSI1 keys"],
    );
}

#[test]
fn a_marker_global_on_purpose_is_told_of() {
    let advice = advise(&changed(
        LOCATOR,
        &[(
            "key = [\"PHONE#{chain}#{phone}\", \"PHONE#{chain}#{phone}\"]\ngraphql = false",
            "key = [\"PHONE#{phone}\", \"PHONE#{phone}\"]\ngraphql = false\nglobal = true",
        )],
    ));
    assert_eq!(
        rules(&advice),
        [
            ("hot-partition", "Chain", None),
            ("global-marker", "StorePhone", None)
        ],
        "{advice:#?}"
    );
    warned(
        &advice,
        "global-marker",
        "StorePhone",
        &["`Store.phone` unique across every tenant"],
    );
}

#[test]
fn a_scan_of_every_tenants_items_or_of_an_index_every_item_carries_is_advised_against() {
    const ARCADE: &str = include_str!("../../../examples/charts/arcade-awards.toml");
    let advice = advise(&changed(ARCADE, &[]));
    warned(
        &advice,
        "scan-cost",
        "Score",
        &["reads every league's scores and keeps the caller's (a filter on `league`)"],
    );
    // The award is optional: only winners carry the keys, and the index is sparse.
    assert!(
        !advice
            .iter()
            .any(|a| a.rule == "scan-cost" && a.message.contains("reads them all")),
        "{advice:#?}"
    );
    // Keyed by the game, which every score has: the Scan reads every score.
    let every = advise(&changed(
        ARCADE,
        &[(
            "indexes.Awards = [\"AWARD#{award}\", \"SCORE#{league}#{scoreId}\"]",
            "indexes.Awards = [\"GAME#{game}\", \"SCORE#{league}#{scoreId}\"]",
        )],
    ));
    warned(
        &every,
        "scan-cost",
        "Score",
        &[
            "every one of the scores carries Awards keys",
            "reads them all",
        ],
    );
    // Nothing else may carry the index's keys: the Scan would read it too.
    let r = parse(&ARCADE.replace(
        "[entities.Player]\ndescription = \"A player of a league.\"\nkey = [\"LEAGUE#{league}\", \"PLAYER#{handle}\"]",
        "[entities.Player]\ndescription = \"A player of a league.\"\nkey = [\"LEAGUE#{league}\", \"PLAYER#{handle}\"]\nindexes.Awards = [\"PLAYERS#{league}\", \"PLAYER#{handle}\"]",
    ))
    .expect_err("served");
    assert!(
        r.0.iter()
            .any(|x| x.rule == "one-request"
                && x.message.contains("Player carries keys in Awards too")),
        "{r}"
    );
}

/// A `# TODO:` that `chart import` left is named, with its line, until it is done.
#[test]
fn a_todo_chart_import_left_is_advised_on() {
    let text = include_str!("../../../examples/charts/corner-shop.toml").replace(
        "[entities.Customer]\n",
        "# TODO: entity Customer: `email`: is it unique?\n[entities.Customer]\n",
    );
    let chart = accepted(&text);
    let todos: Vec<String> = crate::chart::advice::advise(&chart)
        .into_iter()
        .filter(|a| a.rule == "import-todo")
        .map(|a| a.message)
        .collect();
    let line = text.lines().position(|l| l.starts_with("# TODO:")).unwrap() + 1;
    assert_eq!(
        todos,
        [format!(
            "line {line}: entity Customer: `email`: is it unique?"
        )]
    );
    assert!(crate::chart::advice::advise(&accepted(include_str!(
        "../../../examples/charts/corner-shop.toml"
    )))
    .iter()
    .all(|a| a.rule != "import-todo"));
}
