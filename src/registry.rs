//! State shared by the pool handle and its workers: the queues, the sleep protocol, the
//! counters, the control word (workers wanted, pause) and the shutdown handshake.
//!
//! A task's path from submit to run, one file per stage:
//! 1. admission (`registry/admission.rs`): the shutdown check, capacity and backpressure;
//!    async submitters wait for room in `src/admit.rs`;
//! 2. dispatch (`registry/dispatch.rs`): where an admitted task goes (its lane's shared
//!    queue, one by one or as bundles; the caller; a helper thread). A task submitted from
//!    inside the pool goes onto the worker's own deque instead (`worker/submit.rs`);
//! 3. the worker loop (`worker.rs`), which finds work (`worker/find.rs`);
//! 4. execute (`worker/execute.rs`); the registry's side of a task's end is here (panics
//!    reported, `wait()`ers told), as are worker slots and their threads (resize, retire,
//!    join).
//!
//! Beside the path: a worker waiting inside a task (`worker/wait.rs`).

use crate::admit::RoomWakers;
use crate::broadcast::Mailboxes;
use crate::builder::Config;
use crate::deque::{Injector, Stealer, Worker as Deque};
use crate::job::Job;
use crate::metrics::counters::Counters;
use crate::metrics::histogram::Latency;
use crate::reserve::Reserve;
use crate::sleep::Sleep;
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{fence, Arc, AtomicU64, AtomicU8, AtomicUsize, Condvar, Mutex, Ordering};
use crate::unwind::{call_guarded, drop_payload, payload_message, TaskPanic};
use crate::ResizeError;
use crossbeam_utils::CachePadded;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

mod admission;
mod dispatch;

pub(crate) use self::admission::{Admission, Route};

const RUNNING: u8 = 0;
const GRACEFUL: u8 = 1;
const NOW: u8 = 2;

/// The `control` word: the number of workers wanted, shifted left by one, and `PAUSED`.
const PAUSED: usize = 1;

/// One lane's shared queue and its share.
pub(crate) struct LaneQueue {
    pub(crate) injector: Injector<Job>,
    /// Jobs put into this lane's bundles beyond one per bundle (whose queue entry `len()`
    /// counts while it is queued), plus one per bundle entry dropped for good: what
    /// `Stats::queued` adds, less the jobs claimed so far (`LaneStat::Claimed`). A gauge,
    /// not a protocol variable: Relaxed everywhere.
    pub(crate) bundled: AtomicUsize,
    /// Virtual-time charge per nanosecond of run time, in 1/2^16 units: `2^16 / weight`
    /// (at least 1), so a lane's virtual clock advances in inverse proportion to its weight.
    pub(crate) stride: u64,
}

/// What a worker slot is doing. Changed only under `Registry::slots`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    /// No thread; the slot's deques wait in `Slots::deques`.
    Idle,
    /// A thread was started for the slot and will take its deques.
    Starting,
    /// A thread runs the slot.
    Running,
    /// The slot's thread is retiring (handing its work over, running its stop hook).
    Retiring,
    /// The slot's thread left because the pool shut down.
    Exited,
}

/// Worker slots: who runs each, and the deques of slots no thread runs.
pub(crate) struct Slots {
    pub(crate) state: Vec<SlotState>,
    deques: Vec<Option<Box<[Deque<Job>]>>>,
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
    /// Per worker slot, `Pool::broadcast` jobs for that worker only (`src/broadcast.rs`).
    pub(crate) mailboxes: Mailboxes,
    room_lock: Mutex<()>,
    room_cond: Condvar,
    /// Started tasks a worker may hold back before giving their `pending` units back.
    pub(crate) flush_threshold: usize,
    shutdown: AtomicU8,
    /// Threads in `wait_quiescent`.
    waiters: AtomicUsize,
    /// The quiet generation: how many times a thread holding this lock saw nothing
    /// outstanding while someone waited (sleep/README.md, "`wait()` and shutdown"). A waiter
    /// whose generation moved on returns, whatever the pool does since.
    wait_lock: Mutex<u64>,
    wait_cond: Condvar,
    /// Worker threads started and not yet exited.
    live: Mutex<usize>,
    live_cond: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    helpers: Mutex<Vec<JoinHandle<()>>>,
    helpers_live: AtomicUsize,
    dropped_by_shutdown: AtomicU64,
    pub(crate) started_at: Instant,
}

impl Registry {
    /// A registry with every slot idle; `Registry::resize` starts the workers.
    pub(crate) fn new(cfg: Config) -> Registry {
        // Before any worker of this pool starts (see `barrier::MODE`).
        crate::sleep::barrier::init();
        let slots = cfg.max_workers;
        // From `max_workers`, not the starting count: held-back units may overstate the queue
        // by `flush_threshold × workers`, which must stay small at any size (`resize`).
        let per_worker = cfg.capacity / (32 * cfg.max_workers);
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
        let lanes = cfg
            .lanes
            .iter()
            .map(|&(_, weight)| LaneQueue {
                injector: Injector::new(),
                bundled: AtomicUsize::new(0),
                stride: ((1u64 << 16) / u64::from(weight)).max(1),
            })
            .collect();
        Registry {
            lanes,
            stealers,
            control: CachePadded::new(AtomicUsize::new(0)),
            slots: Mutex::new(Slots {
                state: vec![SlotState::Idle; slots],
                deques: deques.into_iter().map(Some).collect(),
            }),
            slot_cond: Condvar::new(),
            resizing: Mutex::new(()),
            spare_bundles: Mutex::new(Vec::new()),
            shown: AtomicUsize::new(0),
            sleep: Sleep::new(slots),
            reserve: if cfg.lane_reserve {
                Reserve::new(slots, &cfg.lanes)
            } else {
                None
            },
            counters: Counters::new(slots),
            latency: cfg.track_latency.then(|| Latency::new(slots)),
            flush_threshold: per_worker.clamp(1, 64),
            cfg,
            pending: CachePadded::new(AtomicUsize::new(0)),
            blocked: CachePadded::new(AtomicUsize::new(0)),
            room_wakers: RoomWakers::new(),
            mailboxes: Mailboxes::new(slots),
            room_lock: Mutex::new(()),
            room_cond: Condvar::new(),
            shutdown: AtomicU8::new(RUNNING),
            waiters: AtomicUsize::new(0),
            wait_lock: Mutex::new(0),
            wait_cond: Condvar::new(),
            live: Mutex::new(0),
            live_cond: Condvar::new(),
            threads: Mutex::new(Vec::with_capacity(slots)),
            helpers: Mutex::new(Vec::new()),
            helpers_live: AtomicUsize::new(0),
            dropped_by_shutdown: AtomicU64::new(0),
            started_at: Instant::now(),
        }
    }

    /// Nanoseconds since the pool started: the clock of latency stamps.
    pub(crate) fn now_ns(&self) -> u64 {
        self.started_at.elapsed().as_nanos() as u64
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
                    if !self.lanes[lane].injector.is_empty() {
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
        self.shutdown.load(Ordering::SeqCst) != RUNNING && self.counters.outstanding() == 0
    }

    pub(crate) fn begin_shutdown(&self, now: bool) {
        // Under `slots`: a concurrent `resize` either started its threads before (they are
        // counted in `live`, and shutdown waits for them) or sees the flag and starts none.
        let slots = self.slots.lock();
        // First close the external shards (the handshake with `admit`, see
        // `Shard::enter_shared`), then raise the flag: a worker that sees the flag (Acquire,
        // after this SeqCst store) sees every entry made before the close.
        self.counters.close_external();
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
        {
            let _guard = self.room_lock.lock();
            self.room_cond.notify_all();
        }
        self.room_wakers.wake_all();
        self.notify_waiters();
        self.sleep.wake_all();
        if let Some(reserve) = &self.reserve {
            reserve.unpark();
        }
    }

    pub(crate) fn note_dropped_by_shutdown(&self) {
        self.dropped_by_shutdown.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dropped_by_shutdown(&self) -> u64 {
        self.dropped_by_shutdown.load(Ordering::Relaxed)
    }
}

impl Registry {
    pub(crate) fn report_panic(
        &self,
        worker: Option<usize>,
        payload: Box<dyn std::any::Any + Send>,
    ) {
        match &self.cfg.panic_handler {
            Some(handler) => call_guarded("panic handler", worker, || {
                handler(TaskPanic::new(worker, payload))
            }),
            None => drop_payload(payload),
        }
    }

    /// The index of the calling thread if it is one of our workers, for `report_panic`.
    pub(crate) fn worker_here(&self) -> Option<usize> {
        crate::worker::with_current(|w| w.is_some_and(|w| w.is_in(self)))
            .then(crate::worker::current_worker_index)
            .flatten()
    }

    /// After something other than a worker changed the outstanding count: tell waiters, and
    /// during shutdown wake parked workers so they re-check whether they may exit.
    pub(crate) fn after_finish_off_worker(&self) {
        // Pairs with the waiter's SeqCst registration in `wait_quiescent` and with F2 of a
        // parking worker (sleep/README.md, "Other events that wake workers").
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) > 0 {
            self.notify_waiters();
        }
        if self.shutdown.load(Ordering::Relaxed) != RUNNING {
            self.sleep.wake_all();
        }
    }

    pub(crate) fn has_waiters(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) > 0
    }

    /// Threads blocked in `wait_quiescent` now (`Stats::waiters`).
    pub(crate) fn waiters(&self) -> usize {
        self.waiters.load(Ordering::Relaxed)
    }

    /// Wakes the waiters to re-check, first starting a new quiet generation if the pool is
    /// quiet now: then every one of them returns, also if one that returns first submits
    /// more work before the others run again.
    #[cold]
    pub(crate) fn notify_waiters(&self) {
        let mut generation = self.wait_lock.lock();
        if self.counters.outstanding() == 0 {
            *generation += 1;
        }
        self.wait_cond.notify_all();
    }

    /// Blocks until the pool has been seen with no task outstanding since the call (by this
    /// thread, another waiter or a worker: see `notify_waiters`), or `deadline` passes, or
    /// (with `stop_if_paused`) the pool is paused while tasks wait in a queue.
    pub(crate) fn wait_quiescent(&self, deadline: Option<Instant>, stop_if_paused: bool) -> Quiet {
        if self.counters.outstanding() == 0 {
            // Quiet now: if others wait, they may return for it too.
            if self.has_waiters() {
                self.notify_waiters();
            }
            return Quiet::Done;
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
                break Quiet::Done;
            }
            if self.counters.outstanding() == 0 {
                // Quiet: a new generation for the other waiters (see `notify_waiters`).
                *guard += 1;
                self.wait_cond.notify_all();
                break Quiet::Done;
            }
            // Paused with tasks waiting in a queue: they would not start before a resume.
            // (Only running tasks left: they finish, and the worker that finishes the last
            // one notifies us from `go_idle`, as does any worker that parks because of the
            // pause, including one woken by a submit.) Read under `wait_lock`: `pause` sets
            // the bit before it takes the lock to notify.
            if stop_if_paused && self.is_paused() && self.anything_queued() {
                break Quiet::Paused;
            }
            if timed_out {
                break Quiet::TimedOut;
            }
            timed_out = !self.wait_cond.wait_until(&mut guard, deadline);
        };
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        done
    }

    /// Whether any shared queue or worker deque holds a job.
    fn anything_queued(&self) -> bool {
        self.lanes.iter().any(|l| !l.injector.is_empty())
            || self.stealers.iter().any(|s| !s.is_empty())
    }
}

/// How `wait_quiescent` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quiet {
    Done,
    TimedOut,
    Paused,
}

impl Registry {
    /// Sets the number of workers: starts threads for idle slots below `n` (waiting for
    /// slots still retiring), and lets workers at `n` and above retire at their next task
    /// boundary. Returns once the new workers are running (and pinned, when asked).
    pub(crate) fn resize(this: &Arc<Registry>, n: usize) -> Result<(), ResizeError> {
        if n == 0 {
            return Err(ResizeError::ZeroWorkers);
        }
        if n > this.cfg.max_workers {
            return Err(ResizeError::TooManyWorkers {
                requested: n,
                max: this.cfg.max_workers,
            });
        }
        if this.retiring_here() {
            return Err(ResizeError::WouldDeadlock);
        }
        let _one_at_a_time = this.resizing.lock();
        let mut slots = this.slots.lock();
        if this.is_shutdown() {
            return Err(ResizeError::Shutdown);
        }
        this.set_target(n);
        let mut start = Vec::new();
        for i in 0..n {
            loop {
                match slots.state[i] {
                    SlotState::Running | SlotState::Starting => break,
                    SlotState::Retiring => this.slot_cond.wait(&mut slots),
                    SlotState::Idle | SlotState::Exited => {
                        slots.state[i] = SlotState::Starting;
                        start.push(i);
                        break;
                    }
                }
            }
            if this.is_shutdown() {
                // `begin_shutdown` raised the flag while we waited for a retiring slot.
                for &j in &start {
                    slots.state[j] = SlotState::Idle;
                }
                return Err(ResizeError::Shutdown);
            }
        }
        this.shown.store(slots.shown(), Ordering::Relaxed);
        *this.live.lock() += start.len();
        drop(slots);
        // Workers above `n` may be parked: let them see they are to retire.
        this.sleep.wake_all();
        let startup = Arc::new(Startup::new());
        let mut failure = None;
        let mut spawned = 0;
        for &i in &start {
            let core = this.cfg.cores.as_ref().map(|c| c[i]);
            let (reg, report) = (this.clone(), startup.clone());
            let thread = this.thread_name(i).and_then(|name| {
                thread::spawn(name, this.cfg.stack_size, move || {
                    crate::worker::run(reg, i, core, move |pinned| report.report(i, pinned))
                })
                .map_err(ResizeError::ThreadSpawn)
            });
            match thread {
                Ok(handle) => {
                    spawned += 1;
                    this.add_thread(handle);
                }
                Err(e) => {
                    // This slot and the later ones never got a thread.
                    let mut slots = this.slots.lock();
                    for &j in start.iter().skip(spawned) {
                        slots.state[j] = SlotState::Idle;
                    }
                    this.shown.store(slots.shown(), Ordering::Relaxed);
                    drop(slots);
                    this.workers_gone(start.len() - spawned);
                    failure = Some((i, e));
                    break;
                }
            }
        }
        if let Some(worker) = startup.wait_for(spawned) {
            let core = this.cfg.cores.as_ref().map_or(0, |c| c[worker]);
            if failure.as_ref().is_none_or(|(at, _)| worker < *at) {
                failure = Some((worker, ResizeError::PinFailed { worker, core }));
            }
        }
        match failure {
            None => Ok(()),
            Some((at, err)) => {
                // Keep the workers below the failed one; those above it retire.
                let slots = this.slots.lock();
                this.set_target(at.max(1));
                drop(slots);
                this.sleep.wake_all();
                Err(err)
            }
        }
    }

    /// Whether the calling thread is one of our workers, retiring: it is in its
    /// `on_worker_stop` hook, the only user code a retiring worker runs. A resize waits for
    /// retiring workers to leave (and for a resize that may be doing so), so from there it
    /// would wait for itself.
    fn retiring_here(&self) -> bool {
        self.worker_here()
            .is_some_and(|i| self.slots.lock().state[i] == SlotState::Retiring)
    }

    /// Worker `index`'s thread name, from the user's callback, guarded: its panic must not
    /// unwind through `resize` with slots marked `Starting` and counted in `live`.
    fn thread_name(&self, index: usize) -> Result<String, ResizeError> {
        catch_unwind(AssertUnwindSafe(|| (self.cfg.thread_name)(index))).map_err(|payload| {
            let message = payload_message(&*payload)
                .unwrap_or("<non-string payload>")
                .to_owned();
            drop_payload(payload);
            ResizeError::ThreadNamePanicked {
                worker: index,
                message,
            }
        })
    }

    /// Starts the lane reserve's thread, if the pool has one (once, at build). Its handle
    /// joins the helpers', which `join_threads` joins after the workers have left.
    pub(crate) fn start_reserve(this: &Arc<Registry>) -> Result<(), ResizeError> {
        if this.reserve.is_none() {
            return Ok(());
        }
        let reg = this.clone();
        let name = "flock-lane-reserve".to_owned();
        let handle = thread::spawn(name, this.cfg.stack_size, move || Reserve::run(&reg))
            .map_err(ResizeError::ThreadSpawn)?;
        this.helpers.lock().push(handle);
        Ok(())
    }

    /// A new worker thread takes its slot's deques.
    pub(crate) fn take_slot(&self, index: usize) -> Box<[Deque<Job>]> {
        let mut slots = self.slots.lock();
        slots.state[index] = SlotState::Running;
        slots.deques[index]
            .take()
            .expect("flock: a starting slot has its deques")
    }

    /// A worker beyond the number wanted asks to retire; false if the pool grew back
    /// meanwhile (it keeps running).
    pub(crate) fn confirm_retire(&self, index: usize) -> bool {
        let mut slots = self.slots.lock();
        // Also during shutdown: the work it hands over is run by those that stay (at least
        // one worker is always wanted, and none exits while a task is outstanding).
        if Registry::retiring(self.control(), index) {
            slots.state[index] = SlotState::Retiring;
            true
        } else {
            false
        }
    }

    /// A worker thread leaves: its deques go back to its slot.
    pub(crate) fn leave_slot(&self, index: usize, deques: Box<[Deque<Job>]>, retired: bool) {
        let mut slots = self.slots.lock();
        debug_assert!(
            deques.iter().all(Deque::is_empty),
            "flock: a worker left work behind"
        );
        slots.deques[index] = Some(deques);
        slots.state[index] = if retired {
            SlotState::Idle
        } else {
            SlotState::Exited
        };
        self.shown.store(slots.shown(), Ordering::Relaxed);
        self.slot_cond.notify_all();
        drop(slots);
        // `Pool::broadcast` calls left for a worker that never ran its loop (its pinning
        // failed): none can arrive now that the slot is not running, so run them here, off
        // the workers, rather than leave their caller waiting.
        while let Some(job) = self.mailboxes.take(index) {
            self.run_off_worker(self.counters.external(), job, 0);
        }
        self.workers_gone(1);
    }

    /// Slots `Stats::per_worker` shows.
    pub(crate) fn shown_slots(&self) -> usize {
        self.shown.load(Ordering::Relaxed)
    }

    pub(crate) fn add_thread(&self, handle: JoinHandle<()>) {
        let mut threads = self.threads.lock();
        // Retired workers' threads have ended: join them now rather than keep their handles.
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut *threads)
            .into_iter()
            .partition(thread::is_finished);
        *threads = running;
        threads.push(handle);
        drop(threads);
        for t in done {
            let _ = t.join();
        }
    }

    /// `n` worker threads exited (or never started).
    fn workers_gone(&self, n: usize) {
        let mut live = self.live.lock();
        *live -= n;
        if *live == 0 {
            self.live_cond.notify_all();
        }
    }

    /// Waits until every worker has left its loop; false if `deadline` passed first.
    pub(crate) fn await_workers(&self, deadline: Option<Instant>) -> bool {
        let mut live = self.live.lock();
        let mut timed_out = false;
        while *live > 0 {
            if timed_out {
                return false;
            }
            timed_out = !self.live_cond.wait_until(&mut live, deadline);
        }
        true
    }

    /// Joins the worker and helper threads (after `await_workers`, so this does not block
    /// for long; threads of retired workers are joined here too). A second caller finds the
    /// lists empty.
    pub(crate) fn join_threads(&self) {
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        let helpers = std::mem::take(&mut *self.helpers.lock());
        for h in helpers {
            let _ = h.join();
        }
    }
}

/// New workers report in here once pinned (or not), before they run anything.
struct Startup {
    /// (workers reported, first worker whose pinning failed)
    state: Mutex<(usize, Option<usize>)>,
    cond: Condvar,
}

impl Startup {
    fn new() -> Startup {
        Startup {
            state: Mutex::new((0, None)),
            cond: Condvar::new(),
        }
    }

    fn report(&self, index: usize, pinned: bool) {
        let mut state = self.state.lock();
        state.0 += 1;
        if !pinned && state.1.is_none_or(|first| index < first) {
            state.1 = Some(index);
        }
        self.cond.notify_all();
    }

    /// Waits for `n` reports; returns the lowest worker that could not be pinned.
    fn wait_for(&self, n: usize) -> Option<usize> {
        let mut state = self.state.lock();
        while state.0 < n {
            self.cond.wait(&mut state);
        }
        state.1
    }
}
