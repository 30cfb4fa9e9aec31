//! Opaque, authenticated cursors.
//!
//! A cursor carries the key of the item an edge stands for (what the next Query needs as
//! `ExclusiveStartKey`) and an HMAC-SHA256 tag over that key *and the connection it came
//! from* (the connection's kind and partition). A cursor that was altered, forged, or taken
//! from another connection, partition or index fails the tag check and is rejected before
//! any request is made. Every replica with the same secret accepts every other's cursors.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::store::{IndexKey, PageKey, PrimaryKey};

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the tag kept in a cursor: 128 bits, plenty against forgery.
const TAG_LEN: usize = 16;
/// Cursors longer than this are rejected unread (keys are at most 2 KB + 1 KB, twice).
pub const MAX_CURSOR_LEN: usize = 8 * 1024;

/// Why a cursor was refused. Clients see `INVALID_CURSOR`; the reason is not told, so a
/// client learns nothing about what a valid cursor looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor")]
pub struct InvalidCursor;

/// Signs and checks cursors with the server's secret.
#[derive(Clone)]
pub struct CursorCodec {
    secret: Vec<u8>,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec(..)")
    }
}

impl CursorCodec {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        CursorCodec {
            secret: secret.into(),
        }
    }

    fn tag(&self, connection: &str, payload: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = HmacSha256::new_from_slice(&self.secret).expect("HMAC takes any key size");
        mac.update(connection.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        let full = mac.finalize().into_bytes();
        let mut tag = [0; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// The cursor of `key` in `connection` (e.g. `users:ORG#acme`).
    pub fn encode(&self, connection: &str, key: &PageKey) -> String {
        let mut parts = vec![key.table.pk.as_str(), key.table.sk.as_str()];
        if let Some(ik) = &key.index {
            parts.push(&ik.pk);
            parts.push(&ik.sk);
        }
        let payload = serde_json::to_vec(&parts).expect("strings serialize");
        let mut bytes = self.tag(connection, &payload).to_vec();
        bytes.extend_from_slice(&payload);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The key a cursor carries, if it was made by this server for this very connection.
    pub fn decode(&self, connection: &str, cursor: &str) -> Result<PageKey, InvalidCursor> {
        if cursor.len() > MAX_CURSOR_LEN {
            return Err(InvalidCursor);
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| InvalidCursor)?;
        if bytes.len() <= TAG_LEN {
            return Err(InvalidCursor);
        }
        let (tag, payload) = bytes.split_at(TAG_LEN);
        let mut mac = HmacSha256::new_from_slice(&self.secret).expect("HMAC takes any key size");
        mac.update(connection.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        // Constant-time comparison of the truncated tag.
        mac.verify_truncated_left(tag).map_err(|_| InvalidCursor)?;
        let parts: Vec<String> = serde_json::from_slice(payload).map_err(|_| InvalidCursor)?;
        let mut parts = parts.into_iter();
        let (Some(pk), Some(sk)) = (parts.next(), parts.next()) else {
            return Err(InvalidCursor);
        };
        let index = match (parts.next(), parts.next(), parts.next()) {
            (None, None, None) => None,
            (Some(pk), Some(sk), None) => Some(IndexKey { pk, sk }),
            _ => return Err(InvalidCursor),
        };
        Ok(PageKey {
            table: PrimaryKey { pk, sk },
            index,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> PageKey {
        PageKey {
            table: PrimaryKey::new("TICKET#1", "TICKET#1"),
            index: Some(IndexKey {
                pk: "ORG#acme#USER#bob".into(),
                sk: "TICKET#1".into(),
            }),
        }
    }

    #[test]
    fn a_cursor_round_trips_in_its_connection_only() {
        let codec = CursorCodec::new("secret");
        let c = codec.encode("user-tickets:ORG#acme#USER#bob", &key());
        assert_eq!(
            codec.decode("user-tickets:ORG#acme#USER#bob", &c),
            Ok(key())
        );
        assert_eq!(
            codec.decode("user-tickets:ORG#globex#USER#bob", &c),
            Err(InvalidCursor)
        );
        assert_eq!(
            CursorCodec::new("other").decode("user-tickets:ORG#acme#USER#bob", &c),
            Err(InvalidCursor)
        );
    }

    #[test]
    fn any_altered_byte_is_rejected() {
        let codec = CursorCodec::new("secret");
        let c = codec.encode("users:ORG#acme", &key());
        let raw = URL_SAFE_NO_PAD.decode(&c).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 1;
            assert_eq!(
                codec.decode("users:ORG#acme", &URL_SAFE_NO_PAD.encode(bad)),
                Err(InvalidCursor)
            );
        }
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_text_never_panics(s in ".{0,200}") {
            let _ = CursorCodec::new("secret").decode("users:ORG#acme", &s);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = CursorCodec::new("secret").decode("users:ORG#acme", &URL_SAFE_NO_PAD.encode(b));
        }
    }
}
