//! The checks every mutation makes on its input before any request: identifiers with the
//! validators of [`crate::keys`], texts non-blank and bounded, versions, ids plain or
//! global, and the size of every item against DynamoDB's 400 KB limit. The first problem
//! is the answer: `BAD_USER_INPUT` with `extensions.field` naming the input field.

use super::context::RequestContext;
use super::errors::ApiError;
use crate::keys::Slug;
use crate::model::Record;
use crate::store::validate::item_within_size;

/// Longest SKU, in characters.
pub const MAX_SKU_CHARS: usize = 64;
/// Longest order line description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

pub type ApiResult<T> = std::result::Result<T, ApiError>;

/// Whether a text may hold `c`: single-line texts take no control character at all,
/// multi-line ones take line breaks and tabs.
fn allowed(c: char, multiline: bool) -> bool {
    !c.is_control() || (multiline && matches!(c, '\n' | '\r' | '\t'))
}

/// A free text: not blank, at most `max` characters, no control characters (but line
/// breaks and tabs when `multiline`). Stored as given.
pub fn text(field: &str, value: &str, max: usize, multiline: bool) -> ApiResult<String> {
    if value.trim().is_empty() {
        return Err(ApiError::bad_input(
            field,
            format!("{field} must not be blank"),
        ));
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(ApiError::bad_input(
            field,
            format!("{field} must be at most {max} characters long, got {chars}"),
        ));
    }
    if !value.chars().all(|c| allowed(c, multiline)) {
        let what = if multiline {
            "control characters other than line breaks and tabs"
        } else {
            "control characters or line breaks"
        };
        return Err(ApiError::bad_input(
            field,
            format!("{field} must not contain {what}"),
        ));
    }
    Ok(value.to_owned())
}

/// An ISO 4217 code: three uppercase ASCII letters.
pub fn currency(field: &str, value: &str) -> ApiResult<String> {
    if value.len() == 3 && value.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(value.to_owned())
    } else {
        Err(ApiError::bad_input(
            field,
            format!("{field} must be an ISO 4217 code: three uppercase letters, like USD"),
        ))
    }
}

/// The item a record becomes fits in one DynamoDB item (400 KB).
pub fn fits<R: Record>(field: &str, record: &R) -> ApiResult<()> {
    item_within_size(&record.to_item()).map_err(|_| {
        ApiError::bad_input(
            field,
            "too large: the record would exceed DynamoDB's 400 KB item limit",
        )
    })
}

/// `NOT_FOUND` with `field` when the caller may not see organization `org`: exactly what
/// the write would answer if it did not exist, and nothing is read or written.
pub fn visible(rc: &RequestContext, org: &Slug, field: &'static str) -> ApiResult<()> {
    if rc.sees(org) {
        Ok(())
    } else {
        Err(ApiError::Missing {
            field: field.into(),
        })
    }
}

/// The field a `BAD_USER_INPUT` names, for the tests of the checks.
#[cfg(test)]
pub(super) fn bad_input_field(e: ApiError) -> Option<String> {
    match e {
        ApiError::BadUserInput { field, .. } => field,
        other => panic!("not BAD_USER_INPUT: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_non_blank_bounded_and_single_line_unless_multiline() {
        assert_eq!(text("title", "Anvil", 5, false).unwrap(), "Anvil");
        assert_eq!(text("title", "Ünïcødé", 7, false).unwrap(), "Ünïcødé");
        for bad in ["", "   ", "Anvils", "a\nb", "a\u{0}b"] {
            let e = text("title", bad, 5, false).unwrap_err();
            assert_eq!(bad_input_field(e).as_deref(), Some("title"), "{bad:?}");
        }
        assert!(text("body", "a\nb\tc\r\n", 10, true).is_ok());
        assert!(text("body", "a\u{7}b", 10, true).is_err());
    }

    #[test]
    fn currencies_are_three_uppercase_letters() {
        assert!(currency("currency", "USD").is_ok());
        for bad in ["usd", "US", "USDT", "U$D", "ÉUR", ""] {
            assert!(currency("currency", bad).is_err(), "{bad:?}");
        }
    }
}
