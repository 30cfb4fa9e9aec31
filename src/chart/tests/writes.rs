//! A chart whose writes, or expiring items, could not be kept is refused, naming the rule.

use super::*;

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
fn a_position_its_attribute_cannot_hold_is_refused() {
    // More lines than the position's `max` (which fits the key's three digits).
    let r = broken(
        "lineNo = { type = \"int\", min = 1, max = 999,",
        "lineNo = { type = \"int\", min = 1, max = 9,",
    );
    refuses(
        &r,
        "writes",
        Some("OrderLine"),
        None,
        "`lineNo`: `auto = \"position\"` numbers the children of `Order.lines` 1 to 96, and `lineNo` is at most 9",
    );
    // A first place below its `min`.
    let r = broken(
        "lineNo = { type = \"int\", min = 1, max = 999,",
        "lineNo = { type = \"int\", min = 2, max = 999,",
    );
    refuses(
        &r,
        "writes",
        Some("OrderLine"),
        None,
        "`lineNo`: `auto = \"position\"` starts at 1, below its `min` (2)",
    );
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
    const LOCATOR: &str = include_str!("../../../examples/charts/store-locator.toml");
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
    let chart = accepted(&text);
    assert_eq!(
        chart.table_schema().time_to_live.as_deref(),
        Some("expiresAt")
    );
    assert_eq!(
        chart.entities["Offer"].attributes["expiresAt"].lifetime,
        Some(7 * 86_400)
    );
}

#[test]
fn a_marker_that_keeps_two_values_is_refused() {
    // A token's marker that also keeps a unique attribute.
    let r = broken_locator(
        "unique = { phone = \"StorePhone\" }",
        "unique = { phone = \"StoreToken\" }",
    );
    refuses(
        &r,
        "writes",
        Some("StoreToken"),
        None,
        "the marker keeps `Store.phone` and `createStore`'s client tokens",
    );
}

#[test]
fn a_child_written_with_its_parent_keeps_nothing_of_its_own_and_names_its_parent() {
    // A declaration of its own the parent's create would skip.
    let r = broken(
        "node = false\n\n[entities.OrderLine.attributes]\n",
        "node = false\nversion = \"rev\"\n\n[entities.OrderLine.attributes]\nrev = { type = \"int\", min = 1 }\n",
    );
    refuses(
        &r,
        "writes",
        Some("Order"),
        Some(12),
        "mutation `placeOrder` writes order lines with its `lines`, and OrderLine declares a version",
    );
    // A key that does not name the order: two orders' lines would share it.
    let r = broken(
        "key = [\"ORDER#{orderId}#LINE#{lineNo:03}\", \"ORDER#{orderId}#LINE#{lineNo:03}\"]",
        "key = [\"LINES#{lineNo:03}\", \"LINES#{lineNo:03}\"]",
    );
    refuses(
        &r,
        "writes",
        Some("Order"),
        Some(12),
        "OrderLine's key `LINES#{lineNo:03}` / `LINES#{lineNo:03}` holds neither all of Order's key (org, orderId) nor a generated id of it",
    );
}

#[test]
fn a_delete_of_an_entity_with_lists_is_refused() {
    let r = broken(
        "[mutations.updateOrderStatus]",
        "[patterns.18]\nname = \"Remove an order\"\nrequest = \"TransactWriteItems\"\nentity = \"Order\"\nfield = \"Mutation.removeOrder\"\n\n\
         [mutations.removeOrder]\nentity = \"Order\"\naction = \"delete\"\nby = \"id\"\npattern = 18\n\n[mutations.updateOrderStatus]",
    );
    refuses(
        &r,
        "writes",
        Some("Order"),
        Some(18),
        "mutation `removeOrder` deletes an order, whose `lines` would be left behind",
    );
}
