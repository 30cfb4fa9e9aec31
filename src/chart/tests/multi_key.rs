//! Multi-attribute index keys (`examples/charts/corner-shop.toml`'s `ByProductStatus`):
//! the index declared by lists of attributes, an entity joining it with one
//! `{attribute}` per key attribute, its Query patterns held to DynamoDB's rules (every
//! partition attribute, sort attributes from the first, none skipped, a range on the last
//! given), and what would cross tenants or read another entity refused.

use super::*;

const SHOP: &str = include_str!("../../../examples/charts/corner-shop.toml");

#[track_caller]
fn refused(from: &str, to: &str) -> Refused {
    assert!(SHOP.contains(from), "{from}");
    match parse(&SHOP.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
}

/// The shop with its customers as tenants.
fn with_tenant() -> String {
    SHOP.replace(
        "[kinds.customerId]",
        "[tenant]\nentity = \"Customer\"\nattribute = \"customerId\"\n\n[kinds.customerId]",
    )
}

#[test]
fn the_index_and_its_query_resolve_to_the_items_own_attributes() {
    let chart = accepted(SHOP);
    let i = &chart.indexes["ByProductStatus"];
    assert!(i.multi);
    assert_eq!(i.key_names(), ["ProductSku", "Status", "PlacedAt"]);
    assert_eq!(
        chart.entities["Order"].multi["ByProductStatus"],
        ["sku", "status", "placedAt"]
    );
    let schema = chart.table_schema();
    let index = schema.index("ByProductStatus").unwrap();
    assert_eq!(index.sort_attributes().len(), 2);
    let Request::Query { condition, .. } = &chart.patterns[&10].request else {
        panic!("pattern 10 is a Query");
    };
    assert_eq!(condition.partition.source(), "{sku}");
    assert!(condition.partition_more.is_empty());
    assert_eq!(condition.sort_prefix.len(), 1);
    assert_eq!(condition.sort_prefix[0].source(), "{status}");
    assert!(matches!(condition.sort, Some(SortCondition::Ge(_))));
    // The condition's values take the types of the attributes they meet.
    assert!(chart.var_type(condition, "status").is_some());
    assert!(chart.var_type(condition, "since").is_some());
}

#[test]
fn a_key_of_more_than_four_attributes_a_side_is_refused() {
    let r = refused(
        r#"sort_key = ["Status", "PlacedAt"]"#,
        r#"sort_key = ["Status", "PlacedAt", "Qty", "Total", "Title"]"#,
    );
    refuses(
        &r,
        "indexes",
        None,
        None,
        "at most 4 partition and 4 sort attributes",
    );
}

#[test]
fn an_entity_joins_with_one_attribute_per_key_attribute_stored_under_its_name() {
    let join = r#"indexes.ByProductStatus = ["{sku}", "{status}", "{placedAt}"]"#;
    let r = refused(join, r#"indexes.ByProductStatus = ["{sku}", "{status}"]"#);
    refuses(&r, "indexes", Some("Order"), None, "keyed by 3 attributes");
    let r = refused(
        join,
        r#"indexes.ByProductStatus = ["p#{sku}", "{status}", "{placedAt}"]"#,
    );
    refuses(
        &r,
        "indexes",
        Some("Order"),
        None,
        "is not one `{attribute}`",
    );
    let r = refused(
        join,
        r#"indexes.ByProductStatus = ["{status}", "{sku}", "{placedAt}"]"#,
    );
    refuses(
        &r,
        "indexes",
        Some("Order"),
        None,
        "set `stored = \"ProductSku\"`",
    );
    let r = refused(
        r#"placedAt = { type = "timestamp", form = "seconds","#,
        r#"placedAt = { type = "timestamp","#,
    );
    refuses(
        &r,
        "indexes",
        Some("Order"),
        None,
        "which a key does not hold",
    );
}

#[test]
fn an_entity_that_stores_every_key_attribute_is_in_the_index_and_says_so() {
    let r = refused(
        r#"indexes.ByProductStatus = ["{sku}", "{status}", "{placedAt}"]"#,
        "",
    );
    refuses(&r, "indexes", Some("Order"), None, "and are then in it");
    // Under a key attribute's name, a value of another type is refused on every write.
    let r = refused(
        r#"title = { type = "string", max_length = 100, stored = "Title" }"#,
        r#"title = { type = "string", max_length = 100, stored = "Status" }"#,
    );
    refuses(
        &r,
        "indexes",
        Some("Product"),
        None,
        "a key attribute of index ByProductStatus",
    );
}

#[test]
fn a_query_follows_dynamodbs_key_rules() {
    let key = "ProductSku = {sku} AND Status = {status} AND PlacedAt >= {since?}";
    // A sort attribute skipped.
    let r = refused(key, "ProductSku = {sku} AND PlacedAt >= {since}");
    refuses(&r, "indexes", None, Some(10), "none skipped");
    // A range before the last attribute given.
    let r = refused(
        key,
        "ProductSku = {sku} AND Status >= {status} AND PlacedAt >= {since}",
    );
    refuses(&r, "indexes", None, Some(10), "is given by `=`");
    // An open value where the key needs one.
    let r = refused(
        key,
        "ProductSku = {sku} AND Status = {status?} AND PlacedAt >= {since}",
    );
    refuses(&r, "format", None, Some(10), "`?` marks");
}

#[test]
fn a_query_reads_its_children_alone() {
    let r = refused(
        "children = \"Order\"\nfield = \"Product.ordersIn\"",
        "parent = \"Product\"\nchildren = \"Order\"\nfield = \"Product.ordersIn\"",
    );
    refuses(
        &r,
        "one-request",
        None,
        Some(10),
        "pages its children alone",
    );
}

#[test]
fn a_query_that_would_cross_tenants_is_refused() {
    let r = parse(&with_tenant()).expect_err("refused");
    refuses(
        &r,
        "tenant",
        None,
        Some(10),
        "would read every tenant's orders",
    );
}

#[test]
fn the_tenant_is_bound_by_its_own_attribute_in_its_own_place() {
    // `{customerId}` in `ProductSku`'s place names no tenant: it would read any customer's.
    let text = with_tenant().replace(
        "ProductSku = {sku} AND Status = {status} AND PlacedAt >= {since?}",
        "ProductSku = {customerId} AND Status = {status} AND PlacedAt >= {since?}",
    );
    let r = parse(&text).expect_err("refused");
    refuses(
        &r,
        "tenant",
        None,
        Some(10),
        "would read every tenant's orders",
    );
}

#[test]
fn a_number_is_compared_by_value_with_every_end_given() {
    let numbered = SHOP
        .replace(
            "quantity = { type = \"int\", min = 1, max = 99, stored = \"Qty\", stored_as = \"string\" }",
            "quantity = { type = \"int\", min = 1, max = 99, stored = \"Qty\" }",
        )
        .replace(
            r#"sort_key = ["Status", "PlacedAt"]"#,
            r#"sort_key = ["Status", { name = "Qty", type = "N" }]"#,
        )
        .replace("\"{placedAt}\"]", "\"{quantity}\"]")
        .replace("PlacedAt >= {since?}", "Qty >= {least}");
    accepted(&numbered);
    for (from, to) in [
        ("Qty >= {least}", "Qty >= {least?}"),
        ("Qty >= {least}", "begins_with(Qty, {least})"),
    ] {
        let r = parse(&numbered.replace(from, to)).expect_err("refused");
        refuses(&r, "indexes", None, Some(10), "is a number (N)");
    }
}

#[test]
fn an_entity_that_may_store_every_key_attribute_joins_the_index() {
    let text = SHOP
        .replace(
            r#"indexes.ByProductStatus = ["{sku}", "{status}", "{placedAt}"]"#,
            "",
        )
        .replace(
            r#"placedAt = { type = "timestamp", form = "seconds", stored = "PlacedAt","#,
            r#"placedAt = { type = "timestamp", form = "seconds", optional = true, stored = "PlacedAt","#,
        );
    let r = parse(&text).expect_err("refused");
    refuses(
        &r,
        "indexes",
        Some("Order"),
        None,
        "may store every key attribute",
    );
}

#[test]
fn a_key_attribute_is_named_once_and_by_no_other_key() {
    let r = refused(
        r#"partition_key = ["ProductSku"]"#,
        r#"partition_key = ["GSI1-PK"]"#,
    );
    refuses(
        &r,
        "indexes",
        None,
        None,
        "key attribute `GSI1-PK` is already another key's",
    );
    let r = refused(
        r#"sort_key = ["Status", "PlacedAt"]"#,
        r#"sort_key = ["Status", "Status"]"#,
    );
    refuses(
        &r,
        "indexes",
        None,
        None,
        "key attribute `Status` is named twice",
    );
}
