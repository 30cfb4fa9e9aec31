//! The built-in chart holds every rule and spells the keys `src/keys/` spells (here); a chart
//! that breaks each rule is refused, naming the rule, the entity and the pattern
//! ([`refusals`] the design's rules, [`writes`] the write and time-to-live rules); [`advice`]
//! holds `chart check`'s advice to each of its rules.

mod advice;
mod refusals;
mod tenant;
mod writes;

use proptest::prelude::*;

use super::template::{Template, Unrendered, Value};
use super::*;
use crate::chart::kinds::{ClientToken, Email, Id, LineNo, Slug, Username};
use crate::keys::{
    self, OrderKey, OrderLineKey, OrderTokenKey, OrgKey, TicketKey, UserEmailKey, UserKey,
};
use crate::model::TicketStatus;
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
                IndexKey {
                    pk: render(&k.pk, vars),
                    sk: render(&k.sk, vars),
                },
            )
        })
        .collect();
    (primary, indexes)
}

fn item_keys(chart: &Chart, entity: &str, vars: &[(&str, Value)]) -> keys::ItemKeys {
    let (primary, indexes) = keys_of(chart, entity, vars);
    let find = |name: &str| {
        indexes
            .iter()
            .find(|(i, _)| i == name)
            .map(|(_, k)| k.clone())
    };
    keys::ItemKeys {
        primary,
        gsi1: find(keys::GSI1),
        gsi2: find(keys::GSI2),
    }
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
    assert_eq!(
        max as usize,
        crate::collections::MAX_ORDER_LINES,
        "what one transaction holds beside the order, its counts and its token"
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
    assert_eq!(builtin().table_schema(), keys::table_schema());
    assert_eq!(builtin().table.name, "itemgraph");
}

fn statuses() -> impl Strategy<Value = TicketStatus> {
    prop_oneof![
        Just(TicketStatus::Open),
        Just(TicketStatus::Pending),
        Just(TicketStatus::Solved),
        Just(TicketStatus::Closed),
    ]
}

proptest! {
    /// Every entity's keys, rendered from the chart, are the keys `src/keys/` builds.
    #[test]
    fn the_builtin_chart_spells_the_keys_of_src_keys(
        org in "[a-z0-9][a-z0-9-]{0,39}",
        username in "[a-z0-9][a-z0-9-]{0,39}",
        email in "[a-z0-9.]{1,20}@[a-z0-9.]{1,20}",
        ticket in any::<u128>(),
        order in any::<u128>(),
        line in 1u16..=999,
        shard in 0u32..32,
        token in "[A-Za-z0-9_-]{1,64}",
        status in statuses(),
    ) {
        let chart = builtin();
        let slug = Slug::parse(&org).unwrap();
        let user = Username::parse(&username).unwrap();
        let email = Email::parse(&email).unwrap();
        let ticket_id = Id::parse(&ulid::Ulid(ticket).to_string()).unwrap();
        let order_id = Id::parse(&ulid::Ulid(order).to_string()).unwrap();
        let line_no = LineNo::new(line).unwrap();
        let token = ClientToken::parse(&token).unwrap();

        prop_assert_eq!(item_keys(&chart, "Organization", &[("slug", text(&slug))]), OrgKey::new(&slug).item_keys());
        prop_assert_eq!(
            keys_of(&chart, "CounterShard", &[("org", text(&slug)), ("shard", Value::Int(shard.into()))]).0,
            OrgKey::new(&slug).counter_shard(shard)
        );
        prop_assert_eq!(
            item_keys(&chart, "User", &[("org", text(&slug)), ("username", text(&user))]),
            UserKey::new(&slug, &user).item_keys()
        );
        prop_assert_eq!(
            item_keys(&chart, "UserEmail", &[("org", text(&slug)), ("email", text(&email))]),
            UserEmailKey::new(&slug, &email).item_keys()
        );
        prop_assert_eq!(
            item_keys(&chart, "Ticket", &[
                ("ticketId", text(ticket_id)), ("org", text(&slug)),
                ("requester", text(&user)), ("status", text(keys::StatusName::status_name(status))),
            ]),
            TicketKey::new(ticket_id).item_keys(&slug, &user, status)
        );
        prop_assert_eq!(
            item_keys(&chart, "Order", &[("org", text(&slug)), ("orderId", text(order_id))]),
            OrderKey::new(&slug, order_id).item_keys()
        );
        prop_assert_eq!(
            item_keys(&chart, "OrderLine", &[("orderId", text(order_id)), ("lineNo", Value::Int(line.into()))]),
            OrderLineKey::new(order_id, line_no).item_keys()
        );
        prop_assert_eq!(
            item_keys(&chart, "OrderToken", &[("org", text(&slug)), ("token", text(&token))]),
            OrderTokenKey::new(&slug, &token).item_keys()
        );
        prop_assert_eq!(
            keys_of(&chart, "MigrationSegment", &[("version", Value::Int(shard.into())), ("segment", Value::Int(line.into()))]).0,
            crate::store::own::segment_key(shard, line.into())
        );
        prop_assert_eq!(
            keys_of(&chart, "Migration", &[("version", Value::Int(shard.into()))]).0,
            crate::store::own::migration_key(shard)
        );
        prop_assert_eq!(
            keys_of(&chart, "Lease", &[("name", text(&slug))]).0,
            crate::store::own::lease_key(slug.as_str())
        );
    }

    /// Each pattern's key condition, rendered, is the one `src/collections/` queries.
    #[test]
    fn the_builtin_patterns_query_what_src_collections_queries(
        org in "[a-z0-9][a-z0-9-]{0,39}",
        username in "[a-z0-9][a-z0-9-]{0,39}",
        order in any::<u128>(),
        status in statuses(),
    ) {
        let chart = builtin();
        let slug = Slug::parse(&org).unwrap();
        let user = Username::parse(&username).unwrap();
        let order_id = Id::parse(&ulid::Ulid(order).to_string()).unwrap();
        let o = OrgKey::new(&slug);
        let u = UserKey::new(&slug, &user);
        let vars = [
            ("slug", text(&slug)), ("org", text(&slug)), ("username", text(&user)),
            ("orderId", text(order_id)), ("status", text(keys::StatusName::status_name(status))),
        ];
        let query = |n: u32| match &chart.patterns[&n].request {
            Request::Query { condition, children_prefix, .. } => (condition.clone(), children_prefix.clone()),
            other => panic!("pattern {n} is {other:?}"),
        };
        let sort = |c: &KeyCondition| match c.sort.as_ref().unwrap() {
            SortCondition::Ge(t) => (">=", render(t, &vars)),
            SortCondition::Le(t) => ("<=", render(t, &vars)),
            SortCondition::BeginsWith(t) => ("begins_with", render(t, &vars)),
            other => panic!("{other:?}"),
        };
        let (c, later) = query(2);
        prop_assert_eq!(render(&c.partition, &vars), o.partition());
        prop_assert_eq!(sort(&c), (">=", o.boundary()));
        prop_assert_eq!(later.source(), o.users_prefix());
        let (c, later) = query(3);
        prop_assert_eq!(sort(&c), ("<=", o.counters_top()));
        prop_assert_eq!(later.source(), o.orders_prefix());
        let (c, later) = query(4);
        prop_assert_eq!(c.index.as_deref(), Some(keys::GSI1));
        prop_assert_eq!(render(&c.partition, &vars), u.tickets_partition());
        prop_assert_eq!(sort(&c), ("<=", u.tickets_boundary()));
        prop_assert_eq!(later.source(), u.tickets_prefix());
        let (c, later) = query(6);
        prop_assert_eq!(c.index.as_deref(), Some(keys::GSI2));
        prop_assert_eq!(render(&c.partition, &vars), o.status_queue(status));
        prop_assert_eq!(sort(&c), ("begins_with", TicketKey::prefix().to_owned()));
        prop_assert_eq!(later.source(), TicketKey::prefix());
        let (c, later) = query(7);
        prop_assert_eq!(render(&c.partition, &vars), OrderKey::lines_partition_of(order_id));
        prop_assert_eq!(sort(&c), (">=", OrderKey::lines_boundary_of(order_id)));
        prop_assert_eq!(later.source(), OrderKey::lines_prefix());
        let Request::GetItem { with_shards: Some(c), .. } = &chart.patterns[&1].request else {
            panic!("pattern 1 reads the organization with its shards")
        };
        let Some(SortCondition::Between(a, b)) = &c.sort else { panic!("{c:?}") };
        prop_assert_eq!((render(a, &vars), render(b, &vars)), (o.boundary(), o.counters_top()));
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
/// ([`crate::graphql::charted::served::served`]): what a test of the rules accepts is a
/// chart the server serves.
fn accepted(text: &str) -> std::sync::Arc<Chart> {
    let chart = parse(text).unwrap_or_else(|r| panic!("{r}"));
    crate::graphql::charted::served::served(std::sync::Arc::new(chart))
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
