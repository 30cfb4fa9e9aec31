//! Group commit: the writes that arrive while a commit is under way share the next redb
//! transaction and its one fsync, each planned against what the writes before it left and
//! answered once its group is durable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::store::faults::CLIENT_TOKEN_TTL;
use crate::store::StoreResult;

use super::{internal, EmbeddedEngine, Inner, WriteOp};

/// Most writes one group commit takes: bounds how long the first of them waits for the
/// last.
pub(super) const MAX_GROUP: usize = 256;

/// Group commit: writes that arrive while a commit is under way wait in `queue`; the
/// committer takes them all into one redb write transaction and one fsync, then answers
/// each. Each write is planned against the items as the writes before it in the group left
/// them, so a group is the same as its writes committed one after the other.
#[derive(Default)]
pub(super) struct Group {
    pub(super) queue: Vec<Job>,
    /// Whether a committer runs (on the blocking pool); the first write finding none
    /// starts one.
    pub(super) committing: bool,
}

/// The group committer's hold on the store, moved into its blocking task. Should that task
/// never run (the runtime refuses it while shutting down) or stop by a panic, dropping the
/// hold answers the writes still queued (an error; none of them was applied) and lets the
/// next write start a committer, rather than leaving every later write waiting.
pub(super) struct Committer(Option<Arc<Inner>>);

impl Committer {
    pub(super) fn run(mut self) {
        let Some((done, committed)) = self.0.as_ref().map(|inner| inner.commit_groups()) else {
            return;
        };
        // Let go of the store before answering the last group, so a caller that drops the
        // store once answered closes the file.
        self.0 = None;
        for d in done {
            d(&committed);
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            let abandoned = {
                let mut group = inner.group();
                group.committing = false;
                std::mem::take(&mut group.queue)
            };
            // Each job holds its caller's reply; dropping it answers "ended without an
            // answer", once the store is let go of (as `run` does).
            drop(inner);
            drop(abandoned);
        }
    }
}

/// One write of a group: runs inside the group's transaction (`None` when it could not be
/// opened) and returns what answers its caller once the group's commit is known.
pub(super) type Job =
    Box<dyn FnOnce(&Inner, Option<&redb::WriteTransaction>, &mut Batch) -> Done + Send>;
pub(super) type Done = Box<dyn FnOnce(&StoreResult<()>) + Send>;

/// What the writes of one group share.
#[derive(Default)]
pub(super) struct Batch {
    /// Client request tokens of the transactions applied in this group, remembered once
    /// it commits (a repeat within the group is answered from here).
    pub(super) tokens: Vec<(String, u64)>,
    /// The other tables of the database a transaction over several wrote: their change
    /// streams are woken once the group commits.
    pub(super) touched: Vec<Arc<Inner>>,
    /// A write failed while applying its changes (after planning, which writes nothing):
    /// nothing of the group is committed. A refusal, or an error met while planning, fails
    /// that write alone.
    pub(super) unsound: bool,
}

/// Client request tokens of applied transactions, forgotten once expired: a queue in
/// expiry order (every token lives [`CLIENT_TOKEN_TTL`]), so forgetting costs nothing
/// per transaction beyond the tokens that expired.
#[derive(Default)]
pub(super) struct Tokens {
    pub(super) by_token: HashMap<String, (u64, Instant)>,
    pub(super) expiring: std::collections::VecDeque<(Instant, String)>,
}

impl Tokens {
    pub(super) fn remember(&mut self, token: &str, digest: u64, now: Instant) {
        while let Some((expires, _)) = self.expiring.front() {
            if *expires > now {
                break;
            }
            if let Some((_, old)) = self.expiring.pop_front() {
                if self.by_token.get(&old).is_some_and(|(_, e)| *e <= now) {
                    self.by_token.remove(&old);
                }
            }
        }
        let expires = now + CLIENT_TOKEN_TTL;
        self.by_token.insert(token.to_owned(), (digest, expires));
        self.expiring.push_back((expires, token.to_owned()));
    }
}

impl EmbeddedEngine {
    /// Runs `write` in the next group commit, and answers once that group is durable (or
    /// failed whole).
    pub(super) async fn commit_in_group<T: Send + 'static>(
        &self,
        write: WriteOp<T>,
    ) -> StoreResult<T> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |inner, tx, batch| {
            let result = match tx {
                Some(tx) => write(inner, tx, batch),
                None => Err(internal("the group's write transaction could not begin")),
            };
            Box::new(move |committed: &StoreResult<()>| {
                let _ = reply.send(match committed {
                    Ok(()) => result,
                    Err(e) => Err(e.clone()),
                });
            })
        });
        let lead = {
            let mut group = self.inner.group();
            group.queue.push(job);
            !std::mem::replace(&mut group.committing, true)
        };
        if lead {
            let committer = Committer(Some(self.inner.clone()));
            tokio::task::spawn_blocking(move || committer.run());
        }
        answer
            .await
            .map_err(|_| internal("the group commit ended without an answer"))?
    }
}

impl Inner {
    /// The writes waiting for the next group commit.
    pub(super) fn group(&self) -> std::sync::MutexGuard<'_, Group> {
        // A std Mutex: held to queue a write or take a group, never across an await.
        self.group.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The committer: commits groups until no write waits, then stops (the next write
    /// starts another). It answers every group but the last, which it returns for
    /// [`Committer::run`] to answer once it has let go of the store.
    pub(super) fn commit_groups(&self) -> (Vec<Done>, StoreResult<()>) {
        loop {
            let jobs: Vec<Job> = {
                let mut group = self.group();
                let n = group.queue.len().min(MAX_GROUP);
                group.queue.drain(..n).collect()
            };
            let (done, committed) = self.commit_group(jobs);
            let last = {
                let mut group = self.group();
                let last = group.queue.is_empty();
                if last {
                    group.committing = false;
                }
                last
            };
            if last {
                return (done, committed);
            }
            for d in done {
                d(&committed);
            }
        }
    }

    /// One group: every write in one transaction, one commit (one fsync). A write that
    /// fails while applying its changes (or panics) voids the whole group. What answers each caller, and the
    /// commit's outcome.
    pub(super) fn commit_group(&self, jobs: Vec<Job>) -> (Vec<Done>, StoreResult<()>) {
        let mut batch = Batch::default();
        let tx = self.db.begin_write().map_err(internal);
        let mut done = Vec::with_capacity(jobs.len());
        for job in jobs {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                job(self, tx.as_ref().ok(), &mut batch)
            }));
            match ran {
                Ok(d) => done.push(d),
                // Its caller hears that the group ended without an answer.
                Err(_) => batch.unsound = true,
            }
        }
        let committed = match tx {
            Err(e) => Err(e),
            Ok(tx) if batch.unsound => {
                let _ = tx.abort();
                Err(internal(
                    "a write of this group failed before the commit; none of the group was written",
                ))
            }
            Ok(tx) => tx.commit().map_err(internal),
        };
        if committed.is_ok() {
            self.notify_changes();
            for other in &batch.touched {
                other.notify_changes();
            }
            if !batch.tokens.is_empty() {
                let now = Instant::now();
                let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
                for (token, digest) in &batch.tokens {
                    tokens.remember(token, *digest, now);
                }
            }
        }
        (done, committed)
    }

    /// Tells stream readers that changes were committed.
    pub(super) fn notify_changes(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}
