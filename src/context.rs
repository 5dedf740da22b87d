//! rayon-core's free functions under rayon's names, on the current pool (the calling
//! worker's, else the [`global`] one): `join_context` with its [`FnContext`], `broadcast` with
//! its [`BroadcastContext`], `in_place_scope(_fifo)`, and the thread queries
//! (`current_thread_index`, `current_num_threads`, `max_num_threads`,
//! `current_thread_has_pending_tasks`). Code moved from rayon keeps compiling with
//! `rayon::` replaced by `flock::`.

use crate::current::current_registry;
use crate::global::global;
use crate::registry::Registry;
use crate::scope::Scope;
use crate::sync::Arc;
use crate::worker::with_current;
use crate::Pool;
use std::marker::PhantomData;
use std::thread::{self, ThreadId};

/// What [`join_context`] tells each closure about where it runs.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// let (a, _) = pool.install(|| flock::join_context(|ctx| ctx.migrated(), |_| ()));
/// assert!(!a); // the first closure runs where join_context was called
/// ```
#[derive(Debug)]
pub struct FnContext {
    migrated: bool,
    /// Not `Send`, as rayon's: it describes the thread it was made on.
    _here: PhantomData<*mut ()>,
}

impl FnContext {
    /// Whether the closure runs on another thread than the one that called [`join_context`]
    /// (stolen by another worker, or, for a call from outside any pool, run on a worker of
    /// the global pool). As rayon's `FnContext::migrated`.
    ///
    /// ```
    /// // From outside any pool both closures run on the global pool's workers.
    /// let (a, b) = flock::join_context(|ctx| ctx.migrated(), |ctx| ctx.migrated());
    /// assert!(a && b);
    /// ```
    pub fn migrated(&self) -> bool {
        self.migrated
    }
}

/// [`join`](fn@crate::join), each closure told whether it [`migrated`](FnContext::migrated)
/// to another thread than the caller's. As rayon's `join_context`.
///
/// ```
/// let (left, right) = flock::join_context(|_| 1 + 1, |ctx| (ctx.migrated(), 2 + 2));
/// assert_eq!(left, 2);
/// assert_eq!(right.1, 4);
/// ```
pub fn join_context<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(FnContext) -> RA + Send,
    B: FnOnce(FnContext) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let caller = thread::current().id();
    crate::join(
        move || a(context_from(caller)),
        move || b(context_from(caller)),
    )
}

fn context_from(caller: ThreadId) -> FnContext {
    FnContext {
        migrated: thread::current().id() != caller,
        _here: PhantomData,
    }
}

/// What [`broadcast`](fn@broadcast)'s closure gets: which worker it runs on, among how many.
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// let seen = pool.install(|| flock::broadcast(|ctx| (ctx.index(), ctx.num_threads())));
/// assert_eq!(seen, [(0, 2), (1, 2)]);
/// ```
#[derive(Debug)]
pub struct BroadcastContext<'a> {
    index: usize,
    num_threads: usize,
    /// Not `Send`, and tied to the call, as rayon's.
    _call: PhantomData<&'a *mut ()>,
}

impl BroadcastContext<'_> {
    /// The index of the worker running this call (as
    /// [`current_worker_index`](crate::current_worker_index) gives it).
    ///
    /// ```
    /// let indices = flock::broadcast(|ctx| ctx.index());
    /// assert_eq!(indices, (0..flock::current_num_workers()).collect::<Vec<_>>());
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// The pool's worker count when the broadcast began (as
    /// [`current_num_workers`](crate::current_num_workers) gave it); a resize racing the
    /// call can make it differ from the number of calls.
    ///
    /// ```
    /// let counts = flock::broadcast(|ctx| ctx.num_threads());
    /// assert!(counts.iter().all(|&n| n == counts.len()));
    /// ```
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

/// Runs `op` once on every worker of the current pool (the calling worker's, else the
/// [`global`] one) and returns the values in worker order: [`Pool::broadcast`] with a
/// [`BroadcastContext`]. Blocks the calling thread until every call finished (on a worker, it
/// runs its own call and other tasks meanwhile). As rayon's `broadcast`.
///
/// ```
/// let pool = flock::Pool::builder().workers(3).build().unwrap();
/// let ids = pool.install(|| flock::broadcast(|ctx| ctx.index() * 10));
/// assert_eq!(ids, [0, 10, 20]);
/// ```
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    let run = |pool: &Pool| {
        let num_threads = pool.workers();
        pool.broadcast(|index| {
            op(BroadcastContext {
                index,
                num_threads,
                _call: PhantomData,
            })
        })
    };
    match current_registry() {
        Some(registry) => Pool::lend(&registry, run),
        None => run(global()),
    }
}

/// The current pool's registry: the calling worker's pool, else the global pool.
fn current() -> Arc<Registry> {
    current_registry().unwrap_or_else(|| global().registry().clone())
}

/// Runs `op` here, on the calling thread, with a [`Scope`] whose tasks go to the current pool
/// (the calling worker's, else the [`global`] one); returns once `op` and every task spawned
/// in it have finished, re-raising the first panic. Blocks the calling thread until then (on
/// a worker, it runs other tasks meanwhile). As rayon's `in_place_scope`.
///
/// ```
/// let here = std::thread::current().id();
/// let mut parts = [0u32; 3];
/// let body_ran_here = flock::in_place_scope(|s| {
///     for (i, p) in parts.iter_mut().enumerate() {
///         s.spawn(move |_| *p = i as u32 + 1);
///     }
///     std::thread::current().id() == here
/// });
/// assert!(body_ran_here);
/// assert_eq!(parts, [1, 2, 3]);
/// ```
pub fn in_place_scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    Scope::new(current()).run(op)
}

/// [`in_place_scope`] whose `spawn` is [`Scope::spawn_fifo`]: tasks spawned from one worker
/// start oldest first. As rayon's `in_place_scope_fifo`.
///
/// ```
/// use std::sync::Mutex;
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// let order = Mutex::new(Vec::new());
/// pool.install(|| {
///     flock::in_place_scope_fifo(|s| {
///         for i in 0..3 {
///             let order = &order;
///             s.spawn(move |_| order.lock().unwrap().push(i));
///         }
///     })
/// });
/// assert_eq!(order.into_inner().unwrap(), [0, 1, 2]);
/// ```
pub fn in_place_scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    Scope::new_fifo(current()).run(op)
}

impl Pool {
    /// Runs `op` here, on the calling thread, with a [`Scope`] whose tasks go to this pool;
    /// returns once `op` and every task spawned in it have finished, re-raising the first
    /// panic. Blocks the calling thread until then (on a worker, it runs other tasks
    /// meanwhile). As rayon's `ThreadPool::in_place_scope`. The free functions called in
    /// `op` reach the calling thread's current pool (its worker's, else the
    /// [`global`] one), not necessarily this one; [`scope`](Pool::scope) runs `op` inside
    /// this pool instead.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).thread_name(|i| format!("ips-{i}")).build().unwrap();
    /// let name = pool.in_place_scope(|s| {
    ///     s.spawn(|_| assert!(std::thread::current().name().unwrap().starts_with("ips-")));
    ///     std::thread::current().name().map(str::to_owned)
    /// });
    /// assert_ne!(name.as_deref().map(|n| n.starts_with("ips-")), Some(true)); // the body ran here
    /// ```
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        Scope::new(self.registry().clone()).run(op)
    }

    /// [`in_place_scope`](Pool::in_place_scope) whose `spawn` is [`Scope::spawn_fifo`]: `op`
    /// runs on the calling thread (where [`scope_fifo`](Pool::scope_fifo) runs it inside the
    /// pool). As rayon's `ThreadPool::in_place_scope_fifo`.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut v = [0u8; 4];
    /// pool.in_place_scope_fifo(|s| {
    ///     for (i, x) in v.iter_mut().enumerate() {
    ///         s.spawn(move |_| *x = i as u8);
    ///     }
    /// });
    /// assert_eq!(v, [0, 1, 2, 3]);
    /// ```
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        Scope::new_fifo(self.registry().clone()).run(op)
    }
}

/// The index of the calling worker in its pool, or `None` off the workers: rayon's name for
/// [`current_worker_index`](crate::current_worker_index).
///
/// ```
/// let pool = flock::Pool::builder().workers(2).build().unwrap();
/// assert!(matches!(pool.install(flock::current_thread_index), Some(0 | 1)));
/// assert_eq!(flock::current_thread_index(), None);
/// ```
pub fn current_thread_index() -> Option<usize> {
    crate::current_worker_index()
}

/// The number of workers of the current pool: rayon's name for
/// [`current_num_workers`](crate::current_num_workers).
///
/// ```
/// let pool = flock::Pool::builder().workers(3).build().unwrap();
/// assert_eq!(pool.install(flock::current_num_threads), 3);
/// ```
pub fn current_num_threads() -> usize {
    crate::current_num_workers()
}

/// The most workers a pool can have (`workers`, `max_workers` and `resize` refuse more). As
/// rayon's `max_num_threads`.
///
/// ```
/// assert!(flock::max_num_threads() >= flock::current_num_workers());
/// let too_many = flock::Pool::builder().workers(flock::max_num_threads() + 1).build();
/// assert!(matches!(too_many, Err(flock::BuildError::TooManyWorkers { .. })));
/// ```
pub fn max_num_threads() -> usize {
    crate::sleep::MAX_WORKERS
}

/// Whether the calling worker has tasks waiting on its own deque (those its tasks spawned and
/// no other worker has taken yet); `None` off the workers. As rayon's
/// `current_thread_has_pending_tasks`.
///
/// ```
/// let pool = flock::Pool::builder().workers(1).build().unwrap();
/// let seen = pool.install(|| {
///     let before = flock::current_thread_has_pending_tasks();
///     let child = flock::spawn(|| ()); // onto this worker's deque
///     let after = flock::current_thread_has_pending_tasks();
///     child.join().unwrap();
///     (before, after)
/// });
/// assert_eq!(seen, (Some(false), Some(true)));
/// assert_eq!(flock::current_thread_has_pending_tasks(), None);
/// ```
pub fn current_thread_has_pending_tasks() -> Option<bool> {
    with_current(|w| w.map(|w| w.has_local_work()))
}
