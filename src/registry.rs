//! State shared by the pool handle and its workers: the queues (`registry/queues.rs`), the
//! crew of workers (`registry/crew.rs`: control word, slots, threads), the sleep protocol,
//! the counters and the shutdown handshake. `Registry` runs the steps that cross owners:
//! pause and shutdown, waking for new work, resize.
//!
//! A task's path from submit to run, one file per stage:
//! 1. admission (`registry/admission.rs`): the shutdown check, capacity and backpressure;
//!    async submitters wait for room in `src/admit.rs`;
//! 2. dispatch (`registry/dispatch.rs`): where an admitted task goes (its lane's shared
//!    queue, one by one or as bundles; the caller; a helper thread). A task submitted from
//!    inside the pool goes onto the worker's own deque instead (`worker/submit.rs`);
//! 3. the worker loop (`worker.rs`), which finds work (`worker/find.rs`);
//! 4. execute (`worker/execute.rs`); the registry's side of a task's end is in
//!    `registry/quiesce.rs` (panics reported, `wait()`ers told).
//!
//! Beside the path: worker slots and their threads (`registry/crew.rs`: retire, join;
//! `registry/slots.rs`: resize) and a worker waiting inside a task (`worker/wait.rs`).

use crate::admit::RoomWakers;
use crate::builder::Config;
use crate::clock::Clock;
use crate::lane_reserve::LaneReserve;
use crate::metrics::counters::Counters;
use crate::metrics::histogram::Latency;
use crate::sleep::Sleep;
use crate::sync::{fence, AtomicU64, AtomicU8, AtomicUsize, Condvar, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::time::Instant;

mod admission;
mod crew;
mod dispatch;
mod queues;
mod quiesce;
mod slots;

pub(crate) use self::admission::{Admission, Route};
pub(crate) use self::crew::{Crew, SlotThread};
pub(crate) use self::queues::{LocalQueues, Queues};
pub(crate) use self::quiesce::{Quiet, QuietWaiter};

const RUNNING: u8 = 0;
const GRACEFUL: u8 = 1;
const NOW: u8 = 2;

pub(crate) struct Registry {
    /// Where tasks wait: lane queues, deques as thieves see them, bundle buffers, mailboxes.
    pub(crate) queues: Queues,
    /// The workers: control word (wanted, pause), slots, resize, threads.
    pub(crate) crew: Crew,
    pub(crate) sleep: Sleep,
    /// The lane reserve (`src/lane_reserve.rs`), when the lanes differ in weight and it is on.
    pub(crate) lane_reserve: Option<LaneReserve>,
    pub(crate) counters: Counters,
    /// Queue-wait and run-time histograms, when `track_latency` is on.
    pub(crate) latency: Option<Latency>,
    pub(crate) cfg: Config,
    /// Tasks accepted from outside and not yet started (may overstate; see sleep/README.md).
    pending: CachePadded<AtomicUsize>,
    /// Submitters blocked waiting for room.
    blocked: CachePadded<AtomicUsize>,
    /// Async submitters waiting for room (`src/admit.rs`).
    pub(crate) room_wakers: RoomWakers,
    room_lock: Mutex<()>,
    room_cond: Condvar,
    /// Started tasks a worker may hold back before giving their `pending` units back.
    pub(crate) flush_threshold: usize,
    /// The low-water mark: blocked submitters are woken when a decrement of `pending` (a
    /// release, or a failed reservation's undo) takes it from at or above it to below it.
    room_mark: usize,
    shutdown: AtomicU8,
    /// Threads in `wait_quiescent`, and `poll_quiet` futures registered (`Pool::wait_async`).
    waiters: AtomicUsize,
    /// The quiet generation: how many times a thread holding this lock saw nothing
    /// outstanding while someone waited (sleep/README.md, "`wait()` and shutdown"). A waiter
    /// whose generation moved on returns, whatever the pool does since.
    wait_lock: Mutex<u64>,
    wait_cond: Condvar,
    /// `Pool::wait_async` futures waiting for quiet (counted in `waiters` too), woken with
    /// the blocked waiters (`notify_waiters`).
    quiet_wakers: RoomWakers,
    helpers_live: AtomicUsize,
    dropped_by_shutdown: AtomicU64,
    pub(crate) started_at: Instant,
    /// The clock of latency stamps and lane charging (`now_ns`).
    pub(crate) clock: Clock,
}

impl Registry {
    /// A registry with every slot idle; `Registry::resize` starts the workers.
    pub(crate) fn new(cfg: Config) -> Registry {
        let slots = cfg.max_workers;
        // Only pools that read the clock per task pay for measuring the counter's rate.
        let clock = Clock::new(cfg.track_latency || cfg.lanes.len() > 1);
        // From `max_workers`, not the starting count: held-back units may overstate the queue
        // by `flush_threshold × workers`, which must stay small at any size (`resize`).
        let per_worker = cfg.capacity / (32 * cfg.max_workers);
        let (queues, locals) = Queues::new(slots, &cfg.lanes, cfg.fifo, cfg.submit_rings);
        Registry {
            queues,
            crew: Crew::new(locals),
            // Before any worker of this pool starts (see `barrier::Barrier::mode`).
            sleep: Sleep::new(slots, cfg.membarrier),
            lane_reserve: if cfg.lane_reserve {
                LaneReserve::new(slots, &cfg.lanes)
            } else {
                None
            },
            counters: Counters::new(slots),
            latency: cfg.track_latency.then(|| Latency::new(slots)),
            flush_threshold: per_worker.clamp(1, 64),
            room_mark: admission::room_mark(cfg.capacity),
            cfg,
            pending: CachePadded::new(AtomicUsize::new(0)),
            blocked: CachePadded::new(AtomicUsize::new(0)),
            room_wakers: RoomWakers::new(),
            room_lock: Mutex::new(()),
            room_cond: Condvar::new(),
            shutdown: AtomicU8::new(RUNNING),
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(0),
            wait_cond: Condvar::new(),
            quiet_wakers: RoomWakers::new(),
            helpers_live: AtomicUsize::new(0),
            dropped_by_shutdown: AtomicU64::new(0),
            started_at: Instant::now(),
            clock,
        }
    }

    /// Nanoseconds since the pool started: the clock of latency stamps.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    // ----- pause ------------------------------------------------------------------------

    /// Pauses or resumes. Resuming wakes every parked worker; pausing wakes `wait()`ers so
    /// they can report [`WaitError::Paused`](crate::WaitError::Paused).
    pub(crate) fn set_paused(&self, on: bool) {
        if on {
            if self.crew.pause(|| self.is_shutdown()) {
                self.notify_waiters();
            }
        } else {
            self.crew.resume();
            // Every parked worker re-checks: the store comes before `wake_all` takes the
            // `sleepers` lock, so a worker that announces itself after that sees it (its
            // re-check follows its own acquire of the lock) and one that announced before is
            // woken.
            self.sleep.wake_all();
            if let Some(reserve) = &self.lane_reserve {
                // F1 for the reserve (sleep/README.md, "The lane reserve"): it either sees the
                // bit cleared in its look before sleeping, or we see it asleep here.
                fence(Ordering::SeqCst);
                for lane in 0..self.queues.lane_count() {
                    if !self.queues.lane(lane).shared().is_empty() {
                        reserve.notify(self, lane);
                    }
                }
            }
        }
    }

    // ----- shutdown --------------------------------------------------------------------

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed) != RUNNING
    }

    /// Whether queued discardable tasks are to be dropped rather than run.
    pub(crate) fn is_stopping_now(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed) == NOW
    }

    /// Whether a worker with nothing to do may exit: shutdown asked and nothing outstanding.
    pub(crate) fn may_exit(&self) -> bool {
        // Pairs with the store in `begin_shutdown` (Acquire would do): having seen the flag we
        // see the close before it, so `outstanding` counts every entry made before the close.
        self.shutdown.load(Ordering::SeqCst) != RUNNING && self.counters.outstanding() == 0
    }

    pub(crate) fn begin_shutdown(&self, now: bool) {
        // Under `slots` (`Crew::close`): a concurrent `resize` either started its threads
        // before (they are counted in `live`, and shutdown waits for them) or sees the flag
        // and starts none.
        self.crew.close(|| {
            // First close the external shards (the handshake with `admit`, see
            // `Shard::enter_shared`), then raise the flag: a worker that sees the flag
            // (Acquire, after this SeqCst store) sees every entry made before the close.
            self.counters.close_external();
            // Only ever raised (RUNNING < GRACEFUL < NOW): a graceful call after
            // `shutdown_now` changes nothing.
            let target = if now { NOW } else { GRACEFUL };
            let mut current = self.shutdown.load(Ordering::SeqCst);
            while current < target {
                match self.shutdown.compare_exchange(
                    current,
                    target,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) => break,
                    Err(seen) => current = seen,
                }
            }
        });
        {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.room_wakers.wake_all();
        self.notify_waiters();
        self.sleep.wake_all();
        if let Some(reserve) = &self.lane_reserve {
            reserve.unpark();
        }
    }

    /// Counts a task that `shutdown_now` dropped unrun (`Pool::dropped_by_shutdown`). Called
    /// before the task is counted `Dropped`, never after: a closer learns that the task
    /// finished through that count, and must then find it here too.
    ///
    /// Relaxed is enough in that order. The `Dropped` add that follows is a Release
    /// (`Shard::add_owned`, `Shard::add_shared`), and every reader of the finished counts
    /// loads them with Acquire (`Counters::outstanding`, through `Shard::proto`). A thread
    /// that counts our task finished there therefore happens after this increment, and so
    /// does everyone it hands that knowledge to: a worker that saw nothing outstanding and
    /// exits, then under the `live` lock a closer in `await_workers`. That closer's load in
    /// `dropped_by_shutdown` sees it, also a second closer racing the first, which finds the
    /// threads already taken and joins none (`join_threads`), so no join orders the lane
    /// reserve's drops before its load. The other order let that closer see the reserve's
    /// drop finished and not yet counted here.
    pub(crate) fn note_dropped_by_shutdown(&self) {
        self.dropped_by_shutdown.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped_by_shutdown(&self) -> u64 {
        self.dropped_by_shutdown.load(Ordering::Relaxed)
    }
}
