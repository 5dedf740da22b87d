//! The type-erased task that travels through the deques.
//!
//! A [`Job`] is five words: one function pointer that either runs or discards the job, three
//! words of payload, and a word of flags. A closure of up to three words (an `Arc` and a couple
//! of integers, say) is stored in the payload itself, so submitting it allocates nothing;
//! larger closures are boxed and the payload holds the box. Other job kinds (spawned tasks with
//! a join handle, `join`'s stack jobs, C callbacks) fill the payload with their own pointers.
//!
//! # Safety
//!
//! The `unsafe` blocks here (and the raw constructors' contracts, which callers keep) rely
//! on:
//!
//! - **One call per job.** A job's function gets its payload exactly once: `run` and
//!   `discard` consume the job and forget it, and `Drop` (a job dropped unrun) discards it
//!   only when neither did. A `JobRef` is consumed by `run` or `into_job`.
//! - **The payload is what its function reads.** Each constructor writes exactly what its
//!   call function reads back: a closure inline when it fits (`fits_inline`, checked), else
//!   a box; an `Arc` (deferred jobs, bundles); a stack job's address in the first word
//!   (`STACK`, read by `stack_address`).
//! - **Captured state may cross threads and outlives the job.** Closures are `F: Send`;
//!   `Job::new` needs `F: 'static`, and `new_unchecked`'s callers (scope tasks, `fan_out`'s
//!   jobs) wait for the job before what it borrows goes; raw constructors put both duties
//!   on their callers (`stack.rs` argues its own).
//! - **A bundle's job is read by one claimer.** The index `claim` hands out is unique, so
//!   each slot is read once; `into_buffer` skips the claimed slots and takes the vector once.

use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::ptr;

use crate::sync::{Arc, AtomicUsize, Ordering};

pub(crate) mod stack;

/// The payload words of a job.
pub(crate) type Payload = MaybeUninit<[usize; 3]>;

/// What running (or discarding) a job amounted to, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The task ran to its end (or, when discarded, was dropped unrun).
    Done,
    /// The task panicked and its payload went somewhere else (a join handle, a scope).
    Panicked,
    /// The task had already been accounted for (a cancelled spawn); count nothing.
    Skipped,
}

/// How a job's function is asked to act.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Run,
    Discard,
}

/// Runs or discards the payload. Called exactly once per job.
pub(crate) type CallFn = unsafe fn(Payload, Action) -> Outcome;

/// The job counts as a task: it was entered in the counters, and its end must be counted.
pub(crate) const COUNTED: u8 = 1;
/// The job holds one unit of the pool's `pending` (capacity) count until it starts.
pub(crate) const RESERVED: u8 = 2;
/// `shutdown_now` may discard the job instead of running it.
pub(crate) const DISCARDABLE: u8 = 4;
/// The payload's first word is the address of a stack job (see `join`).
pub(crate) const STACK: u8 = 8;
/// The job went through the injector (counted once, when a worker takes it up).
pub(crate) const INJECTED: u8 = 16;
/// Not a task but a bundle of queued jobs (`Job::bundle`): the worker that takes it up claims
/// its jobs one at a time instead of running it (see `WorkerThread::take_up`).
pub(crate) const BUNDLE: u8 = 32;
/// Handed out by a worker's keep of jobs taken as the pool got paused
/// (`worker::kept::Kept::pop_oldest`) and not yet run: kept again, it goes back to the front.
pub(crate) const UNKEPT: u8 = 64;

pub(crate) struct Job {
    call: CallFn,
    payload: Payload,
    /// Flags in bits 0..8, queue time in bits 8..64.
    meta: u64,
}

const FLAG_BITS: u32 = 8;

// SAFETY: every constructor requires the captured state to be `Send` (closures are
// `F: Send`; raw constructors put that duty on their callers).
unsafe impl Send for Job {}

const fn fits_inline<F>() -> bool {
    size_of::<F>() <= size_of::<Payload>() && align_of::<F>() <= align_of::<Payload>()
}

impl Job {
    /// A job running `f`, which reports its own outcome.
    pub(crate) fn new<F>(f: F, flags: u8) -> Job
    where
        F: FnOnce() -> Outcome + Send + 'static,
    {
        // SAFETY: `F: 'static`, so the job may outlive any stack frame.
        unsafe { Job::new_unchecked(f, flags) }
    }

    /// Like [`Job::new`] for a closure that borrows.
    ///
    /// # Safety
    /// The job must be run or dropped before anything `f` borrows goes away.
    pub(crate) unsafe fn new_unchecked<'a, F>(f: F, flags: u8) -> Job
    where
        F: FnOnce() -> Outcome + Send + 'a,
    {
        let mut payload = Payload::uninit();
        if fits_inline::<F>() {
            // SAFETY: the payload is large and aligned enough for `F` (checked just above).
            unsafe { ptr::write(payload.as_mut_ptr().cast::<F>(), f) };
            Job {
                call: call_inline::<F>,
                payload,
                meta: u64::from(flags),
            }
        } else {
            let boxed = Box::into_raw(Box::new(f));
            // SAFETY: a payload always has room for one pointer.
            unsafe { ptr::write(payload.as_mut_ptr().cast::<*mut F>(), boxed) };
            Job {
                call: call_boxed::<F>,
                payload,
                meta: u64::from(flags),
            }
        }
    }

    /// A job made of a call function and a payload the caller filled.
    ///
    /// # Safety
    /// `call` must accept `payload` exactly once, with either action, from any thread.
    #[inline]
    pub(crate) unsafe fn from_raw(call: CallFn, payload: Payload, flags: u8) -> Job {
        Job {
            call,
            payload,
            meta: u64::from(flags),
        }
    }

    /// One queue entry holding `jobs` (at least one), flagged `BUNDLE | INJECTED`: a batch
    /// from outside goes through the shared queue as one push instead of one per task. The
    /// jobs keep their own flags; the bundle has no `COUNTED` or `RESERVED` of its own.
    pub(crate) fn bundle(jobs: Vec<Job>) -> Job {
        Job::bundle_entry(Arc::new(Bundle::new(jobs)))
    }

    /// The queue entry of a bundle already shared (see [`Bundle`]).
    pub(crate) fn bundle_entry(bundle: Arc<Bundle>) -> Job {
        let mut payload = Payload::uninit();
        // SAFETY: an `Arc` is one pointer: it fits the payload (checked at compile time
        // below). Read back once, by `call_bundle` or `into_bundle`.
        unsafe { ptr::write(payload.as_mut_ptr().cast::<Arc<Bundle>>(), bundle) };
        Job {
            call: call_bundle,
            payload,
            meta: u64::from(BUNDLE | INJECTED),
        }
    }

    /// The bundle this entry carries. Panics if `flags()` lacks `BUNDLE`.
    pub(crate) fn into_bundle(self) -> Arc<Bundle> {
        assert!(self.flags() & BUNDLE != 0, "not a bundle");
        let this = ManuallyDrop::new(self);
        // SAFETY: bundle entries are made only by `Job::bundle_entry`, which wrote an
        // `Arc<Bundle>`; `this` is never dropped, so the payload is read this once.
        unsafe { ptr::read(this.payload.as_ptr().cast::<Arc<Bundle>>()) }
    }

    #[inline]
    pub(crate) fn flags(&self) -> u8 {
        self.meta as u8
    }

    pub(crate) fn add_flags(&mut self, flags: u8) {
        self.meta |= u64::from(flags);
    }

    pub(crate) fn remove_flags(&mut self, flags: u8) {
        self.meta &= !u64::from(flags);
    }

    /// `add_flags`, then `stamp` if there is a queue time: what queuing adds to a job.
    #[inline(always)]
    pub(crate) fn tag(mut self, flags: u8, queued_at_ns: Option<u64>) -> Job {
        self.add_flags(flags);
        if let Some(t) = queued_at_ns {
            self.stamp(t);
        }
        self
    }

    /// Records when the job was queued (nanoseconds since the pool started; wraps after
    /// 2^56 ns, about 2.3 years, which only distorts one latency sample).
    pub(crate) fn stamp(&mut self, queued_at_ns: u64) {
        self.meta = (self.meta & 0xff) | (queued_at_ns << FLAG_BITS);
    }

    /// The time recorded by `stamp`.
    pub(crate) fn queued_at_ns(&self) -> u64 {
        self.meta >> FLAG_BITS
    }

    /// The address a stack job was built from, if this is one.
    #[inline]
    pub(crate) fn stack_address(&self) -> Option<*const ()> {
        if self.flags() & STACK == 0 {
            return None;
        }
        // SAFETY: stack jobs always write their address, as a pointer, into the first word.
        Some(unsafe { ptr::read(self.payload.as_ptr().cast::<*const ()>()) })
    }

    /// Runs the job. A plain closure's panic unwinds out of here; the worker catches it.
    pub(crate) fn run(self) -> Outcome {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so `call` sees the payload exactly once.
        unsafe { (this.call)(this.payload, Action::Run) }
    }

    /// Drops the job without running it, returning what that amounted to.
    pub(crate) fn discard(self) -> Outcome {
        let this = ManuallyDrop::new(self);
        // SAFETY: as in `run`.
        unsafe { (this.call)(this.payload, Action::Discard) }
    }

    /// `shutdown_now` dropping a queued job unrun: `discard`, with a panic of its destructor
    /// caught and dropped. Returns whether a task was dropped that counts as `Dropped` (the
    /// job is `COUNTED` and did not report `Skipped`).
    pub(crate) fn discard_counted(self) -> bool {
        let counted = self.flags() & COUNTED != 0;
        let outcome =
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.discard())) {
                Ok(outcome) => outcome,
                Err(payload) => {
                    crate::unwind::drop_payload(payload);
                    Outcome::Done
                }
            };
        counted && outcome != Outcome::Skipped
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: `run` and `discard` forget the job, so this is the payload's only use.
        unsafe { (self.call)(self.payload, Action::Discard) };
    }
}

const _: () = assert!(fits_inline::<Arc<Bundle>>());

/// Where a deferred job (`Job::deferred`) takes the job it stands for.
pub(crate) trait JobSource: Send + Sync {
    /// The job to run or discard now; there is one for every deferred job made.
    fn take_job(&self) -> Job;
}

impl Job {
    /// A job that stands for one job of `source`, taken only when this one is run or
    /// discarded; it then runs or discards that job and returns *its* outcome, so the pair
    /// counts as that one job (a cancelled task is `Skipped` also when dropped by
    /// `shutdown_now`). `flags` must be those of every job `source` may hand out: purge,
    /// `shutdown_now` and the counters decide by them. FIFO spawns push these as triggers
    /// (`src/fifo.rs`, one source per kind of job).
    pub(crate) fn deferred<S: JobSource + 'static>(source: Arc<S>, flags: u8) -> Job {
        let mut payload = Payload::uninit();
        // SAFETY: an `Arc` is one pointer, which a payload has room for.
        unsafe { ptr::write(payload.as_mut_ptr().cast::<Arc<S>>(), source) };
        // SAFETY: `call_deferred::<S>` reads back exactly this `Arc`, once.
        unsafe { Job::from_raw(call_deferred::<S>, payload, flags) }
    }
}

/// # Safety
/// `payload` holds an `Arc<S>` written by `Job::deferred`, read here once.
unsafe fn call_deferred<S: JobSource>(payload: Payload, action: Action) -> Outcome {
    // SAFETY: see the function's contract.
    let source = unsafe { ptr::read(payload.as_ptr().cast::<Arc<S>>()) };
    let job = source.take_job();
    match action {
        Action::Run => job.run(),
        Action::Discard => job.discard(),
    }
}

/// # Safety
/// `payload` holds an `Arc<Bundle>` written by `Job::bundle_entry`, read here once.
unsafe fn call_bundle(payload: Payload, action: Action) -> Outcome {
    // SAFETY: see the function's contract.
    let bundle = unsafe { ptr::read(payload.as_ptr().cast::<Arc<Bundle>>()) };
    // A worker takes jobs out of a bundle (`into_bundle`, `Bundle::claim`) and never runs
    // the entry itself. Dropped (a pool torn down with it queued), the last handle drops
    // the jobs nobody claimed: their destructors run, as for any job.
    debug_assert_eq!(
        action,
        Action::Discard,
        "a bundle is taken apart, never run"
    );
    drop(bundle);
    Outcome::Skipped
}

/// The jobs of a batch queued as one entry (`Job::bundle`), shared by that entry and by the
/// workers taking jobs out of it. Each job is taken exactly once, by whoever claims its
/// index (`claim`); the entry stays in a queue, where any worker can find it, for as long
/// as jobs are left (docs/protocol.md, "Bundles"). A worker drains the bundle it took up
/// through its own handle, one claim per job, instead of moving the jobs through its deque
/// (a push, and a pop with its fence, per job).
pub(crate) struct Bundle {
    /// The jobs, `len` of them; the slots below `next` were read out by their claimers.
    jobs: ManuallyDrop<Vec<Job>>,
    /// The next index to claim. Claims past the end find nothing (and leave it past).
    next: AtomicUsize,
}

// SAFETY: the jobs are `Send`; through `&Bundle` each is read out once, by the one thread
// whose claim got its index, so no two threads touch a job.
unsafe impl Sync for Bundle {}

impl Bundle {
    fn new(jobs: Vec<Job>) -> Bundle {
        debug_assert!(!jobs.is_empty());
        Bundle {
            jobs: ManuallyDrop::new(jobs),
            next: AtomicUsize::new(0),
        }
    }

    /// The next job nobody has taken, now ours; `None` once all are taken.
    pub(crate) fn claim(&self) -> Option<Job> {
        // Relaxed: a claim only needs its index to be unique, which the read-modify-write
        // gives (claims on `next` form one modification order). The jobs were written
        // before the bundle's entry was first pushed, and every claimer holds the bundle
        // through a handle it got from a queue (Acquire, as for any job) or from a thread
        // that did.
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        if i < self.jobs.len() {
            // SAFETY: `i` is in bounds and ours alone (see above); the slot is read once
            // and never dropped in place (`take_rest` skips claimed slots).
            Some(unsafe { ptr::read(self.jobs.as_ptr().add(i)) })
        } else {
            None
        }
    }

    /// Jobs nobody has claimed yet (a snapshot).
    pub(crate) fn remaining(&self) -> usize {
        self.jobs
            .len()
            .saturating_sub(self.next.load(Ordering::Relaxed))
    }

    /// The buffer, emptied, for the next bundle; the jobs nobody claimed are dropped. (Not
    /// under loom, whose `Arc` has no `into_inner`: there `release_bundle` drops the bundle.)
    #[cfg_attr(flock_loom, allow(dead_code))]
    pub(crate) fn into_buffer(self) -> Vec<Job> {
        let mut this = ManuallyDrop::new(self);
        this.take_rest()
    }

    /// Drops the unclaimed jobs and hands out the emptied buffer. Called once: by
    /// `into_buffer` (which forgets the bundle) or by `drop`.
    fn take_rest(&mut self) -> Vec<Job> {
        // Relaxed: we hold the only handle (`drop`, or `Arc::into_inner` before
        // `into_buffer`), and the `Arc`'s last release synchronised with every other
        // handle's claims, so this reads the final cursor.
        let claimed = self.next.load(Ordering::Relaxed).min(self.jobs.len());
        // SAFETY: called once, so `jobs` is taken once.
        let mut jobs = unsafe { ManuallyDrop::take(&mut self.jobs) };
        let len = jobs.len();
        // SAFETY: the claimed slots were read out; the length goes to 0 before the rest are
        // dropped (a panicking destructor leaks the later ones, never drops one twice), and
        // each unclaimed slot is dropped once.
        unsafe {
            jobs.set_len(0);
            for i in claimed..len {
                ptr::drop_in_place(jobs.as_mut_ptr().add(i));
            }
        }
        jobs
    }
}

impl Drop for Bundle {
    fn drop(&mut self) {
        drop(self.take_rest());
    }
}

/// A two-word queue entry for a worker's join deque: a function and the address of what it
/// runs. It carries `join`'s second halves (the address of a stack job, `join.rs`) and, in a
/// pool with one lane, no latency tracking and LIFO deques, scope tasks (`scope.rs`).
///
/// These do not go through the `Job` deques because of the size of a `Job`. crossbeam copies
/// a slot with a volatile read or write of the whole element. A five-word `Job` is
/// assembled on the stack word by word and then copied as 16-byte vectors, so every push
/// and pop stalls on a failed store-to-load forward. `perf annotate` of fib-join put a third
/// of flock's time on those copies, and of a one-worker spawn tree half. A two-word element
/// travels in registers, as rayon's `JobRef` does.
///
/// The one flag an entry needs is whether it is a task the counters count (a scope task) or
/// not (a join half): bit 0 of `data`, which the addresses of both kinds leave clear. None
/// is ever reserved, injected or discarded. Where a path takes any job (stealing, a waiting
/// worker's search), `into_job` wraps it.
pub(crate) struct JobRef {
    run: unsafe fn(*const ()) -> Outcome,
    /// The address, with `COUNTED_BIT` set for a counted task.
    data: *const (),
}

/// `JobRef::data`'s tag for a task the counters count.
const COUNTED_BIT: usize = 1;

// SAFETY: `JobRef::new` requires the job behind `data` to be runnable from any thread.
unsafe impl Send for JobRef {}

impl JobRef {
    /// An entry that is not a task of its own (a join half): nothing counts it.
    ///
    /// # Safety
    /// `run(data)` must be safe to call exactly once, from any thread, until the job ran
    /// or its owner took it back (`JobRef::data` compared and the `JobRef` dropped).
    /// `data` must be at least 2-aligned.
    #[inline]
    pub(crate) unsafe fn new(run: unsafe fn(*const ()) -> Outcome, data: *const ()) -> JobRef {
        debug_assert_eq!(data as usize & COUNTED_BIT, 0);
        JobRef { run, data }
    }

    /// An entry for a task that was entered in the counters and whose end must be counted
    /// (`COUNTED`): a scope task. `run` gets `data` untagged.
    ///
    /// # Safety
    /// As `new`; besides, such a job is never taken back, so it must be run, and `data`
    /// points to a scope task whose first word, until it runs, is its scope's address
    /// (`ScopeTask`, `#[repr(C)]`; read by `scope`).
    #[inline]
    pub(crate) unsafe fn new_counted(
        run: unsafe fn(*const ()) -> Outcome,
        data: *const (),
    ) -> JobRef {
        debug_assert_eq!(data as usize & COUNTED_BIT, 0);
        JobRef {
            run,
            // Pointer arithmetic (not an integer round trip) keeps the provenance.
            data: data.cast::<u8>().wrapping_add(COUNTED_BIT).cast(),
        }
    }

    /// The address the job was made with (tagged for a counted task): a join's owner knows
    /// its own half by this.
    #[inline]
    pub(crate) fn data(&self) -> *const () {
        self.data
    }

    /// `COUNTED_BIT` if set in `data`, else 0.
    #[inline]
    fn tag(&self) -> usize {
        self.data as usize & COUNTED_BIT
    }

    /// Whether the counters count this entry as a task (`COUNTED`).
    #[inline]
    pub(crate) fn counted(&self) -> bool {
        self.tag() != 0
    }

    /// The address of the scope a counted entry (a scope task) belongs to; `None` for a join
    /// half. For a waiting worker deciding whether running the entry would give back the
    /// units of a scope it keeps (`Credit::gives_back_for`).
    #[inline]
    pub(crate) fn scope(&self) -> Option<*const ()> {
        if !self.counted() {
            return None;
        }
        let task = self
            .data
            .cast::<u8>()
            .wrapping_sub(COUNTED_BIT)
            .cast::<*const ()>();
        // SAFETY: `new_counted`'s contract: `task` points to the not yet run scope task,
        // whose first word is its scope's address.
        Some(unsafe { task.read() })
    }

    /// Runs the job, which catches its own panics (a stack job, `join.rs`, or a scope task,
    /// `scope.rs`) and reports how it ended.
    #[inline]
    pub(crate) fn run(self) -> Outcome {
        let data = self.data.cast::<u8>().wrapping_sub(self.tag()).cast();
        // SAFETY: `new`'s contract; `self` is consumed, so this is the one call.
        unsafe { (self.run)(data) }
    }

    /// The job as a `Job` (flagged `COUNTED` when it counts), for paths that take any job.
    /// Running or discarding it both run it: a stack job's owner waits on it and a scope
    /// waits for its tasks, so neither is ever dropped unrun (and without `DISCARDABLE`,
    /// `shutdown_now` never asks).
    pub(crate) fn into_job(self) -> Job {
        let flags = if self.counted() { COUNTED } else { 0 };
        let mut payload = Payload::uninit();
        // SAFETY: two pointers fit the three-word payload; `call_ref` reads them back once.
        unsafe { ptr::write(payload.as_mut_ptr().cast::<JobRef>(), self) };
        // SAFETY: `call_ref` accepts exactly this payload, with either action.
        unsafe { Job::from_raw(call_ref, payload, flags) }
    }
}

const _: () = assert!(fits_inline::<JobRef>());

/// # Safety
/// `payload` holds a `JobRef` written by `JobRef::into_job`, read here once.
unsafe fn call_ref(payload: Payload, _action: Action) -> Outcome {
    // SAFETY: see the function's contract.
    let job = unsafe { ptr::read(payload.as_ptr().cast::<JobRef>()) };
    job.run()
}

/// # Safety
/// `payload` holds an `F` written by `Job::new_unchecked`, read here once.
unsafe fn call_inline<F: FnOnce() -> Outcome>(payload: Payload, action: Action) -> Outcome {
    // SAFETY: see the function's contract.
    let f = unsafe { ptr::read(payload.as_ptr().cast::<F>()) };
    match action {
        Action::Run => f(),
        Action::Discard => {
            drop(f);
            Outcome::Done
        }
    }
}

/// # Safety
/// `payload` holds a `Box<F>` pointer written by `Job::new_unchecked`, read here once.
unsafe fn call_boxed<F: FnOnce() -> Outcome>(payload: Payload, action: Action) -> Outcome {
    // SAFETY: see the function's contract; the box was leaked by `new_unchecked`.
    let f = unsafe { Box::from_raw(ptr::read(payload.as_ptr().cast::<*mut F>())) };
    match action {
        Action::Run => f(),
        Action::Discard => {
            drop(f);
            Outcome::Done
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct CountDrop(Arc<AtomicUsize>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn small_and_large_closures_run_once_and_drop_once() {
        let ran = Arc::new(AtomicUsize::new(0));
        let drops = Arc::new(AtomicUsize::new(0));
        let small = {
            let (ran, guard) = (ran.clone(), CountDrop(drops.clone()));
            Job::new(
                move || {
                    let _g = &guard;
                    ran.fetch_add(1, Ordering::SeqCst);
                    Outcome::Done
                },
                0,
            )
        };
        let big = {
            let (ran, guard, pad) = (ran.clone(), CountDrop(drops.clone()), [7u64; 8]);
            Job::new(
                move || {
                    let _g = &guard;
                    ran.fetch_add(pad[3] as usize, Ordering::SeqCst);
                    Outcome::Done
                },
                0,
            )
        };
        assert_eq!(small.run(), Outcome::Done);
        assert_eq!(big.run(), Outcome::Done);
        assert_eq!(ran.load(Ordering::SeqCst), 8);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_job_is_five_words() {
        assert_eq!(std::mem::size_of::<Job>(), 5 * std::mem::size_of::<usize>());
    }

    #[test]
    fn dropped_jobs_drop_their_closure_without_running() {
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        for pad in [0usize, 64] {
            let guard = CountDrop(drops.clone());
            let ran = ran.clone();
            let buf = vec![0u8; pad];
            let job = Job::new(
                move || {
                    let _ = (&guard, &buf);
                    ran.fetch_add(1, Ordering::SeqCst);
                    Outcome::Done
                },
                COUNTED,
            );
            assert_eq!(job.flags(), COUNTED);
            let mut job = job;
            job.stamp(123_456);
            job.add_flags(RESERVED);
            assert_eq!(
                (job.flags(), job.queued_at_ns()),
                (COUNTED | RESERVED, 123_456)
            );
            drop(job);
        }
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    fn counted_jobs(n: usize, ran: &Arc<AtomicUsize>, drops: &Arc<AtomicUsize>) -> Vec<Job> {
        (0..n)
            .map(|i| {
                let (ran, guard) = (ran.clone(), CountDrop(drops.clone()));
                Job::new(
                    move || {
                        let _g = &guard;
                        ran.fetch_add(1 << (4 * i), Ordering::SeqCst);
                        Outcome::Done
                    },
                    COUNTED,
                )
            })
            .collect()
    }

    #[test]
    fn a_bundle_hands_out_each_job_once_in_order() {
        let (ran, drops) = (Arc::default(), Arc::default());
        let entry = Job::bundle(counted_jobs(3, &ran, &drops));
        assert_eq!(entry.flags(), BUNDLE | INJECTED);
        let bundle = entry.into_bundle();
        assert_eq!(bundle.remaining(), 3);
        let first = bundle.claim().expect("job 0");
        assert_eq!(bundle.remaining(), 2);
        // A second handle, as a thief's: the same cursor.
        let other = crate::sync::Arc::clone(&bundle);
        let second = other.claim().expect("job 1");
        let third = bundle.claim().expect("job 2");
        assert!(bundle.claim().is_none() && other.claim().is_none());
        assert_eq!(bundle.remaining(), 0);
        for job in [first, second, third] {
            assert_eq!(job.flags(), COUNTED);
            assert_eq!(job.run(), Outcome::Done);
        }
        assert_eq!(ran.load(Ordering::SeqCst), 0x111, "each job ran once");
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        drop((bundle, other));
        assert_eq!(
            drops.load(Ordering::SeqCst),
            3,
            "claimed jobs are not dropped twice"
        );
    }

    #[test]
    fn a_dropped_bundle_drops_the_jobs_nobody_claimed() {
        let (ran, drops) = (Arc::default(), Arc::default());
        let bundle = Job::bundle(counted_jobs(4, &ran, &drops)).into_bundle();
        let first = bundle.claim().expect("job 0");
        drop(bundle);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            3,
            "the three unclaimed, unrun"
        );
        assert_eq!(first.run(), Outcome::Done);
        assert_eq!(
            (ran.load(Ordering::SeqCst), drops.load(Ordering::SeqCst)),
            (1, 4)
        );
        // A queued entry dropped whole (a pool torn down) drops every job.
        drop(Job::bundle(counted_jobs(2, &ran, &drops)));
        assert_eq!(
            (ran.load(Ordering::SeqCst), drops.load(Ordering::SeqCst)),
            (1, 6)
        );
    }

    #[test]
    fn an_emptied_bundle_gives_its_buffer_back() {
        let (ran, drops) = (Arc::default(), Arc::default());
        let mut jobs = Vec::with_capacity(8);
        jobs.extend(counted_jobs(2, &ran, &drops));
        let bundle = Job::bundle(jobs).into_bundle();
        drop(bundle.claim());
        let Ok(bundle) = crate::sync::Arc::try_unwrap(bundle) else {
            panic!("the only handle");
        };
        let buffer = bundle.into_buffer();
        assert_eq!((buffer.len(), buffer.capacity()), (0, 8));
        assert_eq!(
            (ran.load(Ordering::SeqCst), drops.load(Ordering::SeqCst)),
            (0, 2)
        );
    }
}
