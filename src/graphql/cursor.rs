//! Opaque, authenticated cursors.
//!
//! A cursor carries the key of the item an edge stands for (what the next Query needs as
//! `ExclusiveStartKey`) and an HMAC-SHA256 tag over that key *and the connection it came
//! from* (the connection's kind and partition). A cursor that was altered, forged, or taken
//! from another connection, partition or index fails the tag check and is rejected before
//! any request is made. Every replica with the same secret accepts every other's cursors.
//!
//! A secret is rotated without breaking the cursors clients hold: cursors are always signed
//! with the current secret, and a previous secret keeps verifying until an absolute instant
//! (the same on every replica, whenever each one started), after which its cursors are
//! refused like any forged one.
//!
//! Event cursors (a subscription's `after`) are *sealed*: encrypted and authenticated with
//! AES-256-GCM-SIV under a key derived from the same secret, bound to their context, so they
//! reveal nothing of the change stream (its shards, its sequence numbers, and so how much
//! other organizations write). Event cursors signed before sealing still open.

use std::time::SystemTime;

use std::sync::Arc;

use aws_lc_rs::aead::{Aad, Nonce, RandomizedNonceKey, AES_256_GCM_SIV, NONCE_LEN};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretSlice};
use sha2::Sha256;

use crate::store::{IndexKey, PageKey, PrimaryKey};

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the tag kept in a cursor: 128 bits, plenty against forgery.
const TAG_LEN: usize = 16;
/// Cursors longer than this are rejected unread (keys are at most 2 KB + 1 KB, twice).
pub const MAX_CURSOR_LEN: usize = 8 * 1024;
/// The first byte of a sealed cursor (its format's version).
const SEALED: u8 = 1;
/// AES-GCM-SIV's tag.
const SEAL_TAG_LEN: usize = 16;
/// What the sealing key is derived for, with the secret as the HMAC key.
const SEALING_LABEL: &[u8] = b"itemgraph event cursor encryption key v1";

/// Why a cursor was refused. Clients see `INVALID_CURSOR`; the reason is not told, so a
/// client learns nothing about what a valid cursor looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor")]
pub struct InvalidCursor;

/// Signs and checks cursors with the server's secret. No Debug or log line shows a secret.
/// The current one is kept only as the HMAC keyed with it (as good as the secret for
/// signing, and not zeroed when dropped); previous ones are `secrecy` boxes, zeroed when
/// dropped.
#[derive(Clone, Debug)]
pub struct CursorCodec {
    /// HMAC keyed with the secret once (its inner and outer pads hashed): each cursor
    /// starts from a copy instead of keying again. The secret itself is not kept.
    keyed: HmacSha256,
    /// Seals event cursors: AES-256-GCM-SIV keyed with HMAC(secret, label), random
    /// nonces. SIV: a repeated nonce (random 96 bits, under a key that lives as long as the
    /// secret and seals one cursor per event delivered) reveals only that two cursors are
    /// equal, never the key.
    sealing: Arc<RandomizedNonceKey>,
    /// Secrets rotated out, each still accepted (never used to sign) until its instant.
    previous: Vec<(SecretSlice<u8>, SystemTime)>,
}

impl CursorCodec {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        let secret = SecretSlice::from(secret.into());
        CursorCodec {
            keyed: Self::keyed(secret.expose_secret()),
            sealing: Arc::new(Self::sealing_key(secret.expose_secret())),
            previous: Vec::new(),
        }
    }

    /// Also accepts cursors signed with `secret`, the one rotated out, until `until`.
    pub fn with_previous(mut self, secret: impl Into<Vec<u8>>, until: SystemTime) -> Self {
        self.previous
            .push((SecretSlice::from(secret.into()), until));
        self
    }

    /// The latest instant a previous secret is accepted until, if there is one.
    pub fn grace_until(&self) -> Option<SystemTime> {
        self.previous.iter().map(|(_, until)| *until).max()
    }

    fn sealing_key(secret: &[u8]) -> RandomizedNonceKey {
        let key = Self::keyed(secret)
            .chain_update(SEALING_LABEL)
            .finalize()
            .into_bytes();
        RandomizedNonceKey::new(&AES_256_GCM_SIV, &key)
            .expect("AES-256-GCM-SIV takes a 32-byte key")
    }

    fn keyed(secret: &[u8]) -> HmacSha256 {
        HmacSha256::new_from_slice(secret).expect("HMAC takes any key size")
    }

    fn mac(secret: &[u8], connection: &str, payload: &[u8]) -> HmacSha256 {
        Self::mac_from(Self::keyed(secret), connection, payload)
    }

    fn mac_from(mut mac: HmacSha256, connection: &str, payload: &[u8]) -> HmacSha256 {
        mac.update(connection.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac
    }

    fn tag(&self, connection: &str, payload: &[u8]) -> [u8; TAG_LEN] {
        let full = Self::mac_from(self.keyed.clone(), connection, payload)
            .finalize()
            .into_bytes();
        let mut tag = [0; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// The cursor of `key` in `connection` (e.g. `stores:CHAIN#bean-there`).
    pub fn encode(&self, connection: &str, key: &PageKey) -> String {
        let mut parts = vec![key.table.pk.clone(), key.table.sk.clone()];
        if let Some(ik) = &key.index {
            parts.push(ik.pk.clone());
            parts.push(ik.sk.clone());
            // A multi-attribute key's further values: how many are partition values, then
            // them all (a cursor of a single-attribute index is as it always was).
            if !ik.pk_more.is_empty() || !ik.sk_more.is_empty() {
                parts.push(ik.pk_more.len().to_string());
                parts.extend(ik.pk_more.iter().cloned());
                parts.extend(ik.sk_more.iter().cloned());
            }
        }
        let payload = serde_json::to_vec(&parts).expect("strings serialize");
        self.sign(connection, &payload)
    }

    /// `payload` with its tag for `context`, as opaque text (page and event cursors).
    pub fn sign(&self, context: &str, payload: &[u8]) -> String {
        let mut bytes = self.tag(context, payload).to_vec();
        bytes.extend_from_slice(payload);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// `payload` encrypted and authenticated for `context`, as opaque text (event cursors):
    /// nothing of it can be read without the secret.
    pub fn seal(&self, context: &str, payload: &[u8]) -> String {
        let mut sealed = payload.to_vec();
        let nonce = self
            .sealing
            .seal_in_place_append_tag(Aad::from(context.as_bytes()), &mut sealed)
            .expect("AES-GCM-SIV seals any payload under 64 GB");
        let mut bytes = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        bytes.push(SEALED);
        bytes.extend_from_slice(nonce.as_ref());
        bytes.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The payload of text [`seal`](Self::seal) made for `context` with this server's
    /// secret (or a previous one in its grace period); text [`sign`](Self::sign) made, too,
    /// so event cursors handed out before sealing still resume.
    pub fn open(&self, context: &str, text: &str) -> Result<Vec<u8>, InvalidCursor> {
        self.open_at(context, text, SystemTime::now())
    }

    fn open_at(
        &self,
        context: &str,
        text: &str,
        now: SystemTime,
    ) -> Result<Vec<u8>, InvalidCursor> {
        let bytes = Self::bytes(text)?;
        if let Some(payload) = Self::unseal(&self.sealing, context, &bytes) {
            return Ok(payload);
        }
        for (secret, until) in &self.previous {
            if now < *until {
                let key = Self::sealing_key(secret.expose_secret());
                if let Some(payload) = Self::unseal(&key, context, &bytes) {
                    return Ok(payload);
                }
            }
        }
        self.verify_bytes(context, &bytes, now)
    }

    /// A cursor's bytes: refused unread past [`MAX_CURSOR_LEN`].
    fn bytes(text: &str) -> Result<Vec<u8>, InvalidCursor> {
        if text.len() > MAX_CURSOR_LEN {
            return Err(InvalidCursor);
        }
        URL_SAFE_NO_PAD.decode(text).map_err(|_| InvalidCursor)
    }

    fn unseal(key: &RandomizedNonceKey, context: &str, bytes: &[u8]) -> Option<Vec<u8>> {
        let (&version, rest) = bytes.split_first()?;
        if version != SEALED || rest.len() < NONCE_LEN + SEAL_TAG_LEN {
            return None;
        }
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = sealed.to_vec();
        let plain = key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut buf)
            .ok()?;
        Some(plain.to_vec())
    }

    /// The payload of text [`sign`](Self::sign) made for `context`, with this server's
    /// secret (or a previous one still in its grace period).
    pub fn verify(&self, context: &str, text: &str) -> Result<Vec<u8>, InvalidCursor> {
        self.verify_at(context, text, SystemTime::now())
    }

    fn verify_at(
        &self,
        context: &str,
        text: &str,
        now: SystemTime,
    ) -> Result<Vec<u8>, InvalidCursor> {
        self.verify_bytes(context, &Self::bytes(text)?, now)
    }

    fn verify_bytes(
        &self,
        context: &str,
        bytes: &[u8],
        now: SystemTime,
    ) -> Result<Vec<u8>, InvalidCursor> {
        if bytes.len() <= TAG_LEN {
            return Err(InvalidCursor);
        }
        let (tag, payload) = bytes.split_at(TAG_LEN);
        // Constant-time comparisons of the truncated tag.
        let verifies = |secret: &[u8]| {
            Self::mac(secret, context, payload)
                .verify_truncated_left(tag)
                .is_ok()
        };
        let signed = Self::mac_from(self.keyed.clone(), context, payload)
            .verify_truncated_left(tag)
            .is_ok()
            || self
                .previous
                .iter()
                .any(|(secret, until)| now < *until && verifies(secret.expose_secret()));
        if signed {
            Ok(payload.to_vec())
        } else {
            Err(InvalidCursor)
        }
    }

    /// The key a cursor carries, if it was made by this server (or a replica sharing its
    /// secret) for this very connection.
    pub fn decode(&self, connection: &str, cursor: &str) -> Result<PageKey, InvalidCursor> {
        self.decode_at(connection, cursor, SystemTime::now())
    }

    /// [`decode`](Self::decode) as of `now`, which decides whether a previous secret's
    /// grace period still runs.
    pub fn decode_at(
        &self,
        connection: &str,
        cursor: &str,
        now: SystemTime,
    ) -> Result<PageKey, InvalidCursor> {
        let payload = self.verify_at(connection, cursor, now)?;
        let parts: Vec<String> = serde_json::from_slice(&payload).map_err(|_| InvalidCursor)?;
        let mut parts = parts.into_iter();
        let (Some(pk), Some(sk)) = (parts.next(), parts.next()) else {
            return Err(InvalidCursor);
        };
        let index = match (parts.next(), parts.next(), parts.next()) {
            (None, None, None) => None,
            (Some(pk), Some(sk), None) => Some(IndexKey::new(pk, sk)),
            (Some(pk), Some(sk), Some(n)) => {
                let n: usize = match n.parse() {
                    // Written as `encode` writes it (`+1`, `01` are no cursor's).
                    Ok(count) if usize::to_string(&count) == n => count,
                    _ => return Err(InvalidCursor),
                };
                let rest: Vec<String> = parts.collect();
                // As `encode` writes one: a count only before further values, so each key
                // has one cursor.
                if rest.is_empty()
                    || n > rest.len()
                    || rest.len() > 2 * crate::store::schema::MAX_KEY_ATTRIBUTES
                {
                    return Err(InvalidCursor);
                }
                let (pk_more, sk_more) = rest.split_at(n);
                Some(IndexKey {
                    pk,
                    sk,
                    pk_more: pk_more.to_vec(),
                    sk_more: sk_more.to_vec(),
                })
            }
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
    use crate::graphql::errors::ApiError;
    use proptest::prelude::*;
    use std::time::Duration;

    fn key() -> PageKey {
        PageKey {
            table: PrimaryKey::new("TICKET#1", "TICKET#1"),
            index: Some(IndexKey::new("ORG#acme#USER#bob", "TICKET#1")),
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

    const HOUR: Duration = Duration::from_secs(3600);

    /// A codec rotated from `old` to `new` at `rotated`, keeping `old` for an hour.
    fn rotated(rotated: SystemTime) -> CursorCodec {
        CursorCodec::new("new secret").with_previous("old secret", rotated + HOUR)
    }

    #[test]
    fn a_previous_secret_verifies_during_its_grace_period_only() {
        let rotated_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let codec = rotated(rotated_at);
        let old = CursorCodec::new("old secret").encode("users:ORG#acme", &key());
        let during = rotated_at + HOUR - Duration::from_secs(1);
        assert_eq!(codec.decode_at("users:ORG#acme", &old, during), Ok(key()));
        assert_eq!(
            codec.decode_at("users:ORG#globex", &old, during),
            Err(InvalidCursor),
            "the previous secret binds its cursors to their connection too"
        );
        for after in [rotated_at + HOUR, rotated_at + 2 * HOUR] {
            assert_eq!(
                codec.decode_at("users:ORG#acme", &old, after),
                Err(InvalidCursor)
            );
        }
        assert_eq!(
            ApiError::from(InvalidCursor).code(),
            "INVALID_CURSOR",
            "what clients see for a cursor past its grace"
        );
        assert_eq!(codec.grace_until(), Some(rotated_at + HOUR));
        assert_eq!(CursorCodec::new("s").grace_until(), None);
    }

    /// A sealed cursor shows nothing of its payload, differs each time it is made (random
    /// nonces), opens in its context only, with its secret only (a previous one during its
    /// grace), and any altered byte is refused. An event cursor signed before sealing opens.
    #[test]
    fn sealed_cursors_hide_their_payload_and_open_only_where_they_were_made() {
        let payload = br#"[["shardId-00000001","s000000000000000000397"]]"#;
        let codec = CursorCodec::new("secret");
        let a = codec.seal("events:acme", payload);
        let b = codec.seal("events:acme", payload);
        assert_ne!(a, b, "random nonces");
        for text in [&a, &b] {
            let raw = URL_SAFE_NO_PAD.decode(text).unwrap();
            assert!(
                !raw.windows(3).any(|w| w == b"397") && !raw.windows(5).any(|w| w == b"shard"),
                "the payload shows through"
            );
            assert_eq!(codec.open("events:acme", text).unwrap(), payload);
        }
        assert_eq!(codec.open("events:globex", &a), Err(InvalidCursor));
        assert_eq!(
            CursorCodec::new("other").open("events:acme", &a),
            Err(InvalidCursor)
        );
        let raw = URL_SAFE_NO_PAD.decode(&a).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                codec.open("events:acme", &URL_SAFE_NO_PAD.encode(&bad)),
                Err(InvalidCursor),
                "byte {i} altered"
            );
        }
        // Signed (the format before sealing): still opens, in its context only.
        let signed = codec.sign("events:acme", payload);
        assert_eq!(codec.open("events:acme", &signed).unwrap(), payload);
        assert_eq!(codec.open("events:globex", &signed), Err(InvalidCursor));
        // Sealed with the previous secret: opens during the grace period only.
        let rotated_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let old = CursorCodec::new("old secret").seal("events:acme", payload);
        let codec = rotated(rotated_at);
        assert_eq!(
            codec.open_at("events:acme", &old, rotated_at).unwrap(),
            payload
        );
        assert_eq!(
            codec.open_at("events:acme", &old, rotated_at + HOUR),
            Err(InvalidCursor)
        );
    }

    #[test]
    fn cursors_are_always_signed_with_the_current_secret() {
        let rotated_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let codec = rotated(rotated_at);
        let cursor = codec.encode("users:ORG#acme", &key());
        assert_eq!(
            cursor,
            CursorCodec::new("new secret").encode("users:ORG#acme", &key())
        );
        assert_eq!(
            CursorCodec::new("old secret").decode("users:ORG#acme", &cursor),
            Err(InvalidCursor),
            "nothing is signed with the previous secret"
        );
        // The current secret has no end: its cursors verify long after any grace.
        let much_later = rotated_at + 1000 * HOUR;
        assert_eq!(
            codec.decode_at("users:ORG#acme", &cursor, much_later),
            Ok(key())
        );
    }

    #[test]
    fn an_unrelated_secret_is_refused_even_during_a_grace_period() {
        let rotated_at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let other = CursorCodec::new("other secret").encode("users:ORG#acme", &key());
        assert_eq!(
            rotated(rotated_at).decode_at("users:ORG#acme", &other, rotated_at),
            Err(InvalidCursor)
        );
    }

    /// A cursor whose tag is valid over an arbitrary payload: what a leaked secret would
    /// let anyone make, and the only way to reach the parsing behind the tag check.
    fn signed(codec: &CursorCodec, connection: &str, payload: &[u8]) -> String {
        let mut bytes = codec.tag(connection, payload).to_vec();
        bytes.extend_from_slice(payload);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn a_signed_payload_of_the_wrong_shape_is_refused() {
        let codec = CursorCodec::new("secret");
        // Past serde_json's recursion limit (128).
        let deep = "[".repeat(200);
        for payload in [
            "",
            "null",
            "[]",
            r#"["a"]"#,
            r#"["a","b","c"]"#,
            r#"["a","b","c","d","e"]"#,
            r#"[1,2]"#,
            r#"{"pk":"a","sk":"b"}"#,
            deep.as_str(),
        ] {
            assert_eq!(
                codec.decode("c", &signed(&codec, "c", payload.as_bytes())),
                Err(InvalidCursor),
                "{payload}"
            );
        }
        // A count of further values with none after it is no cursor `encode` writes.
        assert_eq!(
            codec.decode("c", &signed(&codec, "c", br#"["","","","","0"]"#)),
            Err(InvalidCursor)
        );
        for count in ["+1", "01"] {
            let payload = format!(r#"["a","b","c","d","{count}","e"]"#);
            assert_eq!(
                codec.decode("c", &signed(&codec, "c", payload.as_bytes())),
                Err(InvalidCursor)
            );
        }
        assert!(codec
            .decode("c", &signed(&codec, "c", br#"["a","b","c","d","1","e"]"#))
            .is_ok());
        assert_eq!(
            codec.decode("c", &signed(&codec, "c", br#"["a","b"]"#)),
            Ok(PageKey {
                table: PrimaryKey::new("a", "b"),
                index: None
            })
        );
    }

    /// Text made of base64url's alphabet, padding and a few strays: mostly decodable.
    fn base64ish() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_=+/-]{0,300}"
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

        #[test]
        fn decoding_base64ish_text_never_panics(s in base64ish()) {
            let codec = CursorCodec::new("secret").with_previous("old", SystemTime::now() + HOUR);
            prop_assert_eq!(codec.decode("users:ORG#acme", &s), Err(InvalidCursor));
        }

        /// Valid cursors with bytes flipped, inserted, removed or cut off are refused.
        #[test]
        fn a_mutated_cursor_is_refused(
            pk in "\\PC{0,40}",
            sk in "\\PC{0,40}",
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            how in 0..4u8,
        ) {
            let codec = CursorCodec::new("secret");
            let key = PageKey { table: PrimaryKey::new(pk, sk), index: None };
            let good = codec.encode("c", &key);
            prop_assert_eq!(codec.decode("c", &good), Ok(key));
            let mut raw = URL_SAFE_NO_PAD.decode(&good).unwrap();
            let i = at.index(raw.len());
            match how {
                0 => raw[i] ^= byte.max(1),
                1 => raw.insert(i, byte),
                2 => { raw.remove(i); }
                _ => raw.truncate(i),
            }
            prop_assert_eq!(codec.decode("c", &URL_SAFE_NO_PAD.encode(&raw)), Err(InvalidCursor));
            // The text itself mangled: never a panic, whatever it decodes to.
            let mut text = good.into_bytes();
            let i = at.index(text.len());
            text[i] = byte;
            let _ = codec.decode("c", &String::from_utf8_lossy(&text));
        }

        /// Behind a valid tag, any payload at all is refused or read, never a panic.
        #[test]
        fn any_signed_payload_never_panics(payload in proptest::collection::vec(any::<u8>(), 0..300)) {
            let codec = CursorCodec::new("secret");
            let _ = codec.decode("c", &signed(&codec, "c", &payload));
        }

        #[test]
        fn any_signed_json_never_panics(parts in proptest::collection::vec("\\PC{0,20}", 0..6)) {
            let codec = CursorCodec::new("secret");
            let payload = serde_json::to_vec(&parts).unwrap();
            let decoded = codec.decode("c", &signed(&codec, "c", &payload));
            prop_assert_eq!(decoded.is_ok(), parts.len() == 2 || parts.len() == 4);
        }
    }
}
