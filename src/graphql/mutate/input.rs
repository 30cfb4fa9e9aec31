//! A mutation's input, as the chart types it: each attribute's GraphQL input type, and a
//! value a client sent checked against its declared type and stored as the item holds it.

pub use crate::chart::schema_names::{map_entry_input, shape_input};
use async_graphql::dynamic::{InputObject, InputValue, TypeRef};
use async_graphql::Value;

use crate::chart::types::{Type, DEFAULT_MAX_CHARS};
use crate::chart::Chart;
use crate::graphql::errors::ApiError;
use crate::graphql::input::text;
use crate::store::AttributeValue;

/// Strings up to this many characters are one line; longer ones (and those without a
/// bound) take line breaks and tabs.
const ONE_LINE_CHARS: usize = 200;

/// The longest key of a map's entry, in characters: at 4 UTF-8 bytes each, within
/// DynamoDB's 64 KB bound on a name (what `chart check` counts a key at).
pub(super) const MAP_KEY_CHARS: usize = 16 * 1024;

/// The attribute an input field's path ends at (`lines[1].quantity` → `quantity`): what
/// a refusal of a number names.
fn attribute(field: &str) -> &str {
    field.rsplit('.').next().unwrap_or(field)
}

/// The input object of one entry of a map of `of`: its key, and its value typed as the
/// map's elements are.
pub fn map_entry_type(of: &Type) -> InputObject {
    InputObject::new(map_entry_input(of))
        .description("One entry of a map: a key (one line, not blank) and its value.")
        .field(InputValue::new("key", TypeRef::named_nn(TypeRef::STRING)))
        .field(InputValue::new("value", type_ref(of, true)))
}

/// Whether a mutation can take an attribute of this type (a counter is kept by the
/// writes).
pub fn writable(ty: &Type) -> bool {
    match ty {
        Type::Counter => false,
        Type::List { of, .. } | Type::Map { of, .. } => writable(of),
        _ => true,
    }
}

/// An attribute's GraphQL input type.
pub fn type_ref(ty: &Type, required: bool) -> TypeRef {
    let named = |ty: &Type| -> String {
        match ty {
            Type::Int { .. } | Type::Counter => TypeRef::INT.into(),
            Type::Boolean => TypeRef::BOOLEAN.into(),
            Type::Cents { .. } => "Cents".into(),
            Type::Enum { name, .. } => name.clone(),
            Type::Shape(name) => shape_input(name),
            _ => TypeRef::STRING.into(),
        }
    };
    match ty {
        Type::List { of, .. } if required => TypeRef::named_nn_list_nn(named(of)),
        Type::List { of, .. } => TypeRef::named_nn_list(named(of)),
        // A map is given whole, as the list of its entries.
        Type::Map { of, .. } if required => TypeRef::named_nn_list_nn(map_entry_input(of)),
        Type::Map { of, .. } => TypeRef::named_nn_list(map_entry_input(of)),
        _ if required => TypeRef::named_nn(named(ty)),
        _ => TypeRef::named(named(ty)),
    }
}

/// A value a client sent for `field`, of type `ty`, as the item stores it; a clear
/// `BAD_USER_INPUT` naming the field when it is not one.
pub fn stored(
    chart: &Chart,
    field: &str,
    ty: &Type,
    v: &Value,
) -> Result<AttributeValue, ApiError> {
    let bad = |m: String| ApiError::bad_input(field, m);
    Ok(match (ty, v) {
        (
            Type::String {
                max_length,
                one_line,
            },
            Value::String(s),
        ) => {
            let max = max_length.unwrap_or(DEFAULT_MAX_CHARS);
            let multiline = match one_line {
                Some(one) => !one,
                None => max_length.is_none_or(|m| m > ONE_LINE_CHARS),
            };
            AttributeValue::S(text(field, s, max, multiline)?)
        }
        (Type::Int { min, max }, Value::Number(n)) => {
            let n = n
                .as_i64()
                .ok_or_else(|| bad(format!("{field} must be a whole number")))?;
            // GraphQL's Int is 32 bits; inside an input object a value past them passes
            // validation and is refused here.
            if i32::try_from(n).is_err() {
                return Err(bad(format!("{field} is not a 32-bit Int")));
            }
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(bad(format!(
                    "{} must be {}",
                    attribute(field),
                    match (min, max) {
                        (Some(a), Some(b)) => format!("from {a} to {b}"),
                        (Some(a), None) => format!("{a} or more"),
                        (None, Some(b)) => format!("{b} or less"),
                        (None, None) => String::new(),
                    }
                )));
            }
            AttributeValue::N(n.to_string())
        }
        (Type::Boolean, Value::Boolean(b)) => AttributeValue::Bool(*b),
        (Type::Timestamp(form), Value::String(s)) => {
            let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                .ok()
                // A form of the table's own is taken as its own text too (`2026-01-31`).
                .or_else(|| {
                    (*form != crate::chart::types::TimeForm::Rfc3339)
                        .then(|| crate::chart::types::read_time(s))
                        .flatten()
                })
                .ok_or_else(|| {
                    bad(format!(
                        "{field} must be an RFC 3339 time (`2026-01-31T12:00:00Z`)"
                    ))
                })?;
            form.of(t)
                .ok_or_else(|| bad(format!("{field} is out of range")))?
        }
        (Type::Expiry, Value::String(s)) => {
            let t = crate::chart::types::rfc3339_to_epoch(s).ok_or_else(|| {
                bad(format!(
                    "{field} must be an RFC 3339 time (`2026-01-31T12:00:00Z`)"
                ))
            })?;
            if t <= time::OffsetDateTime::now_utc().unix_timestamp() {
                return Err(bad(format!("{} must be in the future", attribute(field))));
            }
            AttributeValue::N(t.to_string())
        }
        (Type::Cents { min }, _) => {
            // The `Cents` scalar's own parsing, and its words ("Failed to parse "Cents":
            // … is not a whole number of cents …").
            let crate::graphql::scalars::Cents(n) =
                <crate::graphql::scalars::Cents as async_graphql::ScalarType>::parse(v.clone())
                    .map_err(|e| bad(e.into_server_error(Default::default()).message))?;
            if let Some(m) = min.filter(|m| n < *m) {
                return Err(bad(format!("{} must be {m} or more", attribute(field))));
            }
            AttributeValue::N(n.to_string())
        }
        (Type::Kind(k), Value::String(s)) => AttributeValue::S(
            k.validate("value", s)
                .map_err(|m| bad(m.replacen("value", field, 1)))?,
        ),
        (Type::Enum { name, values }, Value::Enum(e)) if values.iter().any(|v| v == e.as_str()) => {
            let _ = name;
            AttributeValue::S(e.to_string())
        }
        (Type::Enum { values, .. }, Value::String(s)) if values.contains(s) => {
            AttributeValue::S(s.clone())
        }
        (Type::List { of, max_items }, Value::List(items)) => {
            if let Some(m) = max_items.filter(|m| items.len() > *m) {
                return Err(bad(format!(
                    "{field} holds at most {m} items, got {}",
                    items.len()
                )));
            }
            AttributeValue::L(
                items
                    .iter()
                    .map(|i| stored(chart, field, of, i))
                    .collect::<Result<_, _>>()?,
            )
        }
        (Type::Map { of, max_items }, Value::List(entries)) => {
            if let Some(most) = max_items.filter(|m| entries.len() > *m) {
                return Err(bad(format!(
                    "{field} holds at most {most} entries, got {}",
                    entries.len()
                )));
            }
            let key_field = format!("{field}.key");
            let mut m = std::collections::HashMap::with_capacity(entries.len());
            for entry in entries {
                let (key, value) = match entry {
                    Value::Object(o) => (o.get("key"), o.get("value")),
                    _ => (None, None),
                };
                let key = match key {
                    Some(Value::String(k)) => text(&key_field, k, MAP_KEY_CHARS, false)?,
                    _ => {
                        return Err(ApiError::bad_input(
                            &key_field,
                            format!("{key_field} is required"),
                        ))
                    }
                };
                let value = match value {
                    None | Some(Value::Null) => {
                        let path = format!("{field}.value");
                        return Err(ApiError::bad_input(&path, format!("{path} is required")));
                    }
                    // Each value checked as its type is, under the map's name (as a list's
                    // members are).
                    Some(v) => stored(chart, field, of, v)?,
                };
                if m.insert(key.clone(), value).is_some() {
                    return Err(ApiError::bad_input(
                        &key_field,
                        format!("{field} holds the key `{key}` twice"),
                    ));
                }
            }
            AttributeValue::M(m)
        }
        (Type::Shape(name), Value::Object(o)) => {
            let mut m = std::collections::HashMap::new();
            for (f, a) in chart.shapes.get(name).into_iter().flatten() {
                let path = format!("{field}.{f}");
                match o.get(f.as_str()) {
                    None | Some(Value::Null) if a.optional => {}
                    None | Some(Value::Null) => {
                        return Err(ApiError::bad_input(&path, format!("{path} is required")))
                    }
                    Some(v) => {
                        m.insert(f.clone(), stored(chart, &path, &a.ty, v)?);
                    }
                }
            }
            AttributeValue::M(m.into_iter().collect())
        }
        _ => return Err(bad(format!("{field} is not a {}", ty.describe()))),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use async_graphql::indexmap::IndexMap;
    use async_graphql::Name;

    use super::*;
    use crate::graphql::input::bad_input_field;

    /// A map's input: its entries, each `{key, value}`.
    fn entries(pairs: &[(&str, i32)]) -> Value {
        Value::List(
            pairs
                .iter()
                .map(|(k, v)| {
                    let mut entry = IndexMap::new();
                    entry.insert(Name::new("key"), Value::String((*k).to_owned()));
                    entry.insert(Name::new("value"), Value::from(*v));
                    Value::Object(entry)
                })
                .collect(),
        )
    }

    fn scores() -> Type {
        Type::Map {
            of: Box::new(Type::Int {
                min: Some(0),
                max: Some(10),
            }),
            max_items: Some(3),
        }
    }

    /// A map is an input of every mutation: the list of its entries, non-null where the
    /// attribute is required.
    #[test]
    fn a_map_is_given_as_the_list_of_its_entries() {
        assert!(writable(&scores()));
        assert_eq!(type_ref(&scores(), true).to_string(), "[IntEntryInput!]!");
        assert_eq!(type_ref(&scores(), false).to_string(), "[IntEntryInput!]");
        let counters = Type::Map {
            of: Box::new(Type::Counter),
            max_items: None,
        };
        assert!(!writable(&counters), "a counter is the writes' own");
    }

    /// Each entry's key is one line, not blank and given once, each value is checked as
    /// the map's elements are, and the whole is one map; a refusal names the field.
    #[test]
    fn a_maps_entries_are_checked_and_stored_as_one_map() {
        let chart = crate::chart::builtin();
        let got = stored(
            &chart,
            "scores",
            &scores(),
            &entries(&[("bo", 3), ("al", 10)]),
        )
        .unwrap();
        let want = HashMap::from([
            ("al".to_owned(), AttributeValue::N("10".into())),
            ("bo".to_owned(), AttributeValue::N("3".into())),
        ]);
        assert_eq!(got, AttributeValue::M(want));
        // No entries: an empty map, as DynamoDB holds one.
        assert_eq!(
            stored(&chart, "scores", &scores(), &entries(&[])).unwrap(),
            AttributeValue::M(HashMap::new())
        );
        for (bad, field) in [
            (entries(&[(" ", 1)]), "scores.key"),
            (entries(&[("a\nb", 1)]), "scores.key"),
            (entries(&[("a", 1), ("a", 2)]), "scores.key"),
            (entries(&[("a", 11)]), "scores"),
            (entries(&[("a", 1), ("b", 1), ("c", 1), ("d", 1)]), "scores"),
        ] {
            let e = stored(&chart, "scores", &scores(), &bad).unwrap_err();
            assert_eq!(bad_input_field(e).as_deref(), Some(field), "{bad}");
        }
        let long = "k".repeat(MAP_KEY_CHARS + 1);
        let e = stored(&chart, "scores", &scores(), &entries(&[(long.as_str(), 1)])).unwrap_err();
        assert_eq!(bad_input_field(e).as_deref(), Some("scores.key"));
        // Anything but a list of entries is no map.
        let e = stored(&chart, "scores", &scores(), &Value::String("{}".into())).unwrap_err();
        assert_eq!(bad_input_field(e).as_deref(), Some("scores"));
    }
}
