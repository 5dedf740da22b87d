//! Worker slots and their threads: `resize` starts threads for idle slots and lets those
//! beyond the number wanted retire; a worker takes its slot's deques when it starts and
//! gives them back when it leaves; shutdown waits for the workers and joins the threads.
//! Each slot also records which thread runs it (`SlotThread`), for `Stats::per_worker`.

use super::{LocalQueues, Registry, SlotState};
use crate::deque::Worker as Deque;
use crate::lane_reserve::LaneReserve;
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{Arc, Condvar, Mutex, Ordering};
use crate::unwind::{drop_payload, payload_message};
use crate::ResizeError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

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
                    // Not the last worker out of a closed pool to sweep (see `leave_slot`):
                    // this `resize` borrows the `Pool`, so only a concurrent `shutdown` can
                    // have closed it, and that call sweeps once `live` is 0.
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
    pub(crate) fn start_lane_reserve(this: &Arc<Registry>) -> Result<(), ResizeError> {
        if this.lane_reserve.is_none() {
            return Ok(());
        }
        let reg = this.clone();
        let name = "flock-lane-reserve".to_owned();
        let handle = thread::spawn(name, this.cfg.stack_size, move || LaneReserve::run(&reg))
            .map_err(ResizeError::ThreadSpawn)?;
        this.helpers.lock().push(handle);
        Ok(())
    }

    /// A new worker thread takes its slot's deques and records itself as the slot's thread.
    pub(crate) fn take_slot(&self, index: usize, thread: SlotThread) -> LocalQueues {
        let mut slots = self.slots.lock();
        slots.state[index] = SlotState::Running;
        slots.threads[index] = Some(thread);
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

    /// A worker whose pinning failed leaves without running its loop: its slot is marked
    /// retiring, so no broadcast picks it from now on (it then runs what its mailbox holds,
    /// as a retiring worker does).
    pub(crate) fn close_slot(&self, index: usize) {
        self.slots.lock().state[index] = SlotState::Retiring;
    }

    /// A worker thread leaves: its deques go back to its slot. Returns whether it was the
    /// last worker to leave (`live` fell to 0 here): in a pool that shut down, the one to
    /// sweep the queues (`purge::sweep`, called by the worker in `worker::run`).
    pub(crate) fn leave_slot(&self, index: usize, deques: LocalQueues, retired: bool) -> bool {
        let mut slots = self.slots.lock();
        debug_assert!(
            deques.lanes.iter().all(Deque::is_empty) && deques.joins.is_empty(),
            "flock: a worker left work behind"
        );
        // Under `slots`, before the slot is free to start again: what a broadcast puts in the
        // mailbox from then on is for the slot's next thread.
        debug_assert!(
            !self.mailboxes.has(index),
            "flock: a worker left a broadcast call behind"
        );
        slots.deques[index] = Some(deques);
        slots.threads[index] = None;
        slots.state[index] = if retired {
            SlotState::Idle
        } else {
            SlotState::Exited
        };
        self.shown.store(slots.shown(), Ordering::Relaxed);
        self.slot_cond.notify_all();
        drop(slots);
        self.workers_gone(1)
    }

    /// Slots `Stats::per_worker` shows.
    pub(crate) fn shown_slots(&self) -> usize {
        self.shown.load(Ordering::Relaxed)
    }

    /// The thread running each slot now (`None`: no thread has it), for `Stats::per_worker`.
    pub(crate) fn slot_threads(&self) -> Vec<Option<SlotThread>> {
        self.slots.lock().threads.clone()
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

    /// `n` worker threads exited (or never started). Returns whether this call took `live`
    /// to 0: under the `live` lock, so exactly one call does for each time it gets there.
    fn workers_gone(&self, n: usize) -> bool {
        let mut live = self.live.lock();
        *live -= n;
        let none_left = *live == 0;
        if none_left {
            self.live_cond.notify_all();
        }
        none_left
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

/// The thread that runs a slot, as the operating system knows it: recorded by the worker
/// thread itself when it takes its slot (before its start hook) and cleared when it leaves
/// the slot (after its stop hook), so it costs nothing per task.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotThread {
    pub(crate) id: std::thread::ThreadId,
    /// The kernel's id for the thread (`gettid()` on Linux); `None` where it is not cheap.
    pub(crate) os_id: Option<u64>,
    /// `pthread_self()` as an integer, on Unix.
    pub(crate) native: Option<u64>,
}

impl SlotThread {
    /// The calling thread.
    pub(crate) fn current() -> SlotThread {
        SlotThread {
            id: std::thread::current().id(),
            os_id: os_thread_id(),
            native: native_handle(),
        }
    }
}

// Not under Miri, which need not model `gettid`: `None` there, as on other systems.
#[cfg(all(target_os = "linux", not(miri)))]
fn os_thread_id() -> Option<u64> {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    u64::try_from(tid).ok()
}

#[cfg(any(not(target_os = "linux"), miri))]
fn os_thread_id() -> Option<u64> {
    None
}

#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // `pthread_t` is `c_ulong` (already `usize`) on Linux.
fn native_handle() -> Option<u64> {
    // SAFETY: pthread_self has no preconditions and cannot fail. `pthread_t` is an integer
    // on some systems and a pointer on others: `as usize` takes either.
    let me = unsafe { libc::pthread_self() };
    Some(me as usize as u64)
}

#[cfg(not(unix))]
fn native_handle() -> Option<u64> {
    None
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
