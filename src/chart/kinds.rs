//! The chart's built-in identifier kinds (`slug`, `username`, `email`, `ulid`, `token`,
//! [`super::types::Kind`]) as validated newtypes ([`Slug`], [`Username`], [`Email`], [`Id`],
//! [`LineNo`], [`ClientToken`]), and the tenant a token names ([`Tenant`]). A value that
//! could forge another key (it contains `#` or a control character) or that would break
//! the sort order cannot be built, so every key rendered from one is well formed by
//! construction and no request is ever made with a bad one.

use std::fmt;

/// Longest organization slug or username.
pub const MAX_NAME_LEN: usize = 40;
/// Longest email address (RFC 5321's path limit less the angle brackets).
pub const MAX_EMAIL_LEN: usize = 254;
/// Highest order line number: line numbers are zero-padded to three digits.
pub const MAX_LINE_NO: u16 = 999;
/// Longest client token of an idempotent order placement.
pub const MAX_CLIENT_TOKEN_LEN: usize = 64;

/// An identifier that cannot become a key. Clients see `BAD_USER_INPUT`, naming `field`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The value is empty.
    #[error("{field} must not be empty")]
    Empty { field: &'static str },
    /// The value is longer than the key design allows.
    #[error("{field} must be at most {max} characters long")]
    TooLong { field: &'static str, max: usize },
    /// The value contains `#` or a control character, so it could forge another key.
    #[error("{field} must not contain `#` or control characters")]
    ForbiddenCharacter { field: &'static str },
    /// The value has the wrong shape; `expected` says which.
    #[error("{field} must be {expected}")]
    Malformed {
        field: &'static str,
        expected: &'static str,
    },
}

impl KeyError {
    /// The input field the bad value came from.
    pub fn field(&self) -> &'static str {
        match self {
            KeyError::Empty { field }
            | KeyError::TooLong { field, .. }
            | KeyError::ForbiddenCharacter { field }
            | KeyError::Malformed { field, .. } => field,
        }
    }
}

fn forges_key(c: char) -> bool {
    c == '#' || c.is_control()
}

/// The common shape of slugs and usernames: lowercase `[a-z0-9][a-z0-9-]*`, 1..=40 chars.
fn check_name(field: &'static str, value: &str) -> Result<(), KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    if value.len() > MAX_NAME_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_NAME_LEN,
        });
    }
    let bytes = value.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !alnum(&bytes[0]) || !bytes.iter().all(|b| alnum(b) || *b == b'-') {
        return Err(KeyError::Malformed {
            field,
            expected: "lowercase letters, digits and `-`, starting with a letter or digit",
        });
    }
    Ok(())
}

/// Validates an organization slug.
pub fn validate_slug(field: &'static str, value: &str) -> Result<Slug, KeyError> {
    check_name(field, value)?;
    Ok(Slug(value.to_owned()))
}

/// The most bytes a tenant's name may hold, whatever its kind in the chart.
pub const MAX_TENANT_LEN: usize = 256;

/// Validates the name of a tenant as a token or a subscription gives it: of whatever kind
/// the chart's tenant attribute is (a slug in the built-in chart, `[A-Z]{3}` in
/// another), so held only to what no kind allows: empty, longer than
/// [`MAX_TENANT_LEN`], whitespace, `#` or a control character. A name no item holds sees
/// nothing.
pub fn validate_tenant(field: &'static str, value: &str) -> Result<Tenant, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.len() > MAX_TENANT_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_TENANT_LEN,
        });
    }
    if value.chars().any(|c| forges_key(c) || c.is_whitespace()) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    Ok(Tenant(value.to_owned()))
}

/// Validates a username (same rules as a slug).
pub fn validate_username(field: &'static str, value: &str) -> Result<Username, KeyError> {
    check_name(field, value)?;
    Ok(Username(value.to_owned()))
}

/// Validates an email address and returns it lowercased and in Unicode's composed form
/// (NFC), as it is stored and keyed.
pub fn validate_email(field: &'static str, value: &str) -> Result<Email, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    // One address, one key: `é` typed as one character or as `e` and a combining accent
    // is the same address, and so is its marker.
    let email = icu_normalizer::ComposingNormalizerBorrowed::new_nfc()
        .normalize(&value.to_lowercase())
        .into_owned();
    if email.len() > MAX_EMAIL_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_EMAIL_LEN,
        });
    }
    let malformed = KeyError::Malformed {
        field,
        expected: "an email address: one `@` between non-empty parts, no whitespace",
    };
    if email.chars().any(char::is_whitespace) {
        return Err(malformed);
    }
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            Ok(Email(email))
        }
        _ => Err(malformed),
    }
}

/// Validates an entity id: a ULID in its canonical text form (26 characters of
/// uppercase Crockford base32), so one id has exactly one key.
pub fn validate_id(field: &'static str, value: &str) -> Result<Id, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    let malformed = KeyError::Malformed {
        field,
        expected: "a ULID: 26 characters of uppercase Crockford base32",
    };
    if value.len() != ulid::ULID_LEN {
        return Err(malformed);
    }
    match ulid::Ulid::from_string(value) {
        Ok(u) if u.to_string() == value => Ok(Id(u)),
        _ => Err(malformed),
    }
}

/// Validates a client token (an idempotency key chosen by the client): 1 to 64 characters
/// of `[A-Za-z0-9_-]`, so that it cannot forge a key.
pub fn validate_client_token(field: &'static str, value: &str) -> Result<ClientToken, KeyError> {
    if value.is_empty() {
        return Err(KeyError::Empty { field });
    }
    if value.chars().any(forges_key) {
        return Err(KeyError::ForbiddenCharacter { field });
    }
    if value.len() > MAX_CLIENT_TOKEN_LEN {
        return Err(KeyError::TooLong {
            field,
            max: MAX_CLIENT_TOKEN_LEN,
        });
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(KeyError::Malformed {
            field,
            expected: "letters, digits, `_` and `-`",
        });
    }
    Ok(ClientToken(value.to_owned()))
}

/// Validates an order line number (1..=999, so that three digits sort numerically).
pub fn validate_line_no(field: &'static str, value: u16) -> Result<LineNo, KeyError> {
    if (1..=MAX_LINE_NO).contains(&value) {
        Ok(LineNo(value))
    } else {
        Err(KeyError::Malformed {
            field,
            expected: "a line number from 1 to 999",
        })
    }
}

/// A validated string identifier: serde goes through validation both ways in, so a
/// record read from the table or from a client can never carry a key-forging value.
macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $validate:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            #[doc = concat!("Validates `value`; errors name the field `", $field, "`.")]
            pub fn parse(value: &str) -> Result<Self, KeyError> {
                $validate($field, value)
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = KeyError;
            fn try_from(value: String) -> Result<Self, KeyError> {
                $validate($field, &value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

name_type!(
    /// The tenant a caller belongs to (its token's claim), of whatever kind the chart
    /// names its tenant by ([`validate_tenant`]).
    Tenant,
    validate_tenant,
    "org"
);

impl From<&Slug> for Tenant {
    fn from(slug: &Slug) -> Tenant {
        Tenant(slug.as_str().to_owned())
    }
}

impl PartialEq<Slug> for Tenant {
    fn eq(&self, other: &Slug) -> bool {
        self.0 == other.as_str()
    }
}

name_type!(
    /// An organization slug: lowercase `[a-z0-9][a-z0-9-]*`, 1..=40 characters.
    Slug,
    validate_slug,
    "org"
);
name_type!(
    /// A username, unique within its organization; same rules as [`Slug`].
    Username,
    validate_username,
    "username"
);
name_type!(
    /// A lowercased email address in Unicode's composed form (NFC), unique across the table.
    Email,
    validate_email,
    "email"
);
name_type!(
    /// A client's idempotency token for placing an order: `[A-Za-z0-9_-]`, 1..=64 chars.
    ClientToken,
    validate_client_token,
    "clientToken"
);

/// A ticket or order id: a ULID, so ids sort in creation order and never collide.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Id(ulid::Ulid);

impl Id {
    /// A fresh id for a record created now.
    pub fn generate() -> Self {
        Id(ulid::Ulid::new())
    }
    /// An id from its parts: used for deterministic data (the demo set, tests).
    pub fn from_parts(timestamp_ms: u64, random: u128) -> Self {
        Id(ulid::Ulid::from_parts(timestamp_ms, random))
    }
    /// Validates `value`; errors name the field `id`.
    pub fn parse(value: &str) -> Result<Self, KeyError> {
        validate_id("id", value)
    }
    /// Milliseconds since the Unix epoch when the id was made.
    pub fn timestamp_ms(&self) -> u64 {
        self.0.timestamp_ms()
    }
}

impl TryFrom<String> for Id {
    type Error = KeyError;
    fn try_from(value: String) -> Result<Self, KeyError> {
        validate_id("id", &value)
    }
}

impl From<Id> for String {
    fn from(value: Id) -> String {
        value.0.to_string()
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// An order line number, 1..=999, written zero-padded to three digits in keys.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "u16", into = "u16")]
pub struct LineNo(u16);

impl LineNo {
    pub fn new(value: u16) -> Result<Self, KeyError> {
        validate_line_no("lineNo", value)
    }
    pub fn get(self) -> u16 {
        self.0
    }
}

impl TryFrom<u16> for LineNo {
    type Error = KeyError;
    fn try_from(value: u16) -> Result<Self, KeyError> {
        LineNo::new(value)
    }
}

impl From<LineNo> for u16 {
    fn from(value: LineNo) -> u16 {
        value.0
    }
}

impl fmt::Display for LineNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:03}", self.0)
    }
}
