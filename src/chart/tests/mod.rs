//! The built-in chart holds every rule and spells the server's own keys (here); a chart
//! that breaks each rule is refused, naming the rule, the entity and the pattern
//! ([`refusals`] the design's rules, [`writes`] the write and time-to-live rules); [`advice`]
//! holds `chart check`'s advice to each of its rules.

mod advice;
mod multi_key;
mod refusals;
mod stored;
mod tables;
mod tenant;
mod writes;

use proptest::prelude::*;

use super::template::{Template, Unrendered, Value};
use super::*;
use crate::chart::kinds::Slug;
use crate::store::{IndexKey, PrimaryKey};

fn render(t: &Template, vars: &[(&str, Value)]) -> String {
    t.render(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()))
        .unwrap_or_else(|e| panic!("{t}: {e}"))
}

fn text(s: impl ToString) -> Value {
    Value::Text(s.to_string())
}

/// Renders an entity's keys: the primary key and, for `index`, its index key.
fn keys_of(
    chart: &Chart,
    entity: &str,
    vars: &[(&str, Value)],
) -> (PrimaryKey, Vec<(String, IndexKey)>) {
    let e = &chart.entities[entity];
    let primary = PrimaryKey::new(render(&e.key.pk, vars), render(&e.key.sk, vars));
    let indexes = e
        .indexes
        .iter()
        .map(|(i, k)| {
            (
                i.clone(),
                IndexKey::new(render(&k.pk, vars), render(&k.sk, vars)),
            )
        })
        .collect();
    (primary, indexes)
}

#[test]
fn the_builtin_charts_currency_is_three_uppercase_letters() {
    let chart = parse(BUILTIN_SOURCE).unwrap_or_else(|e| panic!("{e}"));
    let Type::Kind(currency) = &chart.entities["Order"].attributes["currency"].ty else {
        panic!("currency is a kind");
    };
    assert_eq!(currency.validate("currency", "USD").unwrap(), "USD");
    for bad in ["usd", "US", "USDT", "U$D", "ÉUR", "", "U#D"] {
        assert_eq!(
            currency.validate("currency", bad).unwrap_err(),
            "currency must be an ISO 4217 code: three uppercase letters, like USD",
            "{bad:?}"
        );
    }
}

#[test]
fn the_builtin_chart_states_the_line_limit_it_keeps() {
    let chart = parse(BUILTIN_SOURCE).unwrap_or_else(|e| panic!("{e}"));
    let lines = &chart.entities["Order"].lists["lines"];
    let max = lines.max.expect("an order's lines are bounded");
    // What one transaction holds beside the order, the organization's and the buyer's
    // counts and the client token's marker.
    assert_eq!(
        max as usize,
        crate::store::validate::MAX_TRANSACT_ACTIONS - 4
    );
    assert_eq!(
        chart.mutations["placeOrder"].input["lines"],
        format!("At least one line, at most {max}."),
        "update placeOrder's input description to the list's `max`"
    );
}

#[test]
fn the_builtin_chart_holds_every_rule() {
    let chart = parse(BUILTIN_SOURCE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(chart.name, "itemgraph");
    assert_eq!(chart.patterns.len(), 17);
    assert_eq!(chart.mutations.len(), 8);
    let declared: Vec<&str> = chart.declared().map(|e| e.name.as_str()).collect();
    assert_eq!(
        declared,
        [
            "Organization",
            "CounterShard",
            "User",
            "UserEmail",
            "Ticket",
            "Order",
            "OrderLine",
            "OrderToken"
        ]
    );
    // The file in the repository is the one compiled in.
    let on_disk = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(BUILTIN_PATH),
    )
    .unwrap();
    assert_eq!(on_disk, BUILTIN_SOURCE);
}

#[test]
fn the_builtin_chart_is_the_table_the_server_creates() {
    let schema = builtin().table_schema();
    assert_eq!(
        (schema.pk.as_str(), schema.sk.as_deref()),
        ("PK", Some("SK"))
    );
    let indexes: Vec<_> = schema
        .indexes
        .iter()
        .map(|i| (&*i.name, &*i.pk, i.sk.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        indexes,
        [("GSI1", "GSI1PK", "GSI1SK"), ("GSI2", "GSI2PK", "GSI2SK")]
    );
    assert_eq!(builtin().table.name, "itemgraph");
}

proptest! {
    /// The server's own items (migration records, checkpoints, leases) are where the
    /// chart's system entities put them.
    #[test]
    fn the_builtin_chart_spells_the_servers_own_keys(
        name in "[a-z0-9][a-z0-9-]{0,39}",
        version in 0u32..1000,
        segment in 0u32..1000,
    ) {
        let chart = builtin();
        let slug = Slug::parse(&name).unwrap();
        prop_assert_eq!(
            keys_of(&chart, "MigrationSegment", &[("version", Value::Int(version.into())), ("segment", Value::Int(segment.into()))]).0,
            crate::store::own::segment_key(version, segment)
        );
        prop_assert_eq!(
            keys_of(&chart, "Migration", &[("version", Value::Int(version.into()))]).0,
            crate::store::own::migration_key(version)
        );
        prop_assert_eq!(
            keys_of(&chart, "Lease", &[("name", text(&slug))]).0,
            crate::store::own::lease_key(slug.as_str())
        );
    }
}

#[test]
fn templates_render_widths_and_stop_at_a_missing_level() {
    let t = Template::parse("ORDER#{orderId}#LINE#{lineNo:03}").unwrap();
    assert_eq!(
        render(&t, &[("orderId", text("X")), ("lineNo", Value::Int(7))]),
        "ORDER#X#LINE#007"
    );
    let t = Template::parse("STORE#{country}#{state?}#{city?}#").unwrap();
    let r = |vars: &[(&str, Value)]| {
        t.render(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()))
    };
    assert_eq!(r(&[("country", text("US"))]).unwrap(), "STORE#US#");
    assert_eq!(
        r(&[("country", text("US")), ("state", text("WA"))]).unwrap(),
        "STORE#US#WA#"
    );
    assert_eq!(
        r(&[("country", text("US")), ("city", text("SEATTLE"))]),
        Err(Unrendered::LevelSkipped {
            given: "city".into(),
            missing: "state".into()
        })
    );
    assert_eq!(r(&[]), Err(Unrendered::Missing("country".into())));
    for bad in [
        "ORG#{org}{user}",
        "ORG#{org",
        "ORG#}",
        "A{x}B",
        "{lineNo:3}",
        "{1x}",
        "",
    ] {
        assert!(Template::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn an_entity_name_reads_as_a_sentence_says_it() {
    use super::{one, plural, words};
    assert_eq!(words("CounterShard"), "counter shard");
    assert_eq!(one("Ticket"), "a ticket");
    assert_eq!(one("OrderLine"), "an order line");
    assert_eq!(one("User"), "a user");
    assert_eq!(one("UserEmail"), "a user email");
    assert_eq!(one("Unit"), "a unit");
    assert_eq!(one("Update"), "an update");
    assert_eq!(one("Umbrella"), "an umbrella");
    assert_eq!(one("EuropeanStore"), "a european store");
    assert_eq!(one("Item"), "an item");
    assert_eq!(one("UnassignedTicket"), "an unassigned ticket");
    assert_eq!(one("Usher"), "an usher");
    assert_eq!(one("Utility"), "a utility");
    for (one, many) in [
        ("User", "users"),
        ("OrderLine", "order lines"),
        ("Company", "companies"),
        ("Day", "days"),
        ("Address", "addresses"),
        ("Box", "boxes"),
        ("Branch", "branches"),
    ] {
        assert_eq!(plural(one), many);
    }
}

/// The built-in chart with `from` replaced by `to` (which must be there).
fn broken(from: &str, to: &str) -> Refused {
    assert!(BUILTIN_SOURCE.contains(from), "{from}");
    match parse(&BUILTIN_SOURCE.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
}

/// A chart the rules accept, served as `serve` starts on it
/// ([`crate::graphql::served::served`]): what a test of the rules accepts is a
/// chart the server serves.
fn accepted(text: &str) -> std::sync::Arc<Chart> {
    let chart = parse(text).unwrap_or_else(|r| panic!("{r}"));
    crate::graphql::served::served(std::sync::Arc::new(chart))
}

/// The refusal names `rule`, with `entity` and `pattern` where given.
#[track_caller]
fn refuses(r: &Refused, rule: &str, entity: Option<&str>, pattern: Option<u32>, says: &str) {
    let found = r.0.iter().any(|x| {
        x.rule == rule
            && entity.is_none_or(|e| x.entity.as_deref() == Some(e))
            && pattern.is_none_or(|p| x.pattern == Some(p))
            && x.message.contains(says)
    });
    assert!(
        found,
        "no [{rule}] {entity:?} {pattern:?} `{says}` in:\n{r}"
    );
}

/// The second chart (which declares writes) with `from` replaced by `to`.
fn broken_locator(from: &str, to: &str) -> Refused {
    const LOCATOR: &str = include_str!("../../../examples/charts/store-locator.toml");
    assert!(LOCATOR.contains(from), "{from}");
    match parse(&LOCATOR.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
}

#[test]
fn explain_lists_the_servers_own_items_only_where_the_table_holds_them() {
    let own = |text: &str| -> Vec<String> {
        let chart = parse(text).unwrap_or_else(|r| panic!("{r}"));
        crate::chart::explain::explain(&chart, 1024)
            .entities
            .into_iter()
            .filter(|e| e.system)
            .map(|e| e.name)
            .collect()
    };
    assert_eq!(
        own(BUILTIN_SOURCE),
        ["Chart", "Migration", "MigrationSegment", "Lease"]
    );
    // A table keyed by a token alone holds none of them.
    let sessions = include_str!("../../../examples/charts/auth-sessions.toml");
    assert_eq!(own(sessions), Vec::<String>::new());
}
