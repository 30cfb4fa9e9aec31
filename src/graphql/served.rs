//! A chart the start-up rules accept is a chart the server serves: what `serve` makes of a
//! chart at start ([`crate::http::AppState::with_chart`]: its schema, its playground tabs
//! and pages, the live layer's design) made for every chart a test of the rules accepts
//! ([`served`]) and for small charts generated at random, with no panic and every type
//! of the schema named once.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;

use crate::chart::Chart;

/// Serves `chart` as `serve` starts on it, and holds what it made: the schema builds, it
/// has every type [`super::types`] lists and no more (none silently replaced by another
/// of its name), every playground tab parses as GraphQL.
pub(crate) fn served(chart: Arc<Chart>) -> Arc<Chart> {
    let tabs = super::examples(&chart);
    for tab in &tabs {
        if let Err(e) = async_graphql::parser::parse_query(tab) {
            panic!(
                "{}: a playground tab does not parse ({e}):\n{tab}",
                chart.name
            );
        }
    }
    let names: Vec<&str> = tabs.iter().map(String::as_str).collect();
    let _pages = crate::http::playground_pages(&names, &chart);
    let _design = crate::live::Design::of(chart.clone());
    let schema = crate::graphql::chart_schema(chart.clone(), &crate::graphql::Limits::default())
        .unwrap_or_else(|e| panic!("{}: the schema: {}", chart.name, e.0));
    // Each tab is a document the schema takes: validated as every new document is.
    for tab in &tabs {
        let mut request = async_graphql::Request::new(tab.clone());
        if let Err(refused) = futures::executor::block_on(schema.prepare(&mut request)) {
            panic!(
                "{}: a playground tab is refused ({:?}):\n{tab}",
                chart.name, refused.errors
            );
        }
    }
    let mut listed: Vec<String> = super::types(&chart).into_iter().map(|t| t.name).collect();
    listed.sort_unstable();
    let mut built: Vec<&str> = schema
        .registry()
        .types
        .keys()
        .map(String::as_str)
        .filter(|t| !t.starts_with("__"))
        .collect();
    built.sort_unstable();
    assert_eq!(built, listed, "{}: the schema's types", chart.name);
    chart
}

/// The charts of the repository: the built-in one and every example.
#[test]
fn every_chart_of_the_repository_is_served() {
    served(crate::chart::builtin());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/charts");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "toml") {
            let chart = crate::chart::load(&path).unwrap_or_else(|e| panic!("{e}"));
            served(Arc::new(chart));
            n += 1;
        }
    }
    assert!(n > 0, "no example chart in {}", dir.display());
}

/// One small chart's choices: its entities (after the tenant), their attributes, names
/// from a pool where some clash with what the schema names itself.
#[derive(Debug, Clone)]
struct Generated {
    tenant: bool,
    viewer_is_tenant: bool,
    enum_name: &'static str,
    shape_name: &'static str,
    entities: Vec<GenEntity>,
}

#[derive(Debug, Clone)]
struct GenEntity {
    name: &'static str,
    attributes: Vec<(usize, bool, bool)>,
    connection: bool,
    create: bool,
    update: bool,
    delete: bool,
    subscription: bool,
}

const NAMES: [&str; 14] = [
    "Note",
    "Tag",
    "Item",
    "Board",
    "Card",
    "Lane",
    "Pin",
    "Badge",
    "Label",
    "Shelf",
    // What the schema names itself, or another of its types would.
    "PageInfo",
    "Viewer",
    "NoteInput",
    "TagConnection",
];

/// Attribute types by index: what a chart's attributes may be.
const TYPES: [&str; 12] = [
    "{ type = \"string\", max_length = 40 }",
    "{ type = \"int\", min = 0, max = 99 }",
    "\"boolean\"",
    "\"timestamp\"",
    "\"cents\"",
    "\"ENUM\"",
    "\"SHAPE\"",
    "{ type = \"list\", of = \"SHAPE\", max_items = 3 }",
    "{ type = \"map\", of = \"int\", max_items = 3 }",
    "{ type = \"map\", of = \"SHAPE\", max_items = 2 }",
    "\"email\"",
    "{ type = \"list\", of = \"string\", max_items = 4 }",
];

fn entity() -> impl Strategy<Value = GenEntity> {
    (
        prop::sample::select(&NAMES[..]),
        prop::collection::vec((0..TYPES.len(), any::<bool>(), any::<bool>()), 0..5),
        any::<bool>(),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(name, attributes, connection, (create, update, delete, subscription))| GenEntity {
                name,
                attributes,
                connection,
                create,
                update,
                delete,
                subscription,
            },
        )
}

fn generated() -> impl Strategy<Value = Generated> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(&["Mood", "Status", "Phase", "Role", "Note", "ChangeKind"][..]),
        prop::sample::select(&["Size", "Box", "Span", "Cents", "Item", "TagInput"][..]),
        prop::collection::vec(entity(), 1..4),
    )
        .prop_map(
            |(tenant, viewer_is_tenant, enum_name, shape_name, entities)| Generated {
                tenant,
                viewer_is_tenant,
                enum_name,
                shape_name,
                entities,
            },
        )
}

/// The chart's text: a tenant `Org` (or none), each entity in its partition under its own
/// prefix, read by one Query pattern, written by the mutations chosen.
fn text(g: &Generated) -> String {
    let mut t = String::from(
        "format = 1\nname = \"generated\"\n\n[table]\nname = \"t\"\npartition_key = \"PK\"\nsort_key = \"SK\"\ntype_attribute = \"Type\"\n\n",
    );
    if g.tenant {
        t += "[tenant]\nentity = \"Org\"\nattribute = \"org\"\n\n";
        if g.viewer_is_tenant {
            t += "[viewer]\nentity = \"Org\"\nsubject = \"slug\"\n\n";
        }
    }
    t += &format!("[enums.{}]\nvalues = [\"A\", \"B\"]\n\n", g.enum_name);
    t += &format!(
        "[shapes.{}]\nattributes = {{ w = \"int\", label = {{ type = \"string\", max_length = 10, optional = true }} }}\n\n",
        g.shape_name
    );
    t += "[entities.Org]\nkey = [\"ORG#{slug}\", \"ORG#{slug}\"]\n";
    if g.tenant {
        t += "tenant = \"slug\"\n";
    }
    t += "[entities.Org.attributes]\nslug = \"slug\"\nname = { type = \"string\", max_length = 50 }\n";
    let mut conns = String::new();
    let mut rest = String::new();
    let mut pattern = 2;
    let query = String::from("[query.org]\nentity = \"Org\"\npattern = 1\n\n");
    let mut patterns = String::from(
        "[patterns.1]\nname = \"Org by slug\"\nrequest = \"GetItem\"\nentity = \"Org\"\nfield = \"Query.org\"\n\n",
    );
    let mut mutations = String::new();
    let mut subscriptions = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, e) in g.entities.iter().enumerate() {
        let name = e.name;
        // One entity of a name: a second would be the same TOML table twice.
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let prefix = format!("E{i}");
        rest += &format!(
            "\n[entities.{name}]\nkey = [\"ORG#{{org}}\", \"{prefix}#{{itemId}}\"]\n[entities.{name}.attributes]\norg = {{ type = \"slug\", graphql = false }}\nitemId = {{ type = \"ulid\", auto = \"ulid\" }}\n"
        );
        for (j, (ty, optional, hidden)) in e.attributes.iter().enumerate() {
            let spec = TYPES[*ty]
                .replace("ENUM", g.enum_name)
                .replace("SHAPE", g.shape_name);
            let spec = match (spec.strip_prefix('{'), optional, hidden) {
                (Some(inner), o, h) => format!(
                    "{{{}{}{}",
                    if *o { " optional = true," } else { "" },
                    if *h { " graphql = false," } else { "" },
                    inner
                ),
                (None, o, h) if *o || *h => format!(
                    "{{ type = {spec}{}{} }}",
                    if *o { ", optional = true" } else { "" },
                    if *h { ", graphql = false" } else { "" },
                ),
                (None, ..) => spec,
            };
            rest += &format!("a{j} = {spec}\n");
        }
        rest += &format!(
            "[entities.{name}.references]\norg = {{ entity = \"Org\", key = {{ slug = \"org\" }} }}\n"
        );
        let p = pattern;
        pattern += 1;
        patterns += &format!(
            "[patterns.{p}]\nname = \"A page of {name}\"\nrequest = \"Query\"\nkey = \"PK = ORG#{{slug}} AND begins_with(SK, {prefix}#)\"\nchildren = \"{name}\"\nfield = \"Org.c{i}\"\n\n"
        );
        // Every pattern's field is served: each entity is a connection of its tenant,
        // described or not.
        let described = if e.connection {
            ", description = \"Its page.\""
        } else {
            ""
        };
        conns += &format!("c{i} = {{ pattern = {p}{described} }}\n");
        for (on, action, verb) in [
            (e.create, "create", "add"),
            (e.update, "update", "change"),
            (e.delete, "delete", "remove"),
        ] {
            if !on {
                continue;
            }
            let p = pattern;
            pattern += 1;
            // The reference to its organization is checked: two actions but for a change
            // that leaves it, and a delete.
            let request = match action {
                "create" => "TransactWriteItems",
                "update" => "UpdateItem",
                _ => "DeleteItem",
            };
            let m = format!("{verb}{name}{i}");
            patterns += &format!(
                "[patterns.{p}]\nname = \"{verb} {name}\"\nrequest = \"{request}\"\nentity = \"{name}\"\nfield = \"Mutation.{m}\"\n\n"
            );
            mutations += &format!(
                "[mutations.{m}]\nentity = \"{name}\"\naction = \"{action}\"\npattern = {p}\nby = \"id\"\n\n"
            )
            .replace("by = \"id\"\n", if action == "create" { "" } else { "by = \"id\"\n" });
        }
        if e.subscription && g.tenant {
            subscriptions += &format!("[subscriptions.events{i}]\nentity = \"{name}\"\n\n");
        }
    }
    if !conns.is_empty() {
        t += &format!("[entities.Org.connections]\n{conns}");
    }
    t + &rest + "\n" + &query + &patterns + &mutations + &subscriptions
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any small chart the rules accept builds its schema, tabs, pages and design without a
    /// panic, every type named once; one they refuse is refused with reasons.
    #[test]
    fn a_generated_chart_the_rules_accept_is_served(g in generated()) {
        let text = text(&g);
        match std::panic::catch_unwind(|| crate::chart::parse(&text)) {
            Err(_) => panic!("the check panicked on:\n{text}"),
            Ok(Err(refused)) => prop_assert!(!refused.0.is_empty()),
            Ok(Ok(chart)) => {
                let chart = Arc::new(chart);
                let served = std::panic::catch_unwind(|| served(chart.clone()));
                prop_assert!(served.is_ok(), "accepted and not served:\n{text}");
            }
        }
    }
}

/// The generator is no test that cannot fail: a good share of what it makes is accepted
/// (and so served), and some is refused (the names it draws from clash).
#[test]
fn the_generated_charts_are_accepted_and_refused_both() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..200 {
        let g = generated().new_tree(&mut runner).unwrap().current();
        match crate::chart::parse(&text(&g)) {
            Ok(_) => accepted += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(accepted >= 40, "{accepted} accepted, {refused} refused");
    assert!(refused >= 10, "{accepted} accepted, {refused} refused");
}

/// A playground tab selects into what a field holds: a map of a shape's entries, their
/// values' fields (a tab of a bare `value` would not validate).
#[test]
fn a_tab_selects_into_maps_of_shapes() {
    const LOCATOR: &str = include_str!("../../examples/charts/store-locator.toml");
    let from = "status = { type = \"StoreStatus\", description";
    assert!(LOCATOR.contains(from));
    let text = LOCATOR.replace(
        from,
        &format!("special = {{ type = \"map\", of = \"Hours\", max_items = 3, optional = true }}\n{from}"),
    );
    let chart = served(Arc::new(
        crate::chart::parse(&text).unwrap_or_else(|e| panic!("{e}")),
    ));
    let tabs = super::examples(&chart).join("\n");
    assert!(
        tabs.contains("special {\n") && tabs.contains("value {\n"),
        "{tabs}"
    );
}
