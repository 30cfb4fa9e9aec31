//! Rule `stored` and the forms it admits: `examples/charts/corner-shop.toml` (items in the
//! table's own names, numbers as strings, ids only in keys, type values of its own) turned
//! to the chart's form and back, and every way of saying a form that could not be turned
//! one way only refused.

use super::*;
use crate::store::{AttributeValue, CmpOp, Condition, Item, SetValue, UpdateExpr};

const SHOP: &str = include_str!("../../../examples/charts/corner-shop.toml");

fn shop(from: &str, to: &str) -> Result<Chart, Refused> {
    assert!(SHOP.contains(from), "{from}");
    parse(&SHOP.replace(from, to))
}

#[track_caller]
fn refused(from: &str, to: &str) -> Refused {
    match shop(from, to) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    }
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: &str) -> AttributeValue {
    AttributeValue::N(v.into())
}

fn item(pairs: &[(&str, AttributeValue)]) -> Item {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[test]
fn an_item_turns_to_the_tables_form_and_back() {
    let chart = accepted(SHOP);
    let forms = chart
        .forms
        .as_ref()
        .expect("the shop stores items its own way");
    let charted = item(&[
        ("PK", s("c#10001")),
        ("SK", s("o#200001")),
        ("GSI1-PK", s("p#BK-100")),
        ("GSI1-SK", s("o#200001")),
        ("EntityType", s("Order")),
        ("customerId", s("10001")),
        ("orderId", s("200001")),
        ("sku", s("BK-100")),
        ("quantity", n("2")),
        ("total", n("2500")),
        ("status", s("PLACED")),
        ("placedAt", s("2026-11-02T10:00:00Z")),
    ]);
    let stored = forms.stored(&chart, charted.clone());
    assert_eq!(
        stored,
        item(&[
            ("PK", s("c#10001")),
            ("SK", s("o#200001")),
            ("GSI1-PK", s("p#BK-100")),
            ("GSI1-SK", s("o#200001")),
            ("EntityType", s("order")),
            ("ProductSku", s("BK-100")),
            ("Qty", s("2")),
            ("Total", s("2500")),
            ("Status", s("PLACED")),
            ("PlacedAt", s("2026-11-02T10:00:00Z")),
        ])
    );
    assert_eq!(forms.charted(&chart, 0, stored), charted);
}

#[test]
fn a_condition_on_a_value_only_in_the_key_is_decided_by_the_key() {
    let chart = accepted(SHOP);
    let forms = chart.forms.as_ref().unwrap();
    let key = crate::store::PrimaryKey::new("c#10001", "o#200001");
    let c = Condition::And(vec![
        Condition::exists("orderId"),
        Condition::eq("customerId", s("10001")),
        Condition::eq("quantity", n("2")),
        Condition::Cmp("status".into(), CmpOp::Ne, s("DELIVERED")),
    ]);
    assert_eq!(
        forms.condition(&chart, 0, Some(&key), c),
        Condition::And(vec![
            Condition::exists("PK"),
            Condition::exists("PK"),
            Condition::eq("Qty", s("2")),
            Condition::Cmp("Status".into(), CmpOp::Ne, s("DELIVERED")),
        ])
    );
    // Another customer's number at this key can never hold.
    assert_eq!(
        forms.condition(
            &chart,
            0,
            Some(&key),
            Condition::eq("customerId", s("10002"))
        ),
        Condition::And(vec![Condition::exists("PK"), Condition::not_exists("PK")])
    );
    let u = UpdateExpr::default()
        .set("quantity", n("3"))
        .set("orderId", s("200001"));
    let turned = forms.update(&chart, 0, &key, u);
    assert_eq!(turned.set, [("Qty".to_owned(), SetValue::Value(s("3")))]);
}

#[test]
fn with_no_type_attribute_items_are_told_by_their_keys() {
    let text = SHOP
        .replace("type_attribute = \"EntityType\"", "type_attribute = false")
        .replace("type_value = \"customer\"\n", "")
        .replace("type_value = \"order\"\n", "")
        .replace("type_value = \"product\"\n", "");
    let chart = accepted(&text);
    let forms = chart.forms.as_ref().unwrap();
    let stored = item(&[
        ("PK", s("p#BK-100")),
        ("SK", s("p#BK-100")),
        ("Title", s("A bell")),
        ("Price", s("1250")),
    ]);
    let charted = forms.charted(&chart, 0, stored.clone());
    assert_eq!(charted["Type"], s("Product"));
    assert_eq!(charted["sku"], s("BK-100"));
    assert_eq!(charted["price"], n("1250"));
    assert_eq!(forms.stored(&chart, charted), stored);
    // Keys no entity renders: of none.
    let odd = item(&[("PK", s("c#10001")), ("SK", s("cart#1"))]);
    assert!(!forms.charted(&chart, 0, odd).contains_key("Type"));
}

#[test]
fn a_chart_stored_as_it_names_has_no_forms() {
    assert!(builtin().forms.is_none());
}

/// The shop without pattern 10 and the field that uses it.
fn drop_pattern_10(text: &str) -> String {
    let start = text.find("[patterns.10]").expect("pattern 10");
    let end = start + text[start..].find("\n\n").expect("its end") + 2;
    let mut out = format!("{}{}", &text[..start], &text[end..]);
    let field = out.find("ordersIn = {").expect("the field");
    let line_end = field + out[field..].find('\n').expect("its line") + 1;
    out.replace_range(field..line_end, "");
    out
}

#[test]
fn forms_that_cannot_be_turned_one_way_only_are_refused() {
    let r = refused("type_value = \"order\"", "type_value = \"customer\"");
    refuses(&r, "stored", Some("Order"), None, "Customer's too");
    let r = refused("type_attribute = \"EntityType\"", "type_attribute = false");
    refuses(
        &r,
        "stored",
        Some("Customer"),
        None,
        "hold no type attribute",
    );
    let r = refused("stored = \"Qty\"", "stored = \"Total\"");
    refuses(&r, "stored", Some("Order"), None, "both stored as `Total`");
    let r = refused("stored = \"Qty\"", "stored = \"GSI1-PK\"");
    refuses(&r, "stored", Some("Order"), None, "a key attribute");
    let r = refused("stored = \"Title\"", "stored = \"EntityType\"");
    refuses(&r, "stored", Some("Product"), None, "the type attribute");
    let r = refused(
        "status = { type = \"OrderStatus\", stored = \"Status\" }",
        "status = { type = \"OrderStatus\", key_only = true }",
    );
    refuses(&r, "stored", Some("Order"), None, "could not be read back");
    // A value only in an index key, its one variable there, is read back from it (the
    // index of a multi-attribute key, which holds it as itself, left out).
    let without_multi = SHOP
        .replace(
            "sku = { type = \"sku\", stored = \"ProductSku\"",
            "sku = { type = \"sku\", key_only = true",
        )
        .replace(
            "indexes.ByProductStatus = [\"{sku}\", \"{status}\", \"{placedAt}\"]",
            "",
        );
    let without_multi = drop_pattern_10(&without_multi);
    let chart = parse(&without_multi).unwrap_or_else(|r| panic!("{r}"));
    let forms = chart.forms.as_ref().unwrap();
    let stored = item(&[
        ("PK", s("c#10001")),
        ("SK", s("o#200001")),
        ("GSI1-PK", s("p#BK-100")),
        ("GSI1-SK", s("o#200001")),
        ("EntityType", s("order")),
    ]);
    assert_eq!(forms.charted(&chart, 0, stored)["sku"], s("BK-100"));
    let key = crate::store::PrimaryKey::new("c#10001", "o#200001");
    assert_eq!(
        forms.condition(&chart, 0, Some(&key), Condition::eq("sku", s("LT-200"))),
        Condition::eq("GSI1-PK", s("p#LT-200"))
    );
    let r = refused(
        "customerId = { type = \"customerId\", key_only = true, description",
        "customerId = { type = \"customerId\", key_only = true, optional = true, description",
    );
    refuses(&r, "stored", Some("Customer"), None, "never missing");
    let r = refused(
        "stored = \"Status\" }",
        "stored = \"Status\", stored_as = \"string\" }",
    );
    refuses(&r, "stored", Some("Order"), None, "for an int or cents");
    let r = refused(
        "stored_as = \"string\", description = \"The price",
        "stored_as = \"text\", description = \"The price",
    );
    refuses(
        &r,
        "stored",
        Some("Product"),
        None,
        "`stored_as = \"text\"`",
    );
    let r = refused(
        "orderId = { type = \"orderId\", key_only = true }",
        "orderId = { type = \"orderId\", key_only = true, stored = \"Id\" }",
    );
    refuses(&r, "stored", Some("Order"), None, "no stored name or form");
}

#[test]
fn a_time_is_stored_in_its_form_and_answered_as_rfc3339() {
    use crate::chart::types::TimeForm;
    let t = "2026-11-30T07:15:09.250+01:00";
    let cases = [
        (TimeForm::Rfc3339, s(t), t),
        (
            TimeForm::Seconds,
            s("2026-11-30T06:15:09Z"),
            "2026-11-30T06:15:09Z",
        ),
        (
            TimeForm::Millis,
            s("2026-11-30T06:15:09.250Z"),
            "2026-11-30T06:15:09.25Z",
        ),
        (
            TimeForm::LocalSeconds,
            s("2026-11-30T06:15:09"),
            "2026-11-30T06:15:09Z",
        ),
        (TimeForm::Date, s("2026-11-30"), "2026-11-30"),
        (
            TimeForm::EpochSeconds,
            n("1796019309"),
            "2026-11-30T06:15:09Z",
        ),
        (
            TimeForm::EpochMillis,
            n("1796019309250"),
            "2026-11-30T06:15:09.25Z",
        ),
    ];
    for (form, stored, answered) in cases {
        assert_eq!(form.store(t), Some(stored.clone()), "{}", form.name());
        assert!(form.fits(&stored), "{}", form.name());
        assert_eq!(
            form.answer(&stored).as_deref(),
            Some(answered),
            "{}",
            form.name()
        );
        assert_eq!(TimeForm::parse(form.name()), Some(form));
    }
    // A form's own text is taken as given; no time is none.
    assert_eq!(
        TimeForm::LocalSeconds.store("2026-11-30T06:15:09"),
        Some(s("2026-11-30T06:15:09"))
    );
    assert_eq!(TimeForm::Seconds.store("yesterday"), None);
    assert!(!TimeForm::LocalSeconds.fits(&s("2026-11-30T06:15:09Z")));
}

#[test]
fn a_time_in_a_key_has_a_form_of_one_width() {
    let log = include_str!("../../../examples/charts/device-log.toml");
    let broken = |from: &str, to: &str| match parse(&log.replace(from, to)) {
        Ok(_) => panic!("a chart with `{to}` for `{from}` is served"),
        Err(r) => r,
    };
    // RFC 3339 as given, of any width; a number time in a string key.
    for form in ["", "form = \"epoch-seconds\", "] {
        let r = broken(
            "form = \"local-seconds\", key_only",
            &format!("{form}key_only"),
        );
        refuses(
            &r,
            "key-values",
            Some("StateChange"),
            None,
            "needs a form of one width",
        );
    }
    let r = broken("form = \"local-seconds\"", "form = \"fortnightly\"");
    refuses(&r, "types", Some("StateChange"), None, "none of rfc3339");
}
