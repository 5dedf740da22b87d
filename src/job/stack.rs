//! Stack jobs: a job that lives in its waiter's stack frame, as `join`'s second half and the
//! job `run_on_pool` sends to a worker do.
//!
//! [`fork_ref`] and [`fork_job`] make the job on their own stack, hand it to `offer` (to
//! queue it, as a two-word [`JobRef`] or as a [`Job`]), run `here` on this thread and then
//! hand the job to `wait`, which must give
//! back a [`Joined`]: the job's result, which only a [`Forked`] makes, and only once the job
//! ran here (taken back before any thief got it) or its latch opened (it ran elsewhere).
//! So a fork cannot return while a thief may still touch its job.
//!
//! [`fan_out`] is the many-jobs case (a broadcast): a value on its stack that several jobs
//! run with, each holding one unit of a count; the last unit given back opens the latch,
//! and `fan_out` gives the value back only after it.
//!
//! # Safety
//!
//! The `unsafe` blocks here rely on:
//!
//! - **The job outlives every run of it.** A `StackJob` lives in a `fork_*` call's frame,
//!   where nothing can move it. That call returns only with a `Joined` of that very job
//!   (each `Forked` brands its `Joined` with its own invariant lifetime, and `wait` is
//!   generic over it), and a `Joined` exists only once the job ran here or its latch opened,
//!   the runner's last touch of the job (`latch::set_and_wake`). If `offer` or `wait`
//!   unwinds, a thief may hold the job: the process aborts rather than free it.
//! - **The function is taken once.** Exactly one queue entry is made per fork (`offer`
//!   gets it by value). Its runner takes the function; the waiter takes it only after it
//!   took the entry back, so the runner never gets it ([`Forked::take_back`], a
//!   `TakenBack` that `run_here` consumes).
//! - **The result is handed over by the latch.** The runner writes `result` before it
//!   opens the latch (its Release), and the waiter reads it only after it saw the latch
//!   open (its Acquire, [`Latch::probe`]).
//! - **A shared value outlives its jobs.** `fan_out` keeps its `Shared` in its frame and
//!   holds one unit of `remaining` itself while `offer` makes jobs (each adds its own unit
//!   before it leaves), so the count reaches zero, and the latch opens, only after every
//!   job made gave its unit back, its last touch of the value. It returns only after the
//!   latch opened, and aborts if `offer` or `wait` unwinds.
//! - **The address identifies the job.** A taken-back entry is ours when its address is
//!   our job's: two live stack jobs never share one.

use super::{Action, Job, JobRef, Outcome, Payload, STACK};
use crate::latch::{self, Latch, LatchOwner};
use crate::sync::{AtomicUsize, Ordering};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::thread::Result as TaskResult;

/// Aborts the process if dropped: held across a fork's offer and wait, where an unwind
/// would free a job that a thief may hold. Zero-sized, so that holding it costs nothing on
/// the join path (`unwind::AbortIfPanic` carries its message).
struct AbortIfUnwinds;

impl Drop for AbortIfUnwinds {
    #[cold]
    fn drop(&mut self) {
        eprintln!("flock: internal panic while a stack job was out; aborting");
        std::process::abort();
    }
}

impl AbortIfUnwinds {
    /// Disarms the guard on the normal path.
    #[inline(always)]
    fn disarm(self) {
        std::mem::forget(self);
    }
}

/// A job that lives in its waiter's stack frame. The waiter does not return before the job
/// ran (the latch is open) or it took the job back, so the frame outlives the job.
///
/// `func` and `result` are empty when the job is dropped: whoever runs the job takes the
/// function, and the waiter takes the result (its `Joined`) before a fork returns, and a
/// fork that unwinds aborts. So they are `ManuallyDrop`, and the job's drop has nothing to
/// check.
struct StackJob<F, R, O> {
    func: UnsafeCell<ManuallyDrop<Option<F>>>,
    result: UnsafeCell<ManuallyDrop<Option<TaskResult<R>>>>,
    latch: Latch,
    /// The thread waiting in this frame: the latch's setter wakes it.
    owner: O,
}

/// A forked job, as its waiter sees it while the job may be out: for `wait`.
pub(crate) struct Forked<'a, F, R, O> {
    job: &'a StackJob<F, R, O>,
    /// Brands this fork's `Joined` (invariant in `'a`).
    _brand: PhantomData<fn(&'a ()) -> &'a ()>,
}

/// Proof that a fork's latch was seen open (`Forked::opened`).
pub(crate) struct Opened<'a> {
    _brand: PhantomData<fn(&'a ()) -> &'a ()>,
}

/// Proof that a fork's own entry was taken back from its queue (`Forked::take_back`).
pub(crate) struct TakenBack<'a> {
    _brand: PhantomData<fn(&'a ()) -> &'a ()>,
}

/// The result of a forked job that no one will touch again: what `wait` gives back.
pub(crate) struct Joined<'a, R> {
    result: TaskResult<R>,
    _brand: PhantomData<fn(&'a ()) -> &'a ()>,
}

/// Forks `f` as a two-word `JobRef` (a join half in a pool with one lane): `offer` queues
/// it, `here` runs on this thread meanwhile (its panic caught), and `wait` gets the job back
/// or waits for it. Returns `here`'s result and the job's.
/// `owner` is the thread waiting here, woken by the latch's setter. Always inlined, as the
/// body of `join` was before it moved here: out of line, its caller's `both` stays out of
/// line too.
#[inline(always)]
pub(crate) fn fork_ref<F, R, O, H, RH>(
    f: F,
    owner: O,
    offer: impl FnOnce(JobRef),
    here: H,
    wait: impl for<'a> FnOnce(&Forked<'a, F, R, O>) -> Joined<'a, R>,
) -> (TaskResult<RH>, TaskResult<R>)
where
    F: FnOnce() -> R + Send,
    R: Send,
    O: LatchOwner,
    H: FnOnce() -> RH,
{
    let job = StackJob::new(f, owner);
    let guard = AbortIfUnwinds;
    // SAFETY: `run_stack::<F, R, O>` runs the `StackJob<F, R, O>` at this address, once;
    // `fork` keeps it alive until then or until it is taken back (module docs, "Safety").
    offer(unsafe { JobRef::new(run_stack::<F, R, O>, job.address()) });
    let out = fork(&job, here, wait);
    guard.disarm();
    out
}

/// Forks `f` as a `Job` with `flags` (a join half in a pool with lanes, or a job sent to a
/// pool from outside it): as [`fork_ref`].
#[inline(always)]
pub(crate) fn fork_job<F, R, O, H, RH>(
    f: F,
    owner: O,
    flags: u8,
    offer: impl FnOnce(Job),
    here: H,
    wait: impl for<'a> FnOnce(&Forked<'a, F, R, O>) -> Joined<'a, R>,
) -> (TaskResult<RH>, TaskResult<R>)
where
    F: FnOnce() -> R + Send,
    R: Send,
    O: LatchOwner,
    H: FnOnce() -> RH,
{
    let job = StackJob::new(f, owner);
    let guard = AbortIfUnwinds;
    let mut payload = Payload::uninit();
    // SAFETY: a payload has room for one address; `Job::stack_address` reads it back.
    unsafe { ptr::write(payload.as_mut_ptr().cast::<*const ()>(), job.address()) };
    // SAFETY: `call_stack::<F, R, O>` reads exactly this address, once; `fork` keeps the job
    // alive until it ran or was taken back (module docs, "Safety").
    offer(unsafe { Job::from_raw(call_stack::<F, R, O>, payload, flags | STACK) });
    let out = fork(&job, here, wait);
    guard.disarm();
    out
}

/// Runs `here` (its panic caught), then `wait` on the offered `job`: the job is finished
/// with once `wait` returns.
#[inline(always)]
fn fork<F, R, O, H: FnOnce() -> RH, RH>(
    job: &StackJob<F, R, O>,
    here: H,
    wait: impl for<'a> FnOnce(&Forked<'a, F, R, O>) -> Joined<'a, R>,
) -> (TaskResult<RH>, TaskResult<R>) {
    let rh = catch_unwind(AssertUnwindSafe(here));
    let joined = wait(&Forked {
        job,
        _brand: PhantomData,
    });
    (rh, joined.result)
}

impl<F, R, O> StackJob<F, R, O> {
    #[inline]
    fn new(f: F, owner: O) -> Self {
        StackJob {
            func: UnsafeCell::new(ManuallyDrop::new(Some(f))),
            result: UnsafeCell::new(ManuallyDrop::new(None)),
            latch: Latch::new(),
            owner,
        }
    }

    #[inline]
    fn address(&self) -> *const () {
        (self as *const Self).cast()
    }
}

impl<'a, F: FnOnce() -> R, R, O> Forked<'a, F, R, O> {
    /// The latch the runner opens, to wait on.
    #[inline(always)]
    pub(crate) fn latch(&self) -> &Latch {
        &self.job.latch
    }

    /// Whether the latch is open: the runner is done with the job.
    #[inline(always)]
    pub(crate) fn opened(&self) -> Option<Opened<'a>> {
        self.job.latch.probe().then_some(Opened {
            _brand: PhantomData,
        })
    }

    /// The runner's result, once the latch is open.
    #[inline(always)]
    pub(crate) fn stolen(&self, _opened: Opened<'a>) -> Joined<'a, R> {
        // SAFETY: the latch is open (`_opened`), so the runner wrote `result` and is done
        // with the job.
        let result = unsafe { (*self.job.result.get()).take() };
        Joined {
            result: result.expect("flock: a stolen stack job left its result"),
            _brand: PhantomData,
        }
    }

    /// The runner's result, after a wait for the latch.
    pub(crate) fn result(&self) -> Joined<'a, R> {
        let opened = self
            .opened()
            .expect("flock: a stack job's latch is open after the wait");
        self.stolen(opened)
    }

    /// Whether `entry`, taken back from a join deque, is our job: then it is consumed, and
    /// only `run_here` runs the job; else it is given back.
    #[inline(always)]
    pub(crate) fn take_back(&self, entry: JobRef) -> Result<TakenBack<'a>, JobRef> {
        if entry.data() != self.job.address() {
            return Err(entry);
        }
        Ok(TakenBack {
            _brand: PhantomData,
        })
    }

    /// As `take_back`, for a `Job` taken back from a lane's deque.
    #[inline(always)]
    pub(crate) fn take_back_job(&self, job: Job) -> Result<TakenBack<'a>, Job> {
        if job.stack_address() != Some(self.job.address()) {
            return Err(job);
        }
        std::mem::forget(job); // just our own address; `run_here` does the work
        Ok(TakenBack {
            _brand: PhantomData,
        })
    }

    /// Runs the function here: we took the job back before anyone ran it (`_ours`).
    #[inline(always)]
    pub(crate) fn run_here(&self, _ours: TakenBack<'a>) -> Joined<'a, R> {
        // SAFETY: the job was taken back from its queue, so nobody else can run it.
        let f = unsafe { (*self.job.func.get()).take() }.expect("flock: a stack job runs once");
        Joined {
            result: catch_unwind(AssertUnwindSafe(f)),
            _brand: PhantomData,
        }
    }
}

/// # Safety
/// `payload`'s first word is the address of a live `StackJob<F, R, O>` whose job was not run
/// yet.
unsafe fn call_stack<F: FnOnce() -> R + Send, R: Send, O: LatchOwner>(
    payload: Payload,
    _action: Action,
) -> Outcome {
    // SAFETY: see the function's contract.
    unsafe { execute_stack::<F, R, O>(ptr::read(payload.as_ptr().cast::<*const ()>())) }
}

/// A stack job's `JobRef` function.
///
/// # Safety
/// `data` is the address of a live `StackJob<F, R, O>` whose job was not run yet.
unsafe fn run_stack<F: FnOnce() -> R + Send, R: Send, O: LatchOwner>(data: *const ()) -> Outcome {
    // SAFETY: see the function's contract. (A join half is not counted: nothing reads the
    // outcome.)
    unsafe { execute_stack::<F, R, O>(data) }
}

/// Runs the stack job at `data`, leaves its result and opens its latch.
///
/// # Safety
/// `data` is the address of a live `StackJob<F, R, O>` whose job was not run yet.
#[inline]
unsafe fn execute_stack<F: FnOnce() -> R + Send, R: Send, O: LatchOwner>(
    data: *const (),
) -> Outcome {
    // SAFETY: see the function's contract.
    let job = unsafe { &*data.cast::<StackJob<F, R, O>>() };
    // Both actions run the function: a stack job's owner is blocked on it, so it must never
    // be dropped unrun (and it is not `DISCARDABLE`, so `shutdown_now` never asks).
    // SAFETY: the job is run once; its owner does not touch `func` once the job is out of
    // its deque.
    let f = unsafe { (*job.func.get()).take() }.expect("flock: a stack job runs once");
    let result = catch_unwind(AssertUnwindSafe(f));
    let outcome = if result.is_ok() {
        Outcome::Done
    } else {
        Outcome::Panicked
    };
    // SAFETY: the owner reads `result` only after the latch opens, below.
    unsafe { **job.result.get() = Some(result) };
    // SAFETY: the job is alive until its latch opens; after this we touch nothing of it.
    unsafe { latch::set_and_wake(&job.latch, &job.owner) };
    outcome
}

/// A value on a `fan_out` call's stack, shared by the jobs made from it, each of which runs
/// once with it; the last unit released opens the latch.
struct Shared<S, O> {
    state: S,
    /// One unit per job not yet finished, and one for the `fan_out` call while it makes
    /// jobs.
    remaining: AtomicUsize,
    latch: Latch,
    /// The thread waiting in `fan_out`: the last job's release wakes it.
    owner: O,
}

/// `fan_out`'s maker of jobs, for its `offer` closure.
pub(crate) struct FanOut<'a, S, O> {
    shared: &'a Shared<S, O>,
}

/// The shared value's address, for a job (Send: the value is Sync, and `fan_out` does not
/// return before every job holding it has finished).
struct SharedPtr<S, O>(*const Shared<S, O>);

// SAFETY: `Shared<S, O>` is Sync when `S` and `O` are, and it outlives every job holding
// this pointer (module docs, "Safety").
unsafe impl<S: Sync, O: Sync> Send for SharedPtr<S, O> {}

impl<S, O> SharedPtr<S, O> {
    /// Only a method reads the pointer, so closures capture the whole (Send) wrapper.
    fn get(&self) -> *const Shared<S, O> {
        self.0
    }
}

/// Shares `state` with the jobs that `offer` makes ([`FanOut::job`]) and queues, then waits
/// (`latch::wait`, on the latch the last of them opens) until every one of them has run,
/// and gives `state` back with what `offer` returned. The thread waiting here is `owner`'s;
/// a worker runs its pool's tasks meanwhile.
pub(crate) fn fan_out<S, O, T>(
    state: S,
    owner: O,
    offer: impl FnOnce(&FanOut<'_, S, O>) -> T,
) -> (T, S)
where
    S: Sync,
    O: LatchOwner + Sync,
{
    let shared = Shared {
        state,
        remaining: AtomicUsize::new(1),
        latch: Latch::new(),
        owner,
    };
    let guard = AbortIfUnwinds;
    let out = offer(&FanOut { shared: &shared });
    // SAFETY: `shared` is ours, alive through the call; this gives back our own unit.
    unsafe { Shared::release(&shared) };
    latch::wait(&shared.latch);
    // The latch opens only on the last release, so no job is left to touch `shared`.
    guard.disarm();
    (out, shared.state)
}

impl<S: Sync, O: LatchOwner + Sync> FanOut<'_, S, O> {
    /// A job with `flags` that runs `body` with the shared value; `fan_out` waits for it.
    /// The job must be run, not dropped unrun: `fan_out` waits for it until then.
    pub(crate) fn job(&self, flags: u8, body: impl FnOnce(&S) -> Outcome + Send + 'static) -> Job {
        // Relaxed: the job reaches its runner through a queue whose handover orders this
        // increment before the runner's decrement.
        self.shared.remaining.fetch_add(1, Ordering::Relaxed);
        let ptr = SharedPtr(self.shared);
        let call = move || {
            let this = ptr.get();
            // SAFETY: this job's unit of `remaining` keeps the value alive up to `release`.
            let outcome = body(unsafe { &(*this).state });
            // SAFETY: as above; this gives back the job's unit.
            unsafe { Shared::release(this) };
            outcome
        };
        // SAFETY: the job borrows the shared value, which lives until the latch opens,
        // which needs this job to have run.
        unsafe { Job::new_unchecked(call, flags) }
    }
}

impl<S, O: LatchOwner> Shared<S, O> {
    /// Gives back one unit; the last opens the latch. Takes a raw pointer, not `&self`: the
    /// waiter may free the value as soon as the latch opens (see `Latch::set`).
    ///
    /// # Safety
    /// `this` is alive until this call's decrement, and the caller holds a unit.
    unsafe fn release(this: *const Self) {
        // SAFETY: the caller's unit keeps the value alive up to its decrement; only the last
        // unit touches it after, and only to open the latch, its last touch.
        unsafe {
            // AcqRel: the last decrement acquires every other job's writes before it opens
            // the latch for the waiter.
            if (*this).remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                latch::set_and_wake(&(*this).latch, &(*this).owner);
            }
        }
    }
}
