//! Reading the stream: the hub's one live [`Reader`], and the [`Replay`] a resumed
//! subscription reads up to where the reader is.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::position::{Pos, Position};
use super::{Change, Design, Hub, LiveError};
use crate::store::stream::{
    seq_cmp, ChangeRecord, ChangeStream, ShardInfo, StartAt, StreamError, MAX_RECORDS_PER_CALL,
};

/// A record as a change of one entity of the design; `None` for items that are none
/// (their type unknown, their attributes malformed, or their keys not where the design
/// puts them).
pub(super) fn decode(record: ChangeRecord, design: &Design) -> Option<Change> {
    let read = |image: &Option<crate::store::Item>| {
        let item = image.as_ref()?;
        design.read(item).map(|org| (item.clone(), org))
    };
    let before = read(&record.old_image);
    let after = read(&record.new_image);
    let org = match (&before, &after) {
        (_, Some((_, org))) | (Some((_, org)), None) => org.clone(),
        (None, None) => {
            tracing::debug!(pk = %record.key.pk, sk = %record.key.sk, "a stream record of no entity; skipped");
            return None;
        }
    };
    Some(Change::new(
        record.kind.into(),
        before.map(|(i, _)| i),
        after.map(|(i, _)| i),
        org,
        (record.shard, record.sequence, record.created_ms),
    ))
}

fn now_ms() -> u64 {
    crate::clock::now_ms()
}

/// The shards with every parent before its children (`DescribeStream` does not promise
/// that order).
fn in_lineage_order(shards: Vec<ShardInfo>) -> Vec<ShardInfo> {
    let ids: HashSet<String> = shards.iter().map(|s| s.id.clone()).collect();
    let mut placed: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(shards.len());
    let mut rest = shards;
    while !rest.is_empty() {
        let before = rest.len();
        let (ready, later): (Vec<ShardInfo>, Vec<ShardInfo>) = rest.into_iter().partition(|s| {
            s.parent
                .as_ref()
                .is_none_or(|p| !ids.contains(p) || placed.contains(p))
        });
        placed.extend(ready.iter().map(|s| s.id.clone()));
        out.extend(ready);
        rest = later;
        if rest.len() == before {
            // A cycle cannot happen in a stream; keep what is left as listed.
            out.extend(rest);
            break;
        }
    }
    out
}

/// How often the reader lists the shards even when none of its own ended: new shards
/// are children of the ones it reads, found when those end; this is a safety net. A
/// reader that follows no shard (a stream whose first shard is not there yet, as on
/// DynamoDB Local before the first write) lists them every round.
const RELIST_EVERY: Duration = Duration::from_secs(10);

/// How far before a `Pos::Since` a replay starts sending (see [`Replay::plan`]).
const SINCE_MARGIN: Duration = Duration::from_secs(60);

/// Why subscribers are told when the stream read is not the table's any more.
const REPLACED: &str = "the table's change stream was replaced (disabled and enabled again, \
    or the table recreated), or the server's place in it is gone: refetch, then subscribe again";

/// Longest pause after a failed stream call, doubling from the poll interval.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

struct Tracked {
    id: String,
    iterator: Option<String>,
    /// Where to start again when the iterator expires.
    last: Option<String>,
    began: StartAt,
    /// Records made before this (ms since the Unix epoch) are not delivered: a shard the
    /// previous relay holder began at its latest record, read again from its start.
    since_ms: Option<u64>,
}

/// One record of a page, as the reader hands it on.
pub(super) enum Read {
    /// A change of an entity of the design.
    Change(Box<Change>),
    /// A record of no entity: it moves the position only.
    Skipped { shard: String, sequence: String },
}

/// Where the reader's changes go: this process's hub, or the relay log that every
/// replica's hub follows ([`super::relay`]).
#[async_trait::async_trait]
pub(super) trait Sink: Send + Sync + 'static {
    /// Whether anyone still wants the changes; the reader stops when not.
    fn wanted(&self) -> bool;
    /// One page of one shard, in order. `false`: stop reading (the relay lost its lease
    /// or its log); whoever reads next goes on from the position the sink holds.
    async fn deliver(&self, page: Vec<Read>) -> bool;
    /// Moves the position without a record (shards begun or left).
    fn set_position(&self, f: &mut dyn FnMut(&mut Position));
    /// Records were lost (trimmed from the stream before they were read).
    async fn lost(&self, why: String);
    /// The label of the stream the changes after this come from.
    fn set_stream(&self, _label: &str) {}
    /// Which records are changes of the design's entities.
    fn design(&self) -> Design;
}

/// The hub as a sink, without keeping it alive.
pub(super) struct HubSink(pub Weak<Hub>);

#[async_trait::async_trait]
impl Sink for HubSink {
    fn wanted(&self) -> bool {
        self.0.strong_count() > 0
    }
    async fn deliver(&self, page: Vec<Read>) -> bool {
        let Some(hub) = self.0.upgrade() else {
            return false;
        };
        for read in page {
            match read {
                Read::Change(change) => hub.publish(*change),
                // Still a position: a cursor made later must be past it.
                Read::Skipped { shard, sequence } => {
                    hub.set_position(|p| p.advance(&shard, &sequence))
                }
            }
        }
        true
    }
    fn set_position(&self, f: &mut dyn FnMut(&mut Position)) {
        if let Some(hub) = self.0.upgrade() {
            hub.set_position(f);
        }
    }
    async fn lost(&self, why: String) {
        if let Some(hub) = self.0.upgrade() {
            hub.lost(why);
        }
    }
    fn design(&self) -> Design {
        self.0
            .upgrade()
            .map_or_else(Design::builtin, |hub| hub.design.clone())
    }
}

impl Tracked {
    /// Where a new iterator starts when the last one expired (or was never taken).
    fn restart_at(&mut self) -> StartAt {
        match &self.last {
            Some(seq) => StartAt::After(seq.clone()),
            // Begun at its latest record and read nothing since: an iterator at the latest
            // record now would skip what was written in between. From the oldest record
            // instead; those made before the reader began are skipped (`since_ms`).
            None if self.began == StartAt::Latest => {
                self.began = StartAt::TrimHorizon;
                StartAt::TrimHorizon
            }
            None => self.began.clone(),
        }
    }
}

/// The stream's reader: every open shard, in lineage order, from the moment it started
/// (or from a position: the relay's next holder).
pub(super) struct Reader {
    stream: Arc<dyn ChangeStream>,
    /// The label of the stream read ([`ChangeStream::latest`]).
    label: String,
    sink: Arc<dyn Sink>,
    tracked: Vec<Tracked>,
    /// Every shard listed so far (those closed when the reader started hold the past).
    known: HashSet<String>,
    /// Ended shards whose children have not been listed yet.
    awaiting_children: HashSet<String>,
    poll: Duration,
}

impl Reader {
    /// Lists the shards and takes an iterator at the latest record of each open one.
    pub(super) async fn start(
        stream: Arc<dyn ChangeStream>,
        sink: Arc<dyn Sink>,
        poll: Duration,
    ) -> Result<Reader, StreamError> {
        if !sink.wanted() {
            return Err(StreamError::NoStream("the server is stopping".into()));
        }
        let label = stream.latest().await?;
        sink.set_stream(&label);
        let shards = stream.shards().await?;
        let mut tracked = Vec::new();
        let since = now_ms();
        for shard in shards.iter().filter(|s| !s.closed) {
            let iterator = stream.shard_iterator(&shard.id, StartAt::Latest).await?;
            tracked.push(Tracked {
                id: shard.id.clone(),
                iterator: Some(iterator),
                last: None,
                began: StartAt::Latest,
                // Records made before the reader began are not delivered if the shard is
                // ever read again from its oldest record (its iterator expired before it
                // gave one). Stream times are whole seconds on DynamoDB (minutes on
                // DynamoDB Local): a margin, as replays have.
                since_ms: Some(since.saturating_sub(SINCE_MARGIN.as_millis() as u64)),
            });
        }
        sink.set_position(&mut |p| {
            for t in &tracked {
                p.shards.insert(t.id.clone(), Pos::Since(since));
            }
        });
        tracing::info!(
            engine = stream.engine_name(),
            shards = tracked.len(),
            "following the change stream"
        );
        Ok(Reader {
            known: shards.into_iter().map(|s| s.id).collect(),
            label,
            stream,
            sink,
            tracked,
            awaiting_children: HashSet::new(),
            poll,
        })
    }

    /// Goes on from `from`, where the relay's previous holder stopped: each shard it names
    /// from there (a shard begun at its latest record, from its start, skipping records
    /// made before it began), and the descendants of those when their parents end. Every
    /// other shard listed was read before `from` (an ancestor) or never was to be (closed
    /// before the relay began). `from_stream`: the label of the stream `from` is in (none
    /// from an earlier version); when the table's stream is another one, or none of
    /// `from`'s shards nor their descendants are listed any more, what was not read is
    /// lost (one lost mark) and every listed shard is read from its start.
    pub(super) async fn resume(
        stream: Arc<dyn ChangeStream>,
        sink: Arc<dyn Sink>,
        poll: Duration,
        from: &Position,
        from_stream: Option<&str>,
    ) -> Result<Reader, StreamError> {
        let label = stream.latest().await?;
        sink.set_stream(&label);
        let shards = stream.shards().await?;
        let parents: HashMap<&str, &str> = shards
            .iter()
            .filter_map(|s| Some((s.id.as_str(), s.parent.as_deref()?)))
            .collect();
        let descends_from_position = |id: &str| {
            let mut at = parents.get(id).copied();
            let mut hops = 0;
            while let Some(p) = at {
                if from.shards.contains_key(p) {
                    return true;
                }
                hops += 1;
                if hops > shards.len() {
                    return false;
                }
                at = parents.get(p).copied();
            }
            false
        };
        let replaced = from_stream.is_some_and(|l| l != label);
        let continued = shards
            .iter()
            .any(|s| from.shards.contains_key(&s.id) || descends_from_position(&s.id));
        if replaced || !continued {
            // The position is in no shard listed, nor an ancestor of one: the stream was
            // replaced, or the relay stopped for longer than the stream keeps records (or
            // the position names no shard: the relay began before the stream had one).
            // Every listed shard is read from its start, parents first, by the first
            // round (`adopt_children`).
            sink.set_position(&mut |p| p.shards.clear());
            if replaced || !from.shards.is_empty() {
                tracing::warn!(
                    from = ?from_stream,
                    to = %label,
                    "the relay's last position is in no shard of the table's stream; reading it from its start"
                );
                sink.lost(REPLACED.into()).await;
            }
            return Ok(Reader {
                label,
                stream,
                sink,
                tracked: Vec::new(),
                known: HashSet::new(),
                awaiting_children: HashSet::new(),
                poll,
            });
        }
        let mut tracked = Vec::new();
        for (id, pos) in &from.shards {
            let (began, last, since_ms) = match pos {
                Pos::Seq(seq) => (StartAt::After(seq.clone()), Some(seq.clone()), None),
                // With the replays' margin: a record made in the second the previous
                // holder began, after it, is dated before it.
                Pos::Since(ms) => (
                    StartAt::TrimHorizon,
                    None,
                    Some(ms.saturating_sub(SINCE_MARGIN.as_millis() as u64)),
                ),
                Pos::Start => (StartAt::TrimHorizon, None, None),
            };
            tracked.push(Tracked {
                id: id.clone(),
                iterator: None,
                last,
                began,
                since_ms,
            });
        }
        let known = shards
            .iter()
            .filter(|s| !descends_from_position(&s.id))
            .map(|s| s.id.clone())
            .chain(from.shards.keys().cloned())
            .collect();
        sink.set_position(&mut |p| *p = from.clone());
        tracing::info!(
            engine = stream.engine_name(),
            shards = tracked.len(),
            "following the change stream from the relay's last position"
        );
        Ok(Reader {
            known,
            label,
            stream,
            sink,
            tracked,
            awaiting_children: HashSet::new(),
            poll,
        })
    }

    /// Reads until the sink wants no more.
    pub(super) async fn run(mut self) {
        let mut backoff = self.poll;
        let mut listed = tokio::time::Instant::now();
        // The table's stream is looked up on a timer of its own: `listed` is reset every
        // round while nothing is tracked.
        let mut checked = tokio::time::Instant::now();
        loop {
            if !self.sink.wanted() {
                return;
            }
            if checked.elapsed() >= RELIST_EVERY {
                checked = tokio::time::Instant::now();
                if let Err(error) = self.follow_latest().await {
                    tracing::warn!(%error, "looking up the table's change stream failed");
                }
            }
            match self.round().await {
                Ok(None) => return,
                Ok(Some(read)) => {
                    backoff = self.poll;
                    if self.tracked.is_empty()
                        || !self.awaiting_children.is_empty()
                        || listed.elapsed() >= RELIST_EVERY
                    {
                        listed = tokio::time::Instant::now();
                        if let Err(error) = self.adopt_children().await {
                            tracing::warn!(%error, "listing the stream's shards failed");
                        }
                    }
                    if read == 0 {
                        self.stream.wait_for_changes(self.poll).await;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, ?backoff, "reading the change stream failed; retrying");
                    crate::metrics::record_stream_error();
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// Whether the table's stream is still the one read; if not, what the old one held
    /// past the last record read is lost to every subscriber, and the new one is read
    /// from its start.
    async fn follow_latest(&mut self) -> Result<(), StreamError> {
        let label = match self.stream.latest().await {
            Ok(label) => label,
            // Disabled, not enabled again (yet): the old stream's records stay readable.
            Err(StreamError::NoStream(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        if label == self.label {
            return Ok(());
        }
        tracing::warn!(
            from = %self.label,
            to = %label,
            "the table's change stream was replaced; reading the new one from its start"
        );
        self.label = label;
        self.tracked.clear();
        self.known.clear();
        self.awaiting_children.clear();
        self.sink.set_stream(&self.label);
        self.sink.set_position(&mut |p| p.shards.clear());
        self.sink.lost(REPLACED.into()).await;
        self.adopt_children().await
    }

    /// One `GetRecords` per followed shard; the records read, `None` when the sink
    /// wants no more.
    async fn round(&mut self) -> Result<Option<usize>, StreamError> {
        let mut read = 0;
        let mut ended = Vec::new();
        for i in 0..self.tracked.len() {
            let t = &mut self.tracked[i];
            let iterator = match t.iterator.take() {
                Some(it) => it,
                None => {
                    let at = t.restart_at();
                    match self.stream.shard_iterator(&t.id, at).await {
                        Ok(it) => it,
                        Err(StreamError::Trimmed(why)) => {
                            // The shard (or the position in it) is gone: what it held past
                            // the last record read is lost to every subscriber. Its children
                            // are adopted from their start.
                            if t.last.is_some() || t.began != StartAt::Latest {
                                self.sink
                                .lost(format!(
                                    "the server lost its place in the change stream ({why}): refetch, then subscribe again"
                                ))
                                .await;
                            }
                            ended.push(i);
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            let page = match self
                .stream
                .get_records(&iterator, MAX_RECORDS_PER_CALL)
                .await
            {
                Ok(page) => page,
                Err(StreamError::ExpiredIterator) => continue,
                Err(StreamError::Trimmed(_)) if t.last.is_none() => {
                    // Nothing read from this shard yet, so nothing lost: DynamoDB Local
                    // answers so for a shard that holds no record yet. It was empty when
                    // the reader began, so all it will hold is new: read it from its start.
                    t.began = StartAt::TrimHorizon;
                    continue;
                }
                Err(StreamError::Trimmed(why)) => {
                    // Fell behind the stream's retention: what was trimmed is lost to
                    // every subscriber; go on from the oldest record there is.
                    self.sink
                        .lost(format!(
                            "the server fell behind the change stream and missed changes ({why}): refetch, then subscribe again"
                        ))
                        .await;
                    t.last = None;
                    t.began = StartAt::TrimHorizon;
                    continue;
                }
                Err(e) => {
                    t.iterator = Some(iterator);
                    return Err(e);
                }
            };
            let design = self.sink.design();
            let mut out = Vec::with_capacity(page.records.len());
            for mut record in page.records {
                read += 1;
                record.shard = t.id.clone();
                t.last = Some(record.sequence.clone());
                let before_began = t.since_ms.is_some_and(|ms| record.created_ms < ms);
                let (shard, sequence) = (record.shard.clone(), record.sequence.clone());
                match decode(record, &design).filter(|_| !before_began) {
                    Some(change) => out.push(Read::Change(Box::new(change))),
                    None => out.push(Read::Skipped { shard, sequence }),
                }
            }
            if !out.is_empty() && !self.sink.deliver(out).await {
                return Ok(None);
            }
            match page.next {
                Some(next) => t.iterator = Some(next),
                None => ended.push(i),
            }
        }
        for i in ended.into_iter().rev() {
            let t = self.tracked.remove(i);
            tracing::debug!(shard = %t.id, "shard read to its end");
            self.awaiting_children.insert(t.id);
        }
        Ok(Some(read))
    }

    /// Follows the children of ended shards from their start (and any shard never seen,
    /// which can only be newer than the reader).
    async fn adopt_children(&mut self) -> Result<(), StreamError> {
        let shards = in_lineage_order(self.stream.shards().await?);
        let mut following: HashSet<&str> = self.tracked.iter().map(|t| t.id.as_str()).collect();
        let mut new = Vec::new();
        for shard in &shards {
            if self.known.contains(&shard.id) || following.contains(shard.id.as_str()) {
                continue;
            }
            // A child waits until its parent is read to its end (a parent adopted in this
            // very listing included): one item's changes stay in order.
            if shard
                .parent
                .as_ref()
                .is_some_and(|p| following.contains(p.as_str()))
            {
                continue;
            }
            following.insert(shard.id.as_str());
            new.push(shard.clone());
        }
        for shard in new {
            self.known.insert(shard.id.clone());
            if let Some(parent) = &shard.parent {
                self.awaiting_children.remove(parent);
                self.sink.set_position(&mut |p| {
                    p.shards.remove(parent);
                });
            }
            self.sink.set_position(&mut |p| {
                p.shards.insert(shard.id.clone(), Pos::Start);
            });
            self.tracked.push(Tracked {
                id: shard.id,
                iterator: None,
                last: None,
                began: StartAt::TrimHorizon,
                since_ms: None,
            });
        }
        // An ended shard whose children are not listed yet keeps being asked about; one
        // that is no longer listed at all has been trimmed with its children known.
        let listed: HashSet<&str> = shards.iter().map(|s| s.id.as_str()).collect();
        self.awaiting_children.retain(|id| {
            listed.contains(id.as_str()) && !shards.iter().any(|s| s.parent.as_deref() == Some(id))
        });
        Ok(())
    }
}

/// What a resumed subscription reads before it joins the hub: from its position up to the
/// hub's position when it subscribed, shard by shard in lineage order.
pub(super) struct Replay {
    stream: Arc<dyn ChangeStream>,
    design: Design,
    from: Position,
    target: Position,
    /// The position reached so far.
    at: Position,
    max: usize,
    read: usize,
    plan: Option<Vec<Planned>>,
    current: Option<Reading>,
    /// What the last page brought, in stream order: changes to deliver, and records
    /// that only move the position (so a position never runs ahead of a change not yet
    /// delivered).
    pending: std::collections::VecDeque<Pending>,
    /// Shards all of whose records are before the position: the ancestors of its shards.
    ancestors: HashSet<String>,
}

enum Pending {
    Change(Box<Change>),
    Past { shard: String, sequence: String },
}

struct Planned {
    shard: String,
    start: StartAt,
    /// Records made before this (ms) were before the position (`Pos::Since`).
    skip_before: Option<u64>,
}

struct Reading {
    planned: Planned,
    iterator: Option<String>,
    last: Option<String>,
    /// Empty pages in a row.
    empty_pages: u32,
}

/// Empty pages in a row after which a replay takes a shard to be read to its tip.
const EMPTY_PAGES_AT_TIP: u32 = 3;

/// Attempts of a replay's stream call that is throttled or fails in transit (a wave of
/// reconnecting subscribers can meet DynamoDB Streams' per-shard limits).
const REPLAY_ATTEMPTS: usize = 5;

/// `call` again, with jittered backoff, while it fails with a throttle or an outage.
async fn retrying<T, F, Fut>(call: F) -> Result<T, StreamError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StreamError>>,
{
    use crate::store::StoreError::{Throttled, Unavailable};
    crate::store::retry_while(
        REPLAY_ATTEMPTS as u32,
        |e| matches!(e, StreamError::Store(Throttled(_) | Unavailable(_))),
        call,
    )
    .await
}

impl Replay {
    pub(super) fn new(
        stream: Arc<dyn ChangeStream>,
        from: Position,
        target: Position,
        max: usize,
        design: Design,
    ) -> Replay {
        Replay {
            stream,
            design,
            at: from.clone(),
            from,
            target,
            max,
            read: 0,
            plan: None,
            current: None,
            pending: Default::default(),
            ancestors: HashSet::new(),
        }
    }

    /// Whether a record of `shard` up to `sequence` is at or before the position the
    /// replay started from (the hub may be behind a cursor made on another replica).
    pub(super) fn before_start(&self, shard: &str, sequence: &str) -> bool {
        self.ancestors.contains(shard)
            || matches!(self.from.shards.get(shard), Some(Pos::Seq(s)) if seq_cmp(sequence, s).is_le())
    }

    fn expired(why: impl Into<String>) -> LiveError {
        LiveError::Expired(format!(
            "{}: refetch, then subscribe without `after`",
            why.into()
        ))
    }

    /// Which shards to read, from where, in order.
    async fn plan(&mut self) -> Result<Vec<Planned>, LiveError> {
        let shards: Vec<ShardInfo> = in_lineage_order(self.stream.shards().await?);
        let parent_of: HashMap<&str, Option<&str>> = shards
            .iter()
            .map(|s| (s.id.as_str(), s.parent.as_deref()))
            .collect();
        for (id, pos) in &self.from.shards {
            // Its shard is gone, and with it whatever followed the position in it.
            if !parent_of.contains_key(id.as_str()) && *pos != Pos::Start {
                return Err(Self::expired(
                    "the change stream no longer holds that position",
                ));
            }
        }
        let target = &self.target;
        let descends_from_target = |id: &str| {
            let mut at = id.to_owned();
            while let Some(Some(p)) = parent_of.get(at.as_str()) {
                if target.shards.contains_key(*p) {
                    return true;
                }
                at = (*p).to_owned();
            }
            false
        };
        // The shards the position names, and their ancestors, whose records are all
        // before it.
        let mut before: HashSet<&str> = HashSet::new();
        for id in self.from.shards.keys() {
            let mut up = parent_of.get(id.as_str()).copied().flatten();
            while let Some(p) = up {
                if !before.insert(p) {
                    break;
                }
                up = parent_of.get(p).copied().flatten();
            }
        }
        let mut plan = Vec::new();
        for shard in &shards {
            let (start, skip_before) = match self.from.shards.get(&shard.id) {
                Some(Pos::Seq(s)) => (StartAt::After(s.clone()), None),
                // Stream records tell their time to the second on DynamoDB (to the
                // minute on DynamoDB Local): records of the minute before the reader began
                // are sent too, so a coarse clock can cause no gap.
                Some(Pos::Since(ms)) => (
                    StartAt::TrimHorizon,
                    Some(ms.saturating_sub(SINCE_MARGIN.as_millis() as u64)),
                ),
                Some(Pos::Start) => (StartAt::TrimHorizon, None),
                None if before.contains(shard.id.as_str()) => continue,
                // A child the hub has not reached yet (its parent is still being read):
                // the hub sends it from its start, after the parent, in order.
                None if !self.target.shards.contains_key(&shard.id)
                    && descends_from_target(&shard.id) =>
                {
                    continue
                }
                // A shard after the position: a child of one of its shards.
                None => (StartAt::TrimHorizon, None),
            };
            // Nothing to read where the position is already at the target.
            if let (Some(Pos::Seq(from)), Some(Pos::Seq(to))) = (
                self.from.shards.get(&shard.id),
                self.target.shards.get(&shard.id),
            ) {
                if seq_cmp(from, to).is_ge() {
                    continue;
                }
            }
            plan.push(Planned {
                shard: shard.id.clone(),
                start,
                skip_before,
            });
        }
        self.ancestors = before.into_iter().map(str::to_owned).collect();
        Ok(plan)
    }

    /// The position reached so far (all of the replay once it is caught up).
    pub(super) fn position(&self) -> &Position {
        &self.at
    }

    /// The next change to deliver and the position after it; `None` once caught up.
    pub(super) async fn next(&mut self) -> Result<Option<(Change, Position)>, LiveError> {
        if self.plan.is_none() {
            let mut plan = self.plan().await?;
            plan.reverse();
            self.plan = Some(plan);
        }
        loop {
            match self.pending.pop_front() {
                Some(Pending::Change(change)) => {
                    self.at.advance(&change.shard, &change.sequence);
                    return Ok(Some((*change, self.at.clone())));
                }
                Some(Pending::Past { shard, sequence }) => {
                    self.at.advance(&shard, &sequence);
                    continue;
                }
                None => {}
            }
            if self.current.is_none() {
                let Some(planned) = self.plan.as_mut().and_then(Vec::pop) else {
                    return Ok(None);
                };
                self.current = Some(Reading {
                    planned,
                    iterator: None,
                    last: None,
                    empty_pages: 0,
                });
            }
            let reading = self.current.as_mut().expect("set above");
            let iterator = match reading.iterator.take() {
                Some(it) => it,
                None => {
                    let at = match &reading.last {
                        Some(seq) => StartAt::After(seq.clone()),
                        None => reading.planned.start.clone(),
                    };
                    retrying(|| {
                        self.stream
                            .shard_iterator(&reading.planned.shard, at.clone())
                    })
                    .await?
                }
            };
            let page = match retrying(|| self.stream.get_records(&iterator, MAX_RECORDS_PER_CALL))
                .await
            {
                Ok(page) => page,
                Err(StreamError::ExpiredIterator) => continue,
                // From a shard's oldest record, nothing can be trimmed: DynamoDB Local
                // answers so for a shard that holds no record yet.
                Err(StreamError::Trimmed(_))
                    if reading.last.is_none() && reading.planned.start == StartAt::TrimHorizon =>
                {
                    self.current = None;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let target = self.target.shards.get(&reading.planned.shard);
            let empty = page.records.is_empty();
            let mut reached = false;
            for mut record in page.records {
                record.shard = reading.planned.shard.clone();
                if let Some(Pos::Seq(t)) = target {
                    if seq_cmp(&record.sequence, t).is_gt() {
                        reached = true;
                        break;
                    }
                }
                reading.last = Some(record.sequence.clone());
                let skipped = reading
                    .planned
                    .skip_before
                    .is_some_and(|ms| record.created_ms < ms);
                // Every record read counts, those before a `Pos::Since` skipped too: a
                // position that is a time reads its shard from the oldest record there is
                // (DynamoDB Streams cannot start at a time), and a busy shard holds 24
                // hours of them.
                self.read += 1;
                if self.read > self.max {
                    return Err(Self::expired(format!(
                        "the position is more than {} records behind",
                        self.max
                    )));
                }
                let sequence = record.sequence.clone();
                match decode(record, &self.design) {
                    Some(change) if !skipped => {
                        self.pending.push_back(Pending::Change(Box::new(change)))
                    }
                    _ => self.pending.push_back(Pending::Past {
                        shard: reading.planned.shard.clone(),
                        sequence: sequence.clone(),
                    }),
                }
                if let Some(Pos::Seq(t)) = target {
                    if seq_cmp(&sequence, t).is_ge() {
                        reached = true;
                        break;
                    }
                }
            }
            // Done with this shard: read to its end, up to the target, or (with no
            // target in it) to its tip: what comes later, the hub delivers. DynamoDB may
            // answer an empty page before later records, so the tip is taken to be
            // where pages keep coming back empty.
            let target_seq = matches!(target, Some(Pos::Seq(_)));
            reading.empty_pages = if empty { reading.empty_pages + 1 } else { 0 };
            if reached
                || page.next.is_none()
                || (!target_seq && reading.empty_pages >= EMPTY_PAGES_AT_TIP)
            {
                self.current = None;
            } else {
                reading.iterator = page.next;
            }
        }
    }
}
