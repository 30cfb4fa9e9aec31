//! The relay log: a Redis (or Valkey) Stream that the one replica holding the relay lease
//! ([`super::lease`]) appends the table's changes to, and that every replica follows, so
//! the table's change stream has one reader whatever the replica count.
//!
//! Each entry is one change with the stream position just after it. Appends are fenced:
//! a Lua script appends only for the lease's current epoch, which the holder claims when
//! it takes the lease (`claim`), so a holder that stalled past its lease and woke up
//! cannot append after its successor. The log keeps at most `max_len` entries (trimmed
//! approximately, as `XADD MAXLEN ~` does) and none older than `retention`: that is the
//! history resumes are served from.
//!
//! Entries are read one by one: one this version cannot read (a later version wrote it,
//! with a new entity type, value or kind of entry) is [`Relayed::Unreadable`], scoped to
//! the organization its envelope names, and never stops a follower. So that this holds
//! across versions, a rule to keep: *the stream field `e`, and `o`, `p`, `v` in its JSON,
//! keep their meaning across versions* (new fields are optional, and a reader ignores
//! those it does not know).

use std::time::Duration;

use base64::Engine as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{StreamRangeReply, StreamReadOptions, StreamReadReply};
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use super::position::{relay_id_cmp, Position};
use super::{Change, EventKind};
use crate::chart::kinds::Tenant;
use crate::store::Item;

/// Why a relay call failed.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// A later holder of the lease claimed the log: this one must stop relaying.
    #[error("the relay log belongs to a later lease holder (epoch {0})")]
    Fenced(u64),
    #[error("the relay ({0})")]
    Redis(#[from] redis::RedisError),
    #[error("a relay entry does not decode: {0}")]
    Malformed(String),
    /// The log's last entry is not the one this holder appended last: Redis lost entries
    /// (a failover to a replica that missed them, a restore). The holder must stop; the
    /// next holding goes on from the log's last entry.
    #[error("the relay log is not where this holder left it ({0})")]
    Diverged(String),
}

pub type RelayResult<T> = Result<T, RelayError>;

/// What an entry tells followers.
#[derive(Debug, Clone, PartialEq)]
pub enum Relayed {
    /// A change of an entity.
    Change(Box<Change>),
    /// The relay lost records (trimmed from the stream before they were read): every
    /// subscriber may have missed changes, and is told to refetch.
    Lost(String),
    /// The first holder began reading the stream here: every change after this entry is
    /// relayed. A hub waits for it before its first subscription is served, so no change
    /// made after a subscription started can come before the relay did.
    Began,
    /// An entry this version cannot read (a later version wrote it: a new entity type, a
    /// new value, a new kind of entry): followers skip it and tell the subscribers of
    /// `org` (every subscriber when `None`) to refetch. `placed`: its position was read
    /// (else the entry's `position` is empty, and a follower keeps its own). Never
    /// appended.
    Unreadable {
        org: Option<String>,
        why: String,
        placed: bool,
    },
}

/// One entry of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Redis's id for it (`<ms>-<n>`): where a follower or a replay goes on from.
    pub id: String,
    pub relayed: Relayed,
    /// The stream position just after it.
    pub position: Position,
    /// The id of the entry appended before it; `None` from an earlier version.
    pub prev: Option<String>,
    /// The label of the change stream it was read from; `None` from an earlier version.
    pub stream: Option<String>,
}

/// The Lua function both scripts start with: the id of the last entry ever appended to a
/// stream (kept by Redis when entries are trimmed, restored with the stream), `0-0` for
/// none.
macro_rules! last_id_fn {
    () => {
        r#"
local function last_id(key)
  if redis.call('EXISTS', key) == 0 then
    return '0-0'
  end
  local info = redis.call('XINFO', 'STREAM', key)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      return info[i + 1]
    end
  end
  return '0-0'
end
"#
    };
}

/// Appends only while the fence holds this epoch, and (with ARGV[4]) only on the entry
/// the holder appended last; each entry names the one before it (`r`); trims by count and
/// by age. KEYS: stream, fence. ARGV: epoch, max_len, min_id, last id or '', then one
/// payload per entry.
const APPEND: &str = concat!(
    last_id_fn!(),
    r#"
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')
if fence ~= tonumber(ARGV[1]) then
  return redis.error_reply('FENCED ' .. fence)
end
local prev = last_id(KEYS[1])
if ARGV[4] ~= '' and ARGV[4] ~= prev then
  return redis.error_reply('DIVERGED ' .. prev)
end
local ids = {}
for i = 5, #ARGV do
  prev = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'e', ARGV[i], 'r', prev)
  ids[#ids + 1] = prev
end
redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[3])
return ids
"#
);

/// Moves the fence to this epoch unless a later one holds it. KEYS: fence, stream.
/// ARGV: epoch. Returns the fence, and the stream's last id when it was moved.
const CLAIM: &str = concat!(
    last_id_fn!(),
    r#"
local fence = tonumber(redis.call('GET', KEYS[1]) or '0')
if fence > tonumber(ARGV[1]) then
  return {fence, ''}
end
redis.call('SET', KEYS[1], ARGV[1])
return {tonumber(ARGV[1]), last_id(KEYS[2])}
"#
);

/// Longest a call to the relay may take (connecting included) before it fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest a follower's read waits for an entry.
pub const MAX_BLOCK: Duration = Duration::from_secs(5);

/// The relay log of one table.
#[derive(Clone)]
pub struct RelayLog {
    conn: ConnectionManager,
    /// A connection of its own for blocking reads (`XREAD BLOCK`): Redis answers one
    /// connection's commands in order, so a blocked read would hold up every append.
    blocking: ConnectionManager,
    stream: String,
    fence: String,
    max_len: usize,
    retention: Duration,
    append: redis::Script,
    claim: redis::Script,
}

impl std::fmt::Debug for RelayLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayLog")
            .field("stream", &self.stream)
            .finish()
    }
}

impl RelayLog {
    /// Connects to `url` (`redis://host:port`, `rediss://` for TLS against the system's
    /// roots); the log's keys are named after `name` (`itemgraph:{<name>}:changes`,
    /// `…:fence`, in one hash slot for a cluster): the table's ARN, or `--relay-prefix`.
    pub async fn connect(
        url: &str,
        name: &str,
        max_len: usize,
        retention: Duration,
    ) -> RelayResult<RelayLog> {
        Self::connect_trusting(url, None, name, max_len, retention).await
    }

    /// [`connect`](Self::connect), trusting the PEM certificates `ca` instead of the
    /// system's roots for `rediss://` (a private CA, a self-signed test server).
    pub async fn connect_trusting(
        url: &str,
        ca: Option<&[u8]>,
        name: &str,
        max_len: usize,
        retention: Duration,
    ) -> RelayResult<RelayLog> {
        // The build has both of rustls's crypto providers; name one before any TLS client
        // is built (an error only says one is named already).
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let client = match ca {
            Some(ca) => redis::Client::build_with_tls(
                url,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(ca.to_vec()),
                },
            )?,
            None => redis::Client::open(url)?,
        };
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CALL_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT));
        let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
        let blocking = ConnectionManager::new_with_config(
            client,
            config.set_response_timeout(Some(MAX_BLOCK + CALL_TIMEOUT)),
        )
        .await?;
        Ok(RelayLog {
            conn,
            blocking,
            stream: format!("itemgraph:{{{name}}}:changes"),
            fence: format!("itemgraph:{{{name}}}:fence"),
            max_len: max_len.max(1),
            retention,
            append: redis::Script::new(APPEND),
            claim: redis::Script::new(CLAIM),
        })
    }

    /// Claims the log for a lease holding of `epoch`: the id of the last entry ever
    /// appended (`0-0` for none), which the holding's first append names; `Fenced` when a
    /// later holding has claimed it.
    pub async fn claim(&self, epoch: u64) -> RelayResult<String> {
        let mut conn = self.conn.clone();
        let (fence, last): (u64, String) = self
            .claim
            .key(&self.fence)
            .key(&self.stream)
            .arg(epoch)
            .invoke_async(&mut conn)
            .await?;
        if fence == epoch {
            Ok(last)
        } else {
            Err(RelayError::Fenced(fence))
        }
    }

    /// Appends entries, each with the position after it, as the holder of `epoch`.
    pub async fn append(
        &self,
        epoch: u64,
        entries: &[(Relayed, Position)],
    ) -> RelayResult<Vec<String>> {
        self.append_on(epoch, None, None, entries).await
    }

    /// [`append`](Self::append) by a holder that knows the log's last id, `on` (refused
    /// with `Diverged` when it is another: Redis lost entries, and the next holding must
    /// go on from its last entry), of changes read from the stream labelled `stream`.
    pub async fn append_on(
        &self,
        epoch: u64,
        on: Option<&str>,
        stream: Option<&str>,
        entries: &[(Relayed, Position)],
    ) -> RelayResult<Vec<String>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let min_ms = crate::clock::now_ms().saturating_sub(self.retention.as_millis() as u64);
        let mut invocation = self.append.prepare_invoke();
        invocation
            .key(&self.stream)
            .key(&self.fence)
            .arg(epoch)
            .arg(self.max_len)
            .arg(format!("{min_ms}-0"))
            .arg(on.unwrap_or(""));
        for (relayed, position) in entries {
            invocation.arg(encode(relayed, position, stream)?);
        }
        let mut conn = self.conn.clone();
        match invocation.invoke_async::<Vec<String>>(&mut conn).await {
            Ok(ids) => Ok(ids),
            Err(e) if e.to_string().contains("FENCED") => {
                let fence = e
                    .to_string()
                    .split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .next_back()
                    .unwrap_or(0);
                Err(RelayError::Fenced(fence))
            }
            Err(e) if e.to_string().contains("DIVERGED") => {
                Err(RelayError::Diverged(e.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The name of the log's stream key (for operators and tests).
    pub fn stream_key(&self) -> &str {
        &self.stream
    }

    /// Whether the relay answers (`PING`).
    pub async fn ping(&self) -> RelayResult<()> {
        let mut conn = self.conn.clone();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }

    /// The newest entry: where a new holder goes on reading the table's stream from.
    pub async fn last(&self) -> RelayResult<Option<Entry>> {
        let mut conn = self.conn.clone();
        let reply: StreamRangeReply = conn.xrevrange_count(&self.stream, "+", "-", 1).await?;
        let Some(last) = reply.ids.into_iter().next().map(entry) else {
            return Ok(None);
        };
        // Going on from anywhere else would skip or repeat changes: a holder of the
        // version that wrote it must take over.
        if let Relayed::Unreadable {
            placed: false, why, ..
        } = &last.relayed
        {
            return Err(RelayError::Malformed(format!(
                "{}: its position cannot be read: {why}",
                last.id
            )));
        }
        Ok(Some(last))
    }

    /// The newest `count` entries, oldest first: what a hub starting to follow the log
    /// keeps in memory.
    pub async fn newest(&self, count: usize) -> RelayResult<Vec<Entry>> {
        let mut conn = self.conn.clone();
        let reply: StreamRangeReply = conn
            .xrevrange_count(&self.stream, "+", "-", count.max(1))
            .await?;
        let mut entries: Vec<Entry> = reply.ids.into_iter().map(entry).collect();
        entries.reverse();
        Ok(entries)
    }

    /// The oldest entry's id: a replay from before it has lost entries.
    pub async fn first_id(&self) -> RelayResult<Option<String>> {
        let mut conn = self.conn.clone();
        let reply: StreamRangeReply = conn.xrange_count(&self.stream, "-", "+", 1).await?;
        Ok(reply.ids.into_iter().next().map(|e| e.id))
    }

    /// Up to `count` entries after `id` (`"0"`: from the oldest), without waiting.
    pub async fn range_after(&self, id: &str, count: usize) -> RelayResult<Vec<Entry>> {
        Ok(self
            .range_after_raw(id, count)
            .await?
            .into_iter()
            .map(RawEntry::decode)
            .collect())
    }

    /// [`range_after`](Self::range_after) without decoding: a replay decodes entry by
    /// entry, giving the runtime its turn in between.
    pub async fn range_after_raw(&self, id: &str, count: usize) -> RelayResult<Vec<RawEntry>> {
        let mut conn = self.conn.clone();
        let reply: StreamRangeReply = conn
            .xrange_count(&self.stream, format!("({id}"), "+", count)
            .await?;
        Ok(reply.ids.into_iter().map(raw).collect())
    }

    /// Entries after `id` (`"$"`: only those appended from now), waiting up to `block`
    /// (at most [`MAX_BLOCK`]) for the first; none when nothing came. One follower per
    /// log: the blocking connection is the log's own.
    pub async fn follow(&self, id: &str, count: usize, block: Duration) -> RelayResult<Vec<Entry>> {
        let block = block.min(MAX_BLOCK);
        let mut conn = self.blocking.clone();
        let options = StreamReadOptions::default()
            .count(count)
            .block(block.as_millis() as usize);
        let reply: Option<StreamReadReply> =
            conn.xread_options(&[&self.stream], &[id], &options).await?;
        Ok(reply
            .into_iter()
            .flat_map(|r| r.keys)
            .flat_map(|k| k.ids)
            .map(entry)
            .collect())
    }

    /// The newest entry's id, `"0"` when the log is empty: a follower that starts now
    /// goes on from it.
    pub async fn tail(&self) -> RelayResult<String> {
        let mut conn = self.conn.clone();
        let reply: StreamRangeReply = conn.xrevrange_count(&self.stream, "+", "-", 1).await?;
        Ok(reply
            .ids
            .into_iter()
            .next()
            .map_or_else(|| "0".to_owned(), |e| e.id))
    }
}

/// An entry as stored: the change's images as items, in JSON (`k` `l` with `m`: lost).
#[derive(Serialize, Deserialize)]
struct Stored {
    k: char,
    /// The organization of the change's entity: what a version that cannot read the
    /// change still reads, to tell only that organization's subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    o: Option<String>,
    /// The label of the change stream read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    v: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    m: Option<String>,
    s: String,
    q: String,
    t: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    b: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<serde_json::Value>,
    p: String,
}

fn encode(relayed: &Relayed, position: &Position, stream: Option<&str>) -> RelayResult<String> {
    let p = base64::engine::general_purpose::STANDARD_NO_PAD.encode(position.to_bytes());
    let v = stream.map(str::to_owned);
    let change = match relayed {
        Relayed::Change(change) => change,
        Relayed::Unreadable { .. } => {
            return Err(RelayError::Malformed(
                "an unreadable entry is never appended".into(),
            ))
        }
        Relayed::Lost(_) | Relayed::Began => {
            let (k, m) = match relayed {
                Relayed::Lost(why) => ('l', Some(why.clone())),
                _ => ('b', None),
            };
            let stored = Stored {
                k,
                o: None,
                v,
                m,
                s: String::new(),
                q: String::new(),
                t: 0,
                b: None,
                a: None,
                p,
            };
            return serde_json::to_string(&stored)
                .map_err(|e| RelayError::Malformed(e.to_string()));
        }
    };
    let image = |e: &Option<Item>| -> RelayResult<Option<serde_json::Value>> {
        e.as_ref()
            .map(|e| {
                serde_dynamo::from_item::<_, serde_json::Value>(e.clone())
                    .map_err(|err| RelayError::Malformed(err.to_string()))
            })
            .transpose()
    };
    let stored = Stored {
        k: match change.kind {
            EventKind::Created => 'c',
            EventKind::Updated => 'u',
            EventKind::Deleted => 'd',
        },
        o: change.org().map(|o| o.as_str().to_owned()),
        v,
        m: None,
        s: change.shard.clone(),
        q: change.sequence.clone(),
        t: change.created_ms,
        b: image(&change.before)?,
        a: image(&change.after)?,
        p,
    };
    serde_json::to_string(&stored).map_err(|e| RelayError::Malformed(e.to_string()))
}

fn decode(id: String, payload: &str) -> RelayResult<Entry> {
    let bad = |e: &dyn std::fmt::Display| RelayError::Malformed(format!("{id}: {e}"));
    let mut stored: Stored = serde_json::from_str(payload).map_err(|e| bad(&e))?;
    let stream = stored.v.take();
    let image = |v: Option<serde_json::Value>| -> RelayResult<Option<Item>> {
        v.map(|v| serde_dynamo::to_item(v).map_err(|e| bad(&e)))
            .transpose()
    };
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(&stored.p)
        .map_err(|e| bad(&e))?;
    let position = Position::from_bytes(&bytes).ok_or_else(|| bad(&"position"))?;
    let kind = match stored.k {
        'b' => {
            return Ok(Entry {
                id,
                relayed: Relayed::Began,
                position,
                prev: None,
                stream,
            })
        }
        'l' => {
            return Ok(Entry {
                id,
                relayed: Relayed::Lost(stored.m.unwrap_or_default()),
                position,
                prev: None,
                stream,
            })
        }
        'c' => EventKind::Created,
        'u' => EventKind::Updated,
        'd' => EventKind::Deleted,
        other => return Err(bad(&format!("kind {other:?}"))),
    };
    // The relayer read the images with the design, and wrote the tenant they name.
    let org = stored
        .o
        .as_deref()
        .map(Tenant::parse)
        .transpose()
        .map_err(|e| bad(&e))?;
    let change = Change::new(
        kind,
        image(stored.b)?,
        image(stored.a)?,
        org,
        (stored.s, stored.q, stored.t),
    );
    if change.before.is_none() && change.after.is_none() {
        return Err(bad(&"no image"));
    }
    Ok(Entry {
        id,
        relayed: Relayed::Change(Box::new(change)),
        position,
        prev: None,
        stream,
    })
}

/// Whether entries are missing between `at`, the id a reader read last, and an entry
/// whose predecessor is `prev`, read next: `Some(true)` when that predecessor is after
/// `at` (trimmed before the reader read it); `None` when the entry does not say (an
/// earlier version appended it). A predecessor before `at` is a log that Redis restored
/// behind the reader (rewound): what it holds again was read already, and is dropped by
/// its shard sequence.
fn follows_gap(prev: Option<&str>, at: &str) -> Option<bool> {
    Some(relay_id_cmp(prev?, at).is_some_and(|o| o.is_gt()))
}

impl Entry {
    /// Whether entries are missing between `at` and this one (see [`RawEntry::follows_gap`]).
    pub fn follows_gap(&self, at: &str) -> Option<bool> {
        follows_gap(self.prev.as_deref(), at)
    }
}

impl RawEntry {
    /// Whether entries are missing between `at`, the id read last, and this one, read
    /// next: `None` when the entry does not name its predecessor (an earlier version
    /// appended it).
    pub fn follows_gap(&self, at: &str) -> Option<bool> {
        follows_gap(self.prev.as_deref(), at)
    }
}

/// What any version reads of an entry of a later one.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    o: Option<String>,
    #[serde(default)]
    p: Option<String>,
    #[serde(default)]
    v: Option<String>,
}

fn position_of(p: &str) -> Option<Position> {
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(p)
        .ok()?;
    Position::from_bytes(&bytes)
}

/// An entry as read: decoded, or [`Relayed::Unreadable`] with what its envelope says.
fn read(id: String, payload: Option<&str>, prev: Option<String>) -> Entry {
    let decoded = match payload {
        Some(payload) => decode(id.clone(), payload),
        None => Err(RelayError::Malformed(format!("{id}: no payload"))),
    };
    match decoded {
        Ok(entry) => Entry { prev, ..entry },
        Err(error) => {
            let envelope = payload.and_then(|p| serde_json::from_str::<Envelope>(p).ok());
            let position = envelope
                .as_ref()
                .and_then(|e| e.p.as_deref())
                .and_then(position_of);
            Entry {
                id,
                relayed: Relayed::Unreadable {
                    org: envelope.as_ref().and_then(|e| e.o.clone()),
                    why: error.to_string(),
                    placed: position.is_some(),
                },
                position: position.unwrap_or_default(),
                prev,
                stream: envelope.and_then(|e| e.v),
            }
        }
    }
}

/// An entry as read, not decoded yet.
#[derive(Debug, Clone)]
pub struct RawEntry {
    pub id: String,
    payload: Option<String>,
    /// The id of the entry appended before it; `None` from an earlier version.
    pub prev: Option<String>,
}

impl RawEntry {
    /// The entry, or [`Relayed::Unreadable`] when this version cannot read it.
    pub fn decode(self) -> Entry {
        read(self.id, self.payload.as_deref(), self.prev)
    }
}

fn raw(e: redis::streams::StreamId) -> RawEntry {
    let payload: Option<String> = e.get("e");
    let prev: Option<String> = e.get("r");
    RawEntry {
        id: e.id,
        payload,
        prev,
    }
}

fn entry(e: redis::streams::StreamId) -> Entry {
    raw(e).decode()
}
