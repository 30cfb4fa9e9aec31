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
use crate::store::AttributeValue;

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
    /// A moment, stored in its declared form ([`TimeForm`]); RFC 3339 to GraphQL.
    Timestamp(TimeForm),
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
            Type::Timestamp(TimeForm::Rfc3339) => "timestamp".into(),
            Type::Timestamp(f) => format!("timestamp ({})", f.name()),
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
            Type::Timestamp(form) => {
                if width.is_some() {
                    return Err("only an integer takes a width".into());
                }
                let form = *form;
                if form.width().is_none() {
                    return Err(format!(
                        "a timestamp in a key needs a form of one width, so that byte order is \
                         time order: `form = \"seconds\"`, `\"millis\"`, `\"local-seconds\"` or \
                         `\"date\"` (it is `{}`)",
                        form.name()
                    ));
                }
                Ok(Domain {
                    bytes: (b'-', b'Z'),
                    accepts: Arc::new(move |t| {
                        form.store(t)
                            .is_some_and(|v| matches!(v, AttributeValue::S(s) if s == t))
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

/// How a timestamp is stored: RFC 3339 as given (the default), or a form of its own that
/// other tools' tables keep: to the second or millisecond (`Z`), to the second without a
/// zone (UTC), a date, or epoch seconds or milliseconds (numbers). GraphQL reads and gives
/// RFC 3339 whatever the form (a date as a date).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeForm {
    #[default]
    Rfc3339,
    /// `2026-01-31T12:00:00Z`
    Seconds,
    /// `2026-01-31T12:00:00.000Z`
    Millis,
    /// `2026-01-31T12:00:00`, UTC.
    LocalSeconds,
    /// `2026-01-31`
    Date,
    /// Seconds since the Unix epoch, a number.
    EpochSeconds,
    /// Milliseconds since the Unix epoch, a number.
    EpochMillis,
}

impl TimeForm {
    pub const NAMES: [&'static str; 7] = [
        "rfc3339",
        "seconds",
        "millis",
        "local-seconds",
        "date",
        "epoch-seconds",
        "epoch-millis",
    ];

    pub fn parse(name: &str) -> Option<TimeForm> {
        Some(match name {
            "rfc3339" => TimeForm::Rfc3339,
            "seconds" => TimeForm::Seconds,
            "millis" => TimeForm::Millis,
            "local-seconds" => TimeForm::LocalSeconds,
            "date" => TimeForm::Date,
            "epoch-seconds" => TimeForm::EpochSeconds,
            "epoch-millis" => TimeForm::EpochMillis,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether it is stored as a number.
    pub fn is_number(self) -> bool {
        matches!(self, TimeForm::EpochSeconds | TimeForm::EpochMillis)
    }

    /// Its one width, where it has one (so byte order is time order, from year 0 to 9999).
    pub fn width(self) -> Option<usize> {
        match self {
            TimeForm::Seconds => Some(20),
            TimeForm::Millis => Some(24),
            TimeForm::LocalSeconds => Some(19),
            TimeForm::Date => Some(10),
            _ => None,
        }
    }

    /// A time as given (RFC 3339, or this form's own text) as this form stores it; `None`
    /// when it is no time.
    pub fn store(self, text: &str) -> Option<AttributeValue> {
        let t = read_time(text)?;
        // RFC 3339 is kept as given (as a sample or the clock wrote it).
        if self == TimeForm::Rfc3339
            && time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .is_ok()
        {
            return Some(AttributeValue::S(text.to_owned()));
        }
        self.of(t)
    }

    /// A moment as this form stores it.
    pub fn of(self, t: time::OffsetDateTime) -> Option<AttributeValue> {
        use time::macros::format_description as fd;
        let t = t.to_offset(time::UtcOffset::UTC);
        let s = |f: &[time::format_description::FormatItem<'_>]| {
            t.format(f).ok().map(AttributeValue::S)
        };
        match self {
            TimeForm::Rfc3339 => t
                .format(&time::format_description::well_known::Rfc3339)
                .ok()
                .map(AttributeValue::S),
            TimeForm::Seconds => s(fd!("[year]-[month]-[day]T[hour]:[minute]:[second]Z")),
            TimeForm::Millis => s(fd!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
            )),
            TimeForm::LocalSeconds => s(fd!("[year]-[month]-[day]T[hour]:[minute]:[second]")),
            TimeForm::Date => s(fd!("[year]-[month]-[day]")),
            TimeForm::EpochSeconds => Some(AttributeValue::N(t.unix_timestamp().to_string())),
            TimeForm::EpochMillis => Some(AttributeValue::N(
                (t.unix_timestamp_nanos() / 1_000_000).to_string(),
            )),
        }
    }

    /// What GraphQL answers for a value stored in this form: RFC 3339 (a date as it is).
    pub fn answer(self, v: &AttributeValue) -> Option<String> {
        match (self, v) {
            // As given.
            (TimeForm::Rfc3339, AttributeValue::S(s)) => Some(s.clone()),
            (TimeForm::Date, AttributeValue::S(s)) => Some(s.clone()),
            (TimeForm::EpochSeconds, AttributeValue::N(n)) => epoch_to_rfc3339(n.parse().ok()?),
            (TimeForm::EpochMillis, AttributeValue::N(n)) => {
                let ms: i128 = n.parse().ok()?;
                time::OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000)
                    .ok()?
                    .format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }
            (_, AttributeValue::S(s)) if !self.is_number() => {
                let t = read_time(s)?;
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }
            _ => None,
        }
    }

    /// Whether `v` is a value stored in this form.
    pub fn fits(self, v: &AttributeValue) -> bool {
        match (self, v) {
            (TimeForm::Rfc3339, AttributeValue::S(_)) => true,
            (f, AttributeValue::N(n)) if f.is_number() => n.parse::<i64>().is_ok(),
            (f, AttributeValue::S(s)) if !f.is_number() => f
                .store(s)
                .is_some_and(|x| matches!(x, AttributeValue::S(y) if y == *s)),
            _ => false,
        }
    }
}

/// A moment from text: RFC 3339, or ISO 8601 without a zone (UTC), to the second or a
/// fraction of it, or a date (its midnight, UTC).
pub fn read_time(text: &str) -> Option<time::OffsetDateTime> {
    use time::macros::format_description as fd;
    if let Ok(t) = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
    {
        return Some(t);
    }
    if let Ok(t) = time::PrimitiveDateTime::parse(
        text,
        fd!("[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]"),
    ) {
        return Some(t.assume_utc());
    }
    time::Date::parse(text, fd!("[year]-[month]-[day]"))
        .ok()
        .map(|d| d.midnight().assume_utc())
}
