//! The worker thread: its loop, where it looks for work, and how it runs a task.

use crate::deque::{Steal, Worker as Deque};
use crate::job::{Job, Outcome, COUNTED, DISCARDABLE, INJECTED, RESERVED};
use crate::latch::Latch;
use crate::metrics::counters::{Proto, Shard, Stat, WorkerState};
use crate::registry::Registry;
use crate::sync::{facade_thread_local, fence, Arc, Ordering};
use crate::unwind::{call_guarded, AbortIfPanic};
use crossbeam_utils::Backoff;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

facade_thread_local! {
    /// The worker running on this thread, if any; set for the whole life of `main_loop`.
    static CURRENT: Cell<*const WorkerThread> = Cell::new(ptr::null());
}

/// Runs `f` with the current thread's worker, if this thread is a worker of any pool.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&WorkerThread>) -> R) -> R {
    let p = CURRENT.with(Cell::get);
    // SAFETY: `CURRENT` is non-null only while `run` is on this thread's stack, holding the
    // `WorkerThread` it points to; `f` runs on this thread, inside that time.
    f(unsafe { p.as_ref() })
}

/// The index of the pool worker running the calling thread, or `None` outside any pool.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// assert_eq!(flock::current_worker_index(), None);
/// let inside = pool.spawn(flock::current_worker_index).join().unwrap();
/// assert!(matches!(inside, Some(0) | Some(1)));
/// ```
pub fn current_worker_index() -> Option<usize> {
    with_current(|w| w.map(|w| w.index))
}

pub(crate) struct WorkerThread {
    index: usize,
    local: Deque<Job>,
    registry: Arc<Registry>,
    rng: Cell<u64>,
    /// Started `RESERVED` jobs whose `pending` units are not given back yet.
    unflushed: Cell<usize>,
}

enum Parked {
    /// Look for work again; `searching` says whether we count as a searcher.
    Resume {
        searching: bool,
    },
    Exit,
}

/// The body of a worker thread. `ready` is told whether pinning worked, before any task runs.
pub(crate) fn run(
    registry: Arc<Registry>,
    index: usize,
    local: Deque<Job>,
    core: Option<usize>,
    ready: impl FnOnce(bool),
) {
    let pinned = core.is_none_or(|id| core_affinity::set_for_current(core_affinity::CoreId { id }));
    ready(pinned);
    let worker = WorkerThread {
        index,
        local,
        rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
        unflushed: Cell::new(0),
        registry,
    };
    CURRENT.with(|c| c.set(&worker));
    let reg = &*worker.registry;
    if let Some(hook) = &reg.cfg.on_worker_start {
        call_guarded("on_worker_start hook", Some(index), || hook(index));
    }
    if pinned {
        let guard = AbortIfPanic("the worker loop");
        worker.main_loop();
        guard.disarm();
    }
    if let Some(hook) = &reg.cfg.on_worker_stop {
        call_guarded("on_worker_stop hook", Some(index), || hook(index));
    }
    worker.shard().set_state(WorkerState::Stopped);
    CURRENT.with(|c| c.set(ptr::null()));
    reg.worker_exited();
}

impl WorkerThread {
    /// Whether this worker belongs to `registry`'s pool.
    pub(crate) fn is_in(&self, registry: &Registry) -> bool {
        ptr::eq(&*self.registry, registry)
    }

    fn shard(&self) -> &Shard {
        self.registry.counters.worker(self.index)
    }

    fn main_loop(&self) {
        let sleep = &self.registry.sleep;
        let mut searching = false;
        'outer: loop {
            if let Some(job) = self.find_work() {
                if searching {
                    searching = false;
                    self.stop_searching();
                }
                self.execute(job);
                continue;
            }
            self.go_idle();
            if !searching && !self.registry.is_shutdown() {
                searching = sleep.transition_to_searching();
            }
            if searching {
                self.shard().set_state(WorkerState::Spinning);
                let backoff = Backoff::new();
                for _ in 0..self.registry.cfg.spin_limit {
                    backoff.snooze();
                    if let Some(job) = self.find_work() {
                        searching = false;
                        self.stop_searching();
                        self.execute(job);
                        continue 'outer;
                    }
                }
            }
            match self.park(searching) {
                Parked::Resume { searching: s } => searching = s,
                Parked::Exit => break,
            }
        }
    }

    /// Leaves the Searching state after finding a task; the last searcher keeps the promise of
    /// sleep/README.md by waking one more worker if work is still queued (the chain).
    fn stop_searching(&self) {
        let reg = &*self.registry;
        if reg.sleep.transition_from_searching()
            && (!self.local.is_empty() || !reg.injector.is_empty())
        {
            reg.sleep.wake_one();
        }
    }

    /// Out of work: give back capacity units and tell `wait()`ers.
    fn go_idle(&self) {
        self.flush_reservations();
        // Pairs with the waiter's SeqCst `waiters` increment in `Registry::wait_quiescent`:
        // either it sees our finish counts or we see it registered.
        fence(Ordering::SeqCst);
        if self.registry.has_waiters() {
            self.registry.notify_waiters();
        }
    }

    /// Steps 1-5 of "Parking" in sleep/README.md.
    fn park(&self, searching: bool) -> Parked {
        let reg = &*self.registry;
        let sleep = &reg.sleep;
        self.shard().set_state(WorkerState::Parked);
        sleep.announce_parked(self.index, searching);
        let exit = reg.may_exit();
        // The re-check of step 3. `--cfg flock_canary` removes it to prove the loom models
        // catch a lost wake-up (scripts/loom.sh).
        if exit || (!cfg!(flock_canary) && self.work_visible()) {
            if !sleep.cancel_park(self.index) {
                // A waker chose us; its unpark is on its way. Consume it.
                sleep.park(self.index);
            }
            // Either way we are a searcher now (see `Sleep::cancel_park`).
            if exit {
                sleep.transition_from_searching();
                sleep.wake_all();
                return Parked::Exit;
            }
            return Parked::Resume { searching: true };
        }
        self.shard().stat_owned(Stat::Parks, 1);
        sleep.park(self.index);
        self.shard().stat_owned(Stat::Wakeups, 1);
        Parked::Resume { searching: true }
    }

    /// Whether any queue holds a job (the re-check after announcing sleep).
    fn work_visible(&self) -> bool {
        let reg = &*self.registry;
        !reg.injector.is_empty() || reg.stealers.iter().any(|s| !s.is_empty())
    }

    /// Own deque, then the injector (a batch into our deque), then the other workers' deques
    /// from a random victim. `Steal::Retry` is retried, never taken for empty.
    pub(crate) fn find_work(&self) -> Option<Job> {
        self.local
            .pop()
            .or_else(|| self.steal_from_injector())
            .or_else(|| self.steal_from_others())
    }

    fn steal_from_injector(&self) -> Option<Job> {
        loop {
            match self.registry.injector.steal_batch_and_pop(&self.local) {
                // Counted in `execute` (the `INJECTED` flag): part of a batch may be stolen
                // from our deque before we could count it here.
                Steal::Success(job) => return Some(job),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }

    fn steal_from_others(&self) -> Option<Job> {
        let stealers = &self.registry.stealers;
        let n = stealers.len();
        if n < 2 {
            return None;
        }
        let start = self.next_random() as usize % n;
        loop {
            let mut retry = false;
            for k in 0..n {
                let victim = (start + k) % n;
                if victim == self.index {
                    continue;
                }
                // One task at a time from another worker (as rayon does): its owner keeps the
                // rest of its deque, and the count is exact.
                match stealers[victim].steal() {
                    Steal::Success(job) => {
                        self.shard().stat_owned(Stat::Stolen, 1);
                        return Some(job);
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    fn next_random(&self) -> u64 {
        // xorshift64: cheap, per worker, good enough to spread victims.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// Runs one job and counts how it ended.
    pub(crate) fn execute(&self, job: Job) {
        let shard = self.shard();
        shard.set_state(WorkerState::Running);
        let flags = job.flags();
        if flags & INJECTED != 0 {
            shard.stat_owned(Stat::FromInjector, 1);
        }
        if flags & RESERVED != 0 {
            self.note_reservation_started();
        }
        if flags & DISCARDABLE != 0 && self.registry.is_stopping_now() {
            self.discard(job, flags);
            return;
        }
        let counted = flags & COUNTED != 0;
        let timing = match &self.registry.latency {
            Some(latency) if counted => Some((latency, job.queued_at_ns(), self.registry.now_ns())),
            _ => None,
        };
        let end = match catch_unwind(AssertUnwindSafe(|| job.run())) {
            Ok(Outcome::Done) => Proto::Completed,
            Ok(Outcome::Panicked) => Proto::Panicked,
            Ok(Outcome::Skipped) => return,
            Err(payload) => {
                self.registry.report_panic(Some(self.index), payload);
                Proto::Panicked
            }
        };
        if let Some((latency, queued, start)) = timing {
            let mine = latency.worker(self.index);
            mine.wait.record_owned(start.saturating_sub(queued));
            mine.run
                .record_owned(self.registry.now_ns().saturating_sub(start));
        }
        if counted {
            shard.add_owned(end, 1);
        }
    }

    /// `shutdown_now`: drop a queued task unrun, its destructor included.
    #[cold]
    fn discard(&self, job: Job, flags: u8) {
        let outcome = match catch_unwind(AssertUnwindSafe(|| job.discard())) {
            Ok(outcome) => outcome,
            Err(payload) => {
                crate::unwind::drop_payload(payload);
                Outcome::Done
            }
        };
        if outcome != Outcome::Skipped && flags & COUNTED != 0 {
            self.shard().add_owned(Proto::Dropped, 1);
            self.registry.note_dropped_by_shutdown();
        }
    }

    fn note_reservation_started(&self) {
        let n = self.unflushed.get() + 1;
        if n >= self.registry.flush_threshold {
            self.unflushed.set(0);
            self.registry.release_pending(n);
        } else {
            self.unflushed.set(n);
        }
    }

    fn flush_reservations(&self) {
        let n = self.unflushed.replace(0);
        if n > 0 {
            self.registry.release_pending(n);
        }
    }

    /// Pushes a job onto this worker's own deque: no lock, no shared read-modify-write.
    pub(crate) fn push_local(&self, job: Job) {
        self.local.push(job);
        self.shard().stat_owned(Stat::LocalPushes, 1);
        self.registry.sleep.notify_local_work();
    }

    /// A task submitted from inside the pool: counted on our own shard, onto our own deque.
    pub(crate) fn submit_local(&self, mut job: Job) {
        if self.registry.latency.is_some() {
            job.stamp(self.registry.now_ns());
        }
        let shard = self.shard();
        shard.add_owned(Proto::Entered, 1);
        shard.stat_owned(Stat::Submitted, 1);
        self.push_local(job);
    }

    /// Pops the most recent job of our own deque (used by `join` to take its job back).
    pub(crate) fn pop_local(&self) -> Option<Job> {
        self.local.pop()
    }

    /// Runs other work until `latch` opens, then blocks for it if nothing is left to run.
    pub(crate) fn wait_until(&self, latch: &Latch) {
        let backoff = Backoff::new();
        while !latch.probe() {
            if let Some(job) = self.find_work() {
                self.execute(job);
                backoff.reset();
                continue;
            }
            if backoff.is_completed() {
                break;
            }
            backoff.snooze();
        }
        latch.wait();
    }
}
