//! Time as the server stores it: milliseconds since the Unix epoch, and the RFC 3339
//! text of a chart's `timestamp` attributes.

/// An RFC 3339 UTC timestamp with milliseconds, always 24 characters
/// (`2024-01-31T09:30:00.000Z`), so that string order is time order.
pub type Timestamp = String;

/// Formats milliseconds since the Unix epoch as a [`Timestamp`].
pub fn timestamp_from_ms(unix_ms: u64) -> Timestamp {
    use time::format_description::BorrowedFormatItem;
    const FORMAT: &[BorrowedFormatItem<'static>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .expect("a u64 of milliseconds is within time's range")
        .format(FORMAT)
        .expect("the format only has numeric components")
}

/// The current time as a [`Timestamp`].
pub fn now() -> Timestamp {
    timestamp_from_ms(now_ms())
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
