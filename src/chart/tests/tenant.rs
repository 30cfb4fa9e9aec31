//! Rule `tenant` on the writes: a chart that would let a write cross tenants is refused,
//! naming the entity and the attribute; the bindings the built-in chart resolves to.

use super::*;

#[test]
fn the_builtin_chart_binds_every_entity_to_the_callers_tenant() {
    let chart = parse(BUILTIN_SOURCE).unwrap_or_else(|e| panic!("{e}"));
    let bound = |name: &str| chart.entities[name].binding.clone();
    assert_eq!(bound("Organization"), Binding::Key("slug".into()));
    assert_eq!(bound("User"), Binding::Key("org".into()));
    assert_eq!(bound("UserEmail"), Binding::Key("org".into()));
    assert_eq!(bound("CounterShard"), Binding::Key("org".into()));
    assert_eq!(bound("Order"), Binding::Key("org".into()));
    assert_eq!(bound("OrderToken"), Binding::Key("org".into()));
    // A ticket's key is its id alone: every action on it is conditioned on its `org`.
    assert_eq!(bound("Ticket"), Binding::Condition("org".into()));
    // An order's lines hold no organization; they are read only with their order.
    assert_eq!(bound("OrderLine"), Binding::Parent);
}

#[test]
fn an_update_never_changes_the_tenant_attribute() {
    // Without `fields`, an update changes every attribute it may: never `org`.
    let text = BUILTIN_SOURCE.replace(
        "fields = [\"status\", \"priority\", \"assignee\", \"title\", \"body\"]\n",
        "",
    );
    let chart = accepted(&text);
    let fields = &chart.mutations["updateTicket"].fields;
    assert!(fields.contains(&"title".to_owned()), "{fields:?}");
    assert!(!fields.contains(&"org".to_owned()), "{fields:?}");
    // Named, it is refused.
    let r = broken(
        "fields = [\"status\", \"priority\", \"assignee\", \"title\", \"body\"]",
        "fields = [\"status\", \"priority\", \"assignee\", \"title\", \"body\", \"org\"]",
    );
    refuses(
        &r,
        "tenant",
        Some("Ticket"),
        Some(13),
        "changes `org`, the tenant Ticket belongs to",
    );
}

#[test]
fn a_marker_or_token_keyed_without_the_tenant_is_refused_unless_global() {
    let r = broken(
        "key = [\"EMAIL#{org}#{email}\", \"EMAIL#{org}#{email}\"]",
        "key = [\"EMAIL#{email}\", \"EMAIL#{email}\"]",
    );
    refuses(
        &r,
        "tenant",
        Some("User"),
        None,
        "unique `email`: the key of its marker `UserEmail` holds no `org`",
    );
    let r = broken(
        "key = [\"ORDERTOKEN#{org}#{token}\", \"ORDERTOKEN#{org}#{token}\"]",
        "key = [\"ORDERTOKEN#{token}\", \"ORDERTOKEN#{token}\"]",
    );
    refuses(
        &r,
        "tenant",
        Some("Order"),
        Some(12),
        "the key of its marker `OrderToken` holds no `org`",
    );
    // Global on purpose: served, bound as such.
    let text = BUILTIN_SOURCE.replace(
        "key = [\"EMAIL#{org}#{email}\", \"EMAIL#{org}#{email}\"]\ngraphql = false",
        "key = [\"EMAIL#{email}\", \"EMAIL#{email}\"]\ngraphql = false\nglobal = true",
    );
    let chart = accepted(&text);
    assert_eq!(chart.entities["UserEmail"].binding, Binding::Global);
    // `global` is said of markers only.
    let r = broken("[entities.Ticket]\n", "[entities.Ticket]\nglobal = true\n");
    refuses(
        &r,
        "tenant",
        Some("Ticket"),
        None,
        "`global` is said of a marker",
    );
}

#[test]
fn a_reference_whose_tenant_comes_from_another_attribute_is_refused() {
    let r = broken(
        "[entities.Ticket.references]\n",
        "[entities.Ticket.references]\npartner = { entity = \"Organization\", key = { slug = \"partnerOrg\" } }\n",
    );
    // (The attribute it names is there.)
    let r2 = match parse(
        &BUILTIN_SOURCE
            .replace(
                "[entities.Ticket.references]\n",
                "[entities.Ticket.references]\npartner = { entity = \"Organization\", key = { slug = \"partnerOrg\" } }\n",
            )
            .replace(
                "requester = { type = \"username\", graphql = false }\nassignee",
                "requester = { type = \"username\", graphql = false }\npartnerOrg = { type = \"slug\", optional = true, graphql = false }\nassignee",
            ),
    ) {
        Ok(_) => panic!("a reference to another tenant's organization is served"),
        Err(r) => r,
    };
    for r in [&r, &r2] {
        refuses(
            r,
            "tenant",
            Some("Ticket"),
            None,
            "reference `partner`: the tenant part `slug` of Organization's key comes from `partnerOrg`, not from Ticket's own `org`",
        );
    }
}

#[test]
fn a_created_key_without_the_tenant_of_values_the_caller_chooses_is_refused() {
    let device = "[entities.Device]\nkey = [\"DEVICE#{serial}\", \"DEVICE#{serial}\"]\n\
        [entities.Device.attributes]\norg = { type = \"slug\", graphql = false }\nserial = \"slug\"\n\n\
        [patterns.18]\nname = \"Register a device\"\nrequest = \"PutItem\"\nentity = \"Device\"\nfield = \"Mutation.registerDevice\"\n\n\
        [mutations.registerDevice]\nentity = \"Device\"\naction = \"create\"\npattern = 18\n\n\
        [query.organization]";
    let r = broken("[query.organization]", device);
    refuses(
        &r,
        "tenant",
        Some("Device"),
        None,
        "its key `DEVICE#{serial}` / `DEVICE#{serial}` holds neither `org` nor a generated id",
    );
    // With the tenant in its key, or a generated id, it is served.
    for key in [
        "[\"DEVICE#{org}#{serial}\", \"DEVICE#{org}#{serial}\"]",
        "[\"DEVICE#{serial}#{deviceId}\", \"DEVICE#{serial}#{deviceId}\"]",
    ] {
        let text = BUILTIN_SOURCE.replace(
            "[query.organization]",
            &device
                .replace("[\"DEVICE#{serial}\", \"DEVICE#{serial}\"]", key)
                .replace(
                    "serial = \"slug\"\n",
                    "serial = \"slug\"\ndeviceId = { type = \"ulid\", auto = \"ulid\" }\n",
                ),
        );
        accepted(&text);
    }
}

#[test]
fn an_optional_life_cycle_attribute_is_refused() {
    let r = broken_locator(
        "status = { type = \"StoreStatus\", description",
        "status = { type = \"StoreStatus\", optional = true, description",
    );
    refuses(
        &r,
        "writes",
        Some("Store"),
        None,
        "lifecycle: `status` is optional",
    );
}

#[test]
fn a_pattern_that_takes_the_tenant_from_the_caller_is_refused() {
    // `{org}` is no attribute of the organization: it would be a connection argument.
    let r = broken(
        "key = \"GSI2PK = ORG#{slug}#STATUS#{status} AND begins_with(GSI2SK, TICKET#)\"",
        "key = \"GSI2PK = ORG#{org}#STATUS#{status} AND begins_with(GSI2SK, TICKET#)\"",
    );
    refuses(
        &r,
        "tenant",
        Some("Organization"),
        Some(6),
        "`{org}` is the tenant of what the pattern reads, and Organization does not give it",
    );
}

#[test]
fn a_child_written_with_its_parent_takes_its_parents_tenant() {
    // An order line naming an organization of its own.
    let r = broken(
        "node = false\n\n[entities.OrderLine.attributes]\n",
        "node = false\ntenant = \"shop\"\n\n[entities.OrderLine.attributes]\nshop = { type = \"slug\", graphql = false }\n",
    );
    refuses(
        &r,
        "tenant",
        Some("Order"),
        Some(12),
        "OrderLine's tenant attribute `shop` is not Order's",
    );
    // Named as its parent names it, it is copied from the parent, never an input.
    let text = BUILTIN_SOURCE.replace(
        "node = false\n\n[entities.OrderLine.attributes]\n",
        "node = false\n\n[entities.OrderLine.attributes]\norg = { type = \"slug\", graphql = false }\n",
    );
    let chart = accepted(&text);
    let sdl = crate::graphql::chart_schema(chart, &crate::graphql::Limits::default())
        .unwrap_or_else(|e| panic!("{}", e.0))
        .sdl();
    let input = sdl
        .split("input OrderLineInput {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("a line's input");
    assert!(input.contains("sku:") && !input.contains("org:"), "{input}");
}

#[test]
fn a_tenant_no_token_could_name_is_refused() {
    let r = broken_locator(
        "slug = { type = \"slug\", description = \"The chain's unique, URL-safe name.\" }",
        "slug = { type = \"int\", min = 0, max = 999 }",
    );
    refuses(
        &r,
        "tenant",
        Some("Chain"),
        None,
        "the tenant's own key `slug` is an int: a token names its tenant by an identifier kind",
    );
}
