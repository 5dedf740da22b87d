//! Scoped tasks: tasks that borrow from the caller's stack.
//!
//! # Safety
//!
//! The `unsafe` blocks here rely on:
//!
//! - **A unit keeps the scope alive.** Every task holds one unit of the scope's `count`
//!   (the body holds one while it runs); the scope's owner returns only after the count
//!   reached zero and its latch opened, and a unit's release (`CountLatch::release`)
//!   touches the scope only up to its decrement, the last one only to open the latch (so it
//!   takes a raw pointer; `count` is the scope's first field, so its address is the
//!   scope's). Units a worker keeps for later (`Credit`) keep it alive the same way.
//! - **A task is moved out once.** A scope task's `JobRef` runs once (job.rs); its block
//!   or box is read once, then given back or freed, and its closure (`Unretagged`) is taken
//!   once or dropped with the job.
//! - **The scope is `Sync`, its tasks `Send`.** So a `ScopePtr` may go to any worker.

use crate::job::{Job, JobRef, Outcome, COUNTED};
use crate::latch::{CountLatch, Owner};
use crate::pool::{Pool, BATCH};
use crate::registry::{Admission, Registry};
use crate::slab;
use crate::sync::{Arc, Mutex};
use crate::unwind::{drop_payload, UntilPanic};
use crate::worker::WorkerThread;
use std::any::Any;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// A scope in which tasks may borrow anything that outlives `'scope`; see
/// [`Pool::scope`](crate::Pool::scope).
///
/// ```
/// let pool = flock::Pool::new();
/// let mut halves = [vec![1, 2], vec![3, 4]];
/// let total = std::sync::atomic::AtomicI32::new(0);
/// pool.scope(|s| {
///     for half in halves.iter_mut() {
///         let total = &total; // borrowed from the stack, not 'static
///         s.spawn(move |s| {
///             half.iter_mut().for_each(|x| *x *= 10);
///             s.spawn(move |_| {
///                 total.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///             });
///         });
///     }
/// }); // returns when every task spawned in the scope, nested ones too, has finished
/// assert_eq!(halves, [vec![10, 20], vec![30, 40]]);
/// assert_eq!(total.into_inner(), 2);
/// ```
#[repr(C)]
pub struct Scope<'scope> {
    /// Tasks not yet finished, plus one for the scope's body while it runs, and the latch
    /// the last of them opens for the thread that runs the body and waits at the end. First,
    /// with `repr(C)`: the scope's address is its count's (`count_of`), which is what a
    /// worker's `Credit` keeps and what `JobRef::scope` reads from a task.
    count: CountLatch,
    registry: Arc<Registry>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Made by `scope_fifo`: `spawn` is `spawn_fifo`.
    fifo: bool,
    /// Invariant in `'scope`, as `std::thread::Scope` is.
    _marker: PhantomData<&'scope mut &'scope ()>,
}

/// A scope's address, sent to the scope's tasks. Only a method reads it, so closures capture
/// the whole (Send) wrapper rather than the raw pointer inside.
struct ScopePtr<'scope>(*const Scope<'scope>);

// SAFETY: the scope is `Sync` and outlives every task holding this pointer (it waits for
// `pending` to reach zero before it returns).
unsafe impl Send for ScopePtr<'_> {}

/// The address of a scope's count: the scope's own (`count` is its first field, and the
/// struct is `repr(C)`), so a raw pointer stays one without a reference to the scope.
fn count_of(scope: *const Scope<'_>) -> *const CountLatch {
    scope.cast()
}

/// A scope task's closure, held where Stacked Borrows' retagging of function arguments does
/// not look (inside a union). The task's body calls `task_done` before it returns, and from
/// then on the scope's owner may free what the closure borrowed; had the closure been a plain
/// field of the body's environment, its references would be protected arguments of that
/// call until it returned (Miri: `nested_scopes_across_pools_complete` in tests/waiting.rs,
/// an owner dropping a borrowed `Arc` while the last task's body was still returning).
/// Dropped with the job if it never runs.
struct Unretagged<F>(MaybeUninit<F>);

impl<F> Unretagged<F> {
    fn new(f: F) -> Self {
        Unretagged(MaybeUninit::new(f))
    }

    fn take(self) -> F {
        let this = ManuallyDrop::new(self);
        // SAFETY: written by `new`; `this` is not dropped, so this is the one read.
        unsafe { this.0.assume_init_read() }
    }
}

impl<F> Drop for Unretagged<F> {
    fn drop(&mut self) {
        // SAFETY: written by `new`, not taken (`take` does not drop).
        unsafe { self.0.assume_init_drop() }
    }
}

/// A scope task on the two-word path (`Scope::make_ref`): in a block of a worker's cache,
/// or boxed. `#[repr(C)]` with the scope first: a waiting worker reads it from the entry
/// before it decides to run it (`JobRef::scope`).
#[repr(C)]
struct ScopeTask<'scope, F> {
    scope: ScopePtr<'scope>,
    f: Unretagged<F>,
}

/// The `JobRef` function of a scope task in a block: moves the task out, gives the block
/// to this thread's cache (or the allocator, off the workers) and runs the task.
///
/// # Safety
/// `data` is a block holding a `ScopeTask<F>` written by `make_ref`, not yet taken back.
unsafe fn run_pooled_task<'scope, F>(data: *const ()) -> Outcome
where
    F: FnOnce(&Scope<'scope>) + Send + 'scope,
{
    let block = data.cast_mut().cast::<ScopeTask<'scope, F>>();
    // SAFETY: see the function's contract; the task is moved out once, and the block is
    // not touched again after it is given back.
    let task = unsafe { block.read() };
    crate::worker::with_current(|w| {
        match w {
            // SAFETY: as above.
            Some(w) => unsafe { w.blocks().give(block) },
            // SAFETY: as above.
            None => unsafe { slab::free_block(block) },
        }
        // SAFETY: the task's unit of `pending` is still held.
        unsafe { run_task_keeping_unit(w, task.scope, task.f) }
    })
}

/// The `JobRef` function of a boxed scope task.
///
/// # Safety
/// `data` is a `Box<ScopeTask<F>>` leaked by `make_ref`, not yet taken back.
unsafe fn run_boxed_task<'scope, F>(data: *const ()) -> Outcome
where
    F: FnOnce(&Scope<'scope>) + Send + 'scope,
{
    // SAFETY: see the function's contract.
    let task = unsafe { Box::from_raw(data.cast_mut().cast::<ScopeTask<'scope, F>>()) };
    let ScopeTask { scope, f } = *task;
    // SAFETY: the task's unit of `pending` is still held.
    crate::worker::with_current(|w| unsafe { run_task_keeping_unit(w, scope, f) })
}

/// `run_task` for a task on the two-word path: on a worker, the task's unit of `pending` is
/// kept in the worker's `Credit` for the next spawn into the same scope, instead of being
/// given back (docs/protocol.md, "Scope counts held by workers"). Units of another scope
/// are given back before the task starts, so that it never runs, or blocks, while holding
/// them.
///
/// # Safety
/// As `run_task`.
#[inline]
unsafe fn run_task_keeping_unit<'scope, F>(
    worker: Option<&WorkerThread>,
    ptr: ScopePtr<'scope>,
    f: Unretagged<F>,
) -> Outcome
where
    F: FnOnce(&Scope<'scope>) + Send + 'scope,
{
    let Some(worker) = worker else {
        // SAFETY: as the function's contract.
        return unsafe { run_task(ptr, f) };
    };
    let credit = worker.credit();
    credit.enter(count_of(ptr.0));
    let f = f.take();
    // SAFETY: our unit of `pending` keeps the scope alive until it is given back, which
    // `keep` defers to a later `settle`.
    let scope = unsafe { ptr.get() };
    let outcome = scope.outcome_of(catch_unwind(AssertUnwindSafe(|| f(scope))));
    credit.keep(count_of(ptr.0));
    outcome
}

/// Runs a scope task and gives its unit of `pending` back. The closure comes in an
/// `Unretagged`, never as a plain argument: from the decrement in `task_done` on, the owner
/// may free what it borrows while this call has yet to return.
///
/// # Safety
/// The caller holds one unit of the scope's `pending` for this task.
#[inline]
unsafe fn run_task<'scope, F>(ptr: ScopePtr<'scope>, f: Unretagged<F>) -> Outcome
where
    F: FnOnce(&Scope<'scope>) + Send + 'scope,
{
    let f = f.take();
    // SAFETY: our unit of `pending` keeps the scope alive until `task_done` below.
    let scope = unsafe { ptr.get() };
    let outcome = scope.outcome_of(catch_unwind(AssertUnwindSafe(|| f(scope))));
    // SAFETY: our unit keeps the scope alive until this call opens the latch.
    unsafe { Scope::task_done(ptr.0) };
    outcome
}

impl<'scope> ScopePtr<'scope> {
    /// # Safety
    /// The scope must still be alive (true while its task has not called `task_done`).
    unsafe fn get(&self) -> &Scope<'scope> {
        // SAFETY: see the function's contract.
        unsafe { &*self.0 }
    }
}

impl<'scope> Scope<'scope> {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Scope {
            count: CountLatch::new(Owner::current(&registry)),
            registry,
            panic: Mutex::new(None),
            fifo: false,
            _marker: PhantomData,
        }
    }

    /// A scope whose `spawn` is `spawn_fifo` (`scope_fifo`).
    pub(crate) fn new_fifo(registry: Arc<Registry>) -> Self {
        Scope {
            fifo: true,
            ..Scope::new(registry)
        }
    }

    /// Runs `f` on the pool; it may borrow anything that outlives the scope, and it may spawn
    /// more tasks into the same scope. From outside the pool, when the queue is full the task
    /// runs on the calling thread (as `CallerRuns`), and after shutdown it runs there too, so a
    /// scope always completes. A task run there after shutdown is not the pool's: no counter
    /// of [`Pool::stats`](crate::Pool::stats) counts it (neither submitted nor rejected).
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let mut halves = [0u64; 2];
    /// let data: Vec<u64> = (1..=100).collect();
    /// pool.scope(|s| {
    ///     let (lo, hi) = halves.split_at_mut(1);
    ///     let data = &data;
    ///     s.spawn(move |_| lo[0] = data[..50].iter().sum());
    ///     s.spawn(move |_| hi[0] = data[50..].iter().sum());
    /// });
    /// assert_eq!(halves[0] + halves[1], 5050);
    /// ```
    ///
    /// In a scope made by `scope_fifo` this is [`spawn_fifo`](Scope::spawn_fifo).
    pub fn spawn<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn_in_order(f, self.fifo);
    }

    /// Like [`spawn`](Scope::spawn), but tasks spawned this way from one worker start in the
    /// order they were spawned (oldest first), where `spawn` from a worker starts the newest
    /// first. From outside the pool the two are the same (the shared queue is FIFO). As
    /// rayon's `ScopeFifo::spawn_fifo`.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// let pool = flock::Pool::builder().workers(1).build().unwrap();
    /// let order = Mutex::new(Vec::new());
    /// pool.install(|| {
    ///     flock::scope(|s| {
    ///         for i in 0..4 {
    ///             let order = &order;
    ///             s.spawn_fifo(move |_| order.lock().unwrap().push(i));
    ///         }
    ///     })
    /// });
    /// assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3]);
    /// ```
    pub fn spawn_fifo<F>(&self, f: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn_in_order(f, true);
    }

    fn spawn_in_order<F>(&self, f: F, fifo: bool)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let outside = crate::worker::with_current(|w| match w {
            Some(w) if w.is_in(&self.registry) => {
                if fifo {
                    crate::fifo::push_fifo(w, self.make_job(f));
                } else if w.spawns_by_ref() {
                    w.submit_local_ref(self.make_ref(w, f));
                } else {
                    w.submit_local(self.make_job(f), None);
                }
                None
            }
            _ => Some(f),
        });
        if let Some(f) = outside {
            self.submit_from_outside(self.make_job(f));
        }
    }

    /// Spawns every task of `tasks` into the scope, as [`spawn`](Scope::spawn) would one by
    /// one, but queued together: one count and one wake-up call per batch rather than per
    /// task (what [`Pool::for_each`](crate::Pool::for_each) uses).
    ///
    /// # Panics
    /// If `tasks` panics, the tasks it yielded before are spawned all the same, and the panic
    /// then propagates from here (out of the scope's body or task, so the scope re-raises it
    /// once every task has finished).
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let mut parts = vec![0u64; 8];
    /// pool.scope(|s| s.spawn_batch(parts.iter_mut().enumerate().map(|(i, p)| move |_: &flock::Scope<'_>| *p = i as u64 * 10)));
    /// assert_eq!(parts, [0, 10, 20, 30, 40, 50, 60, 70]);
    /// ```
    pub fn spawn_batch<I, F>(&self, tasks: I)
    where
        I: IntoIterator<Item = F>,
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let mut tasks = UntilPanic::new(tasks.into_iter());
        let mut jobs = tasks.by_ref().map(|f| self.make_job(f));
        let outside = crate::worker::with_current(|w| match w {
            Some(w) if w.is_in(&self.registry) => {
                w.submit_local_batch(&mut jobs, None);
                false
            }
            _ => true,
        });
        if outside {
            self.spawn_batch_from_outside(jobs);
        }
        // What the iterator yielded before it panicked is spawned: the scope waits for it.
        tasks.resume();
    }

    #[cold]
    fn spawn_batch_from_outside(&self, mut jobs: impl Iterator<Item = Job>) {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            batch.extend(jobs.by_ref().take(BATCH));
            if batch.is_empty() {
                return;
            }
            // The lane `spawn` would use: that of the task this thread runs for us, if any.
            let lane = self.registry.outside_lane(None);
            let admitted =
                Registry::admit_batch(&self.registry, lane, Admission::Scoped, &mut batch, |job| {
                    job
                });
            if admitted.is_err() {
                // Shut down: run the rest here, counted nowhere (`Admission::Scoped`), so
                // the scope still completes.
                for job in batch.drain(..).chain(jobs) {
                    let _ = job.run();
                }
                return;
            }
        }
    }

    /// A job running `f` in this scope, holding one unit of `pending` until it ends.
    fn make_job<F>(&self, f: F) -> Job
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        // The body (or the task calling us) still holds its own unit (`CountLatch::add_unit`).
        self.count.add_unit();
        let ptr = ScopePtr(self);
        let f = Unretagged::new(f);
        // SAFETY: our unit of `pending` keeps the scope alive until the task is done.
        let body = move || unsafe { run_task(ptr, f) };
        // SAFETY: the job borrows `'scope` data; the scope does not return (so nothing it
        // borrows goes away) before `pending` reaches zero, which needs this job to run.
        unsafe { Job::new_unchecked(body, COUNTED) }
    }

    /// `make_job` as a two-word `JobRef` for `worker`'s join deque (`spawns_by_ref`): the
    /// closure and the scope's address go into a block of the worker's cache (`slab.rs`),
    /// or a box when they do not fit one (rayon boxes every spawn), so that the queue entry
    /// is two words. See `JobRef` for why that matters: a one-worker spawn tree ran in
    /// 0.18 s as `Job`s, against 0.13 s for rayon.
    fn make_ref<F>(&self, worker: &WorkerThread, f: F) -> JobRef
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        // A unit of ours kept from a task of this scope that ended here, or a new one.
        if !worker.credit().take_for(&self.count) {
            // As in `make_job`.
            self.count.add_unit();
        }
        let task = ScopeTask {
            scope: ScopePtr(self),
            f: Unretagged::new(f),
        };
        // For both: the task may run on any thread (`F: Send`, and the scope is `Sync`);
        // the scope does not return before `pending` reaches zero, which needs this task to
        // run, so what `f` borrows and the scope itself outlive it. Blocks and boxes are at
        // least 8-aligned (the task holds a pointer), leaving `JobRef`'s tag bit clear.
        if slab::fits::<ScopeTask<'scope, F>>() {
            let block = worker.blocks().take::<ScopeTask<'scope, F>>();
            // SAFETY: a block fits the task (checked above); `run_pooled_task::<F>` moves
            // it out and gives the block back, once.
            unsafe {
                block.write(task);
                JobRef::new_counted(run_pooled_task::<F>, block.cast_const().cast())
            }
        } else {
            let boxed = Box::into_raw(Box::new(task));
            // SAFETY: `run_boxed_task::<F>` takes back exactly this box, once.
            unsafe { JobRef::new_counted(run_boxed_task::<F>, boxed.cast_const().cast()) }
        }
    }

    /// How a task's run ended, for the counters; a panic is kept for the scope's owner.
    fn outcome_of(&self, result: std::thread::Result<()>) -> Outcome {
        match result {
            Ok(()) => Outcome::Done,
            Err(payload) => {
                self.record_panic(payload);
                Outcome::Panicked
            }
        }
    }

    #[cold]
    fn submit_from_outside(&self, job: Job) {
        let shard = self.registry.shards.external();
        match self.registry.admit(shard, Admission::Scoped) {
            Ok(route) => {
                let lane = self.registry.outside_lane(None);
                Registry::dispatch(&self.registry, shard, route, job, lane)
            }
            // Shut down: run it here, counted nowhere (`Admission::Scoped`), so the scope
            // still completes.
            Err(_) => {
                let _ = job.run();
            }
        }
    }

    fn record_panic(&self, payload: Box<dyn Any + Send>) {
        let mut slot = self.panic.lock();
        if slot.is_none() {
            *slot = Some(payload);
        } else {
            drop(slot);
            drop_payload(payload);
        }
    }

    /// One unit of `pending` is done; the last one opens the latch. The scope may be freed
    /// as soon as the count drops, so this takes a raw pointer (see `Latch::set`).
    ///
    /// # Safety
    /// The caller holds one unit of `pending`, which keeps the scope alive until this call.
    unsafe fn task_done(this: *const Scope<'scope>) {
        // SAFETY: the caller's contract.
        unsafe { CountLatch::release(count_of(this), 1) }
    }

    /// Runs the body, waits for every task, then re-raises the first panic.
    pub(crate) fn run<R>(self, op: impl FnOnce(&Scope<'scope>) -> R) -> R {
        let result = catch_unwind(AssertUnwindSafe(|| op(&self)));
        // SAFETY: the body's unit; `self` is alive (we own it).
        unsafe { Scope::task_done(&self) };
        // On a worker (of this pool or another) its pool's tasks run here meanwhile.
        self.count.wait();
        let task_panic = self.panic.lock().take();
        match (result, task_panic) {
            (Err(body_panic), other) => {
                if let Some(p) = other {
                    drop_payload(p);
                }
                resume_unwind(body_panic)
            }
            (Ok(_), Some(p)) => resume_unwind(p),
            (Ok(value), None) => value,
        }
    }
}

impl Pool {
    /// Runs `op` inside the pool with a [`Scope`] whose tasks may borrow from the caller's
    /// stack; returns once `op` and every task spawned in the scope have finished. If any of
    /// them panicked, the first panic is re-raised here, after all have finished. As rayon's
    /// `ThreadPool::scope`.
    ///
    /// `op` runs on one of this pool's workers, as an [`install`](Pool::install)ed closure
    /// does: inside it the free functions ([`flock::join`](fn@crate::join),
    /// [`flock::spawn`](fn@crate::spawn), [`flock::scope`](fn@crate::scope), ...) use this
    /// pool, and the worker runs the scope's tasks, and others, while it waits for them.
    /// Called from one of this pool's workers, `op` runs right there. From a worker of
    /// another pool, that worker runs its own pool's tasks until the scope is done; from
    /// any other thread, the caller blocks until then. As for `install`, `op` from outside
    /// is not subject to the pool's capacity, and in a paused pool it starts after
    /// [`resume`](Pool::resume); if the pool is shut down, `op` and its tasks run on the
    /// calling thread. [`in_place_scope`](Pool::in_place_scope) runs `op` on the calling
    /// thread instead.
    ///
    /// ```
    /// let pool = flock::Pool::builder().workers(2).build().unwrap();
    /// let mut words = vec!["a".to_string(), "b".to_string()];
    /// let body_on = pool.scope(|s| {
    ///     for w in words.iter_mut() {
    ///         s.spawn(move |_| w.push('!'));
    ///     }
    ///     flock::current_worker_index() // the body runs on one of `pool`'s workers
    /// });
    /// assert!(matches!(body_on, Some(0 | 1)));
    /// assert_eq!(words, ["a!", "b!"]);
    /// ```
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| Scope::new(self.registry().clone()).run(op))
    }

    /// Like [`scope`](Pool::scope), but the scope's `spawn` is
    /// [`Scope::spawn_fifo`](crate::Scope::spawn_fifo): tasks spawned from one worker start
    /// oldest first. As rayon's `ThreadPool::scope_fifo`. (`Scope::spawn_batch` is not
    /// affected: a batch from a worker goes to its deque as one group.) `op` runs inside the
    /// pool, as in `scope`; [`in_place_scope_fifo`](Pool::in_place_scope_fifo) runs it on
    /// the calling thread.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// let mut v = vec![1, 2, 3];
    /// pool.scope_fifo(|s| {
    ///     for x in v.iter_mut() {
    ///         s.spawn(move |_| *x *= 2);
    ///     }
    /// });
    /// assert_eq!(v, [2, 4, 6]);
    /// ```
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| Scope::new_fifo(self.registry().clone()).run(op))
    }
}

/// Shows the scope's `pending` count: its tasks not yet finished, plus one while the scope's
/// body runs.
impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("pending", &self.count.pending())
            .finish_non_exhaustive()
    }
}
