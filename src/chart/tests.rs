//! The built-in chart holds every rule and spells the keys `src/keys/` spells; a chart that
//! breaks each rule is refused, naming the rule, the entity and the pattern.

use proptest::prelude::*;

use super::template::{Template, Unrendered, Value};
use super::*;
use crate::keys::{
    self, ClientToken, Email, Id, LineNo, OrderKey, OrderLineKey, OrderTokenKey, OrgKey, Slug,
    TicketKey, UserEmailKey, UserKey, Username,
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
        let migration = keys::MigrationKey::new(shard);
        prop_assert_eq!(
            keys_of(&chart, "MigrationSegment", &[("version", Value::Int(shard.into())), ("segment", Value::Int(line.into()))]).0,
            migration.segment(line.into())
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

/// The built-in chart with `from` replaced by `to` (which must be there).
fn broken(from: &str, to: &str) -> Refused {
    assert!(BUILTIN_SOURCE.contains(from), "{from}");
    match parse(&BUILTIN_SOURCE.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
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

#[test]
fn a_chart_that_is_not_of_the_format_is_refused() {
    let r = broken("format = 1", "format = 2");
    refuses(&r, "format", None, None, "format 2");
    let r = broken("forward = true\nparent", "forwards = true\nparent");
    refuses(&r, "format", None, None, "unknown field `forwards`");
    let r = broken("[patterns.9]", "[patterns.nine]");
    refuses(&r, "format", None, None, "numbered");
}

#[test]
fn a_name_graphql_cannot_take_is_refused() {
    let r = broken("\"SOLVED\"", "\"solved-ok\"");
    refuses(&r, "names", None, None, "solved-ok");
    let r = broken("entities.OrderToken", "entities.Migration");
    refuses(&r, "names", None, None, "server's own items");
    let r = broken("plan = \"Plan\"", "plan = \"Plan\"\nGSI1PK = \"string\"");
    refuses(&r, "names", Some("Organization"), None, "key attribute");
    let r = broken(
        "[entities.Ticket.references]\n",
        "[entities.Ticket.references]\ntitle = { entity = \"Organization\", key = { slug = \"org\" } }\n",
    );
    refuses(
        &r,
        "names",
        Some("Ticket"),
        None,
        "two fields are named `title`",
    );
}

#[test]
fn an_unknown_type_is_refused() {
    let r = broken("title = { type = \"string\"", "title = { type = \"strnig\"");
    refuses(&r, "types", Some("Ticket"), None, "`strnig` is no type");
}

#[test]
fn a_key_value_that_could_forge_a_key_is_refused() {
    // A free string could hold `#`.
    let r = broken(
        "key = [\"ORG#{org}\", \"USER#{username}\"]",
        "key = [\"ORG#{org}\", \"USER#{name}\"]",
    );
    refuses(&r, "key-values", Some("User"), None, "free string");
    // An integer without a width sorts 10 before 9.
    let r = broken("LINE#{lineNo:03}\"]\nnode", "LINE#{lineNo}\"]\nnode");
    refuses(&r, "key-values", Some("OrderLine"), None, "needs a width");
    // A width too narrow for the values.
    let r = broken("#COUNT#{shard:02}", "#COUNT#{shard:01}");
    refuses(
        &r,
        "key-values",
        Some("CounterShard"),
        None,
        "does not fit in 1 digits",
    );
    // A primary key needs every part.
    let r = broken(
        "[\"TICKET#{ticketId}\", \"TICKET#{ticketId}\"]",
        "[\"TICKET#{ticketId}\", \"TICKET#{ticketId}#{title}\"]",
    );
    refuses(&r, "key-values", Some("Ticket"), None, "`{title}`");
    let r = broken(
        "key = [\"TICKET#{ticketId}\"",
        "key = [\"TICKET#{assignee}\"",
    );
    refuses(&r, "key-values", Some("Ticket"), None, "optional");
    let r = broken("key = [\"TICKET#{ticketId}\"", "key = [\"TICKET#{nobody}\"");
    refuses(&r, "key-values", Some("Ticket"), None, "names no attribute");
}

#[test]
fn two_entities_whose_keys_can_be_equal_are_refused() {
    // A marker that lands on the user's own key.
    let r = broken(
        "key = [\"EMAIL#{org}#{email}\", \"EMAIL#{org}#{email}\"]",
        "key = [\"ORG#{org}\", \"USER#{username}\"]",
    );
    refuses(&r, "keys-distinct", Some("User"), None, "UserEmail");
    // One of the server's own items.
    let r = broken(
        "key = [\"ORDERTOKEN#{org}#{token}\", \"ORDERTOKEN#{org}#{token}\"]",
        "key = [\"LEASE#{token}\", \"LEASE#{token}\"]",
    );
    refuses(&r, "keys-distinct", Some("OrderToken"), None, "Lease");
}

#[test]
fn an_index_the_chart_does_not_declare_or_project_is_refused() {
    let r = broken("indexes.GSI2 = [", "indexes.GSI3 = [");
    refuses(&r, "indexes", Some("Ticket"), None, "GSI3");
    let r = broken("key = \"GSI2PK = ", "key = \"GSI3PK = ");
    refuses(&r, "indexes", None, Some(6), "GSI3PK");
    let r = broken(
        "partition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = \"ALL\"",
        "partition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = \"KEYS_ONLY\"",
    );
    refuses(&r, "indexes", None, Some(4), "does not project `title`");
    let r = broken(
        "partition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = \"ALL\"",
        "partition_key = \"GSI1PK\"\nsort_key = \"GSI1SK\"\nprojection = [\"title\"]",
    );
    refuses(&r, "indexes", None, Some(4), "does not project `body`");
}

#[test]
fn a_pattern_that_is_not_one_request_for_what_it_declares_is_refused() {
    // From `#` the Query also reads the organization's orders.
    let r = broken("SK >= ORG#{slug}\"", "SK >= #\"");
    refuses(&r, "one-request", None, Some(2), "also return Order");
    // Orders whose sort key starts like the users': a later page of users reads them too.
    let r = broken(
        "key = [\"ORG#{org}\", \"#ORDER#{orderId}\"]",
        "key = [\"ORG#{org}\", \"USER#ORDER#{orderId}\"]",
    );
    refuses(&r, "one-request", None, Some(2), "later page");
    // Items read beside the parent that are not its counter shards.
    let r = broken(
        "beside = [\"CounterShard\"]\nchildren = \"User\"",
        "beside = [\"Order\"]\nchildren = \"User\"",
    );
    refuses(&r, "one-request", None, Some(2), "counter shards");
    // A request this server does not make.
    let r = broken(
        "request = \"BatchGetItem\"\nfield = \"Query.nodes\"",
        "request = \"Scan\"\nfield = \"Query.nodes\"",
    );
    refuses(&r, "one-request", None, Some(8), "`Scan`");
}

#[test]
fn a_parent_that_is_not_at_the_edge_of_its_children_is_refused() {
    // Read forward from the bottom, the user's tickets come before the user.
    let r = broken(
        "GSI1SK <= USER#{username}\"\nforward = false",
        "GSI1SK <= USER#{username}\"\nforward = true",
    );
    refuses(
        &r,
        "parent-at-edge",
        None,
        Some(4),
        "does not sort below every Ticket",
    );
    // A condition that starts above the parent never reads it.
    let r = broken("SK >= ORG#{slug}\"", "SK > ORG#{slug}#COUNT#~\"");
    refuses(
        &r,
        "parent-at-edge",
        None,
        Some(2),
        "cannot return Organization",
    );
}

#[test]
fn an_entity_that_does_not_name_its_tenant_is_refused() {
    // A node of no tenant: any token could read it by its id.
    let r = broken(
        "# --- the root fields",
        "[entities.Notice]\nkey = [\"NOTICE#{noticeId}\", \"NOTICE#{noticeId}\"]\n\
         [entities.Notice.attributes]\nnoticeId = \"ulid\"\n\n# --- the root fields",
    );
    refuses(&r, "tenant", Some("Notice"), None, "holds no `org`");
    let r = broken("subject = \"username\"", "subject = \"email\"");
    refuses(&r, "tenant", Some("User"), None, "`username`");
    refuses(
        &r,
        "tenant",
        Some("User"),
        None,
        "subject `email` is no part of User's key",
    );
}

#[test]
fn a_reference_without_its_whole_key_is_refused() {
    let r = broken(
        "key = { org = \"org\", username = \"requester\" }",
        "key = { username = \"requester\" }",
    );
    refuses(&r, "references", Some("Ticket"), None, "needs `org`");
    let r = broken(
        "key = { org = \"org\", username = \"requester\" }",
        "key = { org = \"org\", username = \"title\" }",
    );
    refuses(
        &r,
        "references",
        Some("Ticket"),
        None,
        "`title` is a string",
    );
}

#[test]
fn a_field_on_a_pattern_that_does_not_serve_it_is_refused() {
    let r = broken(
        "users = { pattern = 2, cursor = \"users\", total = \"userCount\"",
        "users = { pattern = 4, cursor = \"users\", total = \"userCount\"",
    );
    refuses(
        &r,
        "fields",
        Some("Organization"),
        None,
        "whose parent is User",
    );
    let r = broken(
        "users = { pattern = 2, cursor = \"users\", total = \"userCount\"",
        "users = { pattern = 2, cursor = \"users\", total = \"name\"",
    );
    refuses(&r, "fields", Some("Organization"), None, "no counter");
    let r = broken("lines = { pattern = 7", "lines = { pattern = 70");
    refuses(&r, "fields", Some("Order"), None, "pattern 70");
    let r = broken(
        "entity = \"Ticket\"\npattern = 5",
        "entity = \"Ticket\"\npattern = 1",
    );
    refuses(&r, "fields", None, None, "does not read a Ticket");
}

/// The second chart (which declares writes) with `from` replaced by `to`.
fn broken_locator(from: &str, to: &str) -> Refused {
    const LOCATOR: &str = include_str!("../../examples/charts/store-locator.toml");
    assert!(LOCATOR.contains(from), "{from}");
    match parse(&LOCATOR.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
}

#[test]
fn a_write_declaration_that_cannot_be_kept_is_refused() {
    // A counter on an entity that is not the parent: `storeCount` totals the stores.
    let r = broken_locator(
        "[query.chain]",
        "[entities.Review]\nkey = [\"CHAIN#{chain}\", \"REVIEW#{review}\"]\ncounts = { chain = \"storeCount\" }\n\
         [entities.Review.attributes]\nchain = \"slug\"\nreview = \"ulid\"\n\
         [entities.Review.references]\nchain = { entity = \"Chain\", key = { slug = \"chain\" } }\n\n[query.chain]",
    );
    refuses(
        &r,
        "writes",
        Some("Review"),
        None,
        "a counter on an entity that is not Review's parent",
    );
    let r = broken_locator(
        "counts = { chain = [\"storeCount\", { by = \"status\", counters = { OPEN = \"openStoreCount\" } }] }",
        "counts = { chain = \"name\" }",
    );
    refuses(&r, "writes", Some("Store"), None, "no counter of Chain");
    let r = broken_locator(
        "counts = { chain = [\"storeCount\", { by = \"status\", counters = { OPEN = \"openStoreCount\" } }] }",
        "counts = { owner = \"storeCount\" }",
    );
    refuses(&r, "writes", Some("Store"), None, "no reference");
    // What a refused delete calls the referrers: on a counter other entities keep.
    let r = broken_locator(
        "name = { type = \"string\", max_length = 100 }\nstoreCount",
        "name = { type = \"string\", max_length = 100, referrers = \"stores\" }\nstoreCount",
    );
    refuses(&r, "writes", Some("Chain"), None, "`name` is no counter");
    let r = broken_locator(
        "openStoreCount = { type = \"counter\",",
        "closedStoreCount = { type = \"counter\", referrers = \"closedStores\" }\nopenStoreCount = { type = \"counter\",",
    );
    refuses(
        &r,
        "writes",
        Some("Chain"),
        None,
        "`closedStoreCount` names its referrers, and no entity's `counts` keeps it",
    );
    // A constant at create that the attribute's type does not take.
    for (to, says) in [
        (
            "version = { type = \"int\", min = 1, on_create = 0,",
            "`version`: `on_create` is a constant",
        ),
        (
            "name = { type = \"string\", max_length = 100, on_create = 7 }",
            "`name`: `on_create`",
        ),
        (
            "status = { type = \"StoreStatus\", on_create = \"GONE\",",
            "`status`: `on_create`",
        ),
    ] {
        let from = to.split(", on_create").next().unwrap().to_owned()
            + if to.ends_with(" }") { " }" } else { "," };
        let r = broken_locator(&from, to);
        refuses(&r, "writes", Some("Store"), None, says);
    }
    // Computed numbers from what is not there, children a create cannot write, a position
    // outside any list.
    for (from, to, entity, says) in [
        (
            "computed = \"quantity * unitPriceCents\"",
            "computed = \"quantity * sku\"",
            "OrderLine",
            "computed from `sku`, which is no number of OrderLine",
        ),
        (
            "computed = \"sum(lines.amountCents)\"",
            "computed = \"sum(lines.sku)\"",
            "Order",
            "sums `sku`, which is no number of OrderLine",
        ),
        (
            "computed = \"count(lines)\"",
            "computed = \"count(items)\"",
            "Order",
            "counts `items`, which is no list of Order",
        ),
        (
            "computed = \"count(lines)\"",
            "computed = \"lines + 1\"",
            "Order",
            "is `a * b`, `sum(list.attribute)` or `count(list)`",
        ),
        (
            "title = { type = \"string\", max_length = 200 }",
            "title = { type = \"string\", max_length = 200, computed = \"count(lines)\" }",
            "Ticket",
            "only a number",
        ),
        (
            "priority = \"TicketPriority\"",
            "priority = \"TicketPriority\"\nrank = { type = \"int\", auto = \"position\" }",
            "Ticket",
            "no list holds Ticket",
        ),
    ] {
        let r = broken(from, to);
        refuses(&r, "writes", Some(entity), None, says);
    }
    let r = broken(
        "with = { lines = \"One line of a new order.\" }",
        "with = { items = \"One line of a new order.\" }",
    );
    refuses(
        &r,
        "writes",
        Some("Order"),
        Some(12),
        "writes `items` with it, which is no list of Order",
    );
    let r = broken("min = 1, max = 96", "min = 1, max = 97");
    refuses(&r, "writes", Some("Order"), Some(12), "up to 101 actions");
    let r = broken("min = 1, max = 96", "min = 1, max = 101");
    refuses(
        &r,
        "fields",
        Some("Order"),
        None,
        "a page holds at most 100 items",
    );
    let r = broken("min = 1, max = 96", "min = 97, max = 96");
    refuses(
        &r,
        "writes",
        Some("Order"),
        Some(12),
        "its `min` is more than its `max`",
    );
    // A required input that is none of the fields the update changes.
    let r = broken_locator(
        "by = \"id\"\npattern = 8\n",
        "by = \"id\"\npattern = 8\nrequired = [\"number\"]\n",
    );
    refuses(
        &r,
        "writes",
        None,
        None,
        "mutation `updateStore` requires `number`, which is none of the fields it changes",
    );
    // A counter per value of an attribute that is no enum, or of a value it lacks.
    let r = broken_locator(
        "{ by = \"status\", counters = { OPEN",
        "{ by = \"name\", counters = { OPEN",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "counts by `name`, which is no enum attribute",
    );
    let r = broken_locator("counters = { OPEN = ", "counters = { GONE = ");
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "`GONE` is no value of StoreStatus",
    );
    // A marker with no attribute: its key does not hold the value it keeps unique.
    let r = broken_locator(
        "key = [\"PHONE#{chain}#{phone}\", \"PHONE#{chain}#{phone}\"]",
        "key = [\"PHONE#{chain}\", \"PHONE#{chain}#{number}\"]",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "a marker with no attribute",
    );
    // A marker that does not name its owner.
    let r = broken_locator(
        "number = \"storeNumber\"\n\n# The idempotency marker",
        "\n# The idempotency marker",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "does not name its owner: it has no `number`",
    );
    // A transaction that could exceed 100 actions: a chain put with 100 counter shards.
    let r = broken_locator(
        "[query.chain]",
        "[entities.ChainShard]\nshards_of = \"Chain\"\nshards = 100\n\
         key = [\"CHAIN#{chain}\", \"CHAIN#{chain}#COUNT#{shard:03}\"]\n\
         [entities.ChainShard.attributes]\nchain = \"slug\"\nshard = { type = \"int\", min = 0, max = 99 }\nstoreCount = \"counter\"\n\n[query.chain]",
    );
    refuses(
        &r,
        "writes",
        Some("Chain"),
        Some(6),
        "up to 101 actions; DynamoDB takes at most 100",
    );
    // A pattern whose request is not the one the mutation makes.
    let r = broken_locator(
        "name = \"Open a store: the store, its phone's marker, the chain's count and the client token's marker\"\nrequest = \"TransactWriteItems\"",
        "name = \"Open a store\"\nrequest = \"PutItem\"",
    );
    refuses(
        &r,
        "one-request",
        Some("Store"),
        Some(7),
        "is one TransactWriteItems (4 actions), and its pattern says PutItem",
    );
    // A life cycle through states the enum does not have; a change of a key attribute.
    let r = broken_locator(
        "OPEN = [\"TEMPORARILY_CLOSED\", \"CLOSED\"]",
        "OPEN = [\"GONE\"]",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "`GONE` is no value of StoreStatus",
    );
    let r = broken_locator(
        "by = \"id\"\npattern = 8",
        "by = \"id\"\nfields = [\"city\"]\npattern = 8",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        Some(8),
        "changes `city`, which is part of the primary key",
    );
    // A subscription narrowed by a free string; one of an entity that is no type.
    let r = broken_locator(
        "filters = [\"country\", \"state\", \"city\", \"status\"]",
        "filters = [\"name\"]",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "filters by `name`, which is no identifier",
    );
    let r = broken_locator(
        "[subscriptions.storeEvents]\nentity = \"Store\"",
        "[subscriptions.storeEvents]\nentity = \"StorePhone\"",
    );
    refuses(&r, "writes", Some("StorePhone"), None, "no GraphQL type");
    // An argument under another name: by a free string, clashing with another argument,
    // by the id of what is no node; a `previous` of no field.
    for (to, says) in [
        (
            "arguments = { label = { attribute = \"name\" } }",
            "filters by `name`, which is no identifier",
        ),
        (
            "arguments = { city = { attribute = \"state\" } }",
            "argument `city` is no GraphQL name, or another argument's",
        ),
        (
            "arguments = { after = { attribute = \"state\" } }",
            "argument `after`",
        ),
        (
            "previous = { hours = \"…\", nothing = \"…\" }",
            "`previous` names `nothing`, which is no field of Store",
        ),
    ] {
        let r = broken_locator(
            "[subscriptions.storeEvents]\nentity = \"Store\"",
            &format!("[subscriptions.storeEvents]\nentity = \"Store\"\n{to}"),
        );
        refuses(&r, "writes", Some("Store"), None, says);
    }
    let r = broken(
        "[subscriptions.orderEvents]\nentity = \"Order\"",
        "[subscriptions.orderEvents]\nentity = \"OrderLine\"",
    );
    refuses(
        &r,
        "writes",
        Some("OrderLine"),
        None,
        "filters by id, and OrderLine is no node",
    );
    let r = broken_locator(
        "action = \"delete\"\npattern = 10",
        "action = \"remove\"\npattern = 10",
    );
    refuses(
        &r,
        "format",
        Some("Chain"),
        Some(10),
        "create, update or delete",
    );
}

#[test]
fn every_rule_a_refusal_names_is_documented() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CHART.md"),
    )
    .unwrap();
    for (rule, _) in RULES {
        assert!(
            doc.contains(&format!("`{rule}`")),
            "docs/CHART.md does not name rule `{rule}`"
        );
    }
}

#[test]
fn an_entity_name_reads_as_a_sentence_says_it() {
    use super::{one, plural, words};
    assert_eq!(words("CounterShard"), "counter shard");
    assert_eq!(one("Ticket"), "a ticket");
    assert_eq!(one("OrderLine"), "an order line");
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

/// A chain's offers that expire, in a partition of their own: the second chart's addition
/// the time-to-live rules are tried on.
const OFFERS: &str = "[entities.Offer]\nkey = [\"OFFER#{chain}\", \"OFFER#{offerId}\"]\n\
    [entities.Offer.attributes]\nchain = { type = \"slug\", graphql = false }\nofferId = \"ulid\"\n\
    expiresAt = { type = \"expiry\", lifetime = \"7d\" }\n\
    [entities.Offer.references]\nchain = { entity = \"Chain\", key = { slug = \"chain\" } }\n\n";

#[test]
fn an_expiry_that_would_break_what_the_chart_keeps_is_refused() {
    let ttl = "type_attribute = \"Type\"\ntime_to_live = \"expiresAt\"";
    // An expiry with no time to live on the table, and a time to live that is no expiry.
    let r = broken_locator("[query.chain]", &format!("{OFFERS}[query.chain]"));
    refuses(
        &r,
        "time-to-live",
        Some("Offer"),
        None,
        "attribute `expiresAt` is an expiry, and DynamoDB expires items by the one attribute `[table] time_to_live` names (none)",
    );
    let r = broken_locator(
        "type_attribute = \"Type\"",
        "type_attribute = \"Type\"\ntime_to_live = \"name\"",
    );
    refuses(
        &r,
        "time-to-live",
        Some("Chain"),
        None,
        "attribute `name` is the table's time to live, which DynamoDB reads as epoch seconds: its type is `expiry`",
    );
    // An expiring store: its counts on the chain, its phone's marker that would outlive it.
    const LOCATOR: &str = include_str!("../../examples/charts/store-locator.toml");
    let text = LOCATOR.replace("type_attribute = \"Type\"", ttl).replace(
        "status = { type = \"StoreStatus\"",
        "expiresAt = { type = \"expiry\", optional = true }\nstatus = { type = \"StoreStatus\"",
    );
    let r = parse(&text).expect_err("an expiring store is refused");
    refuses(
        &r,
        "time-to-live",
        Some("Store"),
        None,
        "an expiring entity keeps no counts",
    );
    refuses(
        &r,
        "time-to-live",
        Some("Store"),
        None,
        "the marker StorePhone of `phone` must expire with its owner: it declares `expiresAt` too",
    );
    // A reference to an expiring item, from one that does not expire.
    let text = LOCATOR.replace("type_attribute = \"Type\"", ttl).replace(
        "[query.chain]",
        &format!(
            "{OFFERS}[entities.Claim]\nkey = [\"CLAIM#{{chain}}\", \"CLAIM#{{offerId}}\"]\n\
             [entities.Claim.attributes]\nchain = \"slug\"\nofferId = \"ulid\"\n\
             [entities.Claim.references]\noffer = {{ entity = \"Offer\", key = {{ chain = \"chain\", offerId = \"offerId\" }} }}\n\n[query.chain]"
        ),
    );
    let r = parse(&text).expect_err("a reference to an expiring offer is refused");
    refuses(
        &r,
        "time-to-live",
        Some("Claim"),
        None,
        "reference `offer` names Offer, which expires: it would dangle once DynamoDB deletes it",
    );
    // A lifetime that is no duration, or on what is no expiry.
    let text = LOCATOR
        .replace("type_attribute = \"Type\"", ttl)
        .replace(
            "[query.chain]",
            &format!("{}[query.chain]", OFFERS.replace("\"7d\"", "\"1w\"")),
        )
        .replace(
            "address = { type = \"string\", max_length = 200 }",
            "address = { type = \"string\", max_length = 200, lifetime = \"1d\" }",
        );
    let r = parse(&text).expect_err("a bad lifetime is refused");
    refuses(
        &r,
        "time-to-live",
        Some("Offer"),
        None,
        "`lifetime = \"1w\"` is a whole number of days, hours, minutes or seconds",
    );
    refuses(
        &r,
        "time-to-live",
        Some("Store"),
        None,
        "`lifetime` is how long an expiry lasts, and `address` is no expiry",
    );
    // Expiring children of a list: the order's count and total would go stale.
    let text = super::BUILTIN_SOURCE
        .replacen("[table]\n", "[table]\ntime_to_live = \"expiresAt\"\n", 1)
        .replace(
            "amountCents = { type = \"cents\", computed",
            "expiresAt = { type = \"expiry\", optional = true }\namountCents = { type = \"cents\", computed",
        );
    let r = parse(&text).expect_err("expiring order lines are refused");
    refuses(
        &r,
        "time-to-live",
        Some("Order"),
        None,
        "list `lines` holds OrderLine, which expires",
    );
    // The offers as they should be: served, and the table created with its time to live.
    let text = LOCATOR
        .replace("type_attribute = \"Type\"", ttl)
        .replace("[query.chain]", &format!("{OFFERS}[query.chain]"));
    let chart = parse(&text).unwrap_or_else(|r| panic!("{r}"));
    assert_eq!(
        chart.table_schema().time_to_live.as_deref(),
        Some("expiresAt")
    );
    assert_eq!(
        chart.entities["Offer"].attributes["expiresAt"].lifetime,
        Some(7 * 86_400)
    );
}
