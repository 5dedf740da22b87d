//! `Quiet`, the owner of the shutdown handshake and of `wait()`: the progress counts every
//! task goes through (`Progress`: entered, then revoked or finished), the `CLOSED` bit that
//! closes the pool to new entries, the outstanding count computed from them, and the
//! threads and futures waiting for that count to reach zero (docs/protocol.md, "`wait()` and
//! shutdown").
//!
//! The counts sit on the per-worker shards (`registry/shards.rs`), beside the statistics,
//! written by their owner with a plain load and store; `Quiet` itself holds the waiters.
//! What crosses owners (the shutdown flag, the queues a paused `wait()` looks at) is passed
//! in by `Registry` (`registry/quiesce.rs`).

use crate::sync::{fence, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
use crate::wakers::RoomWakers;
use std::task::{Context, Poll};
use std::time::Instant;

/// The counts that `wait()` and shutdown reason about: a task is entered once, then either
/// revoked or finished (completed, panicked or dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// A submitter committed to the task (before it looked at the shutdown flag).
    Entered = 0,
    /// An entered task was refused after all (shutdown seen, queue full, timeout).
    Revoked,
    /// The task ran to its end.
    Completed,
    /// The task panicked.
    Panicked,
    /// The task was dropped unrun (`shutdown_now`, `JoinHandle::cancel`).
    Dropped,
}
const PROGRESS: usize = 5;

/// The top bit of an external shard's `Entered` word: the pool is closed to new entries.
const CLOSED: u64 = 1 << 63;

/// One shard's progress counts. They come through the `sync` facade so loom sees them.
pub(crate) struct Counts {
    words: [AtomicU64; PROGRESS],
}

impl Counts {
    pub(crate) fn new() -> Self {
        Counts {
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Adds `n` to a count of a shard that only the calling thread writes (a worker's own):
    /// a plain load and store, no read-modify-write.
    #[inline]
    pub(crate) fn add_owned(&self, c: Progress, n: u64) {
        let a = &self.words[c as usize];
        // Release: pairs with the Acquire loads in `outstanding` (through `Counts::get`), so
        // a reader that counts this task as finished also sees everything the task did.
        a.store(a.load(Ordering::Relaxed) + n, Ordering::Release);
    }

    /// Adds `n` to a count of a shard several threads may write (an external shard).
    pub(crate) fn add_shared(&self, c: Progress, n: u64) {
        // Release: as in `add_owned`.
        self.words[c as usize].fetch_add(n, Ordering::Release);
    }

    /// Enters one task from a thread outside the pool. Returns false if the pool was closed
    /// first (`close`), in which case the caller must revoke the entry.
    ///
    /// The submit/shutdown handshake lives in this one word: `close` sets `CLOSED` with an
    /// RMW, so in the word's modification order our increment is either before it (and the
    /// closer, and every worker that later sees the shutdown flag, sees our entry: they wait
    /// for the task) or after it (and we see the bit). AcqRel: Release publishes the entry to
    /// `close`'s Acquire; Acquire orders our later reads after a close we saw.
    pub(crate) fn enter_shared(&self) -> bool {
        self.words[Progress::Entered as usize].fetch_add(1, Ordering::AcqRel) & CLOSED == 0
    }

    /// Enters `n` tasks at once (a batch); the same handshake as `enter_shared`.
    pub(crate) fn enter_shared_n(&self, n: u64) -> bool {
        self.words[Progress::Entered as usize].fetch_add(n, Ordering::AcqRel) & CLOSED == 0
    }

    /// Marks the shard closed: entries after this see `CLOSED` (see `enter_shared`).
    pub(crate) fn close(&self) {
        self.words[Progress::Entered as usize].fetch_or(CLOSED, Ordering::AcqRel);
    }

    pub(crate) fn get(&self, c: Progress) -> u64 {
        // Acquire: pairs with the Release updates above. `CLOSED` is a flag, not a count.
        self.words[c as usize].load(Ordering::Acquire) & !CLOSED
    }
}

/// Tasks entered and neither finished nor revoked, from `sum`, a count summed over every
/// shard. Zero means: every task whose entry happened before this call has finished (or was
/// refused).
///
/// Why a sum of unsynchronised shards is exact here: a task's entry is sequenced before
/// its push, and its push before the run that counts it finished (the deque's
/// Release/Acquire pair), so a finish we count has its entry visible to the later loads;
/// likewise a revoke follows its entry on the same thread. Reading all the finished
/// counters first, then revoked, then entered, every task counted finished or revoked is
/// also counted entered, so the result never underflows and is zero only when nothing
/// entered is outstanding.
#[inline]
pub(crate) fn outstanding(sum: impl Fn(Progress) -> u64) -> u64 {
    // SeqCst fence: pairs with the fences of the waiter and finisher paths
    // (`Quiet::wait`'s registration, `Registry::after_finish_off_worker`,
    // `Worker::go_idle`).
    fence(Ordering::SeqCst);
    let finished = sum(Progress::Completed) + sum(Progress::Panicked) + sum(Progress::Dropped);
    let revoked = sum(Progress::Revoked);
    let entered = sum(Progress::Entered);
    debug_assert!(
        entered >= finished + revoked,
        "flock: outstanding count underflow"
    );
    entered.saturating_sub(finished + revoked)
}

/// The waiters for quiet, and the tasks `shutdown_now` dropped.
pub(crate) struct Quiet {
    /// Threads in `wait`, and `poll` futures registered (`Pool::wait_async`).
    waiters: AtomicUsize,
    /// The quiet generation: how many times a thread holding this lock saw nothing
    /// outstanding while someone waited (docs/protocol.md, "`wait()` and shutdown"). A waiter
    /// whose generation moved on returns, whatever the pool does since.
    wait_lock: Mutex<u64>,
    wait_cond: Condvar,
    /// `Pool::wait_async` futures waiting for quiet (counted in `waiters` too), woken with
    /// the blocked waiters (`notify`).
    quiet_wakers: RoomWakers,
    /// Tasks that `shutdown_now` dropped unrun (`note_dropped_by_shutdown`).
    dropped_by_shutdown: AtomicU64,
}

impl Quiet {
    pub(crate) fn new() -> Self {
        Quiet {
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(0),
            wait_cond: Condvar::new(),
            quiet_wakers: RoomWakers::new(),
            dropped_by_shutdown: AtomicU64::new(0),
        }
    }

    pub(crate) fn has_waiters(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) > 0
    }

    /// Threads blocked in `wait` and pending `poll` futures now (`Stats::waiters`).
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.load(Ordering::Relaxed)
    }

    /// Wakes the waiters to re-check, first starting a new quiet generation if the pool is
    /// quiet now (`outstanding` is zero): then every one of them returns, also if one that
    /// returns first submits more work before the others run again.
    #[cold]
    pub(crate) fn notify(&self, outstanding: impl Fn() -> u64) {
        {
            let mut generation = self.wait_lock.lock();
            if outstanding() == 0 {
                *generation += 1;
            }
            self.wait_cond.notify_all();
        }
        // After the generation moved, outside the lock: a future that registered its waker
        // before our lock is woken here; one that checks under the lock after us sees the
        // new generation (`poll`).
        self.quiet_wakers.wake_all();
    }

    /// Blocks until the pool has been seen with no task outstanding since the call (by this
    /// thread, another waiter or a worker: see `notify`), or `deadline` passes, or
    /// `paused_with_queue` says the pool is paused while tasks wait in a queue (read under
    /// `wait_lock`: `pause` sets its bit before it takes the lock to notify).
    pub(crate) fn wait(
        &self,
        deadline: Option<Instant>,
        outstanding: impl Fn() -> u64,
        paused_with_queue: impl Fn() -> bool,
    ) -> QuietOutcome {
        if outstanding() == 0 {
            // Quiet now: if others wait, they may return for it too.
            if self.has_waiters() {
                self.notify(&outstanding);
            }
            return QuietOutcome::Done;
        }
        let mut guard = self.wait_lock.lock();
        // SeqCst: pairs with the fence in `Worker::go_idle` / `after_finish_off_worker`.
        self.waiters.fetch_add(1, Ordering::SeqCst);
        // Read under `wait_lock`, as it is only changed under it: a later generation means a
        // thread saw the pool quiet after we registered.
        let registered = *guard;
        let mut timed_out = false;
        let done = loop {
            if *guard != registered {
                break QuietOutcome::Done;
            }
            if outstanding() == 0 {
                // Quiet: a new generation for the other waiters (see `notify`).
                *guard += 1;
                self.wait_cond.notify_all();
                self.quiet_wakers.wake_all();
                break QuietOutcome::Done;
            }
            // Paused with tasks waiting in a queue: they would not start before a resume.
            // (Only running tasks left: they finish, and the worker that finishes the last
            // one notifies us from `go_idle`, as does any worker that parks because of the
            // pause, including one woken by a submit.)
            if paused_with_queue() {
                break QuietOutcome::Paused;
            }
            if timed_out {
                break QuietOutcome::TimedOut;
            }
            timed_out = !self.wait_cond.wait_until(&mut guard, deadline);
        };
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        done
    }

    /// `wait` as a future's poll (`Pool::wait_async`): ready once the pool has been seen
    /// with nothing outstanding since the first poll; else `cx`'s waker is stored and woken
    /// by `notify`. The first poll that does not return at once counts the future among
    /// `waiters`, so finishing workers notify; `leave` (called by the future when ready and
    /// on drop) takes it out again.
    pub(crate) fn poll(
        &self,
        waiter: &mut QuietWaiter,
        cx: &mut Context<'_>,
        outstanding: impl Fn() -> u64,
    ) -> Poll<()> {
        if waiter.generation.is_none() && outstanding() == 0 {
            if self.has_waiters() {
                self.notify(&outstanding);
            }
            return Poll::Ready(());
        }
        // The waker first, then the check under `wait_lock`: a notifier that moves the
        // generation after our check wakes the waker stored before it.
        self.quiet_wakers.register(&mut waiter.id, cx.waker());
        let mut guard = self.wait_lock.lock();
        let registered = match waiter.generation {
            Some(generation) => generation,
            None => {
                // SeqCst, before the check below: as the blocked waiters' registration, it
                // pairs with the fence in `Worker::go_idle` / `after_finish_off_worker`.
                self.waiters.fetch_add(1, Ordering::SeqCst);
                *waiter.generation.insert(*guard)
            }
        };
        if *guard != registered {
            drop(guard);
            self.leave(waiter);
            return Poll::Ready(());
        }
        if outstanding() == 0 {
            *guard += 1;
            self.wait_cond.notify_all();
            drop(guard);
            self.leave(waiter);
            self.quiet_wakers.wake_all();
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Takes a `poll` future out of the waiters (ready, or dropped before).
    pub(crate) fn leave(&self, waiter: &mut QuietWaiter) {
        if let Some(id) = waiter.id.take() {
            self.quiet_wakers.unregister(id);
        }
        if waiter.generation.take().is_some() {
            // Relaxed, as a blocked waiter's leaving: a notifier that still counts us only
            // wakes a waiter list that no longer holds us.
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Counts `n` tasks that `shutdown_now` dropped unrun (`Pool::dropped_by_shutdown`). Called
    /// before they are counted `Dropped`, never after: a closer learns that a task
    /// finished through that count, and must then find it here too.
    ///
    /// Relaxed is enough in that order. The `Dropped` add that follows is a Release
    /// (`Counts::add_owned`, `Counts::add_shared`), and every reader of the finished counts
    /// loads them with Acquire (`outstanding`, through `Counts::get`). A thread that counts
    /// our task finished there therefore happens after this increment, and so does everyone
    /// it hands that knowledge to: a worker that saw nothing outstanding and exits, then
    /// under the `live` lock a closer in `await_workers`. That closer's load in
    /// `dropped_by_shutdown` sees it, also a second closer racing the first, which finds the
    /// threads already taken and joins none (`join_threads`), so no join orders the lane
    /// reserve's drops before its load. The other order let that closer see the reserve's
    /// drop finished and not yet counted here.
    pub(crate) fn note_dropped_by_shutdown(&self, n: u64) {
        self.dropped_by_shutdown.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn dropped_by_shutdown(&self) -> u64 {
        self.dropped_by_shutdown.load(Ordering::Relaxed)
    }
}

/// A `Pool::wait_async` future's registration: its waker's id in `quiet_wakers`, and the
/// quiet generation it waits past (set while it counts among `waiters`).
#[derive(Debug, Default)]
pub(crate) struct QuietWaiter {
    id: Option<u64>,
    generation: Option<u64>,
}

/// How `Quiet::wait` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QuietOutcome {
    Done,
    TimedOut,
    Paused,
}
