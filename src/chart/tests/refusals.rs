//! A chart breaking each of the design's rules is refused, naming the rule; every rule is
//! documented.

use super::*;

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
fn a_name_the_schema_would_give_twice_is_refused() {
    // A root field named like one the Query has of its own.
    let r = broken("[query.ticket]", "[query.viewer]");
    refuses(&r, "names", None, None, "root field `viewer`");
    // An entity named like one of the schema's own types.
    let r = broken(
        "# --- the root fields",
        "[entities.PageInfo]\nkey = [\"PAGEINFO#{org}\", \"PAGEINFO#{noteId}\"]\n\
         [entities.PageInfo.attributes]\norg = \"slug\"\nnoteId = \"ulid\"\n\n# --- the root fields",
    );
    refuses(
        &r,
        "names",
        Some("PageInfo"),
        None,
        "two types of the schema are named `PageInfo`: one of the schema's own types and entity PageInfo",
    );
    // An enum named like the edges of a connection.
    let r = broken(
        "[enums.Role]",
        "[enums.UserEdge]\nvalues = [\"ONE\"]\n\n[enums.Role]",
    );
    refuses(
        &r,
        "names",
        Some("User"),
        None,
        "named `UserEdge`: enum UserEdge and the edge type of User's pages",
    );
    // A shape whose input form is a mutation's input.
    let r = broken(
        "[enums.Role]",
        "[shapes.PlaceOrder]\nattributes = { note = \"string\" }\n\n[enums.Role]",
    );
    refuses(
        &r,
        "names",
        Some("Order"),
        None,
        "named `PlaceOrderInput`: the input form of shape PlaceOrder and the input of mutation `placeOrder`",
    );
    // An attribute named like the field a client token is given in.
    let r = broken(
        "currency = { type = \"currency\", description = \"ISO 4217 code.\" }",
        "currency = { type = \"currency\", description = \"ISO 4217 code.\" }\n\
         clientToken = { type = \"token\", optional = true, graphql = false }",
    );
    refuses(
        &r,
        "names",
        Some("Order"),
        Some(12),
        "mutation `placeOrder`: two fields of its input would be named `clientToken`",
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
        "request = \"ExecuteStatement\"\nfield = \"Query.nodes\"",
    );
    refuses(&r, "one-request", None, Some(8), "`ExecuteStatement`");
    // A Scan of the whole table is no access pattern: it names its sparse index.
    let r = broken(
        "request = \"BatchGetItem\"\nfield = \"Query.nodes\"",
        "request = \"Scan\"\nfield = \"Query.nodes\"",
    );
    refuses(&r, "one-request", None, Some(8), "names the sparse `index`");
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
fn a_range_a_caller_cannot_be_given_is_refused() {
    // `?` leaves an end of a range open, never part of a partition or an `=`.
    let r = broken("SK >= ORG#{slug}\"", "SK = ORG#{slug?}\"");
    refuses(
        &r,
        "format",
        None,
        Some(2),
        "not a part of a partition or of an `=`",
    );
    let r = broken_locator(
        "PK = CHAIN#{slug} AND begins_with",
        "PK = CHAIN#{slug?} AND begins_with",
    );
    refuses(&r, "format", None, Some(3), "not a part of a partition");
    // A pattern that reads its parent pages its children on their prefix: a range given
    // by the caller would be lost after the first page.
    let r = broken(
        "SK >= ORG#{slug}\"",
        "SK BETWEEN ORG#{slug} AND USER#{until}\"",
    );
    refuses(
        &r,
        "one-request",
        None,
        Some(2),
        "takes `until`, which is not Organization's",
    );
    // An open end reads every key that starts with the text before it: a note filed
    // among a device's readings is read by a window open at either end.
    const LOG: &str = include_str!("../../../examples/charts/sensor-log.toml");
    let noted = LOG.replace(
        "[query.site]",
        "[entities.Note]\nkey = [\"READINGS#{site}#{device}\", \"READING#-NOTE#{noteId}\"]\n\
         [entities.Note.attributes]\nsite = \"slug\"\ndevice = \"device\"\nnoteId = \"ulid\"\n\n[query.site]",
    );
    match parse(&noted) {
        Ok(_) => panic!("a window open at its start over the notes is served"),
        Err(r) => refuses(&r, "one-request", None, Some(4), "also return Note"),
    }
}

#[test]
fn an_index_read_for_more_than_it_projects_is_refused() {
    const SESSIONS: &str = include_str!("../../../examples/charts/session-store.toml");
    let changed = |from: &str, to: &str| {
        assert!(SESSIONS.contains(from), "{from}");
        parse(&SESSIONS.replace(from, to))
    };
    accepted(SESSIONS);
    // A keys-only index read for the sessions themselves, without the BatchGetItem.
    let r = changed("then = \"BatchGetItem\"\n", "").expect_err("served");
    refuses(&r, "indexes", None, Some(4), "does not project `Type`");
    refuses(&r, "indexes", None, Some(4), "does not project `device`");
    // An INCLUDE projection must carry the type attribute and every attribute the entity
    // always has, key parts too (each is an attribute of its item).
    let include = SESSIONS.replace("then = \"BatchGetItem\"\n", "").replace(
        "projection = \"KEYS_ONLY\"",
        "projection = [\"Type\", \"app\", \"token\", \"username\", \"device\", \"startedAt\"]",
    );
    let r = parse(&include).expect_err("served");
    refuses(&r, "indexes", None, Some(4), "does not project `expiresAt`");
    parse(&include.replace("\"startedAt\"]", "\"startedAt\", \"expiresAt\"]"))
        .unwrap_or_else(|r| panic!("{r}"));
    // `then` is a BatchGetItem of what an index that holds less found, after a Query alone.
    let r = changed("then = \"BatchGetItem\"", "then = \"GetItem\"").expect_err("served");
    refuses(
        &r,
        "format",
        None,
        Some(4),
        "nothing or by a `BatchGetItem`",
    );
    let r = changed("projection = \"KEYS_ONLY\"", "projection = \"ALL\"").expect_err("served");
    refuses(&r, "indexes", None, Some(4), "projects every attribute");
    let r = changed(
        "key = \"PK = APP#{slug} AND begins_with(SK, ACCOUNT#)\"",
        "key = \"PK = APP#{slug} AND begins_with(SK, ACCOUNT#)\"\nthen = \"BatchGetItem\"",
    )
    .expect_err("served");
    refuses(&r, "indexes", None, Some(3), "on the base table");
    let r = changed(
        "request = \"PutItem\"\nentity = \"App\"",
        "request = \"PutItem\"\nthen = \"BatchGetItem\"\nentity = \"App\"",
    )
    .expect_err("served");
    refuses(&r, "format", None, Some(5), "follows a Query only");
}

#[test]
fn a_bulk_delete_that_cannot_be_bounded_kept_or_bound_is_refused() {
    const SESSIONS: &str = include_str!("../../../examples/charts/session-store.toml");
    let changed = |from: &str, to: &str| {
        assert!(SESSIONS.contains(from), "{from}");
        parse(&SESSIONS.replace(from, to)).expect_err("served")
    };
    let r = changed("every = 4\nmax = 100\n", "every = 4\n");
    refuses(&r, "writes", Some("Session"), Some(9), "needs `max`");
    let r = changed("every = 4\nmax = 100", "every = 4\nmax = 5000");
    refuses(&r, "writes", Some("Session"), Some(9), "1 to 1000");
    let r = changed(
        "every = 4\nmax = 100",
        "every = 4\nmax = 200\natomic = true",
    );
    refuses(&r, "writes", Some("Session"), Some(9), "1 to 100");
    // The atomic one is a TransactWriteItems, the batched one BatchWriteItems.
    refuses(
        &r,
        "one-request",
        Some("Session"),
        Some(9),
        "and its pattern says BatchWriteItem",
    );
    let r = changed("every = 4\n", "every = 3\n");
    refuses(
        &r,
        "writes",
        Some("Session"),
        Some(9),
        "pattern 3 finds Account",
    );
    let r = changed("every = 4\n", "every = 1\n");
    refuses(&r, "writes", Some("Session"), Some(9), "is no Query");
    // An update names what it sets, and sets nothing a key, a reference or a count is
    // made of; it is TransactWriteItems (BatchWriteItem puts and deletes only).
    let r = changed(
        "action = \"delete\"\npattern = 9",
        "action = \"update\"\npattern = 9",
    );
    refuses(
        &r,
        "writes",
        Some("Session"),
        Some(9),
        "names the `fields` it sets",
    );
    refuses(
        &r,
        "one-request",
        Some("Session"),
        Some(9),
        "updates by TransactWriteItems",
    );
    let r = changed(
        "action = \"delete\"\npattern = 9",
        "action = \"update\"\nfields = [\"username\"]\npattern = 9",
    );
    refuses(
        &r,
        "writes",
        Some("Session"),
        Some(9),
        "sets `username` on many sessions at once",
    );
    let r = changed("every = 4\nmax = 100", "max = 100");
    refuses(&r, "writes", Some("Session"), Some(9), "go with `every`");
    // A store keeps a unique marker and counts on its chain: a batch would keep neither.
    let r = broken_locator(
        "[mutations.createChain]",
        "[patterns.20]\nname = \"Close a chain's stores\"\nrequest = \"BatchWriteItem\"\nentity = \"Store\"\nfield = \"Mutation.closeStores\"\n\n[mutations.closeStores]\nentity = \"Store\"\naction = \"delete\"\npattern = 20\nevery = 3\nmax = 100\n\n[mutations.createChain]",
    );
    refuses(&r, "writes", Some("Store"), Some(20), "unique markers");
    refuses(
        &r,
        "writes",
        Some("Store"),
        Some(20),
        "counts on what they reference",
    );
}

#[test]
fn an_entry_write_of_what_is_no_map_or_of_no_kind_is_refused() {
    const ARCADE: &str = include_str!("../../../examples/charts/arcade-awards.toml");
    let changed = |from: &str, to: &str| {
        assert!(ARCADE.contains(from), "{from}");
        parse(&ARCADE.replace(from, to)).expect_err("served")
    };
    accepted(ARCADE);
    let r = changed(
        "action = \"put-entry\"\nmap = \"controls\"",
        "action = \"put-entry\"\nmap = \"name\"",
    );
    refuses(
        &r,
        "writes",
        Some("Player"),
        Some(10),
        "which is no map attribute of Player",
    );
    let r = changed(
        "action = \"put-entry\"\nmap = \"controls\"\n",
        "action = \"put-entry\"\n",
    );
    refuses(&r, "writes", Some("Player"), Some(10), "names its `map`");
    let r = changed(
        "map = \"controls\"\nkey_kind = \"slug\"\npattern = 10",
        "map = \"controls\"\nkey_kind = \"game\"\npattern = 10",
    );
    refuses(
        &r,
        "types",
        Some("Player"),
        Some(10),
        "`key_kind` `game` is no kind",
    );
    let r = changed(
        "action = \"put-entry\"\nmap = \"controls\"",
        "action = \"put-entry\"\nmap = \"controls\"\nfields = [\"name\"]",
    );
    refuses(&r, "writes", Some("Player"), Some(10), "do not apply");
    let r = changed(
        "name = \"Save a player's controls for one game\"\nrequest = \"UpdateItem\"",
        "name = \"Save a player's controls for one game\"\nrequest = \"TransactWriteItems\"",
    );
    refuses(
        &r,
        "one-request",
        Some("Player"),
        Some(10),
        "is one UpdateItem (of one entry of `controls`)",
    );
    let r = changed(
        "action = \"update\"\npattern = 9\nfields = [\"award\"]",
        "action = \"update\"\npattern = 9\nfields = [\"award\"]\nmap = \"award\"",
    );
    refuses(
        &r,
        "writes",
        Some("Score"),
        Some(9),
        "go with `action = \"put-entry\"`",
    );
}

#[test]
fn a_link_not_keyed_by_both_sides_or_not_inverted_is_refused() {
    const STARS: &str = include_str!("../../../examples/charts/repo-stars.toml");
    let changed = |from: &str, to: &str| {
        assert!(STARS.contains(from), "{from}");
        parse(&STARS.replace(from, to)).expect_err("served")
    };
    accepted(STARS);
    let r = changed(
        "link = [\"repository\", \"user\"]",
        "link = [\"repository\", \"owner\"]",
    );
    refuses(
        &r,
        "links",
        Some("Star"),
        None,
        "`owner`, which is no reference of Star",
    );
    let r = changed(
        "link = [\"repository\", \"user\"]",
        "link = [\"user\", \"repository\"]",
    );
    refuses(&r, "links", Some("Star"), None, "is not User's");
    refuses(
        &r,
        "links",
        Some("Star"),
        None,
        "no index of Star is keyed by `repository`",
    );
    // Keyed by the repository alone: a second user's star would take the first's key.
    let r = changed(
        "key = [\"REPO#{org}#{repo}\", \"STAR#{username}\"]",
        "key = [\"REPO#{org}#{repo}\", \"STAR#{repo}\"]",
    );
    refuses(
        &r,
        "links",
        Some("Star"),
        None,
        "does not hold `username` of `user`",
    );
    // Read from one side only.
    let r = changed(
        "[entities.User.connections]\nstarred = { pattern = 6,",
        "[entities.User.connections]\nstarred = { pattern = 3,",
    );
    refuses(
        &r,
        "links",
        Some("Star"),
        None,
        "User has no connection of its stars (a Query of ByUser)",
    );
}

#[test]
fn a_collection_that_could_return_what_it_does_not_declare_is_refused() {
    const STARS: &str = include_str!("../../../examples/charts/repo-stars.toml");
    let changed = |from: &str, to: &str| {
        assert!(STARS.contains(from), "{from}");
        parse(&STARS.replace(from, to)).expect_err("served")
    };
    // Read forward past the repository item, the stars would come too.
    let r = changed(
        "key = \"PK = REPO#{org}#{repo} AND SK <= REPO#{org}#{repo}\"\nforward = false",
        "key = \"PK = REPO#{org}#{repo}\"\nforward = false",
    );
    refuses(&r, "one-request", None, Some(12), "Star");
    let r = changed(
        "kinds = [\"Issue\", \"PullRequest\"]",
        "kinds = [\"Issue\"]",
    );
    refuses(&r, "one-request", None, Some(12), "two entities or more");
    let r = changed(
        "kinds = [\"Issue\", \"PullRequest\"]",
        "kinds = [\"Issue\", \"PullRequest\"]\nchildren = \"Issue\"",
    );
    refuses(&r, "one-request", None, Some(12), "no `children`");
    // Its owner must be its parent.
    let r = changed(
        "[entities.Repo.collections]\ntracker = { pattern = 12,",
        "[entities.Repo.collections]\ntracker = { pattern = 5,",
    );
    refuses(
        &r,
        "fields",
        Some("Repo"),
        None,
        "no Query of several `kinds`",
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
