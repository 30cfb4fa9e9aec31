//! DynamoDB's value semantics, shared by the validator and the embedded engine:
//! number canonical form and ordering, value equality, and item size accounting.

use std::cmp::Ordering;
use std::str::FromStr;

use bigdecimal::{BigDecimal, Zero};

use super::{AttributeValue, Item};

/// DynamoDB numbers carry at most 38 significant digits.
pub const MAX_NUMBER_DIGITS: u64 = 38;

/// Parses a DynamoDB number, or says why DynamoDB would reject it.
pub fn parse_number(n: &str) -> Result<BigDecimal, String> {
    let trimmed = n.trim();
    if trimmed.is_empty() || trimmed != n {
        return Err(format!(
            "The parameter cannot be converted to a numeric value: {n}"
        ));
    }
    let d = BigDecimal::from_str(n)
        .map_err(|_| format!("The parameter cannot be converted to a numeric value: {n}"))?;
    let norm = d.normalized();
    if norm.digits() > MAX_NUMBER_DIGITS {
        return Err("Attempting to store more than 38 significant digits in a Number".into());
    }
    if !norm.is_zero() {
        // Magnitude must lie within 1E-130 ..= 9.9999999999999999999999999999999999999E+125.
        let (_, scale) = norm.as_bigint_and_exponent();
        let exponent = norm.digits() as i64 - scale - 1;
        if exponent > 125 {
            return Err("Number overflow. Attempting to store a number with magnitude larger than supported range".into());
        }
        if exponent < -130 {
            return Err("Number underflow. Attempting to store a number with magnitude smaller than supported range".into());
        }
    }
    Ok(norm)
}

/// The canonical text DynamoDB returns for a stored number (`"1.50"` → `"1.5"`).
pub fn canonical_number(d: &BigDecimal) -> String {
    let norm = d.normalized();
    if norm.is_zero() {
        return "0".into();
    }
    norm.to_plain_string()
}

/// Returns the value with every number (also inside lists, maps and number sets) in
/// canonical form, as DynamoDB stores it.
pub fn canonicalize(v: AttributeValue) -> AttributeValue {
    match v {
        AttributeValue::N(n) => {
            AttributeValue::N(parse_number(&n).map(|d| canonical_number(&d)).unwrap_or(n))
        }
        AttributeValue::Ns(ns) => AttributeValue::Ns(
            ns.into_iter()
                .map(|n| parse_number(&n).map(|d| canonical_number(&d)).unwrap_or(n))
                .collect(),
        ),
        AttributeValue::L(l) => AttributeValue::L(l.into_iter().map(canonicalize).collect()),
        AttributeValue::M(m) => {
            AttributeValue::M(m.into_iter().map(|(k, v)| (k, canonicalize(v))).collect())
        }
        other => other,
    }
}

pub fn canonicalize_item(item: Item) -> Item {
    item.into_iter()
        .map(|(k, v)| (k, canonicalize(v)))
        .collect()
}

/// Ordering of two values as a condition's `<`, `<=`, `>`, `>=` and `BETWEEN` see it:
/// strings and binaries by bytes, numbers by value; `None` for any other pairing.
pub fn compare(a: &AttributeValue, b: &AttributeValue) -> Option<Ordering> {
    match (a, b) {
        (AttributeValue::S(x), AttributeValue::S(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (AttributeValue::B(x), AttributeValue::B(y)) => Some(x.cmp(y)),
        (AttributeValue::N(x), AttributeValue::N(y)) => {
            Some(parse_number(x).ok()?.cmp(&parse_number(y).ok()?))
        }
        _ => None,
    }
}

/// Equality as a condition's `=` sees it: deep, numbers by value, sets without order.
pub fn equal(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as V;
    match (a, b) {
        (V::N(_), V::N(_)) => compare(a, b) == Some(Ordering::Equal),
        (V::S(x), V::S(y)) => x == y,
        (V::B(x), V::B(y)) => x == y,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::Null(_), V::Null(_)) => true,
        (V::L(x), V::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b)),
        (V::M(x), V::M(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        (V::Ss(x), V::Ss(y)) => same_set(x, y, |a, b| a == b),
        (V::Bs(x), V::Bs(y)) => same_set(x, y, |a, b| a == b),
        (V::Ns(x), V::Ns(y)) => same_set(x, y, |a, b| equal(&V::N(a.clone()), &V::N(b.clone()))),
        _ => false,
    }
}

fn same_set<T>(x: &[T], y: &[T], eq: impl Fn(&T, &T) -> bool) -> bool {
    x.len() == y.len() && x.iter().all(|a| y.iter().any(|b| eq(a, b)))
}

/// DynamoDB's size of a number: about one byte per two significant digits, plus one.
fn number_size(n: &str) -> usize {
    match parse_number(n) {
        Ok(d) if !d.is_zero() => (d.digits() as usize).div_ceil(2) + 1,
        _ => 1 + n.len().div_ceil(2),
    }
}

/// The size DynamoDB counts for one value.
pub fn value_size(v: &AttributeValue) -> usize {
    use AttributeValue as V;
    match v {
        V::S(s) => s.len(),
        V::N(n) => number_size(n),
        V::B(b) => b.len(),
        V::Bool(_) | V::Null(_) => 1,
        V::L(l) => 3 + l.iter().map(|e| 1 + value_size(e)).sum::<usize>(),
        V::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() + value_size(e))
                .sum::<usize>()
        }
        V::Ss(s) => s.iter().map(String::len).sum(),
        V::Ns(s) => s.iter().map(|n| number_size(n)).sum(),
        V::Bs(s) => s.iter().map(Vec::len).sum(),
    }
}

/// The size DynamoDB counts for an item: attribute names plus values.
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

/// The DynamoDB type descriptor of a value (`S`, `N`, …), for messages.
pub fn type_name(v: &AttributeValue) -> &'static str {
    use AttributeValue as V;
    match v {
        V::S(_) => "S",
        V::N(_) => "N",
        V::B(_) => "B",
        V::Bool(_) => "BOOL",
        V::Null(_) => "NULL",
        V::L(_) => "L",
        V::M(_) => "M",
        V::Ss(_) => "SS",
        V::Ns(_) => "NS",
        V::Bs(_) => "BS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_dynamodb_canonical_form() {
        for (input, want) in [
            ("1.50", "1.5"),
            ("01", "1"),
            ("-0", "0"),
            ("0.000", "0"),
            ("1e3", "1000"),
            ("1.25E-2", "0.0125"),
            ("-12", "-12"),
        ] {
            assert_eq!(
                canonical_number(&parse_number(input).unwrap()),
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn numbers_outside_dynamodb_range_are_rejected() {
        assert!(parse_number("1e126").is_err());
        assert!(parse_number("1e-131").is_err());
        assert!(parse_number(&"1".repeat(39)).is_err());
        assert!(parse_number(&"1".repeat(38)).is_ok());
        assert!(parse_number("abc").is_err());
        assert!(parse_number(" 1").is_err());
    }

    #[test]
    fn strings_compare_as_utf8_bytes() {
        let s = |x: &str| AttributeValue::S(x.into());
        // '#' < 'L' < 'O' < 'T' < 'U'; a code point above U+FFFF sorts after U+FFFF in UTF-8.
        assert_eq!(compare(&s("#ORDER"), &s("ORG")), Some(Ordering::Less));
        assert_eq!(
            compare(&s("\u{FFFF}"), &s("\u{10000}")),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&s("a"), &AttributeValue::N("1".into())), None);
    }

    #[test]
    fn sets_are_equal_without_order() {
        let a = AttributeValue::Ns(vec!["1".into(), "2.0".into()]);
        let b = AttributeValue::Ns(vec!["2".into(), "1".into()]);
        assert!(equal(&a, &b));
    }
}
