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
    refuses(&r, "indexes", Some("Order"), None, "so they are in it");
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
    let r = refused(
        "[kinds.customerId]",
        "[tenant]\nentity = \"Customer\"\nattribute = \"customerId\"\n\n[kinds.customerId]",
    );
    refuses(
        &r,
        "tenant",
        None,
        Some(10),
        "would read every tenant's orders",
    );
}
