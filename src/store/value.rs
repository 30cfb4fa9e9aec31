//! DynamoDB's value semantics, shared by the validator and the embedded engine:
//! number canonical form and ordering, value equality, and item size accounting.

use std::cmp::Ordering;
use std::str::FromStr;

use bigdecimal::{BigDecimal, Zero};

use super::{AttributeValue, Item};

/// DynamoDB numbers carry at most 38 significant digits.
pub const MAX_NUMBER_DIGITS: u64 = 38;

/// A plain integer of at most 38 digits (`-?[0-9]{1,38}`, what counters, versions, cents
/// and positions are): its sign and its digits without leading zeros (empty: zero).
/// Always a valid DynamoDB number; its canonical form, size, order and sums need no
/// decimal parse, which the write path otherwise spends a few per cent of its CPU on.
fn plain_integer(n: &str) -> Option<(bool, &str)> {
    let (negative, digits) = match n.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, n),
    };
    if digits.is_empty()
        || digits.len() > MAX_NUMBER_DIGITS as usize
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((negative, digits.trim_start_matches('0')))
}

/// Whether `n` is a number DynamoDB would store, or why not ([`parse_number`]'s words).
pub fn check_number(n: &str) -> Result<(), String> {
    if plain_integer(n).is_some() {
        return Ok(());
    }
    parse_number(n).map(|_| ())
}

/// The canonical text of number `n` ([`canonical_number`]), `None` when it is none.
pub fn canonical_text(n: &str) -> Option<String> {
    match plain_integer(n) {
        Some((_, "")) => Some("0".into()),
        Some((false, digits)) if digits.len() == n.len() => Some(n.to_owned()),
        Some((negative, digits)) => Some(if negative {
            format!("-{digits}")
        } else {
            digits.to_owned()
        }),
        None => parse_number(n).ok().map(|d| canonical_number(&d)),
    }
}

/// The sum of two numbers as DynamoDB's `ADD` stores it, or why it cannot be.
pub fn add_numbers(x: &str, y: &str) -> Result<String, String> {
    // Integers of up to 36 digits sum within an i128 and within 38 digits.
    let small = |n: &str| {
        plain_integer(n)
            .filter(|(_, d)| d.len() <= 36)
            .and_then(|_| n.parse::<i128>().ok())
    };
    if let (Some(a), Some(b)) = (small(x), small(y)) {
        return Ok((a + b).to_string());
    }
    let sum = parse_number(x)? + parse_number(y)?;
    let text = canonical_number(&sum);
    parse_number(&text)?;
    Ok(text)
}

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
        AttributeValue::N(n) => AttributeValue::N(canonical_text(&n).unwrap_or(n)),
        AttributeValue::Ns(ns) => AttributeValue::Ns(
            ns.into_iter()
                .map(|n| canonical_text(&n).unwrap_or(n))
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
            if let (Some(a), Some(b)) = (plain_integer(x), plain_integer(y)) {
                return Some(compare_integers(a, b));
            }
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

/// Two plain integers' order: by sign, then by magnitude (digits without leading zeros:
/// more is larger, else byte order).
fn compare_integers((neg_a, a): (bool, &str), (neg_b, b): (bool, &str)) -> Ordering {
    let magnitude = a.len().cmp(&b.len()).then_with(|| a.cmp(b));
    // Zero has no sign.
    match (neg_a && !a.is_empty(), neg_b && !b.is_empty()) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

/// DynamoDB's size of a number: about one byte per two significant digits, plus one.
fn number_size(n: &str) -> usize {
    if let Some((_, digits)) = plain_integer(n) {
        // Significant digits: trailing zeros are not (`1000` is 1E+3).
        let significant = digits.trim_end_matches('0').len();
        if significant > 0 {
            return significant.div_ceil(2) + 1;
        }
    }
    decimal_size(n)
}

/// [`number_size`] by the decimal parse.
fn decimal_size(n: &str) -> usize {
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
    use proptest::prelude::*;

    proptest! {
        /// Integers (signs, leading and trailing zeros, up to 40 digits, past the
        /// shortcut's 38): the shortcuts answer exactly what the decimal parse does.
        #[test]
        fn plain_integers_take_the_decimal_parses_answers(
            a in "-?0{0,3}[0-9]{1,37}0{0,3}",
            b in "-?0{0,3}[0-9]{1,37}0{0,3}",
        ) {
            let slow_canonical = parse_number(&a).ok().map(|d| canonical_number(&d));
            prop_assert_eq!(canonical_text(&a), slow_canonical.clone());
            prop_assert_eq!(check_number(&a).is_ok(), parse_number(&a).is_ok());
            prop_assert_eq!(number_size(&a), decimal_size(&a));
            let slow_order = match (parse_number(&a), parse_number(&b)) {
                (Ok(x), Ok(y)) => Some(x.cmp(&y)),
                _ => None,
            };
            prop_assert_eq!(
                compare(&AttributeValue::N(a.clone()), &AttributeValue::N(b.clone())),
                slow_order
            );
            let slow_sum = match (parse_number(&a), parse_number(&b)) {
                (Ok(x), Ok(y)) => {
                    let text = canonical_number(&(x + y));
                    parse_number(&text).map(|_| text)
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            prop_assert_eq!(add_numbers(&a, &b), slow_sum);
        }
    }

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
