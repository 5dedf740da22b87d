//! State shared by the pool handle and its workers: the queues, the sleep protocol, the
//! counters, the control word (workers wanted, pause) and the shutdown handshake.
//!
//! Owners with private fields: `Gate` (`registry/gate.rs`: capacity and backpressure) and
//! `Quiet` (`registry/quiet.rs`: the progress counts with the `CLOSED` bit, `wait()`'s
//! waiters, the tasks dropped by shutdown); the count shards are `registry/shards.rs`.
//! `Registry` runs the steps that cross owners.
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
//! Beside the path: worker slots and their threads (`registry/slots.rs`: resize, retire,
//! join) and a worker waiting inside a task (`worker/wait.rs`).

use crate::clock::Clock;
use crate::config::Config;
use crate::deque::{Stealer, Worker as Deque};
use crate::job::{Job, JobRef};
use crate::mailbox::Mailboxes;
use crate::metrics::histogram::Latency;
use crate::reserve::Reserve;
use crate::sleep::Sleep;
use crate::submitq::SharedQueue;
use crate::sync::thread::JoinHandle;
use crate::sync::{fence, AtomicU8, AtomicUsize, Condvar, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::time::Instant;

mod admission;
mod dispatch;
mod gate;
mod quiesce;
mod quiet;
mod shards;
mod slots;

pub(crate) use self::admission::{Admission, Route};
pub(crate) use self::gate::Gate;
pub(crate) use self::quiet::{Progress, Quiet, QuietOutcome, QuietWaiter};
pub(crate) use self::shards::{Shard, Shards};
pub(crate) use self::slots::SlotThread;

const RUNNING: u8 = 0;
const GRACEFUL: u8 = 1;
const NOW: u8 = 2;

/// The `control` word: the number of workers wanted, shifted left by one, and `PAUSED`.
const PAUSED: usize = 1;

/// One lane's shared queue and its share.
pub(crate) struct LaneQueue {
    /// The injector and the submitting threads' rings (`submitq.rs`).
    pub(crate) shared: SharedQueue,
    /// Jobs put into this lane's bundles beyond one per bundle (whose queue entry `len()`
    /// counts while it is queued), plus one per bundle entry dropped for good: what
    /// `Stats::queued` adds, less the jobs claimed so far (`LaneStat::Claimed`). A gauge,
    /// not a protocol variable: Relaxed everywhere.
    pub(crate) bundled: AtomicUsize,
    /// Jobs from outside of this lane that workers took as the pool got paused and keep until
    /// it resumes (`WorkerThread::keep_for_resume`): in no queue, but waiting for the resume
    /// as queued jobs do (`wait_quiescent`'s `Paused`; `Stats::queued` counts them).
    pub(crate) kept: AtomicUsize,
    /// Spawned tasks of this lane cancelled while queued whose job is still in a queue, an
    /// empty shell (`JoinHandle::cancel`): no task, so `Stats::queued` subtracts them. Raised
    /// by the cancel, lowered when the shell is taken (its run or discard finds the task
    /// cancelled). A gauge outside the protocol (std's atomic, out of loom's sight): Relaxed.
    shells: std::sync::atomic::AtomicUsize,
    /// Virtual-time charge per nanosecond of run time, in 1/2^16 units: `2^16 / weight`
    /// (at least 1), so a lane's virtual clock advances in inverse proportion to its weight.
    pub(crate) stride: u64,
}

impl LaneQueue {
    /// A task of this lane was cancelled while queued: its job is a shell now.
    pub(crate) fn shell_left(&self) {
        self.shells
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The shell of a cancelled task of this lane was taken from its queue.
    pub(crate) fn shell_taken(&self) {
        self.shells
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Shells of cancelled tasks still queued (see `shells`).
    pub(crate) fn shells(&self) -> usize {
        self.shells.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What a worker slot is doing. Changed only under `Registry::slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    /// No thread; the slot's deques wait in `Slots::deques`.
    Idle,
    /// A thread is being started for the slot and will take its deques (its start may
    /// still fail: `Pool::broadcast` does not call such a slot).
    Starting,
    /// A thread runs the slot: the only state `Pool::broadcast` calls.
    Running,
    /// The slot's thread is retiring (running its broadcast calls, handing its work over,
    /// running its stop hook). Also a thread whose pinning failed (`close_slot`).
    Retiring,
    /// The slot's thread left because the pool shut down.
    Exited,
}

/// Worker slots: who runs each, and the deques of slots no thread runs.
pub(crate) struct Slots {
    pub(crate) state: Vec<SlotState>,
    deques: Vec<Option<LocalQueues>>,
    /// The thread running each slot, from the moment it takes the slot until it leaves it.
    threads: Vec<Option<SlotThread>>,
}

/// A slot's own queues, held by the worker thread that runs in the slot.
pub(crate) struct LocalQueues {
    /// One deque of tasks per lane (`Registry::stealers`).
    pub(crate) lanes: Box<[Deque<Job>]>,
    /// `join`'s second halves, LIFO in every pool (`Registry::join_stealers`; only pools
    /// with one lane use it, see `join.rs`).
    pub(crate) joins: Deque<JobRef>,
}

impl Slots {
    /// Slots to show in `Stats::per_worker`: up to the last one not idle.
    fn shown(&self) -> usize {
        self.state
            .iter()
            .rposition(|s| *s != SlotState::Idle)
            .map_or(0, |i| i + 1)
    }
}

pub(crate) struct Registry {
    /// One shared queue per lane.
    pub(crate) lanes: Box<[LaneQueue]>,
    /// Every slot's deques: slot `i`'s deque of lane `l` is at `i * lanes.len() + l`.
    pub(crate) stealers: Box<[Stealer<Job>]>,
    /// Every slot's join deque (`LocalQueues::joins`), by slot.
    pub(crate) join_stealers: Box<[Stealer<JobRef>]>,
    /// Workers wanted (`<< 1`) and `PAUSED`; read by each worker at each task boundary.
    control: CachePadded<AtomicUsize>,
    pub(crate) slots: Mutex<Slots>,
    slot_cond: Condvar,
    /// One resize at a time (it waits for retiring threads without holding `slots`).
    resizing: Mutex<()>,
    /// Empty bundle buffers for reuse (`Registry::bundle_buffer`).
    spare_bundles: Mutex<Vec<Vec<Job>>>,
    /// `Slots::shown`, readable without the lock.
    shown: AtomicUsize,
    pub(crate) sleep: Sleep,
    /// The lane reserve (`src/reserve.rs`), when the lanes differ in weight and it is on.
    pub(crate) reserve: Option<Reserve>,
    /// The per-worker and external count shards (protocol progress and statistics).
    pub(crate) shards: Shards,
    /// Queue-wait and run-time histograms, when `track_latency` is on.
    pub(crate) latency: Option<Latency>,
    pub(crate) cfg: Config,
    /// Capacity and backpressure (`registry/gate.rs`).
    pub(crate) gate: Gate,
    /// Per worker slot, `Pool::broadcast` jobs for that worker only (`src/mailbox.rs`).
    pub(crate) mailboxes: Mailboxes,
    /// `RUNNING`, `GRACEFUL` or `NOW`: only ever raised. Kept here, not in `quiet`, as
    /// shutdown crosses every owner (`begin_shutdown`).
    shutdown: AtomicU8,
    /// `wait()`'s waiters and the tasks dropped by shutdown (`registry/quiet.rs`).
    pub(crate) quiet: Quiet,
    /// Worker threads started and not yet exited.
    live: Mutex<usize>,
    live_cond: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    helpers: Mutex<Vec<JoinHandle<()>>>,
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
        let deques: Vec<Box<[Deque<Job>]>> = (0..slots)
            .map(|_| {
                cfg.lanes
                    .iter()
                    .map(|_| {
                        if cfg.fifo {
                            Deque::new_fifo()
                        } else {
                            Deque::new_lifo()
                        }
                    })
                    .collect()
            })
            .collect();
        let stealers = deques
            .iter()
            .flat_map(|d| d.iter().map(Deque::stealer))
            .collect();
        let joins: Vec<Deque<JobRef>> = (0..slots).map(|_| Deque::new_lifo()).collect();
        let join_stealers = joins.iter().map(Deque::stealer).collect();
        let lanes = cfg
            .lanes
            .iter()
            .map(|&(_, weight)| LaneQueue {
                shared: SharedQueue::new(cfg.submit_rings),
                bundled: AtomicUsize::new(0),
                kept: AtomicUsize::new(0),
                shells: std::sync::atomic::AtomicUsize::new(0),
                stride: ((1u64 << 16) / u64::from(weight)).max(1),
            })
            .collect();
        Registry {
            lanes,
            stealers,
            join_stealers,
            control: CachePadded::new(AtomicUsize::new(0)),
            slots: Mutex::new(Slots {
                state: vec![SlotState::Idle; slots],
                deques: deques
                    .into_iter()
                    .zip(joins)
                    .map(|(lanes, joins)| Some(LocalQueues { lanes, joins }))
                    .collect(),
                threads: vec![None; slots],
            }),
            slot_cond: Condvar::new(),
            resizing: Mutex::new(()),
            spare_bundles: Mutex::new(Vec::new()),
            shown: AtomicUsize::new(0),
            // Before any worker of this pool starts (see `barrier::Barrier::mode`).
            sleep: Sleep::new(slots, cfg.membarrier),
            reserve: if cfg.lane_reserve {
                Reserve::new(slots, &cfg.lanes)
            } else {
                None
            },
            shards: Shards::new(slots),
            latency: cfg.track_latency.then(|| Latency::new(slots)),
            gate: Gate::new(&cfg),
            cfg,
            mailboxes: Mailboxes::new(slots),
            shutdown: AtomicU8::new(RUNNING),
            quiet: Quiet::new(),
            live: Mutex::new(0),
            live_cond: Condvar::new(),
            threads: Mutex::new(Vec::with_capacity(slots)),
            helpers: Mutex::new(Vec::new()),
            started_at: Instant::now(),
            clock,
        }
    }

    /// Nanoseconds since the pool started: the clock of latency stamps.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    // ----- workers wanted, pause ----------------------------------------------------------

    /// The control word (workers wanted `<< 1`, `PAUSED`). Relaxed: a worker that reads a
    /// stale value acts on it one task later; what must not be missed across parking is
    /// ordered by the `sleepers` lock (see `resize` and `set_paused`).
    pub(crate) fn control(&self) -> usize {
        self.control.load(Ordering::Relaxed)
    }

    /// Whether worker `index` is beyond the number wanted, by a control word.
    pub(crate) fn retiring(control: usize, index: usize) -> bool {
        index >= control >> 1
    }

    pub(crate) fn paused(control: usize) -> bool {
        control & PAUSED != 0
    }

    pub(crate) fn is_paused(&self) -> bool {
        Registry::paused(self.control.load(Ordering::SeqCst))
    }

    /// Pauses or resumes. Resuming wakes every parked worker; pausing wakes `wait()`ers so
    /// they can report [`WaitError::Paused`](crate::WaitError::Paused).
    pub(crate) fn set_paused(&self, on: bool) {
        if on {
            // Under `slots`, as `begin_shutdown` clears the bit: a closing pool drains, so a
            // pause after the shutdown began is ignored (it would leave the drain parked).
            let slots = self.slots.lock();
            if self.is_shutdown() {
                return;
            }
            // SeqCst, then the locks: a worker that parks after taking the `sleepers` lock,
            // and a waiter that checks under `wait_lock`, see the bit.
            self.control.fetch_or(PAUSED, Ordering::SeqCst);
            drop(slots);
            self.notify_waiters();
        } else {
            self.control.fetch_and(!PAUSED, Ordering::SeqCst);
            // Every parked worker re-checks: the store comes before `wake_all` takes the
            // `sleepers` lock, so a worker that announces itself after that sees it (its
            // re-check follows its own acquire of the lock) and one that announced before is
            // woken.
            self.sleep.wake_all();
            if let Some(reserve) = &self.reserve {
                // F1 for the reserve (sleep/README.md, "The lane reserve"): it either sees the
                // bit cleared in its look before sleeping, or we see it asleep here.
                fence(Ordering::SeqCst);
                for lane in 0..self.lanes.len() {
                    if !self.lanes[lane].shared.is_empty() {
                        reserve.notify(self, lane);
                    }
                }
            }
        }
    }

    /// The number of workers wanted.
    pub(crate) fn workers(&self) -> usize {
        self.control() >> 1
    }

    fn set_target(&self, n: usize) {
        let mut now = self.control.load(Ordering::Relaxed);
        loop {
            let next = (n << 1) | (now & PAUSED);
            // SeqCst: see `set_paused`; retiring workers are woken by `wake_all` after this.
            match self
                .control
                .compare_exchange_weak(now, next, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => now = seen,
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
        // Under `slots`: a concurrent `resize` either started its threads before (they are
        // counted in `live`, and shutdown waits for them) or sees the flag and starts none.
        let slots = self.slots.lock();
        // First close the external shards (the handshake with `admit`, see
        // `Counts::enter_shared`), then raise the flag: a worker that sees the flag (Acquire,
        // after this SeqCst store) sees every entry made before the close.
        self.shards.close_external();
        // Only ever raised (RUNNING < GRACEFUL < NOW): a graceful call after `shutdown_now`
        // changes nothing.
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
        // A closing pool drains: a graceful shutdown of a paused pool runs its queue.
        self.control.fetch_and(!PAUSED, Ordering::SeqCst);
        // Wakes a `resize` waiting for a retiring slot, so it sees the flag.
        self.slot_cond.notify_all();
        drop(slots);
        self.gate.wake_blocked_for_shutdown();
        self.notify_waiters();
        self.sleep.wake_all();
        if let Some(reserve) = &self.reserve {
            reserve.unpark();
        }
    }
}
