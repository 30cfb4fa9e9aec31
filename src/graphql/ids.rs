//! Global ids for the `Node` interface: opaque to clients (base64url), but made of the
//! entity's natural key, so `node(id)` needs no lookup table: the id is the item's key.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::errors::ApiError;
use crate::chart::kinds::{Id, Slug, Username};
use crate::keys::{OrderKey, OrgKey, TicketKey, UserKey};
use crate::store::PrimaryKey;

/// What a global id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobalId {
    Organization(Slug),
    User(Slug, Username),
    Ticket(Id),
    Order(Slug, Id),
}

/// Longest id text accepted; anything longer is not one of ours.
const MAX_ID_LEN: usize = 256;

impl GlobalId {
    pub fn encode(&self) -> String {
        let raw = match self {
            GlobalId::Organization(o) => format!("Organization:{o}"),
            GlobalId::User(o, u) => format!("User:{o}:{u}"),
            GlobalId::Ticket(t) => format!("Ticket:{t}"),
            GlobalId::Order(o, id) => format!("Order:{o}:{id}"),
        };
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// Parses an id a client sent; `field` names the argument in the error.
    pub fn decode(field: &str, id: &str) -> Result<GlobalId, ApiError> {
        let bad = || ApiError::bad_input(field, "not a valid id");
        if id.len() > MAX_ID_LEN {
            return Err(bad());
        }
        let bytes = URL_SAFE_NO_PAD.decode(id).map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let parts: Vec<&str> = text.split(':').collect();
        let parsed = match parts.as_slice() {
            ["Organization", o] => GlobalId::Organization(Slug::parse(o).map_err(|_| bad())?),
            ["User", o, u] => GlobalId::User(
                Slug::parse(o).map_err(|_| bad())?,
                Username::parse(u).map_err(|_| bad())?,
            ),
            ["Ticket", t] => GlobalId::Ticket(Id::parse(t).map_err(|_| bad())?),
            ["Order", o, id] => GlobalId::Order(
                Slug::parse(o).map_err(|_| bad())?,
                Id::parse(id).map_err(|_| bad())?,
            ),
            _ => return Err(bad()),
        };
        Ok(parsed)
    }

    /// The organization the id names, when it names one (a ticket's does not).
    pub fn org(&self) -> Option<&Slug> {
        match self {
            GlobalId::Organization(o) | GlobalId::User(o, _) | GlobalId::Order(o, _) => Some(o),
            GlobalId::Ticket(_) => None,
        }
    }

    /// The primary key of the item the id names.
    pub fn key(&self) -> PrimaryKey {
        match self {
            GlobalId::Organization(o) => OrgKey::new(o).primary_key(),
            GlobalId::User(o, u) => UserKey::new(o, u).primary_key(),
            GlobalId::Ticket(t) => TicketKey::new(*t).primary_key(),
            GlobalId::Order(o, id) => OrderKey::new(o, *id).primary_key(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ids_round_trip() {
        let ids = [
            GlobalId::Organization(Slug::parse("acme").unwrap()),
            GlobalId::User(
                Slug::parse("acme").unwrap(),
                Username::parse("wile-e").unwrap(),
            ),
            GlobalId::Ticket(Id::parse("01HQ3Z8N6W6D2Q5V0G8K9JXJ4M").unwrap()),
            GlobalId::Order(
                Slug::parse("acme").unwrap(),
                Id::parse("01HQ3Z8N6W6D2Q5V0G8K9JXJ4M").unwrap(),
            ),
        ];
        for id in ids {
            assert_eq!(GlobalId::decode("id", &id.encode()).unwrap(), id);
        }
    }

    #[test]
    fn forged_ids_are_bad_input() {
        for raw in [
            "User:acme:bob#x",
            "User:acme",
            "Thing:1",
            "Organization:ACME",
            "",
        ] {
            let id = URL_SAFE_NO_PAD.encode(raw);
            assert!(GlobalId::decode("id", &id).is_err(), "{raw}");
        }
    }

    /// Text shaped like an id's inside: a known or near-known type, then parts that are
    /// arbitrary, so the slug, username and ULID parsers see hostile input.
    fn id_like() -> impl Strategy<Value = String> {
        let kind = prop_oneof![
            Just("Organization".to_owned()),
            Just("User".to_owned()),
            Just("Ticket".to_owned()),
            Just("Order".to_owned()),
            "\\PC{0,12}".prop_map(String::from),
        ];
        let part = prop_oneof![
            "[a-z0-9-]{0,45}",
            "[0-9A-Z]{24,28}",
            "\\PC{0,30}",
            ".{0,30}"
        ];
        (kind, proptest::collection::vec(part, 0..4)).prop_map(|(kind, parts)| {
            std::iter::once(kind)
                .chain(parts)
                .collect::<Vec<_>>()
                .join(":")
        })
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_text_never_panics(s in ".{0,300}") {
            let _ = GlobalId::decode("id", &s);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = GlobalId::decode("id", &URL_SAFE_NO_PAD.encode(b));
        }

        /// Whatever an id-shaped text decodes to encodes back to the very same id: no two
        /// ids name one item, and nothing is read that was not written.
        #[test]
        fn id_shaped_text_decodes_to_an_error_or_round_trips(raw in id_like()) {
            let id = URL_SAFE_NO_PAD.encode(&raw);
            if let Ok(parsed) = GlobalId::decode("id", &id) {
                prop_assert_eq!(parsed.encode(), id);
            }
        }
    }
}
