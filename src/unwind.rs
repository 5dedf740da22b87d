//! Panics: the ones tasks raise (caught, counted, reported), the ones users' hooks, handlers
//! and `Waker`s raise (caught and printed: `call_guarded`, `wakers::wake_guarded`), and the
//! ones flock must never raise (abort loudly).

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, PoisonError};

/// The value a task panicked with (what `panic!` or `panic_any` was given), in a form that is
/// `Send + Sync` so that errors holding it work with `?` and `anyhow`.
///
/// A payload is a `Box<dyn Any + Send>`, which is not `Sync`; tokio's `JoinError` solves this
/// by holding it where only a `&mut` or an owner can reach it, and so does this type (without
/// `unsafe`: a `Mutex` that is never locked). Its message, when the payload is a string, is
/// copied out when the panic is caught, so [`message`](Self::message) needs no lock.
///
/// ```
/// let pool = flock::Pool::new();
/// let err = pool.spawn(|| panic!("disk full")).join().unwrap_err();
/// let flock::JoinError::Panicked(payload) = err else { unreachable!() };
/// assert_eq!(payload.message(), Some("disk full"));
/// let raw: Box<dyn std::any::Any + Send> = payload.into_inner();
/// assert_eq!(raw.downcast_ref::<&str>(), Some(&"disk full"));
/// ```
pub struct PanicPayload {
    message: Option<Box<str>>,
    payload: Mutex<Box<dyn Any + Send + 'static>>,
}

impl PanicPayload {
    /// The panic message, when the payload is a string (as `panic!("...")` makes it).
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let err = pool.spawn(|| std::panic::panic_any(3u8)).join().unwrap_err();
    /// let flock::JoinError::Panicked(payload) = err else { unreachable!() };
    /// assert_eq!(payload.message(), None); // not a string
    /// ```
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The raw payload, for `std::panic::resume_unwind` or a downcast.
    ///
    /// ```should_panic
    /// let pool = flock::Pool::new();
    /// let err = pool.spawn(|| panic!("carried on")).join().unwrap_err();
    /// let flock::JoinError::Panicked(payload) = err else { unreachable!() };
    /// std::panic::resume_unwind(payload.into_inner()); // the panic goes on here
    /// ```
    pub fn into_inner(self) -> Box<dyn Any + Send + 'static> {
        // Never poisoned: it is never locked.
        self.payload
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Wraps a payload caught by `catch_unwind`.
impl From<Box<dyn Any + Send + 'static>> for PanicPayload {
    fn from(payload: Box<dyn Any + Send + 'static>) -> Self {
        PanicPayload {
            message: payload_message(&*payload).map(Box::from),
            payload: Mutex::new(payload),
        }
    }
}

impl fmt::Debug for PanicPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PanicPayload")
            .field("message", &self.message())
            .finish_non_exhaustive()
    }
}

/// A panic raised by a task, as handed to the pool's panic handler. `Send + Sync`, like
/// [`PanicPayload`], which it holds.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = seen.clone();
/// let pool = flock::Pool::builder()
///     .workers(1)
///     .panic_handler(move |p: flock::TaskPanic| {
///         log.lock().unwrap().push((p.worker(), p.message().map(str::to_owned)));
///     })
///     .build()
///     .unwrap();
/// pool.submit(|| panic!("boom")).unwrap();
/// pool.wait().unwrap();
/// assert_eq!(*seen.lock().unwrap(), vec![(Some(0), Some("boom".to_owned()))]);
/// ```
pub struct TaskPanic {
    worker: Option<usize>,
    payload: PanicPayload,
}

impl TaskPanic {
    pub(crate) fn new(worker: Option<usize>, payload: Box<dyn Any + Send + 'static>) -> Self {
        TaskPanic {
            worker,
            payload: payload.into(),
        }
    }

    /// The index of the worker the task ran on; `None` when it ran on a submitting thread
    /// (`Backpressure::CallerRuns`) or a helper thread (`Backpressure::SpawnThread`).
    ///
    /// ```
    /// use flock::{Backpressure, Pool};
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let pool = Pool::builder()
    ///     .workers(1)
    ///     .capacity(1)
    ///     .when_full(Backpressure::CallerRuns)
    ///     .panic_handler(move |p| tx.send(p.worker()).unwrap())
    ///     .build()
    ///     .unwrap();
    /// pool.submit(|| panic!("on a worker")).unwrap();
    /// assert_eq!(rx.recv().unwrap(), Some(0));
    /// pool.pause(); // nothing starts: the next task fills the queue, the one after runs here
    /// pool.submit(|| ()).unwrap();
    /// pool.submit(|| panic!("on the caller")).unwrap();
    /// assert_eq!(rx.recv().unwrap(), None);
    /// pool.resume();
    /// ```
    pub fn worker(&self) -> Option<usize> {
        self.worker
    }

    /// The panic message, when the payload is a string (as `panic!("...")` makes it).
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let pool = flock::Pool::builder()
    ///     .panic_handler(move |p| tx.send(p.message().map(str::to_owned)).unwrap())
    ///     .build()
    ///     .unwrap();
    /// pool.submit(|| panic!("code {}", 7)).unwrap();
    /// pool.submit(|| std::panic::panic_any(7)).unwrap();
    /// let mut seen = vec![rx.recv().unwrap(), rx.recv().unwrap()];
    /// seen.sort();
    /// assert_eq!(seen, [None, Some("code 7".to_owned())]);
    /// ```
    pub fn message(&self) -> Option<&str> {
        self.payload.message()
    }

    /// The raw panic payload, for `std::panic::resume_unwind` or downcasting.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let pool = flock::Pool::builder()
    ///     .panic_handler(move |p| tx.send(p.into_payload()).unwrap())
    ///     .build()
    ///     .unwrap();
    /// pool.submit(|| std::panic::panic_any(42u64)).unwrap();
    /// assert_eq!(rx.recv().unwrap().downcast_ref::<u64>(), Some(&42));
    /// ```
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        self.payload.into_inner()
    }
}

impl fmt::Debug for TaskPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskPanic")
            .field("worker", &self.worker)
            .field("message", &self.message())
            .finish()
    }
}

pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> Option<&str> {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        Some(s)
    } else {
        payload.downcast_ref::<String>().map(String::as_str)
    }
}

/// Drops a panic payload whose destructor may itself panic; such a payload is leaked instead.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
}

/// Runs a user callback (hook or panic handler) so that its panic cannot escape.
pub(crate) fn call_guarded(what: &str, worker: Option<usize>, f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        report_caught(what, worker, payload);
    }
}

/// Prints a panic caught from a user callback, and drops its payload.
#[cold]
pub(crate) fn report_caught(what: &str, worker: Option<usize>, payload: Box<dyn Any + Send>) {
    let msg = payload_message(&*payload)
        .unwrap_or("<non-string payload>")
        .to_owned();
    eprintln!("flock: the {what} panicked (worker {worker:?}): {msg}; the pool goes on");
    drop_payload(payload);
}

/// A user's iterator of tasks that ends where it panics, keeping the panic: what it yielded
/// before is submitted as usual (counted, woken for), and the caller re-raises the panic
/// afterwards with [`UntilPanic::resume`]. Without it, a panic in the middle of a batch left
/// the tasks already taken out of the iterator unsubmitted (a scope waiting for them forever)
/// or submitted but not counted.
pub(crate) struct UntilPanic<I> {
    inner: I,
    panic: Option<Box<dyn Any + Send>>,
}

impl<I: Iterator> UntilPanic<I> {
    pub(crate) fn new(inner: I) -> Self {
        UntilPanic { inner, panic: None }
    }

    /// Re-raises the iterator's panic, if it panicked.
    pub(crate) fn resume(self) {
        if let Some(payload) = self.panic {
            std::panic::resume_unwind(payload);
        }
    }
}

impl<I: Iterator> Iterator for UntilPanic<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        if self.panic.is_some() {
            return None;
        }
        match catch_unwind(AssertUnwindSafe(|| self.inner.next())) {
            Ok(item) => item,
            Err(payload) => {
                self.panic = Some(payload);
                None
            }
        }
    }
}

/// A guard that aborts the process if it is dropped during a panic: flock's own code must not
/// unwind through a state it is halfway through changing.
pub(crate) struct AbortIfPanic(pub(crate) &'static str);

impl Drop for AbortIfPanic {
    fn drop(&mut self) {
        eprintln!("flock: internal panic in {}; aborting", self.0);
        std::process::abort();
    }
}

impl AbortIfPanic {
    /// Disarms the guard on the normal path.
    pub(crate) fn disarm(self) {
        std::mem::forget(self);
    }
}
