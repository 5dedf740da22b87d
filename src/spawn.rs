//! Spawned tasks and their `JoinHandle`s.
//!
//! # Safety
//!
//! The `unsafe` blocks here rely on:
//!
//! - **Whoever moves `state` out of PENDING owns the closure.** The one CAS that does so
//!   (a worker running or dropping the job, or `cancel`) takes or drops `func`; no one
//!   else touches it.
//! - **The result is handed over by DONE.** The runner writes `result` before its Release
//!   store of DONE; the handle reads it only after an Acquire load of DONE, and only its
//!   owner reads it, once.
//! - **The job holds one `Arc` of the cell.** `make_job` leaks one into the payload and
//!   `call_spawn` takes it back, once (job.rs: one call per job).

use crate::job::{Action, Job, Outcome, Payload, COUNTED, DISCARDABLE};
use crate::latch::{self, Latch, Owner, Wake};
use crate::registry::Progress;
use crate::registry::{Registry, Route};
use crate::sync::{Arc, AtomicU8, Mutex, Ordering};
// Cells are not part of the model-checked protocol, and need unsized coercion: std's `Arc`.
use crate::{JoinError, RejectReason};
use std::cell::UnsafeCell;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::sync::Arc as CellArc;
use std::task::{Context, Poll, Waker};

const PENDING: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;
const CANCELLED: u8 = 3;
const DROPPED: u8 = 4;
const REFUSED_FULL: u8 = 5;
const REFUSED_TIMEOUT: u8 = 6;
const REFUSED_SHUTDOWN: u8 = 7;
const REFUSED_UNKNOWN_LANE: u8 = 8;

/// The part of a spawned task its handle can see without knowing the closure's type.
struct Header<T> {
    /// PENDING → RUNNING → DONE, or PENDING → CANCELLED / DROPPED, or a REFUSED state from
    /// birth. Whoever moves it out of PENDING owns the closure.
    state: AtomicU8,
    result: UnsafeCell<Option<std::thread::Result<T>>>,
    latch: Latch,
    /// Who to wake when the latch opens: registered by `join` before it waits (the waiter
    /// is not known when the task is made). The cell is kept alive by the setter's own
    /// reference, so reading this after the set is sound.
    waiter: Mutex<Option<Wake>>,
    /// The pool: its handle waits through it, and a detached task's result is dropped with
    /// its panic handler at hand (`release_finished`).
    registry: Arc<Registry>,
    /// The task holds a unit of the pool's capacity (`pending`) while it is PENDING: its job
    /// was admitted from outside with a reservation (`spawn_admitted`). The unit belongs to
    /// the task, not to its queue entry, so that whoever moves `state` out of PENDING gives
    /// it back, once: the worker that starts it, a purge or `shutdown_now` that drops it, or
    /// `cancel`, while the entry stays queued as a shell (`give_back_unit`).
    holds_unit: bool,
    /// The lane whose queue the job goes to: a cancel leaves a shell there, which
    /// `Stats::queued` does not count (`LaneQueue::shells`).
    lane: usize,
}

impl<T> Header<T> {
    fn new(state: u8, registry: &Arc<Registry>, holds_unit: bool, lane: usize) -> Self {
        Header {
            state: AtomicU8::new(state),
            result: UnsafeCell::new(None),
            latch: Latch::new(),
            waiter: Mutex::new(None),
            registry: registry.clone(),
            holds_unit,
            lane,
        }
    }

    /// We moved `state` out of PENDING: the task's unit of capacity, if it holds one, is
    /// free again, and blocked or async submitters waiting for room are woken as for any
    /// release (`Gate::release_pending`). A worker starting the task adds it to the units
    /// it gives back in a lot, as for a reserved job it starts (`hold_unit_of_started_job`).
    fn give_back_unit(&self, started_here: bool) {
        if !self.holds_unit {
            return;
        }
        let reg = &*self.registry;
        crate::worker::with_current(|w| match w {
            Some(w) if started_here && w.is_in(reg) => w.hold_unit_of_started_job(),
            _ => reg.gate.release_pending(1),
        });
    }

    /// Opens the latch and wakes the joiner if it sleeps. The caller keeps the cell alive.
    fn open(&self) {
        // The caller's reference keeps the latch alive through the call.
        if self.latch.set_held() {
            // The joiner fell asleep after registering (its `fall_asleep` Release, our
            // swap's Acquire), so the slot holds it. Taken under the lock, woken outside it
            // (a `Waker` is a user's code).
            let wake = self.waiter.lock().take();
            if let Some(wake) = wake {
                wake.wake();
            }
        }
    }
}

struct SpawnCell<F, T> {
    header: Header<T>,
    func: UnsafeCell<Option<F>>,
}

// SAFETY: `func` is touched only by the thread that moved `state` out of PENDING, and
// `result` is written before `state` becomes DONE (Release) and read after the latch opens
// (which follows that store), so the cell is shared safely when `F` and `T` may move between
// threads.
unsafe impl<F: Send, T: Send> Sync for SpawnCell<F, T> {}
// SAFETY: as above.
unsafe impl<F: Send, T: Send> Send for SpawnCell<F, T> {}

trait TaskCell<T>: Send + Sync {
    fn header(&self) -> &Header<T>;
    /// Drops the closure.
    ///
    /// # Safety
    /// Only after the caller moved `state` out of PENDING.
    unsafe fn drop_func(&self);
}

impl<F: Send, T: Send> TaskCell<T> for SpawnCell<F, T> {
    fn header(&self) -> &Header<T> {
        &self.header
    }

    unsafe fn drop_func(&self) {
        // SAFETY: the caller owns the closure (see the trait).
        drop(unsafe { (*self.func.get()).take() });
    }
}

/// Builds the job and handle of a spawned task that holds no unit of capacity (spawned on a
/// worker, or admitted without a reservation), to be queued on `lane`.
pub(crate) fn spawn_job<F, T>(registry: &Arc<Registry>, lane: usize, f: F) -> (Job, JoinHandle<T>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    make_job(registry, lane, f, false)
}

/// Builds the job and handle of a task admitted from outside on `route` for `lane`, and the
/// route to dispatch the job on. A unit of capacity reserved by the admission moves into the task
/// (`Header::holds_unit`): the route returned queues the job without it, so that the worker
/// or purge taking the job does not give it back a second time after a `cancel` did.
pub(crate) fn spawn_admitted<F, T>(
    registry: &Arc<Registry>,
    route: Route,
    lane: usize,
    f: F,
) -> (Job, JoinHandle<T>, Route)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let holds_unit = route == Route::Queue { reserved: true };
    let (job, handle) = make_job(registry, lane, f, holds_unit);
    let route = if holds_unit {
        Route::Queue { reserved: false }
    } else {
        route
    };
    (job, handle, route)
}

fn make_job<F, T>(
    registry: &Arc<Registry>,
    lane: usize,
    f: F,
    holds_unit: bool,
) -> (Job, JoinHandle<T>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let cell = CellArc::new(SpawnCell {
        header: Header::new(PENDING, registry, holds_unit, lane),
        func: UnsafeCell::new(Some(f)),
    });
    let mut payload = Payload::uninit();
    // SAFETY: a payload has room for one pointer.
    unsafe {
        ptr::write(
            payload.as_mut_ptr().cast::<*const SpawnCell<F, T>>(),
            CellArc::into_raw(cell.clone()),
        )
    };
    // SAFETY: `call_spawn::<F, T>` takes back exactly the `Arc` leaked just above.
    let job = unsafe { Job::from_raw(call_spawn::<F, T>, payload, COUNTED | DISCARDABLE) };
    (job, JoinHandle { cell })
}

/// # Safety
/// `payload` holds a pointer from `Arc::into_raw` of a `SpawnCell<F, T>`, used here once.
unsafe fn call_spawn<F, T>(payload: Payload, action: Action) -> Outcome
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    // SAFETY: see the function's contract.
    let cell =
        unsafe { CellArc::from_raw(ptr::read(payload.as_ptr().cast::<*const SpawnCell<F, T>>())) };
    let header = &cell.header;
    let to = if action == Action::Run {
        RUNNING
    } else {
        DROPPED
    };
    // Acquire: we are about to own `func`; pairs with nothing but keeps its reads after.
    if let Err(state) =
        header
            .state
            .compare_exchange(PENDING, to, Ordering::Acquire, Ordering::Acquire)
    {
        // Only a cancel moves a queued task's state but this call (refused tasks have no
        // job): we took its shell, already counted and its unit given back.
        debug_assert_eq!(state, CANCELLED);
        header.registry.queues.lane(header.lane).shell_taken();
        return Outcome::Skipped;
    }
    header.give_back_unit(action == Action::Run);
    // SAFETY: we moved the state out of PENDING, so the closure is ours.
    let f = unsafe { (*cell.func.get()).take() }.expect("flock: a pending task has its closure");
    if action == Action::Discard {
        // `cell` (an `Arc`) keeps the latch alive.
        header.open();
        drop(f);
        return Outcome::Done;
    }
    let result = catch_unwind(AssertUnwindSafe(f));
    let outcome = if result.is_ok() {
        Outcome::Done
    } else {
        Outcome::Panicked
    };
    // SAFETY: RUNNING is ours; the handle reads `result` only once the state is DONE.
    unsafe { *header.result.get() = Some(result) };
    // Release: publishes `result`; pairs with the Acquire load in `JoinHandle::join`.
    header.state.store(DONE, Ordering::Release);
    // `cell` (an `Arc`) keeps the latch alive.
    header.open();
    release_finished(cell);
    outcome
}

/// Lets go of the running side's handle on a finished task's cell. When the task is
/// detached (its `JoinHandle` is gone), ours is the last handle, and the value nobody will
/// take (or the panic payload) is dropped here. Its destructor is the user's: a panic in it is
/// caught and passed to the pool's panic handler, and the task still counts as completed,
/// which it did (the value was made).
fn release_finished<F, T>(cell: CellArc<SpawnCell<F, T>>) {
    // `into_inner`, not `drop`: of the handle's drop and this call, exactly one ends the
    // cell's life, and only this one hands it to us whole.
    let Some(cell) = CellArc::into_inner(cell) else {
        return;
    };
    let Header {
        result, registry, ..
    } = cell.header;
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(result))) {
        registry.report_panic(registry.worker_here(), payload);
    }
}

/// An owned permission to wait for a spawned task and take its value.
///
/// Wait for it with [`join`](JoinHandle::join) (blocking; on a worker it runs other tasks
/// meanwhile), or `.await` it: `JoinHandle<T>` is a
/// [`Future`]`<Output = Result<T, JoinError>>` that works in any
/// executor (flock depends on no runtime) and never blocks the thread that polls it.
///
/// Dropping the handle detaches the task: it still runs, also when the handle was being
/// awaited (a `select!` or a timeout that gives up on it). A detached task's value is dropped
/// where the task ran; if its destructor panics, the panic goes to the pool's
/// [`panic_handler`](crate::PoolBuilder::panic_handler) and the task still counts as
/// completed in [`Stats`](crate::Stats) (it ran to its end). Wrap it with
/// [`cancel_on_drop`](JoinHandle::cancel_on_drop) to cancel a task that has not started
/// when the wrapper is dropped instead.
///
/// ```
/// let pool = flock::Pool::new();
/// let handle = pool.spawn(|| 6 * 7);
/// assert_eq!(handle.join().unwrap(), 42);
///
/// let boom = pool.spawn(|| -> u32 { panic!("no") });
/// assert!(boom.join().unwrap_err().is_panic());
/// ```
pub struct JoinHandle<T> {
    cell: CellArc<dyn TaskCell<T>>,
}

/// The protocol is in `docs/protocol.md`, "Awaiting a spawned task": the waker goes into the
/// slot beside the latch, then the latch moves to `SLEEPING`, so the setter's swap, reading
/// `SLEEPING`, finds it there and wakes it.
///
/// The waker is woken when the task ends (or is cancelled, dropped or refused), outside
/// flock's locks. If its `wake` panics, the panic is caught and reported as a panicking
/// [hook](crate::PoolBuilder::on_worker_start)'s is (printed to stderr), and the task's
/// outcome is unchanged: the handle still yields the task's value, [`Stats`](crate::Stats)
/// counts it completed (not panicked), and the pool's panic handler is not called.
impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let header = self.cell.header();
        if !header.latch.probe() {
            register_waker(&header.waiter, cx.waker());
            // After the store: a set that follows reads SLEEPING and wakes what we stored;
            // one that came before is seen here (directly, or through the slot's lock when
            // the setter took an older waker out after its swap).
            if header.latch.await_set() {
                return Poll::Pending;
            }
        }
        Poll::Ready(self.take_result())
    }
}

/// Stores `waker` in a task's slot unless the slot already holds one that wakes the same task.
fn register_waker(slot: &Mutex<Option<Wake>>, waker: &Waker) {
    let mut slot = slot.lock();
    if !matches!(&*slot, Some(Wake::Waker(w)) if w.will_wake(waker)) {
        *slot = Some(Wake::Waker(waker.clone()));
    }
}

/// A [`JoinHandle`] that cancels its task, if it has not started, when dropped
/// ([`JoinHandle::cancel_on_drop`]). Await it, or take the handle back with
/// [`into_inner`](CancelOnDrop::into_inner).
///
/// This is what makes a timeout cancel queued work: when the timeout drops the awaited
/// wrapper, a task still in the queue never runs (its closure is dropped; a task already
/// running finishes, and its value is dropped). Cancelled so, the task gives its place in
/// the pool's [`capacity`](crate::PoolBuilder::capacity) back at once, as
/// [`JoinHandle::cancel`] does.
///
/// ```
/// use std::sync::mpsc;
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// let (started_tx, started) = mpsc::channel();
/// let (go_tx, go) = mpsc::channel::<()>();
/// let busy = pool.spawn(move || { started_tx.send(()).unwrap(); go.recv().unwrap(); });
/// started.recv().unwrap(); // the only worker is busy: what follows stays queued
/// let (ran_tx, ran) = mpsc::channel();
/// drop(pool.spawn(move || ran_tx.send(()).unwrap()).cancel_on_drop());
/// go_tx.send(()).unwrap();
/// busy.join().unwrap();
/// pool.wait().unwrap();
/// assert!(ran.try_recv().is_err(), "cancelled before it started");
/// ```
#[must_use = "dropping it cancels the task if it has not started"]
#[doc(alias = "AbortOnDropHandle")]
pub struct CancelOnDrop<T>(Option<JoinHandle<T>>);

impl<T> CancelOnDrop<T> {
    /// The handle back, no longer cancelling on drop.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let detached = pool.spawn(|| 1).cancel_on_drop().into_inner();
    /// assert_eq!(detached.join().unwrap(), 1);
    /// ```
    pub fn into_inner(mut self) -> JoinHandle<T> {
        self.0
            .take()
            .expect("flock: a CancelOnDrop holds its handle until dropped")
    }
}

impl<T> std::fmt::Debug for CancelOnDrop<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CancelOnDrop").field(&self.0).finish()
    }
}

impl<T> Future for CancelOnDrop<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let handle = self
            .0
            .as_mut()
            .expect("flock: CancelOnDrop polled after into_inner");
        Pin::new(handle).poll(cx)
    }
}

impl<T> Drop for CancelOnDrop<T> {
    fn drop(&mut self) {
        if let Some(handle) = &self.0 {
            handle.cancel();
        }
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl<T: Send + 'static> JoinHandle<T> {
    /// A handle for a task the pool refused; its closure has been dropped.
    pub(crate) fn refused(registry: &Arc<Registry>, reason: RejectReason) -> JoinHandle<T> {
        let state = match reason {
            RejectReason::Full => REFUSED_FULL,
            RejectReason::Timeout => REFUSED_TIMEOUT,
            RejectReason::Shutdown => REFUSED_SHUTDOWN,
            RejectReason::UnknownLane => REFUSED_UNKNOWN_LANE,
        };
        let cell: SpawnCell<fn() -> T, T> = SpawnCell {
            header: Header::new(state, registry, false, 0),
            func: UnsafeCell::new(None),
        };
        cell.header.open();
        JoinHandle {
            cell: CellArc::new(cell),
        }
    }
}

impl<T> JoinHandle<T> {
    /// Waits for the task and returns its value, or why there is none. Blocks the calling
    /// thread until then; from async code `.await` the handle instead (it is a future).
    ///
    /// Called from a worker of the same pool, the worker runs other tasks while it waits
    /// (so joining a task you spawned cannot deadlock the pool).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let pool = Arc::new(flock::Pool::builder().workers(1).build()?);
    /// let inner = pool.clone();
    /// // One worker, and a task that joins another task: the waiting worker runs it.
    /// let outer = pool.spawn(move || inner.spawn(|| 20).join().unwrap() + 1);
    /// assert_eq!(outer.join()?, 21);
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// ```
    pub fn join(self) -> Result<T, JoinError> {
        let header = self.cell.header();
        if !header.latch.probe() {
            *header.waiter.lock() = Some(Owner::current(&header.registry).into_owned());
            // A poll before may have left the latch SLEEPING for its waker: back to UNSET,
            // the state the waits below start from. A set between the store above and this
            // wakes us (spuriously) through the slot; `wake_up` leaves SET alone.
            header.latch.wake_up();
            // On a worker (of this pool or another) its pool's tasks run here meanwhile.
            latch::wait(&header.latch);
        }
        self.take_result()
    }

    /// The task's value, or why there is none; once its latch is open. Only the handle's
    /// owner calls it (`join` by value, `poll` through `&mut`), and only once.
    fn take_result(&self) -> Result<T, JoinError> {
        let header = self.cell.header();
        // Acquire: pairs with the Release store of DONE in `call_spawn`.
        match header.state.load(Ordering::Acquire) {
            // SAFETY: DONE means the worker wrote `result` and will not touch it again, and
            // we are the handle's only user (see above).
            DONE => match unsafe { (*header.result.get()).take() } {
                Some(Ok(value)) => Ok(value),
                Some(Err(payload)) => Err(JoinError::Panicked(payload.into())),
                None => panic!("flock: a JoinHandle polled after it returned Ready"),
            },
            CANCELLED => Err(JoinError::Cancelled),
            DROPPED => Err(JoinError::Dropped),
            REFUSED_FULL => Err(JoinError::Refused(RejectReason::Full)),
            REFUSED_TIMEOUT => Err(JoinError::Refused(RejectReason::Timeout)),
            REFUSED_SHUTDOWN => Err(JoinError::Refused(RejectReason::Shutdown)),
            REFUSED_UNKNOWN_LANE => Err(JoinError::Refused(RejectReason::UnknownLane)),
            s => unreachable!("flock: an open latch with task state {s}"),
        }
    }

    /// Wraps the handle so that dropping it cancels the task if it has not started (see
    /// [`CancelOnDrop`]). A plain `JoinHandle` detaches on drop.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let handle = pool.spawn(|| 6 * 7).cancel_on_drop();
    /// assert_eq!(handle.into_inner().join().unwrap(), 42);
    /// ```
    pub fn cancel_on_drop(self) -> CancelOnDrop<T> {
        CancelOnDrop(Some(self))
    }

    /// Whether the task has ended (run, cancelled, dropped or refused); `join` will not block.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let (go, wait) = std::sync::mpsc::channel::<()>();
    /// let handle = pool.spawn(move || wait.recv().unwrap());
    /// assert!(!handle.is_finished()); // blocked on the channel
    /// go.send(()).unwrap();
    /// while !handle.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// handle.join().unwrap(); // returns at once
    /// ```
    pub fn is_finished(&self) -> bool {
        self.cell.header().latch.probe()
    }

    /// Removes the task if it has not started: its closure is dropped now, `join` returns
    /// [`JoinError::Cancelled`], and `true` is returned. Returns `false` if the task already
    /// started (or ended).
    ///
    /// A cancelled task is counted `dropped` in [`Stats`](crate::Stats) at once, is no longer
    /// counted `queued`, and gives its place in the pool's
    /// [`capacity`](crate::PoolBuilder::capacity) back at once: a
    /// submitter blocked for room ([`Backpressure::Block`](crate::Backpressure::Block)) or
    /// awaiting it ([`Pool::spawn_async`](crate::Pool::spawn_async)) is woken as when a
    /// task starts. Its queue entry stays behind, empty, until a worker takes it and skips
    /// it; that gives nothing back a second time.
    ///
    /// # Panics
    /// If the closure's destructor panics, that panic propagates from here, after the task
    /// was counted dropped and its handle finished (`join` returns `Cancelled`): the
    /// destructor ran on this thread, as a plain `drop` of the closure would.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// let (started_tx, started) = mpsc::channel();
    /// let (go_tx, go) = mpsc::channel::<()>();
    /// let blocker = pool.spawn(move || { started_tx.send(()).unwrap(); go.recv().unwrap(); });
    /// started.recv().unwrap(); // the only worker is busy
    /// let queued = pool.spawn(|| "never");
    /// assert!(queued.cancel());
    /// go_tx.send(()).unwrap();
    /// blocker.join().unwrap();
    /// assert!(matches!(queued.join(), Err(flock::JoinError::Cancelled)));
    /// ```
    #[doc(alias = "abort")]
    pub fn cancel(&self) -> bool {
        let header = self.cell.header();
        if header
            .state
            .compare_exchange(PENDING, CANCELLED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // Its queue entry stays behind as a shell, which gives nothing back when taken.
        header.give_back_unit(false);
        header.registry.queues.lane(header.lane).shell_left();
        // The closure is the user's: its destructor may panic. Caught, so that the task is
        // counted and its latch opened whatever happens, then re-raised to our caller.
        // The task is outstanding until counted below: while its destructor runs, this
        // thread counts as inside the pool (a wait from there answers WouldDeadlock).
        let registry = &header.registry;
        let dropped = crate::purge::dropping_tasks(registry, || {
            catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: we moved the state out of PENDING, so the closure is ours.
                unsafe { self.cell.drop_func() }
            }))
        });
        registry
            .shards
            .external()
            .progress
            .add_shared(Progress::Dropped, 1);
        registry.after_finish_off_worker();
        // `self.cell` keeps the latch alive.
        header.open();
        if let Err(payload) = dropped {
            resume_unwind(payload);
        }
        true
    }
}
