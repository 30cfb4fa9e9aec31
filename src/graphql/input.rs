//! The check every mutation makes on a text of its input before any request: non-blank,
//! bounded, one line unless it may hold more. The first problem is the answer:
//! `BAD_USER_INPUT` with `extensions.field` naming the input field.

use super::errors::ApiError;

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
}
