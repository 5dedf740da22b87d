//! Typed errors. A refused task always comes back inside its error.
//!
//! Two rules hold for every error here:
//!
//! * **They compose with `?`.** Each is `Send + Sync + 'static` and implements
//!   [`std::error::Error`], so it converts into `Box<dyn Error + Send + Sync>` (and
//!   `anyhow::Error`). A panic payload (`Box<dyn Any + Send>`, not `Sync`) and a refused task
//!   (whatever closure it was) are held so that they are reached only by value, which makes
//!   the error `Sync` whatever they are (see [`PanicPayload`]).
//! * **Every public error enum is `#[non_exhaustive]`** ([`RejectReason`], [`WaitError`],
//!   [`JoinError`], [`BuildError`], [`ResizeError`]): a new way to fail can come in a minor
//!   release, so a `match` on one needs a `_` arm. The enums users pass in
//!   ([`Backpressure`](crate::Backpressure)) or read as state
//!   ([`WorkerState`](crate::WorkerState)) are not errors and stay exhaustive.

use crate::unwind::PanicPayload;
use std::any::Any;
use std::fmt;
use std::sync::Mutex;

/// Why the pool refused a task.
///
/// ```
/// use flock::{Backpressure, Pool, RejectReason};
/// let pool = Pool::builder().capacity(1).when_full(Backpressure::Reject).build().unwrap();
/// pool.shutdown().unwrap();
/// assert_eq!(pool.submit(|| ()).unwrap_err().reason(), RejectReason::Shutdown);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectReason {
    /// The queue was at capacity and the policy is [`Backpressure::Reject`](crate::Backpressure::Reject).
    Full,
    /// The queue stayed at capacity for the whole `block_timeout`.
    Timeout,
    /// The pool is shutting down or has shut down.
    Shutdown,
    /// [`Pool::submit_to`](crate::Pool::submit_to) named a lane this pool does not have.
    UnknownLane,
}

/// A bare reason is an error too: `map_err(|e| e.reason())` or [`SubmitError::into_reason`]
/// drop the task and keep why.
impl std::error::Error for RejectReason {}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RejectReason::Full => "the pool's queue is full",
            RejectReason::Timeout => "the pool's queue stayed full for the whole block timeout",
            RejectReason::Shutdown => "the pool is shut down",
            RejectReason::UnknownLane => "no lane of that name or index in this pool",
        })
    }
}

/// A task the pool did not accept, handed back to the caller.
///
/// ```
/// use flock::{Pool, RejectReason};
/// let pool = Pool::new();
/// pool.shutdown().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let err = pool.submit(move || tx.send(7).unwrap()).unwrap_err();
/// assert_eq!(err.reason(), RejectReason::Shutdown);
/// let task = err.into_inner();
/// task(); // nothing was lost: run it here instead
/// assert_eq!(rx.recv().unwrap(), 7);
/// ```
///
/// It is `Send + Sync + 'static` whatever the closure holds (the closure is only reached by
/// value, through [`into_inner`](Self::into_inner)), so `?` turns it into a
/// `Box<dyn Error + Send + Sync>` or an `anyhow::Error` even for a task that captures something
/// that is not `Sync`, such as a `Receiver`:
///
/// ```
/// use std::error::Error;
/// fn start(pool: &flock::Pool) -> Result<(), Box<dyn Error + Send + Sync>> {
///     let (tx, rx) = std::sync::mpsc::channel::<u32>();
///     pool.submit(move || while let Ok(n) = rx.recv() { drop(n) })?; // Receiver: !Sync
///     tx.send(1)?;
///     Ok(())
/// }
/// let pool = flock::Pool::new();
/// start(&pool).unwrap();
/// pool.shutdown().unwrap();
/// assert!(start(&pool).unwrap_err().to_string().contains("shut down"));
/// ```
pub struct SubmitError<F> {
    /// In a `Mutex` only so that the error is `Sync` whatever `F` is: `Mutex<F>` is `Sync`
    /// for any `F: Send`, and it is never locked (`into_inner` takes `self`).
    task: Mutex<F>,
    reason: RejectReason,
}

impl<F> SubmitError<F> {
    pub(crate) fn new(task: F, reason: RejectReason) -> Self {
        SubmitError {
            task: Mutex::new(task),
            reason,
        }
    }

    /// Why the task was refused.
    ///
    /// ```
    /// use flock::{Backpressure, Pool, RejectReason};
    /// let pool = Pool::builder().lanes(&[("a", 1)]).build().unwrap();
    /// let err = pool.submit_to("b", || ()).unwrap_err();
    /// assert_eq!(err.reason(), RejectReason::UnknownLane);
    /// ```
    pub fn reason(&self) -> RejectReason {
        self.reason
    }

    /// The refused task, unrun.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.shutdown().unwrap();
    /// let answer = std::sync::Arc::new(std::sync::Mutex::new(0));
    /// let slot = answer.clone();
    /// let err = pool.submit(move || *slot.lock().unwrap() = 6 * 7).unwrap_err();
    /// let task = err.into_inner();
    /// task(); // run it on this thread instead
    /// assert_eq!(*answer.lock().unwrap(), 42);
    /// ```
    pub fn into_inner(self) -> F {
        // Never poisoned: it is never locked.
        self.task
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the task and keeps why it was refused: a plain `Copy` error for code that has
    /// no use for the closure.
    ///
    /// ```
    /// use flock::{Pool, RejectReason};
    /// fn submit_or_reason(pool: &Pool) -> Result<(), RejectReason> {
    ///     pool.submit(|| ()).map_err(flock::SubmitError::into_reason)
    /// }
    /// let pool = Pool::new();
    /// pool.shutdown().unwrap();
    /// assert_eq!(submit_or_reason(&pool), Err(RejectReason::Shutdown));
    /// ```
    pub fn into_reason(self) -> RejectReason {
        self.reason
    }
}

impl<F> fmt::Debug for SubmitError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmitError")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}

impl<F> fmt::Display for SubmitError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task refused: {}", self.reason)
    }
}

impl<F> std::error::Error for SubmitError<F> {}

/// Tasks of a [`Pool::submit_batch`](crate::Pool::submit_batch) that the pool did not accept,
/// handed back in order, with how many before them were accepted.
///
/// ```
/// use flock::{Pool, RejectReason};
/// let pool = Pool::new();
/// pool.shutdown().unwrap();
/// let err = pool.submit_batch((0..3).map(|i| move || drop(i))).unwrap_err();
/// assert_eq!((err.accepted(), err.reason()), (0, RejectReason::Shutdown));
/// assert_eq!(err.into_rejected().len(), 3); // nothing lost
/// ```
///
/// Like [`SubmitError`], it is `Send + Sync + 'static` whatever the tasks hold, so `?` works
/// into `Box<dyn Error + Send + Sync>`.
pub struct BatchError<F> {
    accepted: usize,
    reason: RejectReason,
    /// How many tasks `rejected` holds, for `Debug` and `Display`, which cannot lock it.
    count: usize,
    /// In a `Mutex` only to be `Sync` whatever `F` is (as in `SubmitError`); never locked.
    rejected: Mutex<Vec<F>>,
}

impl<F> BatchError<F> {
    pub(crate) fn new(accepted: usize, reason: RejectReason, rejected: Vec<F>) -> Self {
        BatchError {
            accepted,
            reason,
            count: rejected.len(),
            rejected: Mutex::new(rejected),
        }
    }

    /// How many tasks, from the start of the batch, the pool accepted (they run).
    ///
    /// ```
    /// use flock::{Backpressure, Pool};
    /// let pool = Pool::builder().workers(1).capacity(4).when_full(Backpressure::Reject).build().unwrap();
    /// pool.pause(); // nothing starts, so the queue fills up
    /// let err = pool.submit_batch((0..10).map(|i| move || drop(i))).unwrap_err();
    /// assert_eq!(err.accepted(), 4); // the first four are queued and will run
    /// assert_eq!(err.into_rejected().len(), 6);
    /// pool.resume();
    /// pool.wait().unwrap();
    /// ```
    pub fn accepted(&self) -> usize {
        self.accepted
    }

    /// Why the first refused task was refused.
    ///
    /// ```
    /// use flock::{Pool, RejectReason};
    /// let pool = Pool::builder().lanes(&[("a", 1)]).build().unwrap();
    /// let err = pool.submit_batch_to("b", (0..3).map(|_| || ())).unwrap_err();
    /// assert_eq!(err.reason(), RejectReason::UnknownLane);
    /// ```
    pub fn reason(&self) -> RejectReason {
        self.reason
    }

    /// The refused task and every task after it in the batch, unrun, in order.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.shutdown().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let err = pool
    ///     .submit_batch((1..=3).map(|i| { let tx = tx.clone(); move || tx.send(i * 10).unwrap() }))
    ///     .unwrap_err();
    /// err.into_rejected().into_iter().for_each(|task| task()); // run here instead, in order
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [10, 20, 30]);
    /// ```
    pub fn into_rejected(self) -> Vec<F> {
        // Never poisoned: it is never locked.
        self.rejected
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the refused tasks and keeps why they were refused.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// pool.shutdown().unwrap();
    /// let err = pool.submit_batch((0..3).map(|i| move || drop(i))).unwrap_err();
    /// assert_eq!(err.into_reason(), flock::RejectReason::Shutdown);
    /// ```
    pub fn into_reason(self) -> RejectReason {
        self.reason
    }
}

impl<F> fmt::Debug for BatchError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchError")
            .field("accepted", &self.accepted)
            .field("reason", &self.reason)
            .field("rejected", &self.count)
            .finish()
    }
}

impl<F> fmt::Display for BatchError<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} task(s) of the batch refused after {} accepted: {}",
            self.count, self.accepted, self.reason
        )
    }
}

impl<F> std::error::Error for BatchError<F> {}

/// Why [`Pool::resize`](crate::Pool::resize) did not change the worker count.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).max_workers(4).build().unwrap();
/// assert!(matches!(pool.resize(0), Err(flock::ResizeError::ZeroWorkers)));
/// assert!(matches!(pool.resize(5), Err(flock::ResizeError::TooManyWorkers { requested: 5, max: 4 })));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ResizeError {
    /// `resize(0)`: a pool needs at least one worker (use [`Pool::pause`](crate::Pool::pause)
    /// to stop starting tasks).
    ZeroWorkers,
    /// More workers than the pool's [`max_workers`](crate::PoolBuilder::max_workers).
    TooManyWorkers {
        /// The number asked for.
        requested: usize,
        /// The pool's `max_workers`.
        max: usize,
    },
    /// The pool is shutting down or has shut down.
    Shutdown,
    /// The OS refused to start a worker thread; the workers started before it keep running.
    ThreadSpawn(std::io::Error),
    /// The OS refused to pin a new worker to its core: that worker and those above it were
    /// not added (their threads left, running no hook); those below it were.
    PinFailed {
        /// The worker's index.
        worker: usize,
        /// The core it was to be pinned to.
        core: usize,
    },
    /// Called from the [`on_worker_stop`](crate::PoolBuilder::on_worker_stop) hook of a
    /// worker that is retiring: a resize waits for retiring workers to leave, that one
    /// included, so it would never return. Nothing was changed.
    WouldDeadlock,
    /// The [`thread_name`](crate::PoolBuilder::thread_name) callback panicked for a new
    /// worker; that worker was not started, the workers started before it keep running.
    ThreadNamePanicked {
        /// The worker's index.
        worker: usize,
        /// The panic message (`<non-string payload>` when it was not a string).
        message: String,
    },
}

impl fmt::Display for ResizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResizeError::ZeroWorkers => {
                f.write_str("resize(0): a pool needs at least one worker; use pause() to stop starting tasks")
            }
            ResizeError::TooManyWorkers { requested, max } => write!(
                f,
                "resize({requested}) is more than this pool's max_workers ({max}); build it with a larger max_workers"
            ),
            ResizeError::Shutdown => f.write_str("the pool is shut down"),
            ResizeError::ThreadSpawn(e) => write!(f, "could not start a worker thread: {e}"),
            ResizeError::PinFailed { worker, core } => {
                write!(f, "the OS refused to pin worker {worker} to core {core}")
            }
            ResizeError::WouldDeadlock => f.write_str(
                "resize() from the on_worker_stop hook of a retiring worker would wait for that worker itself",
            ),
            ResizeError::ThreadNamePanicked { worker, message } => {
                write!(f, "the thread_name callback panicked for worker {worker}: {message}")
            }
        }
    }
}

impl std::error::Error for ResizeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ResizeError::ThreadSpawn(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a wait (or a shutdown, which waits) did not complete.
///
/// ```
/// use std::sync::Arc;
/// let pool = Arc::new(flock::Pool::new());
/// let inner = pool.clone();
/// let from_inside = pool.spawn(move || inner.wait()).join().unwrap();
/// assert_eq!(from_inside, Err(flock::WaitError::WouldDeadlock));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitError {
    /// Called from where waiting would wait for the caller itself: from a thread running one
    /// of the pool's tasks (one of its workers, or a thread running a task off the workers:
    /// the caller under [`CallerRuns`](crate::Backpressure::CallerRuns), a helper thread of
    /// [`SpawnThread`](crate::Backpressure::SpawnThread), the lane reserve), or from the
    /// destructor of a task that [`Pool::purge`](crate::Pool::purge),
    /// [`JoinHandle::cancel`](crate::JoinHandle::cancel) or
    /// [`TaskGroup::cancel`](crate::TaskGroup::cancel) drops (that task is outstanding until
    /// its destructor returns). Nothing was changed.
    WouldDeadlock,
    /// The timeout passed first. For a shutdown, the pool keeps draining; the threads are
    /// joined by a later shutdown call or when the `Pool` is dropped.
    Timeout,
    /// The pool is paused with tasks waiting in a queue: they would not start before
    /// [`Pool::resume`](crate::Pool::resume), so waiting could last forever.
    Paused,
    /// A shutdown was asked of the [`global`](fn@crate::global) pool, which every part of the
    /// process shares and which is never shut down; nothing was changed. Wait for it with
    /// [`Pool::wait`](crate::Pool::wait) instead.
    GlobalPool,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitError::WouldDeadlock => {
                "called from inside the pool (one of its tasks, or the destructor of one being \
                 dropped unrun), where it would wait for itself; call it from outside the pool"
            }
            WaitError::Timeout => "the timeout passed before the pool finished",
            WaitError::Paused => "the pool is paused with tasks queued; resume() it before waiting",
            WaitError::GlobalPool => {
                "the global pool is shared by the whole process and cannot be shut down; wait() for it instead"
            }
        })
    }
}

impl std::error::Error for WaitError {}

/// Why a spawned task produced no value.
///
/// ```
/// let pool = flock::Pool::new();
/// match pool.spawn(|| -> u8 { panic!("bad input") }).join() {
///     Err(e @ flock::JoinError::Panicked(_)) => assert_eq!(e.to_string(), "the task panicked: bad input"),
///     other => panic!("{other:?}"),
/// }
/// ```
///
/// It is `Send + Sync` (the panic payload is wrapped in a [`PanicPayload`]), so `join()?`
/// works in a function returning `Box<dyn Error + Send + Sync>` or `anyhow::Result`:
///
/// ```
/// use std::error::Error;
/// fn answer(pool: &flock::Pool) -> Result<u32, Box<dyn Error + Send + Sync>> {
///     Ok(pool.spawn(|| 6 * 7).join()?)
/// }
/// assert_eq!(answer(&flock::Pool::new()).unwrap(), 42);
/// ```
#[non_exhaustive]
pub enum JoinError {
    /// The task panicked; this is its payload.
    Panicked(PanicPayload),
    /// [`JoinHandle::cancel`](crate::JoinHandle::cancel) removed it before it started.
    Cancelled,
    /// `shutdown_now` dropped it before it started.
    Dropped,
    /// The pool refused it (see [`Pool::spawn`](crate::Pool::spawn)); the closure was dropped.
    Refused(RejectReason),
}

impl JoinError {
    /// Whether the task panicked.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// assert!(pool.spawn(|| panic!("no")).join().unwrap_err().is_panic());
    /// pool.shutdown().unwrap();
    /// assert!(!pool.spawn(|| ()).join().unwrap_err().is_panic()); // refused, not panicked
    /// ```
    pub fn is_panic(&self) -> bool {
        matches!(self, JoinError::Panicked(_))
    }

    /// The panic payload, if the task panicked: for `std::panic::resume_unwind`, to carry the
    /// panic on in the joining thread, or for a downcast.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let err = pool.spawn(|| std::panic::panic_any(7u8)).join().unwrap_err();
    /// let payload = err.into_panic().expect("it panicked");
    /// assert_eq!(payload.downcast_ref::<u8>(), Some(&7));
    /// // or: std::panic::resume_unwind(payload);
    /// ```
    pub fn into_panic(self) -> Option<Box<dyn Any + Send + 'static>> {
        match self {
            JoinError::Panicked(p) => Some(p.into_inner()),
            _ => None,
        }
    }

    /// Whether the task was removed before it started: [`Cancelled`](JoinError::Cancelled)
    /// by [`JoinHandle::cancel`](crate::JoinHandle::cancel) (or a dropped
    /// [`CancelOnDrop`](crate::CancelOnDrop), or a
    /// [`TaskGroup::cancel`](crate::TaskGroup::cancel)), or [`Dropped`](JoinError::Dropped) by
    /// `shutdown_now` or [`Pool::purge`](crate::Pool::purge). As tokio's
    /// `JoinError::is_cancelled` (which a runtime shutdown gives too). A refused task was
    /// never accepted, so it is not cancelled.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// pool.pause();
    /// let queued = pool.spawn(|| 1);
    /// assert!(queued.cancel());
    /// let err = queued.join().unwrap_err();
    /// assert!(err.is_cancelled() && !err.is_panic());
    /// ```
    #[doc(alias = "is_canceled")]
    pub fn is_cancelled(&self) -> bool {
        matches!(self, JoinError::Cancelled | JoinError::Dropped)
    }

    /// The panic payload if the task panicked, else the error itself back. As tokio's
    /// `JoinError::try_into_panic`.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let err = pool.spawn(|| std::panic::panic_any(7u8)).join().unwrap_err();
    /// let payload = err.try_into_panic().expect("it panicked");
    /// assert_eq!(payload.downcast_ref::<u8>(), Some(&7));
    /// pool.shutdown().unwrap();
    /// let refused = pool.spawn(|| ()).join().unwrap_err();
    /// assert!(matches!(refused.try_into_panic(), Err(flock::JoinError::Refused(_))));
    /// ```
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self {
            JoinError::Panicked(p) => Ok(p.into_inner()),
            other => Err(other),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(p) => f
                .debug_tuple("Panicked")
                .field(&p.message().unwrap_or("<non-string payload>"))
                .finish(),
            JoinError::Cancelled => f.write_str("Cancelled"),
            JoinError::Dropped => f.write_str("Dropped"),
            JoinError::Refused(r) => f.debug_tuple("Refused").field(r).finish(),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(p) => write!(
                f,
                "the task panicked: {}",
                p.message().unwrap_or("<non-string payload>")
            ),
            JoinError::Cancelled => f.write_str("the task was cancelled before it started"),
            JoinError::Dropped => {
                f.write_str("the task was dropped by shutdown_now before it started")
            }
            JoinError::Refused(r) => write!(f, "the task was refused: {r}"),
        }
    }
}

impl std::error::Error for JoinError {}

/// An invalid pool configuration, or a failure to start the pool's threads.
///
/// ```
/// let err = flock::Pool::builder().capacity(0).build().unwrap_err();
/// assert!(matches!(err, flock::BuildError::ZeroCapacity));
/// println!("{err}"); // says what to change
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A pool needs at least one worker. Not returned by
    /// [`build`](crate::PoolBuilder::build) any more: `workers(0)` now asks for the default
    /// (as rayon's `num_threads(0)`); kept so that code matching on it still compiles.
    ZeroWorkers,
    /// More workers than the sleep protocol's counters can hold.
    TooManyWorkers {
        /// The number asked for.
        requested: usize,
        /// The largest accepted number.
        max: usize,
    },
    /// `capacity(0)`: nothing could ever be queued.
    ZeroCapacity,
    /// `max_spawned_threads(0)` with `Backpressure::SpawnThread`.
    ZeroSpawnThreads,
    /// `stack_size(0)`.
    ZeroStackSize,
    /// `stack_size` below [`MIN_STACK_SIZE`](crate::MIN_STACK_SIZE), too little for a
    /// worker's own frames and a task's.
    StackTooSmall {
        /// The size asked for, in bytes.
        requested: usize,
        /// The smallest accepted size, in bytes.
        min: usize,
    },
    /// `pin_to` was given an empty list.
    EmptyCoreList,
    /// `pin_to` named a core this process may not run on (or that does not exist).
    UnknownCore {
        /// The core id asked for.
        core: usize,
        /// The core ids this process may run on.
        available: Vec<usize>,
    },
    /// Pinning was asked for but the OS reported no cores this process may run on.
    NoCoresToPin,
    /// Pinning was asked for (`pin_workers(true)` or `pin_to`) in a build without the `pin`
    /// feature, which brings in the code that pins.
    PinningUnavailable,
    /// The OS refused to pin a worker to its core.
    PinFailed {
        /// The worker's index.
        worker: usize,
        /// The core it was to be pinned to.
        core: usize,
    },
    /// The OS refused to start a worker thread.
    ThreadSpawn(std::io::Error),
    /// The [`thread_name`](crate::PoolBuilder::thread_name) callback panicked; the workers
    /// started before were stopped.
    ThreadNamePanicked {
        /// The worker's index.
        worker: usize,
        /// The panic message (`<non-string payload>` when it was not a string).
        message: String,
    },
    /// `lanes(&[])`: a pool needs at least one lane.
    NoLanes,
    /// More lanes than [`MAX_LANES`](crate::MAX_LANES).
    TooManyLanes {
        /// The number asked for.
        requested: usize,
        /// The largest accepted number.
        max: usize,
    },
    /// A lane with weight 0 would never be served.
    ZeroLaneWeight {
        /// The lane's name.
        lane: String,
    },
    /// Two lanes share a name.
    DuplicateLane {
        /// The repeated name.
        lane: String,
    },
    /// `max_workers` is below the starting number of workers.
    MaxWorkersBelowWorkers {
        /// The starting number of workers.
        workers: usize,
        /// The `max_workers` asked for.
        max_workers: usize,
    },
    /// An environment variable read by [`global`](fn@crate::global) does not hold a valid value.
    InvalidEnv {
        /// The variable's name.
        var: &'static str,
        /// What it holds.
        value: String,
    },
    /// [`PoolBuilder::build_global`](crate::PoolBuilder::build_global) was called after the
    /// global pool was built (by an earlier `build_global`, or on first use of
    /// [`global`](fn@crate::global) or a free function). As rayon's `build_global`, it
    /// configures the global pool only before anything uses it.
    GlobalAlreadyBuilt,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroWorkers => f.write_str("workers(0): a pool needs at least one worker; pass 1 or more"),
            BuildError::TooManyWorkers { requested, max } => {
                write!(f, "workers({requested}) is more than the {max} flock supports; pass at most {max}")
            }
            BuildError::ZeroCapacity => {
                f.write_str("capacity(0) could never queue a task; pass 1 or more (usize::MAX for no bound)")
            }
            BuildError::ZeroSpawnThreads => {
                f.write_str("max_spawned_threads(0) with Backpressure::SpawnThread could never spawn; pass 1 or more")
            }
            BuildError::ZeroStackSize => f.write_str("stack_size(0) is not a usable stack; pass a size in bytes"),
            BuildError::StackTooSmall { requested, min } => write!(
                f,
                "stack_size({requested}) leaves no room for a worker's frames and a task's; pass at least {min} bytes"
            ),
            BuildError::EmptyCoreList => {
                f.write_str("pin_to(&[]) names no core; pass at least one core id or use pin_workers(true)")
            }
            BuildError::UnknownCore { core, available } => write!(
                f,
                "pin_to: core {core} is not one this process may run on; available cores: {available:?}"
            ),
            BuildError::NoCoresToPin => {
                f.write_str("pinning was asked for but the OS lists no core for this process; drop pin_workers/pin_to")
            }
            BuildError::PinningUnavailable => f.write_str(
                "pinning was asked for but flock-pool was built without its `pin` feature; \
                 enable the feature (it is on by default) or drop pin_workers/pin_to",
            ),
            BuildError::PinFailed { worker, core } => {
                write!(f, "the OS refused to pin worker {worker} to core {core}")
            }
            BuildError::ThreadSpawn(e) => write!(f, "could not start a worker thread: {e}"),
            BuildError::ThreadNamePanicked { worker, message } => {
                write!(f, "the thread_name callback panicked for worker {worker}: {message}")
            }
            BuildError::NoLanes => f.write_str("lanes(&[]) names no lane; pass at least one (name, weight)"),
            BuildError::TooManyLanes { requested, max } => {
                write!(f, "{requested} lanes is more than the {max} flock supports; pass at most {max}")
            }
            BuildError::ZeroLaneWeight { lane } => {
                write!(f, "lane {lane:?} has weight 0 and would never run; give it a weight of 1 or more")
            }
            BuildError::DuplicateLane { lane } => write!(f, "lane name {lane:?} is given twice; lane names must differ"),
            BuildError::MaxWorkersBelowWorkers { workers, max_workers } => write!(
                f,
                "max_workers({max_workers}) is below workers({workers}); pass at least {workers}"
            ),
            BuildError::InvalidEnv { var, value } => {
                let wanted = if *var == "FLOCK_MEMBARRIER" {
                    "0 (no membarrier: pushes fence) or 1 (the default)"
                } else {
                    "a whole number of workers, 1 or more"
                };
                write!(f, "{var}={value:?} is not valid; set it to {wanted}, or unset it")
            }
            BuildError::GlobalAlreadyBuilt => f.write_str(
                "build_global: the global pool was already built (by build_global or a first use); \
                 call build_global once, before anything uses the global pool",
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::ThreadSpawn(e) => Some(e),
            _ => None,
        }
    }
}
