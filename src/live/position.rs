//! Positions in the change stream, and the event cursors that carry them.
//!
//! A position says, for every shard a reader follows, how far it has read: past a
//! sequence number; everything from a moment on (a shard the reader began at its latest
//! record, and from which no record has come since); or the whole shard (a child shard,
//! begun at its start). That is what a resumed subscription needs to read on from, on any
//! replica: sequence numbers are the stream's own, not a process's.
//!
//! An event cursor is a position's [`Position::to_bytes`] signed with the server's cursor
//! secret by the GraphQL layer, bound to the caller's organization.

use std::collections::BTreeMap;

use crate::store::stream::seq_cmp;

/// How far into one shard a position is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pos {
    /// Past this sequence number.
    Seq(String),
    /// Past every record made before this time (ms since the Unix epoch).
    Since(u64),
    /// Before the shard's first record.
    Start,
}

/// A position in the stream: one [`Pos`] per shard, and, on a server that follows the
/// relay ([`super::relay`]), the relay entry it is just after, which a resume is served
/// from without reading the stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Position {
    pub shards: BTreeMap<String, Pos>,
    pub relay: Option<String>,
}

/// Orders relay entry ids (`<ms>-<n>`, as Redis Streams make them) by their numbers;
/// `None` for what is no such id.
pub fn relay_id_cmp(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    Some(relay_id(a)?.cmp(&relay_id(b)?))
}

fn relay_id(id: &str) -> Option<(u64, u64)> {
    let (ms, n) = id.split_once('-')?;
    Some((ms.parse().ok()?, n.parse().ok()?))
}

/// The key a cursor's relay id is stored under: no shard has an empty id.
const RELAY_KEY: &str = "";

impl Position {
    /// Moves past `sequence` in `shard`.
    pub fn advance(&mut self, shard: &str, sequence: &str) {
        match self.shards.get_mut(shard) {
            Some(Pos::Seq(s)) if seq_cmp(sequence, s).is_le() => {}
            Some(p) => *p = Pos::Seq(sequence.to_owned()),
            None => {
                self.shards
                    .insert(shard.to_owned(), Pos::Seq(sequence.to_owned()));
            }
        }
    }

    /// The position past both: per shard the further one, a sequence number being
    /// further than a time or the start (it was read from one of those).
    pub fn merged(&self, other: &Position) -> Position {
        let mut out = self.clone();
        for (shard, pos) in &other.shards {
            match (out.shards.get(shard), pos) {
                (None, p) => {
                    out.shards.insert(shard.clone(), p.clone());
                }
                (Some(Pos::Seq(a)), Pos::Seq(b)) if seq_cmp(b, a).is_gt() => {
                    out.shards.insert(shard.clone(), pos.clone());
                }
                (Some(Pos::Since(_) | Pos::Start), Pos::Seq(_)) => {
                    out.shards.insert(shard.clone(), pos.clone());
                }
                _ => {}
            }
        }
        out
    }

    /// [`merged`](Self::merged) over this position's shards only (a shard `other` names
    /// and this one has left, a parent read to its end, stays left).
    pub fn merged_within(&self, other: &Position) -> Position {
        let mut out = self.merged(other);
        out.shards.retain(|k, _| self.shards.contains_key(k));
        out
    }

    /// The position as bytes, for a cursor.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut parts: Vec<(&str, String)> = self
            .shards
            .iter()
            .map(|(shard, pos)| {
                (
                    shard.as_str(),
                    match pos {
                        Pos::Seq(s) => format!("s{s}"),
                        Pos::Since(ms) => format!("t{ms}"),
                        Pos::Start => "0".to_owned(),
                    },
                )
            })
            .collect();
        if let Some(id) = &self.relay {
            parts.push((RELAY_KEY, format!("r{id}")));
        }
        serde_json::to_vec(&parts).expect("strings serialize")
    }

    /// The position [`to_bytes`](Self::to_bytes) made; `None` for anything else.
    pub fn from_bytes(bytes: &[u8]) -> Option<Position> {
        let parts: Vec<(String, String)> = serde_json::from_slice(bytes).ok()?;
        let mut shards = BTreeMap::new();
        let mut relay = None;
        for (shard, pos) in parts {
            if shard == RELAY_KEY {
                let id = pos.strip_prefix('r')?;
                relay_id(id)?;
                relay = Some(id.to_owned());
                continue;
            }
            let pos = match pos.split_at_checked(1)? {
                ("s", s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                    Pos::Seq(s.to_owned())
                }
                ("t", t) => Pos::Since(t.parse().ok()?),
                ("0", "") => Pos::Start,
                _ => return None,
            };
            shards.insert(shard, pos);
        }
        Some(Position { shards, relay })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position() -> Position {
        let mut p = Position::default();
        p.shards.insert("a".into(), Pos::Since(1_700_000_000_000));
        p.shards.insert("b".into(), Pos::Start);
        p.advance("c", "000120");
        p
    }

    #[test]
    fn a_position_round_trips_through_bytes() {
        assert_eq!(
            Position::from_bytes(&position().to_bytes()),
            Some(position())
        );
        assert_eq!(Position::from_bytes(b"[]"), Some(Position::default()));
        let relayed = Position {
            relay: Some("1700000000000-3".into()),
            ..position()
        };
        assert_eq!(Position::from_bytes(&relayed.to_bytes()), Some(relayed));
        assert_eq!(
            relay_id_cmp("1700000000000-3", "1700000000000-12"),
            Some(std::cmp::Ordering::Less)
        );
        for bad in [
            &b"garbage"[..],
            br#"[["a","x1"]]"#,
            br#"[["a","s"]]"#,
            br#"[["a","s1a"]]"#,
            br#"[["a","tz"]]"#,
            br#"[["","rx-1"]]"#,
            br#"[["","1-1"]]"#,
        ] {
            assert_eq!(Position::from_bytes(bad), None);
        }
    }

    #[test]
    fn positions_only_move_forward() {
        let mut p = position();
        p.advance("c", "99");
        assert_eq!(p.shards["c"], Pos::Seq("000120".into()));
        p.advance("a", "5");
        assert_eq!(p.shards["a"], Pos::Seq("5".into()));
        let mut q = Position::default();
        q.advance("c", "200");
        q.shards.insert("a".into(), Pos::Start);
        let m = p.merged(&q);
        assert_eq!(m.shards["c"], Pos::Seq("200".into()));
        assert_eq!(m.shards["a"], Pos::Seq("5".into()));
        assert_eq!(m.shards["b"], Pos::Start);
    }
}
