//! The types of a chart's attributes, and what each allows in a key.
//!
//! Scalars (`string`, `int`, `boolean`, `timestamp`, `cents`, `counter`), identifier kinds
//! (the built-in `slug`, `username`, `email`, `ulid`, `token`, and the chart's own, by
//! pattern), the chart's enums, complex attributes (`list` and `map` of any type, a
//! `shape`'s fields). Only identifier kinds, enums and bounded non-negative integers may
//! appear in a key: each value is validated before a key is built from it, and none can
//! hold the separator `#` or a control character, so no value can forge another key.

use std::sync::Arc;

use regex::Regex;

use super::kinds;
use super::template::Domain;

/// An identifier kind: the built-in ones reuse the rules of [`super::kinds`].
#[derive(Debug, Clone)]
pub enum Kind {
    Slug,
    Username,
    Email,
    Ulid,
    Token,
    Own {
        name: String,
        pattern: Arc<Regex>,
        max_length: usize,
        /// What a value must be, as every refusal says it.
        message: Option<String>,
    },
}

impl Kind {
    pub fn builtin(name: &str) -> Option<Kind> {
        Some(match name {
            "slug" => Kind::Slug,
            "username" => Kind::Username,
            "email" => Kind::Email,
            "ulid" => Kind::Ulid,
            "token" => Kind::Token,
            _ => return None,
        })
    }

    pub fn name(&self) -> &str {
        match self {
            Kind::Slug => "slug",
            Kind::Username => "username",
            Kind::Email => "email",
            Kind::Ulid => "ulid",
            Kind::Token => "token",
            Kind::Own { name, .. } => name,
        }
    }

    /// The value as it goes into a key (an email lowercased), or why it cannot.
    pub fn validate(&self, field: &'static str, value: &str) -> Result<String, String> {
        let msg = |e: kinds::KeyError| e.to_string();
        match self {
            Kind::Slug => kinds::validate_slug(field, value)
                .map(|v| v.to_string())
                .map_err(msg),
            Kind::Username => kinds::validate_username(field, value)
                .map(|v| v.to_string())
                .map_err(msg),
            Kind::Email => kinds::validate_email(field, value)
                .map(|v| v.to_string())
                .map_err(msg),
            Kind::Ulid => kinds::validate_id(field, value)
                .map(|v| v.to_string())
                .map_err(msg),
            Kind::Token => kinds::validate_client_token(field, value)
                .map(|v| v.to_string())
                .map_err(msg),
            Kind::Own {
                message: Some(message),
                pattern,
                max_length,
                ..
            } => {
                if value.is_empty()
                    || value.chars().any(|c| c == '#' || c.is_control())
                    || value.len() > *max_length
                    || !pattern.is_match(value)
                {
                    return Err(format!("{field} must be {message}"));
                }
                Ok(value.to_owned())
            }
            Kind::Own {
                name,
                pattern,
                max_length,
                ..
            } => {
                if value.is_empty() {
                    return Err(format!("{field} must not be empty"));
                }
                if value.chars().any(|c| c == '#' || c.is_control()) {
                    return Err(format!(
                        "{field} must not contain `#` or control characters"
                    ));
                }
                if value.len() > *max_length {
                    return Err(format!(
                        "{field} must be at most {max_length} characters long"
                    ));
                }
                if !pattern.is_match(value) {
                    return Err(format!("{field} must be a {name} (`{}`)", pattern.as_str()));
                }
                Ok(value.to_owned())
            }
        }
    }

    /// The longest value it takes, in bytes (each is ASCII but an email's or a chart's
    /// own kind's, whose `max_length` counts bytes).
    pub fn max_len(&self) -> usize {
        match self {
            Kind::Slug | Kind::Username => kinds::MAX_NAME_LEN,
            Kind::Email => kinds::MAX_EMAIL_LEN,
            Kind::Ulid => ulid::ULID_LEN,
            Kind::Token => kinds::MAX_CLIENT_TOKEN_LEN,
            Kind::Own { max_length, .. } => *max_length,
        }
    }

    /// The bytes its values are made of.
    fn bytes(&self) -> (u8, u8) {
        match self {
            // [a-z0-9-], [A-Za-z0-9_-]
            Kind::Slug | Kind::Username | Kind::Token => (b'-', b'z'),
            // Crockford base32, upper case.
            Kind::Ulid => (b'0', b'Z'),
            // Anything but whitespace, `#` and control characters (UTF-8 included).
            Kind::Email => (b'!', 0xF4),
            Kind::Own { .. } => (b' ', 0xF4),
        }
    }
}

/// The longest string an attribute without `max_length` takes (characters): the item's
/// 400 KB bound holds the rest.
pub const DEFAULT_MAX_CHARS: usize = 100_000;

#[derive(Debug, Clone)]
pub enum Type {
    String {
        max_length: Option<usize>,
        /// Whether line breaks are refused (default: for strings of up to 200 characters).
        one_line: Option<bool>,
    },
    Int {
        min: Option<i64>,
        max: Option<i64>,
    },
    Boolean,
    Timestamp,
    /// When an item expires: epoch seconds, as DynamoDB's Time to Live reads them; an
    /// RFC 3339 time to GraphQL.
    Expiry,
    /// Whole cents; `min`: the least it may be (a price: 0).
    Cents {
        min: Option<i64>,
    },
    /// A non-negative count kept by writes; a missing one reads as 0.
    Counter,
    Kind(Kind),
    Enum {
        name: String,
        values: Vec<String>,
    },
    Shape(String),
    List {
        of: Box<Type>,
        max_items: Option<usize>,
    },
    Map {
        of: Box<Type>,
        max_items: Option<usize>,
    },
}

/// Epoch seconds as an RFC 3339 UTC time (`2026-01-31T12:00:00Z`); `None` out of range.
pub fn epoch_to_rfc3339(seconds: i64) -> Option<String> {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()?
        .format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// An RFC 3339 time as epoch seconds (its fraction dropped); `None` when it is none.
pub fn rfc3339_to_epoch(s: &str) -> Option<i64> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(time::OffsetDateTime::unix_timestamp)
}

impl Type {
    pub fn describe(&self) -> String {
        match self {
            Type::String { .. } => "string".into(),
            Type::Int { .. } => "int".into(),
            Type::Boolean => "boolean".into(),
            Type::Timestamp => "timestamp".into(),
            Type::Expiry => "expiry".into(),
            Type::Cents { .. } => "cents".into(),
            Type::Counter => "counter".into(),
            Type::Kind(k) => k.name().into(),
            Type::Enum { name, .. } => name.clone(),
            Type::Shape(name) => name.clone(),
            Type::List { of, .. } => format!("list of {}", of.describe()),
            Type::Map { of, .. } => format!("map of {}", of.describe()),
        }
    }

    /// The domain of its values in a key with `width` (an integer's padding), or why it
    /// may not be in a key.
    pub fn key_domain(&self, width: Option<usize>, in_sort_key: bool) -> Result<Domain, String> {
        match self {
            Type::Kind(kind) => {
                if width.is_some() {
                    return Err("only an integer takes a width".into());
                }
                let k = kind.clone();
                Ok(Domain {
                    bytes: kind.bytes(),
                    accepts: Arc::new(move |t| k.validate("value", t).is_ok_and(|v| v == t)),
                })
            }
            Type::Enum { values, .. } => {
                if width.is_some() {
                    return Err("only an integer takes a width".into());
                }
                let lo = values.iter().flat_map(|v| v.bytes()).min().unwrap_or(b'A');
                let hi = values.iter().flat_map(|v| v.bytes()).max().unwrap_or(b'Z');
                let values = values.clone();
                Ok(Domain {
                    bytes: (lo, hi),
                    accepts: Arc::new(move |t| values.iter().any(|v| v == t)),
                })
            }
            Type::Int { min, max } => {
                let (Some(min), Some(max)) = (*min, *max) else {
                    return Err("an integer in a key needs both `min` and `max`".into());
                };
                if min < 0 {
                    return Err(
                        "an integer in a key must not be negative (`-` sorts before the digits)"
                            .into(),
                    );
                }
                match width {
                    None if in_sort_key => {
                        return Err(format!(
                            "an integer in a sort key needs a width (`:0{}`), or 10 sorts before 9",
                            max.to_string().len()
                        ))
                    }
                    Some(w) if max.to_string().len() > w => {
                        return Err(format!("its `max` ({max}) does not fit in {w} digits"))
                    }
                    _ => {}
                }
                Ok(Domain {
                    bytes: (b'0', b'9'),
                    accepts: Arc::new(move |t| {
                        let shape = match width {
                            Some(w) => t.len() == w,
                            None => t == "0" || !t.starts_with('0'),
                        };
                        shape && t.parse::<i64>().is_ok_and(|n| (min..=max).contains(&n))
                    }),
                })
            }
            Type::String { .. } => Err(
                "a free string could hold `#` and forge another key: declare an identifier kind \
                 (`[kinds.NAME]` with a pattern) or an enum"
                    .into(),
            ),
            other => Err(format!("a {} cannot be part of a key", other.describe())),
        }
    }
}
