//! State shared by the pool handle and its workers, one owner per piece, each with its
//! fields private to its file: `Queues` (`registry/queues.rs`: lane queues, stealers,
//! bundle buffers, mailboxes), `Crew` (`registry/crew.rs`: the control word, slots,
//! threads), `Gate` (`registry/gate.rs`: capacity and backpressure) and `Quiet`
//! (`registry/quiet.rs`: the progress counts with the `CLOSED` bit, `wait()`'s waiters, the
//! tasks dropped by shutdown); the count shards are `registry/shards.rs`. `Registry` holds
//! them with the sleep protocol and the shutdown flag, and runs the steps that cross owners:
//! pause and shutdown, waking for new work, resize.
//!
//! A task's path from submit to run, one file per stage:
//! 1. admission (`registry/admission.rs`): the shutdown check, capacity and backpressure
//!    (the `Gate`);
//!    async submitters wait for room in `src/admit.rs`;
//! 2. dispatch (`registry/dispatch.rs`): where an admitted task goes (its lane's shared
//!    queue, one by one or as bundles; the caller; a helper thread). A task submitted from
//!    inside the pool goes onto the worker's own deque instead (`worker/submit.rs`);
//! 3. the worker loop (`worker.rs`), which finds work (`worker/find.rs`);
//! 4. execute (`worker/execute.rs`); the registry's side of a task's end is in
//!    `registry/quiesce.rs` (panics reported, `wait()`ers told through `Quiet`).
//!
//! Beside the path: worker slots and their threads (`registry/crew.rs`: retire, join;
//! `registry/slots.rs`: resize) and a worker waiting inside a task (`worker/wait.rs`).

use crate::clock::Clock;
use crate::config::Config;
use crate::lane_reserve::LaneReserve;
use crate::metrics::histogram::Latency;
use crate::sleep::Sleep;
use crate::sync::{fence, AtomicU8, Ordering};
use std::time::Instant;

mod admission;
mod crew;
mod dispatch;
mod gate;
mod queues;
mod quiesce;
mod quiet;
mod shards;
mod slots;

pub(crate) use self::admission::{Admission, Route};
pub(crate) use self::crew::{Crew, SlotThread};
pub(crate) use self::gate::Gate;
pub(crate) use self::queues::{LocalQueues, Queues};
pub(crate) use self::quiet::{Progress, Quiet, QuietOutcome, QuietWaiter};
pub(crate) use self::shards::{Shard, Shards};

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
    /// The per-worker and external count shards (protocol progress and statistics).
    pub(crate) shards: Shards,
    /// Queue-wait and run-time histograms, when `track_latency` is on.
    pub(crate) latency: Option<Latency>,
    pub(crate) cfg: Config,
    /// Capacity and backpressure (`registry/gate.rs`).
    pub(crate) gate: Gate,
    /// `RUNNING`, `GRACEFUL` or `NOW`: only ever raised. Kept here, not in `quiet`, as
    /// shutdown crosses every owner (`begin_shutdown`).
    shutdown: AtomicU8,
    /// `wait()`'s waiters and the tasks dropped by shutdown (`registry/quiet.rs`).
    pub(crate) quiet: Quiet,
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
            shards: Shards::new(slots),
            latency: cfg.track_latency.then(|| Latency::new(slots)),
            gate: Gate::new(&cfg),
            cfg,
            shutdown: AtomicU8::new(RUNNING),
            quiet: Quiet::new(),
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
                // F1 for the reserve (docs/protocol.md, "The lane reserve"): it either sees the
                // bit cleared in its look before sleeping, or we see it asleep here.
                fence(Ordering::SeqCst);
                for lane in 0..self.queues.lane_count() {
                    if !self.queues.lane(lane).shared().is_empty() {
                        reserve.notify_resumed(self, lane);
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
        self.shutdown.load(Ordering::SeqCst) != RUNNING && self.shards.outstanding() == 0
    }

    pub(crate) fn begin_shutdown(&self, now: bool) {
        // Under `slots` (`Crew::close`): a concurrent `resize` either started its threads
        // before (they are counted in `live`, and shutdown waits for them) or sees the flag
        // and starts none.
        self.crew.close(|| {
            // First close the external shards (the handshake with `admit`, see
            // `Counts::enter_shared`), then raise the flag: a worker that sees the flag
            // (Acquire, after this SeqCst store) sees every entry made before the close.
            self.shards.close_external();
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
        self.gate.wake_blocked_for_shutdown();
        self.notify_waiters();
        self.sleep.wake_all();
        if let Some(reserve) = &self.lane_reserve {
            reserve.unpark();
        }
    }
}
