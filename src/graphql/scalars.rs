//! Numbers as every client reads them exactly. GraphQL's `Int` is a signed 32-bit integer
//! (the spec has a larger value raise an error, not be returned), and JavaScript clients
//! round anything past 2^53; money goes past 2^31 cents with a $21M order. So amounts of
//! money are [`Cents`], a decimal string, and every `Int` the schema returns is within
//! 32 bits (a chart's records clamp theirs, `graphql::record`).

use async_graphql::{InputValueError, InputValueResult, Scalar, ScalarType, Value};

/// An amount of money in cents: a decimal string of a whole number (`"10000000000"` is
/// $100,000,000.00), exact in every client whatever its size (parse it with `BigInt` in
/// JavaScript). As input it takes such a string, or a whole number up to 2^53.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cents(pub i64);

/// The largest whole number JSON parsers in JavaScript keep exact: 2^53 − 1.
const MAX_EXACT_NUMBER: i64 = (1 << 53) - 1;

/// An amount of money in cents, as a decimal string of a whole number: `"10000000000"` is
/// 100,000,000.00. Exact in every client whatever its size (parse it with `BigInt` in
/// JavaScript). As input: such a string, or a whole number up to 2^53.
#[Scalar(name = "Cents")]
impl ScalarType for Cents {
    fn parse(value: Value) -> InputValueResult<Self> {
        match &value {
            Value::String(s) => s
                .parse::<i64>()
                .ok()
                .filter(|_| !s.starts_with('+'))
                .map(Cents)
                .ok_or_else(|| {
                    InputValueError::custom(format!(
                        "{s:?} is not a whole number of cents between {} and {}",
                        i64::MIN,
                        i64::MAX
                    ))
                }),
            Value::Number(n) => n
                .as_i64()
                .filter(|c| c.abs() <= MAX_EXACT_NUMBER)
                .map(Cents)
                .ok_or_else(|| {
                    InputValueError::custom(format!(
                        "{n} is not a whole number of cents up to 2^53; send larger amounts as a string"
                    ))
                }),
            _ => Err(InputValueError::expected_type(value)),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cents_are_exact_strings_and_take_strings_or_safe_numbers() {
        assert_eq!(Cents(10_000_000_000).to_value(), Value::from("10000000000"));
        assert_eq!(Cents::parse(Value::from("-5")).unwrap(), Cents(-5));
        assert_eq!(
            Cents::parse(Value::from("9223372036854775807")).unwrap(),
            Cents(i64::MAX)
        );
        assert_eq!(Cents::parse(Value::from(1999)).unwrap(), Cents(1999));
        for bad in [
            Value::from("9223372036854775808"),
            Value::from("1.5"),
            Value::from("+3"),
            Value::from(""),
            Value::from(" 1"),
            Value::from(1i64 << 53),
            Value::from(1.5),
            Value::Boolean(true),
        ] {
            assert!(Cents::parse(bad.clone()).is_err(), "{bad:?}");
        }
    }
}
