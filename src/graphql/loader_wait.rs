//! How a request gathers the keys of one level of references without a trip round the
//! executor.
//!
//! The DataLoader ([`super::loaders`]) batches the keys that one level of a response asks
//! for: async-graphql resolves sibling fields and list items as one joined future, so when
//! the first of them asks for a key and waits once, every other one asks for its own key in
//! the same poll, and the wait's end finds them all pending. How long that one wait lasts
//! is the whole question. The crate's own wait is `tokio::task::yield_now`, which tokio
//! defers until the worker has no other task left or reaches its periodic maintenance: under
//! load, each level of references a request loaded waited for dozens of other requests
//! first (at concurrency 64 a `ticket` with its three references took three times as long
//! as an organization's page of users, see docs/BENCHMARKS.md).
//!
//! Here the wait is [`wait_once`]: a future that wakes its task and is pending once. The
//! request runs [`in_place`], which polls it again at once when it was woken during its own
//! poll, instead of handing it back to the executor: one level of references costs one more
//! poll of the request, not a place at the back of the run queue. A request that keeps
//! waking itself is polled again at most [`MAX_REPOLLS`] times per turn, and not at all once
//! tokio's cooperative budget is spent, then it yields for real, so it cannot keep a worker
//! from the other requests. A wake from elsewhere (a DynamoDB response, a group commit) goes
//! to the executor as before.
//!
//! No crate of the field does this (tokio's own `yield_now` is the deferred wait above), so
//! it is written here.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// How many times one turn of a request polls it again after it woke itself: one per level
/// of references it loads, far more than the depth limit lets a response have.
pub const MAX_REPOLLS: usize = 32;

/// The loader's wait: wakes its task, then is pending exactly once.
pub fn wait_once() -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
    Box::pin(WaitOnce { waited: false })
}

struct WaitOnce {
    waited: bool,
}

impl Future for WaitOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.waited {
            return Poll::Ready(());
        }
        self.waited = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Runs `future` polling it again at once whenever it wakes itself during its own poll.
pub fn in_place<F: Future>(future: F) -> InPlace<F> {
    let signal = Arc::new(Signal {
        state: AtomicU8::new(IDLE),
        outer: AtomicWaker::new(),
    });
    InPlace {
        future: Box::pin(future),
        waker: Waker::from(signal.clone()),
        signal,
    }
}

/// The future of [`in_place`].
pub struct InPlace<F> {
    future: Pin<Box<F>>,
    signal: Arc<Signal>,
    waker: Waker,
}

/// Not being polled: a wake goes to the executor.
const IDLE: u8 = 0;
/// Being polled: a wake is noted, and the poll runs again.
const POLLING: u8 = 1;
/// Woken while being polled.
const WOKEN: u8 = 2;

struct Signal {
    state: AtomicU8,
    /// The executor's waker of the task running the request, from its last poll.
    outer: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(WOKEN) => {}
            Err(_) => self.outer.wake(),
        }
    }
}

impl<F: Future> Future for InPlace<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        this.signal.outer.register(cx.waker());
        let mut inner = Context::from_waker(&this.waker);
        for _ in 0..=MAX_REPOLLS {
            this.signal.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(out) = this.future.as_mut().poll(&mut inner) {
                this.signal.state.store(IDLE, Ordering::Release);
                return Poll::Ready(out);
            }
            if this
                .signal
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // Nothing woke it while it ran: whatever it waits for wakes the executor.
                return Poll::Pending;
            }
            if !tokio::task::coop::has_budget_remaining() {
                break;
            }
        }
        // Woken during every poll of this turn, or out of budget: yield for real.
        this.signal.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts the executor's wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_self_wake_is_polled_again_without_the_executor() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(in_place(async {
            wait_once().await;
            wait_once().await;
            7
        }));
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(7));
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_request_that_keeps_waking_itself_yields_to_the_executor() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(in_place(async {
            for _ in 0..MAX_REPOLLS * 3 {
                wait_once().await;
            }
        }));
        let mut turns = 1;
        while fut.as_mut().poll(&mut cx).is_pending() {
            turns += 1;
        }
        assert_eq!(turns, 3);
        assert_eq!(count.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_wake_from_elsewhere_reaches_the_executor() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
        let task = tokio::spawn(in_place(async move {
            wait_once().await;
            rx.await.unwrap_or(0)
        }));
        tokio::task::yield_now().await;
        tx.send(5).unwrap();
        assert_eq!(task.await.unwrap(), 5);
    }
}
