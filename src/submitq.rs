//! A lane's shared queue: crossbeam's injector, and one FIFO ring per thread that submits
//! from outside the pool (docs/protocol.md, "Submitter rings").
//!
//! An outside submit used to go through the injector: a CAS on its tail and a `fetch_or` on
//! the slot (two locked instructions), a 3 KB block allocated and zeroed every 63 jobs, and
//! on the worker's side a CAS on the head and another `fetch_or`. A thread that submits now
//! claims a ring of its own in the lane (`Claim`, kept in a thread-local list): pushing is
//! a store of the job, a Release store of the slot's sequence number and a store of the
//! tail, with no read-modify-write; a worker takes the oldest job with one CAS on the ring's
//! head. The injector stays for jobs from outside that a worker hands back (a pause, a
//! purge, the lane reserve) and for threads that find every ring taken.
//!
//! **Spawned jobs handed back** (no `INJECTED`: spawned by a running task, such as a `join`
//! half or a scope's task, that left a worker's deque through a retiring worker or `purge`)
//! go to a second injector, `spawned`: a task may be waiting for one in `join` or `scope`,
//! and while the pool is paused a waiting worker takes only such jobs (`steal_spawned`),
//! never the jobs from outside around them in the injector.
//!
//! **Order.** One thread's jobs go to one place for as long as it lives: its ring, or the
//! injector if none was free when it first submitted to the lane. Workers take a ring's jobs
//! oldest first, one at a time, so "FIFO within a lane" holds as it did with the injector.
//!
//! **A ring that fills** is not waited on: the owner links a ring twice its size after it
//! (`Ring::next`) and pushes there. Consumers drain the old ring, then move the queue's
//! `front` on. Rings are freed with the queue, never before, so a consumer never reads freed
//! memory (no epoch scheme needed); a queue's memory is at most twice its largest backlog.
//!
//! **The front.** A batch from outside is one queue entry, a bundle (`Job::bundle`). The
//! worker that takes it up claims its first job and puts the bundle on the queue's *front*
//! (`put_front`), which every consumer looks at before the rings and the injector
//! (`claim_front`, `steal`): so the batch's other jobs are taken, one at a time and in
//! order, before anything its submitter queued after it, as if each had been queued alone.
//!
//! # Safety
//!
//! The `unsafe` blocks here rely on:
//!
//! - **One writer per ring.** A ring is pushed to only by the thread that claimed its
//!   queue (`Claim`, kept in that thread's `CLAIMS`, which clears `LAST` before it lets
//!   go), and a slot is written only in the lap its sequence number says is free.
//! - **A published slot is read once.** A consumer reads a slot's job only after the
//!   Release store of its sequence number (its Acquire load) and after its CAS on the head
//!   made that position its own.
//! - **Rings live as long as their queue.** A full ring is linked, never freed, until the
//!   queue itself is dropped, when nobody holds it; capacities are powers of two, so a
//!   masked index is in bounds.

use crate::deque::{Injector, Steal};
use crate::job::{Bundle, Job, INJECTED};
use crate::metrics::counters::{Stat, StatCounts};
use crate::sync::{
    canary, facade_thread_local, Arc, AtomicBool, AtomicPtr, AtomicUsize, Canary, Mutex, Ordering,
    UnsafeCell,
};
use crossbeam_utils::CachePadded;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{
    AtomicU64 as StdAtomicU64, AtomicUsize as StdAtomicUsize, Ordering as StdOrdering,
};
// std's `Arc`, also under loom: a queue is held by the threads that claimed it (in their
// thread-locals) as well as by its lane, and its count is no part of the protocol.
use std::sync::Arc as Held;

/// Rings per lane. A thread that finds them all taken submits through the injector.
pub(crate) const RINGS: usize = if cfg!(flock_loom) { 2 } else { 16 };
/// Jobs in a queue's first ring (a cache line each, see `Slot`). Small under loom and
/// Miri so that the models and tests go through a ring's growth.
const FIRST_CAPACITY: usize = if cfg!(any(flock_loom, miri)) { 2 } else { 256 };

/// What `SharedQueue::steal_noting` says of a job taken from the injector.
pub(crate) const INJECTOR: usize = usize::MAX;

/// Queue identities for the thread-local claims: never reused, unlike addresses.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// One lane's shared queue.
pub(crate) struct SharedQueue {
    /// Bundles taken up from this queue with jobs left, oldest first (see the module docs).
    /// Each is one queue entry for as long as it is here.
    front: Mutex<VecDeque<Arc<Bundle>>>,
    /// `front`'s length, stored under its lock and read without it (`is_empty`, `len`).
    /// std's atomic also under loom, which explores the front's interleavings through its
    /// lock and the re-check's through the fences F1 and F2 around this length (as around a
    /// deque's indices); a loom atomic here put a branch point in every look for work, and
    /// `loom_batch_wakes_enough_workers` explored 2.4 times the executions.
    front_len: StdAtomicUsize,
    injector: Injector<Job>,
    /// Spawned jobs handed back (see the module docs).
    spawned: Injector<Job>,
    /// How many jobs of `spawned` are unclaimed: raised after each push there, lowered by a
    /// taker before it steals one (`steal_spawned`), so never above what the queue holds and
    /// a claimed job is always there. What every look at the lane reads first: one load,
    /// where the injector's `is_empty` is two, and under loom a load of a word most models
    /// never write, which adds no interleavings to them (the model injector's `is_empty`
    /// takes its lock).
    spawned_len: AtomicUsize,
    submitters: Box<[Held<SubmitterQueue>]>,
    /// How many of `submitters` were ever claimed (a prefix grows: claims take the first
    /// free one). Consumers look at these only.
    used: AtomicUsize,
    id: u64,
    /// Dropped with the lane: the threads' claims hold it weakly, and a claim whose lane is
    /// gone is let go (`claim_here`), with the rings only it still held.
    alive: Held<()>,
}

impl SharedQueue {
    /// A queue with `rings` submitter rings (`Config::submit_rings`: `RINGS`, or none
    /// under loom in the models not written for them).
    pub(crate) fn new(rings: usize) -> SharedQueue {
        SharedQueue {
            front: Mutex::new(VecDeque::new()),
            front_len: StdAtomicUsize::new(0),
            injector: Injector::new(),
            spawned: Injector::new(),
            spawned_len: AtomicUsize::new(0),
            submitters: (0..rings)
                .map(|_| Held::new(SubmitterQueue::new()))
                .collect(),
            used: AtomicUsize::new(0),
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            alive: Held::new(()),
        }
    }

    /// Queues a job a worker or the pool hands back (not a fresh submit): one from outside
    /// (`INJECTED`) onto the injector, a spawned one onto `spawned`. Returns whether it was a
    /// spawned one: the caller then wakes every sleeper (`Registry::hand_back`).
    pub(crate) fn push(&self, job: Job) -> bool {
        if job.flags() & INJECTED != 0 {
            self.injector.push(job);
            false
        } else {
            self.spawned.push(job);
            // After the push, so the count never exceeds the queue. Release: pairs with the
            // Acquire of the claim in `steal_spawned`, whose steal then finds the job. The
            // hand-back's `wake_all` orders this before a parking worker's re-check
            // (`Registry::hand_back`).
            self.spawned_len.fetch_add(1, Ordering::Release);
            true
        }
    }

    /// Puts a bundle taken up from this queue, with jobs left, on the front, behind the
    /// bundles there (taken up before it). The caller then does F1 and the state test
    /// (`notify_new_work_n`), as after any push.
    pub(crate) fn put_front(&self, bundle: Arc<Bundle>) {
        let mut front = self.front.lock();
        front.push_back(bundle);
        // Release: pairs with the Acquire in `front_is_empty`, as a deque's push with its
        // `is_empty`; the sleep protocol's order comes from the caller's F1 after this store
        // and the re-check's F2 before the load (docs/protocol.md, "Bundles").
        self.front_len.store(front.len(), StdOrdering::Release);
    }

    /// Puts a bundle of jobs taken from this queue as the pool got paused, which their taker
    /// gives back unrun (`Registry::put_back_paused`), on the front, ahead of the bundles
    /// there: those were taken up before it went back, and a later job of its submitter
    /// (taken up as it was held) may be among them. The caller then does F1 and the state
    /// test, as after `put_front`.
    pub(crate) fn put_back_front(&self, bundle: Arc<Bundle>) {
        let mut front = self.front.lock();
        front.push_front(bundle);
        // Release: as in `put_front`.
        self.front_len.store(front.len(), StdOrdering::Release);
    }

    /// Claims the next job of the oldest bundle on the front, and a handle on that bundle for
    /// the caller to claim the rest from (`WorkerThread::claim_taken`); `None` if the front
    /// is empty. A bundle found emptied (by holders of handles) is taken off the front and
    /// handed to `dropped`, as is one whose last job this claim took: its entry leaves the
    /// queues (`Registry::bundle_entry_dropped`).
    pub(crate) fn claim_front(
        &self,
        mut dropped: impl FnMut(Arc<Bundle>),
    ) -> Option<(Job, Arc<Bundle>)> {
        if self.front_is_empty() {
            return None;
        }
        let mut emptied = Vec::new();
        let found = {
            let mut front = self.front.lock();
            let found = loop {
                let Some(bundle) = front.front() else {
                    break None;
                };
                if let Some(job) = bundle.claim() {
                    let handle = bundle.clone();
                    if handle.remaining() == 0 {
                        emptied.extend(front.pop_front());
                    }
                    break Some((job, handle));
                }
                emptied.extend(front.pop_front());
            };
            // Release: as in `put_front`.
            self.front_len.store(front.len(), StdOrdering::Release);
            found
        };
        // Off the lock: the last handle's drop recycles the buffer under another lock.
        emptied.into_iter().for_each(&mut dropped);
        found
    }

    /// Whether the front holds no bundle (one load).
    #[inline]
    pub(crate) fn front_is_empty(&self) -> bool {
        // Acquire: pairs with the Release stores of `put_front` and `claim_front`.
        self.front_len.load(StdOrdering::Acquire) == 0
    }

    /// The oldest bundle on the front, whole, as a queue entry (`steal`: purge and the lane
    /// reserve take bundles apart themselves).
    fn steal_front(&self) -> Option<Job> {
        if self.front_is_empty() {
            return None;
        }
        let mut front = self.front.lock();
        let bundle = front.pop_front();
        // Release: as in `put_front`.
        self.front_len.store(front.len(), StdOrdering::Release);
        bundle.map(Job::bundle_entry)
    }

    /// Queues a job submitted from outside the pool, onto the calling thread's ring (claimed
    /// on its first submit to this lane), or the injector if it has none. The caller then
    /// does the light side of the barrier (or F1), as after any push.
    ///
    /// With `count`, the job is also counted `Submitted`, before it is pushed (a reader that
    /// sees its end sees its acceptance): on the ring, whose owner is its only writer (a
    /// plain store), or on `count`, the statistics of the submitter's shard (a
    /// read-modify-write), if it goes to the injector.
    #[inline(always)]
    pub(crate) fn push_submitted(&self, job: Job, count: Option<&StatCounts>) {
        self.push_submitted_with(count, 0, None, || job);
    }

    /// `push_submitted` of the job `make` makes, with `flags` added and queued at `stamp`
    /// (`Job::tag`): made in its slot, or in the slow path that takes it, never copied from
    /// one to the other.
    ///
    /// Inlined whole into the submit paths, and no slow path takes the job: it goes from its
    /// construction into its slot with no copy through the stack in between. Such copies were
    /// (`perf annotate` of 1u-1Mt's submitter) a fifth of the submitting thread's time, most
    /// of it 16-byte loads of words just stored 8 bytes at a time, which the CPU cannot
    /// forward from its store buffer. `Pool::submit` comes here through `dispatch_with`.
    #[inline(always)]
    pub(crate) fn push_submitted_with(
        &self,
        count: Option<&StatCounts>,
        flags: u8,
        stamp: Option<u64>,
        make: impl FnOnce() -> Job,
    ) {
        // The ring this thread pushed to last: one thread-local load, no borrow flag.
        let (id, mut queue) = LAST.try_with(Cell::get).unwrap_or((0, ptr::null()));
        if id != self.id {
            queue = self.claim_here();
        }
        if queue.is_null() {
            return self.push_unclaimed(make().tag(flags, stamp), count);
        }
        // SAFETY: `queue` is one this thread holds, named by `LAST` or just found by
        // `claim_here`: its `Claim` in `CLAIMS` keeps the queue alive (and clears `LAST`
        // before it lets go, at the thread's end), so we are its only owner.
        unsafe { (*queue).push_counted(count.is_some(), || make().tag(flags, stamp)) };
    }

    /// No ring of this thread's takes the job: no ring was free when this thread first
    /// submitted here (it keeps to the injector, so its jobs stay in order), or its
    /// thread-locals are gone (a submit from another thread-local's destructor).
    #[cold]
    fn push_unclaimed(&self, job: Job, count: Option<&StatCounts>) {
        if let Some(stats) = count {
            stats.stat_shared(Stat::Submitted, 1);
        }
        self.injector.push(job);
    }

    /// `push_submitted` when the thread's last push went to another lane's queue, or it
    /// has no ring in this lane: finds its claim, or claims a ring now, and makes `LAST`
    /// name it. Null if the thread has none here (`push_unclaimed`).
    #[cold]
    fn claim_here(&self) -> *const SubmitterQueue {
        let held = CLAIMS.try_with(|claims| {
            let mut claims = claims.borrow_mut();
            let held = match claims.0.iter().find(|c| c.queue == self.id) {
                Some(claim) => claim.held.clone(),
                None => {
                    // A thread that submits to pool after pool (one per request, say) would
                    // otherwise keep every dropped pool's rings until it ends.
                    claims.forget_dead_lanes();
                    let held = self.claim();
                    claims.0.push(Claim {
                        queue: self.id,
                        alive: Held::downgrade(&self.alive),
                        held: held.clone(),
                    });
                    held
                }
            };
            let queue = held.as_ref().map_or(ptr::null(), Held::as_ptr);
            if !queue.is_null() {
                let _ = LAST.try_with(|last| last.set((self.id, queue)));
            }
            queue
        });
        held.unwrap_or(ptr::null())
    }

    /// The first free queue, now owned by the calling thread, or `None` if all are taken.
    fn claim(&self) -> Option<Held<SubmitterQueue>> {
        for (i, queue) in self.submitters.iter().enumerate() {
            // Acquire: pairs with the Release in `Claim::drop` of the previous owner, whose
            // pushes (the rings' tails, `back`) thus happen before ours.
            if !queue.owned.load(Ordering::Relaxed)
                && queue
                    .owned
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                queue.prepare();
                // Release: with `prepare`'s Release store of `front`, consumers that count
                // this queue in (Acquire) find its ring initialised.
                self.used.fetch_max(i + 1, Ordering::Release);
                return Some(queue.clone());
            }
        }
        None
    }

    /// The oldest bundle on the front, whole, as an entry; else the oldest job of one of the
    /// lane's sources: the rings and the injector, looked at from a place `start` picks
    /// (workers pass a counter of theirs, so that no source waits behind another that is
    /// always refilled). The injector's `Retry` is retried here, and so is a ring's head that
    /// another consumer took first: `None` means every source was seen empty (for `purge`,
    /// the lane reserve and the tests).
    #[inline]
    pub(crate) fn steal(&self, start: usize) -> Option<Job> {
        if let Some(entry) = self.steal_front() {
            return Some(entry);
        }
        self.steal_from(start, OnLost::Retry).map(|(job, _)| job)
    }

    /// A worker's `steal` of the rings and the injector (it looks at the front first itself,
    /// `claim_front`), saying where the job came from: the index of a ring (for
    /// `steal_ring`), or `INJECTOR`. A ring whose head another consumer took between our
    /// look and our CAS is passed over rather than tried again (`OnLost::GiveUp`), so `None`
    /// may leave jobs in a ring that others are taking from; the worker's search loop comes
    /// back, and its park re-check reads the queues without taking (docs/protocol.md,
    /// "Submitter rings").
    #[inline]
    pub(crate) fn steal_noting(&self, start: usize) -> Option<(Job, usize)> {
        self.steal_from(start, OnLost::GiveUp)
    }

    #[inline]
    fn steal_from(&self, start: usize, on_lost: OnLost) -> Option<(Job, usize)> {
        // Spawned jobs handed back first: a task may be waiting for them, and they are older
        // than anything queued after their hand-back.
        if let Some(job) = self.steal_spawned() {
            return Some((job, INJECTOR));
        }
        let n = self.used();
        // Sources 0..n are rings, n the injector. `start` scaled to 0..=n without a
        // division (Lemire's multiply-shift, on a hash of the counter).
        let pick = (start as u32).wrapping_mul(0x9E37_79B9);
        let mut i = ((u64::from(pick) * (n as u64 + 1)) >> 32) as usize;
        for _ in 0..=n {
            if i == n {
                if let Some(job) = self.steal_injector() {
                    return Some((job, INJECTOR));
                }
                i = 0;
            } else {
                if let Some(job) = self.submitters[i].steal(on_lost) {
                    return Some((job, i));
                }
                i += 1;
            }
        }
        None
    }

    /// The oldest job of ring `i` alone (a worker that took its last job there looks there
    /// first: `WorkerThread::take_held_ring`); a lost race for the head gives up, as in
    /// `steal_noting`.
    #[inline]
    pub(crate) fn steal_ring(&self, i: usize) -> Option<Job> {
        self.submitters[i].steal(OnLost::GiveUp)
    }

    /// The two oldest jobs of submitter ring `i`, with one CAS, if both are published at the
    /// head of its front ring; `None` otherwise (one job or none there, a lost race, or the
    /// front ring drained: `steal_ring` then takes one as usual). For the worker that took
    /// its last job from that ring (`WorkerThread::take_held_ring`), which runs the first
    /// and pushes the second onto its own deque, where others can take it.
    #[inline]
    pub(crate) fn steal_ring_two(&self, i: usize) -> Option<(Job, Job)> {
        // Acquire, as in `SubmitterQueue::steal`.
        let ring = self.submitters[i].front.load(Ordering::Acquire);
        if ring.is_null() {
            return None;
        }
        // SAFETY: rings live as long as the queue.
        unsafe { &*ring }.take_two()
    }

    /// The oldest spawned job handed back (see the module docs): what a waiting worker may
    /// take here while the pool is paused.
    #[inline]
    pub(crate) fn steal_spawned(&self) -> Option<Job> {
        // Claim one: after a claim the steal cannot come back empty, so no caller spins on a
        // count ahead of the queue.
        let mut unclaimed = self.spawned_len.load(Ordering::Relaxed);
        loop {
            if unclaimed == 0 {
                return None;
            }
            // Acquire: pairs with the Release raise in `push`: the job is in the queue.
            match self.spawned_len.compare_exchange_weak(
                unclaimed,
                unclaimed - 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => unclaimed = now,
            }
        }
        loop {
            match self.spawned.steal() {
                Steal::Success(job) => return Some(job),
                Steal::Retry => std::hint::spin_loop(),
                Steal::Empty => unreachable!("flock: a claimed spawned job is not queued"),
            }
        }
    }

    /// Whether no spawned job handed back is queued (every look at the lane, and a paused
    /// waiting worker's re-check). Relaxed: pairs with nothing; the raise a re-check must see
    /// happens before it through the `sleepers` lock, which the hand-back's `wake_all` takes
    /// after its pushes and a parking worker takes to announce itself before its re-check.
    #[inline]
    pub(crate) fn has_no_spawned(&self) -> bool {
        self.spawned_len.load(Ordering::Relaxed) == 0
    }

    fn steal_injector(&self) -> Option<Job> {
        // `is_empty` first: two loads, where crossbeam's empty `steal` also fences. (Not
        // under loom: the model's `is_empty` takes its lock, one more step in every model,
        // and an empty `steal` there says the same.)
        if !cfg!(flock_loom) && self.injector.is_empty() {
            return None;
        }
        loop {
            match self.injector.steal() {
                Steal::Success(job) => return Some(job),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
    }

    /// How many rings were ever claimed: consumers look at those only.
    #[inline]
    fn used(&self) -> usize {
        if self.submitters.is_empty() {
            // A queue without rings (loom's models not written for them): no load, so those
            // models explore what they did before the rings.
            return 0;
        }
        // Acquire: pairs with `claim`'s Release.
        self.used.load(Ordering::Acquire)
    }

    /// Whether every source is empty: the sleep protocol's re-check (after F2 and the
    /// heavy barrier, so it sees every push made before the pusher's F1 or light barrier).
    pub(crate) fn is_empty(&self) -> bool {
        let n = self.used();
        self.front_is_empty()
            && self.injector.is_empty()
            && self.has_no_spawned()
            && self.submitters[..n].iter().all(|q| q.is_empty())
    }

    /// Jobs counted `Submitted` on the rings (`push_submitted`), to add to the shards'.
    pub(crate) fn submitted(&self) -> u64 {
        let n = self.used();
        self.submitters[..n]
            .iter()
            .map(|q| q.submitted.load(StdOrdering::Relaxed))
            .sum()
    }

    /// Entries queued (a bundle on the front is one), a gauge.
    pub(crate) fn len(&self) -> usize {
        let n = self.used();
        // Relaxed: a gauge; it orders nothing.
        self.front_len.load(StdOrdering::Relaxed)
            + self.injector.len()
            + self.spawned.len()
            + self.submitters[..n].iter().map(|q| q.len()).sum::<usize>()
    }
}

/// A thread's hold on one lane's queue, in its thread-local `CLAIMS`: `held` is `None` when
/// every ring was taken (the thread then submits through the injector, for good, so its jobs
/// stay in order). Dropped with the thread, which frees the queue for another.
struct Claim {
    queue: u64,
    /// The lane's liveness token (`SharedQueue::alive`).
    alive: std::sync::Weak<()>,
    held: Option<Held<SubmitterQueue>>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(queue) = &self.held {
            // Release: pairs with `claim`'s Acquire (see there).
            queue.owned.store(false, Ordering::Release);
        }
    }
}

/// A thread's claims, one per lane it submitted to.
struct Claims(Vec<Claim>);

impl Claims {
    /// Lets go of the claims whose lanes were dropped (their pools are gone: no worker
    /// reads those rings any more), freeing what only they held.
    fn forget_dead_lanes(&mut self) {
        let before = self.0.len();
        self.0.retain(|c| c.alive.strong_count() > 0);
        if self.0.len() != before {
            // `LAST` may name one of them: lane ids are never reused, so it could not be
            // taken for a live lane's, but it must not point at freed memory either.
            let _ = LAST.try_with(|last| last.set((0, ptr::null())));
        }
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        // Before the claims let go of their queues: `LAST` must not name one after that.
        let _ = LAST.try_with(|last| last.set((0, ptr::null())));
    }
}

facade_thread_local! {
    /// The lanes' queues this thread holds.
    static CLAIMS: RefCell<Claims> = RefCell::new(Claims(Vec::new()));
}

facade_thread_local! {
    /// The queue this thread pushed to last and its lane's id, or `(0, null)`: what
    /// `push_submitted` looks at first. Plain data with no destructor, so it can be read
    /// at any time in a thread's life; `Claims::drop` clears it.
    static LAST: Cell<(u64, *const SubmitterQueue)> = Cell::new((0, ptr::null()));
}

/// One submitting thread's jobs: a chain of rings, the owner pushing onto the newest
/// (`back`), consumers taking from the oldest with jobs left (`front`).
struct SubmitterQueue {
    /// Whether a thread holds this queue (its `Claim`).
    owned: AtomicBool,
    front: CachePadded<AtomicPtr<Ring>>,
    /// Touched by the owner only (Relaxed): `owned` hands it from owner to owner.
    back: AtomicPtr<Ring>,
    /// The chain's first ring, from which `drop` frees them all.
    first: AtomicPtr<Ring>,
    /// Tasks counted `Submitted` here: written by the owner only, Relaxed (a statistic, so
    /// outside loom). A reader that saw a task end sees its count: the store comes before
    /// the job's publication (Release), which its worker acquired before counting the end.
    submitted: StdAtomicU64,
}

impl SubmitterQueue {
    fn new() -> SubmitterQueue {
        SubmitterQueue {
            owned: AtomicBool::new(false),
            front: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            back: AtomicPtr::new(ptr::null_mut()),
            first: AtomicPtr::new(ptr::null_mut()),
            submitted: StdAtomicU64::new(0),
        }
    }

    /// Gives a newly claimed queue its first ring, if it has none yet.
    fn prepare(&self) {
        if !self.back.load(Ordering::Relaxed).is_null() {
            return;
        }
        let ring = Ring::alloc(FIRST_CAPACITY);
        self.first.store(ring, Ordering::Relaxed);
        self.back.store(ring, Ordering::Relaxed);
        // Release: pairs with the consumers' Acquire loads of `front`, which then see the
        // ring initialised.
        self.front.store(ring, Ordering::Release);
    }

    /// `push`, counting the job `Submitted` first if `count`.
    ///
    /// # Safety
    /// As for `push`.
    #[inline(always)]
    unsafe fn push_counted(&self, count: bool, make: impl FnOnce() -> Job) {
        if count {
            // Owner only (our caller's duty): a plain load and store.
            let n = self.submitted.load(StdOrdering::Relaxed);
            self.submitted.store(n + 1, StdOrdering::Relaxed);
        }
        // SAFETY: our caller's duty.
        unsafe { self.push(make) }
    }

    /// Pushes the job `make` makes onto the newest ring, or onto a new one twice its size if
    /// it is full.
    ///
    /// # Safety
    /// Only the thread that holds the queue (its `Claim`) may push.
    #[inline(always)]
    unsafe fn push(&self, make: impl FnOnce() -> Job) {
        // SAFETY: `prepare` gave the queue a ring before its first owner could push, and
        // rings live as long as the queue.
        let ring = unsafe { &*self.back.load(Ordering::Relaxed) };
        // SAFETY (all three): we are the owner, the ring's only writer (our caller's duty).
        let (ring, pos, slot) = match unsafe { ring.free_slot() } {
            Some((pos, slot)) => (ring, pos, slot),
            None => {
                // The new ring lives as long as the queue, and its first slot is free.
                let grown = unsafe { &*self.grow(ring) };
                (grown, 0, grown.slot(0))
            }
        };
        unsafe { ring.publish(pos, slot, make) };
    }

    /// `push` found `full` full: links a ring twice its size after it, for the push to go
    /// on there.
    ///
    /// # Safety
    /// As for `push`.
    #[cold]
    unsafe fn grow(&self, full: &Ring) -> *mut Ring {
        let grown = Ring::alloc(full.slots.len() * 2);
        self.back.store(grown, Ordering::Relaxed);
        // Release: publishes the new ring and, before it, every job pushed onto `full`: a
        // consumer that reads this pointer (Acquire) and then finds `full` empty knows that
        // it stays empty. The new ring is empty until the caller's `publish`, as any ring
        // between pushes.
        full.next.store(grown, Ordering::Release);
        grown
    }

    /// The oldest job, moving `front` past rings drained for good. `None` after a lost race
    /// (`OnLost::GiveUp`) leaves the front where it is: the ring was not seen empty.
    #[inline]
    fn steal(&self, on_lost: OnLost) -> Option<Job> {
        // Acquire: pairs with `prepare`'s Release and with the advance below.
        let mut ring = self.front.load(Ordering::Acquire);
        while !ring.is_null() {
            // SAFETY: rings live as long as the queue.
            let r = unsafe { &*ring };
            match r.take(on_lost) {
                Take::Job(job) => return Some(job),
                Take::Lost => return None,
                Take::Empty => {}
            }
            // Acquire: pairs with `grow`'s Release.
            let next = r.next.load(Ordering::Acquire);
            if next.is_null() {
                return None;
            }
            // Jobs pushed onto `r` before `next` was stored are visible now: once more.
            match r.take(on_lost) {
                Take::Job(job) => return Some(job),
                Take::Lost => return None,
                Take::Empty => {}
            }
            // `r` stays empty: move the front on (whoever does it first), and look there.
            // AcqRel: a consumer that loads the new front sees the ring as we did.
            ring =
                match self
                    .front
                    .compare_exchange(ring, next, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => next,
                    Err(now) => now,
                };
        }
        None
    }

    fn is_empty(&self) -> bool {
        // Acquire, as in `steal`.
        let mut ring = self.front.load(Ordering::Acquire);
        while !ring.is_null() {
            // SAFETY: rings live as long as the queue.
            let r = unsafe { &*ring };
            if !r.is_empty() {
                return false;
            }
            // Acquire: pairs with `grow`'s Release. A job pushed onto `r` after our
            // look went there before `next` was stored, and our caller's barrier argument
            // covers it as any push; one pushed onto the next ring is seen there, or is
            // written after our look there (`grow` links the ring before the push that
            // needed it writes its job), which the same argument covers.
            ring = r.next.load(Ordering::Acquire);
            // The canary of scripts/loom.sh: a re-check that misses a grown ring must hang
            // `loom_ring_grows_under_a_racing_worker`.
            if canary(Canary::Ring) {
                break;
            }
        }
        true
    }

    fn len(&self) -> usize {
        let mut n = 0;
        let mut ring = self.front.load(Ordering::Acquire);
        while !ring.is_null() {
            // SAFETY: rings live as long as the queue.
            let r = unsafe { &*ring };
            n += r.len();
            ring = r.next.load(Ordering::Acquire);
        }
        n
    }
}

impl Drop for SubmitterQueue {
    fn drop(&mut self) {
        let mut ring = self.first.load(Ordering::Relaxed);
        while !ring.is_null() {
            // SAFETY: every ring of the chain came from `Ring::alloc` and is freed here
            // only, once; nobody holds the queue any more.
            let r = unsafe { Box::from_raw(ring) };
            ring = r.next.load(Ordering::Relaxed);
        }
    }
}

/// A bounded single-producer, multi-consumer FIFO ring (Vyukov's bounded queue with one
/// producer): each slot's sequence number says whose turn it is. For position `pos` in the
/// slot `pos % capacity`: `pos` means free for the producer, `pos + 1` holds a job for the
/// consumers, and the consumer that takes it stores `pos + capacity`, freeing the slot for
/// the producer's next lap.
struct Ring {
    /// The next position to take; consumers claim it with a CAS.
    head: CachePadded<AtomicUsize>,
    /// The next position to fill; written by the producer only (read by `len`).
    tail: CachePadded<AtomicUsize>,
    /// The ring the producer moved on to when this one was full; null before.
    next: AtomicPtr<Ring>,
    slots: Box<[Slot]>,
}

/// What `Ring::take` found at the head.
enum Take {
    Job(Job),
    /// No job published there.
    Empty,
    /// Another consumer took the job we were about to take (`OnLost::GiveUp` only).
    Lost,
}

/// What a consumer does when another takes the job it was about to take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnLost {
    /// Look at the next position: `None` then means the ring was seen empty.
    Retry,
    /// Come back later (a worker's search).
    GiveUp,
}

/// One slot a cache line (64 bytes, of which the sequence word and the job use 48). With
/// 48-byte slots neighbouring slots share lines: two workers taking consecutive jobs both
/// write one line (a take stores the sequence number), and a worker reading a just-published
/// job can hold the line the producer writes the next job into.
/// `drain_probe own` and `drain_probe drain 2` compare the two layouts.
#[repr(align(64))]
struct Slot {
    seq: AtomicUsize,
    job: UnsafeCell<MaybeUninit<Job>>,
}

impl Ring {
    /// A new ring of `capacity` (a power of two) free slots, on the heap.
    fn alloc(capacity: usize) -> *mut Ring {
        assert!(capacity.is_power_of_two(), "`slot` relies on it");
        let slots = (0..capacity)
            .map(|i| Slot {
                seq: AtomicUsize::new(i),
                job: UnsafeCell::new(MaybeUninit::uninit()),
            })
            .collect();
        Box::into_raw(Box::new(Ring {
            head: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicUsize::new(0)),
            next: AtomicPtr::new(ptr::null_mut()),
            slots,
        }))
    }

    #[inline]
    fn slot(&self, pos: usize) -> &Slot {
        let i = pos & (self.slots.len() - 1);
        // SAFETY: capacities are powers of two (`alloc`), so `i < len`. (The compiler cannot
        // see it: the bounds check cost ~8 instructions a take and a push, callgrind.)
        unsafe { self.slots.get_unchecked(i) }
    }

    /// The tail's position and slot if the slot is free for the producer's next push, `None`
    /// if the ring is full (the slot's job of the previous lap is not taken yet). The slot is
    /// handed on to `publish`: found again after the Acquire load below, it cost its address
    /// computation twice (the loads of `slots` cannot move above an Acquire load).
    ///
    /// # Safety
    /// Only the ring's producer (the owner of its queue) may push.
    #[inline(always)]
    unsafe fn free_slot(&self) -> Option<(usize, &Slot)> {
        let pos = self.tail.load(Ordering::Relaxed);
        let slot = self.slot(pos);
        // Acquire: pairs with the Release store by which the consumer of the previous lap
        // freed the slot, so its read of the old job happens before our write.
        (slot.seq.load(Ordering::Acquire) == pos).then_some((pos, slot))
    }

    /// Appends the job `make` makes, made in place, at `pos`, the tail, whose `slot`
    /// `free_slot` found free (or position 0 of a new ring).
    ///
    /// # Safety
    /// Only the ring's producer may push, only at a free tail, and `slot` is `pos`'s.
    #[inline(always)]
    unsafe fn publish(&self, pos: usize, slot: &Slot, make: impl FnOnce() -> Job) {
        // SAFETY: the slot is free for this lap (our caller's duty), and we are its only
        // writer; no consumer reads it before the store below.
        slot.job.with_mut(|p| unsafe { (*p).write(make()) });
        // Release: publishes the job to the consumer whose Acquire load reads `pos + 1`.
        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
        self.tail.store(pos.wrapping_add(1), Ordering::Relaxed);
    }

    /// The oldest job, if one is published. When another consumer takes it between our look
    /// and our CAS, `on_lost` says whether to try the next one or to give up (`Take::Lost`).
    ///
    /// Why workers give up: every take moves the head's cache line to the taker, and a CAS
    /// that fails has moved it for nothing. Consumers that retry at once keep the line moving
    /// between them, so the more of them there are the slower the ring drains (`drain_probe
    /// drain W` measures it by worker count). A loser goes back to its search loop: it looks
    /// at the other sources, backs off, and only parks after a re-check that reads this ring.
    #[inline]
    fn take(&self, on_lost: OnLost) -> Take {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let slot = self.slot(pos);
            // Acquire: pairs with the producer's Release in `publish`.
            let seq = slot.seq.load(Ordering::Acquire);
            match (seq.wrapping_sub(pos.wrapping_add(1)) as isize).signum() {
                0 => {
                    // Relaxed: the CAS only makes the position ours; the job was made visible
                    // by the Acquire load above. Strong: a spurious failure (LL/SC targets)
                    // would read as a lost race.
                    match self.head.compare_exchange(
                        pos,
                        pos.wrapping_add(1),
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            // SAFETY: position `pos` is ours alone now, and its job was
                            // published (the sequence number we read).
                            let job = slot.job.with_mut(|p| unsafe { (*p).assume_init_read() });
                            // Release: our read of the job happens before the producer's
                            // next write of the slot (its Acquire load in `free_slot`).
                            slot.seq
                                .store(pos.wrapping_add(self.slots.len()), Ordering::Release);
                            return Take::Job(job);
                        }
                        // The head moved only by a take: another consumer has job `pos`.
                        Err(_) if on_lost == OnLost::GiveUp => return Take::Lost,
                        Err(now) => pos = now,
                    }
                }
                // Not published yet: empty.
                -1 => return Take::Empty,
                // Our `pos` was stale (taken, or a later lap's): look again. The Release
                // store we read happened after the head moved past `pos`, so this load sees
                // it moved.
                _ => pos = self.head.load(Ordering::Relaxed),
            }
        }
    }

    /// The jobs at `pos` and `pos + 1` (`pos` the head), with one CAS of the head by two,
    /// if both are published; `None` if not, or if another consumer moved the head first
    /// (the caller then takes one job, `take`). The orderings are `take`'s: the Acquire
    /// loads of both sequence numbers pair with the producer's Release stores, the CAS only
    /// makes the positions ours, and each slot is freed with a Release store after its read.
    #[inline]
    fn take_two(&self) -> Option<(Job, Job)> {
        let len = self.slots.len();
        if len < 2 {
            return None;
        }
        let pos = self.head.load(Ordering::Relaxed);
        let next = pos.wrapping_add(1);
        let (first, second) = (self.slot(pos), self.slot(next));
        // The producer publishes in order, so the second published means the first is too;
        // both are checked, since a stale `pos` may see a later lap's number in either.
        if first.seq.load(Ordering::Acquire) != next
            || second.seq.load(Ordering::Acquire) != next.wrapping_add(1)
        {
            return None;
        }
        self.head
            .compare_exchange(
                pos,
                pos.wrapping_add(2),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .ok()?;
        // SAFETY: positions `pos` and `pos + 1` are ours alone now, and both were published
        // (the sequence numbers we read); each is read once.
        let a = first.job.with_mut(|p| unsafe { (*p).assume_init_read() });
        first.seq.store(pos.wrapping_add(len), Ordering::Release);
        let b = second.job.with_mut(|p| unsafe { (*p).assume_init_read() });
        second.seq.store(next.wrapping_add(len), Ordering::Release);
        Some((a, b))
    }

    /// Whether no job is published at the head (a stale head is read again, as in `pop`).
    fn is_empty(&self) -> bool {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let seq = self.slot(pos).seq.load(Ordering::Acquire);
            match (seq.wrapping_sub(pos.wrapping_add(1)) as isize).signum() {
                0 => return false,
                -1 => return true,
                _ => pos = self.head.load(Ordering::Relaxed),
            }
        }
    }

    fn len(&self) -> usize {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        tail.wrapping_sub(head).min(self.slots.len())
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // No consumer or producer is left: the jobs between head and tail are published
        // and untaken. Dropping them runs their destructors (`Job`'s `Drop` discards).
        let tail = self.tail.load(Ordering::Relaxed);
        let mut pos = self.head.load(Ordering::Relaxed);
        while pos != tail {
            // SAFETY: published and never taken (see above); read once.
            drop(
                self.slot(pos)
                    .job
                    .with_mut(|p| unsafe { (*p).assume_init_read() }),
            );
            pos = pos.wrapping_add(1);
        }
    }
}

#[cfg(all(test, not(flock_loom)))]
mod tests {
    use super::*;
    use crate::job::Outcome;
    use std::sync::atomic::{AtomicUsize as Count, Ordering as O};
    use std::sync::{Arc, Mutex};

    /// Counts its drops: where a job's closure went.
    struct Token(Arc<Count>);

    impl Drop for Token {
        fn drop(&mut self) {
            self.0.fetch_add(1, O::Relaxed);
        }
    }

    fn job_pushing(log: &Arc<Mutex<Vec<usize>>>, i: usize) -> Job {
        let log = log.clone();
        Job::new(
            move || {
                log.lock().unwrap().push(i);
                Outcome::Done
            },
            0,
        )
    }

    fn drain(q: &SharedQueue) -> usize {
        let mut n = 0;
        while let Some(job) = q.steal(n) {
            job.run();
            n += 1;
        }
        n
    }

    #[test]
    fn one_thread_s_jobs_come_out_in_order_across_growth() {
        let q = SharedQueue::new(RINGS);
        let log = Arc::new(Mutex::new(Vec::new()));
        let n = FIRST_CAPACITY * 8 + 3;
        for i in 0..n {
            q.push_submitted(job_pushing(&log, i), None);
        }
        assert_eq!(q.len(), n);
        assert!(!q.is_empty());
        assert_eq!(drain(&q), n);
        assert!(q.is_empty());
        assert_eq!(*log.lock().unwrap(), (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn interleaved_pushes_and_pops_keep_order_and_reuse_the_ring() {
        let q = SharedQueue::new(RINGS);
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut next = 0;
        for round in 0..50 {
            for _ in 0..(round % 7 + 1) {
                q.push_submitted(job_pushing(&log, next), None);
                next += 1;
            }
            if let Some(job) = q.steal(round) {
                job.run();
            }
        }
        drain(&q);
        assert_eq!(*log.lock().unwrap(), (0..next).collect::<Vec<_>>());
    }

    /// Two jobs claimed with one CAS (`steal_ring_two`, a worker holding the ring): only
    /// when both are published at the head of the front ring, oldest first, and their slots
    /// are freed for the ring's next laps; mixed with single takes, across growth, every job
    /// comes out once and in order.
    #[test]
    fn two_at_once_come_out_in_order_and_free_their_slots() {
        let q = SharedQueue::new(RINGS);
        let log = Arc::new(Mutex::new(Vec::new()));
        q.push_submitted(job_pushing(&log, 0), None);
        let (job, ring) = q.steal_noting(0).unwrap();
        job.run();
        assert!(q.steal_ring_two(ring).is_none(), "nothing published");
        q.push_submitted(job_pushing(&log, 1), None);
        assert!(q.steal_ring_two(ring).is_none(), "one job published");
        let mut next = 2;
        let mut pairs = 0;
        for round in 0..FIRST_CAPACITY * 6 {
            for _ in 0..(round % 3 + 1) {
                q.push_submitted(job_pushing(&log, next), None);
                next += 1;
            }
            if let Some((a, b)) = q.steal_ring_two(ring) {
                a.run();
                b.run();
                pairs += 1;
            } else if let Some(job) = q.steal_ring(ring) {
                job.run();
            }
        }
        drain(&q);
        assert!(pairs > FIRST_CAPACITY, "{pairs} pairs");
        assert_eq!(*log.lock().unwrap(), (0..next).collect::<Vec<_>>());
    }

    #[test]
    fn jobs_left_in_rings_are_dropped_with_the_queue() {
        let dropped = Arc::new(Count::new(0));
        let q = SharedQueue::new(RINGS);
        for _ in 0..FIRST_CAPACITY * 3 {
            let t = Token(dropped.clone());
            q.push_submitted(
                Job::new(
                    move || {
                        drop(t);
                        Outcome::Done
                    },
                    0,
                ),
                None,
            );
        }
        if let Some(job) = q.steal(0) {
            job.run(); // one ran: its token dropped there
        }
        assert_eq!(dropped.load(O::Relaxed), 1);
        // This thread's claim holds the queue too: both must let go.
        drop(q);
        assert_eq!(dropped.load(O::Relaxed), 1);
        CLAIMS.with(|c| c.borrow_mut().0.clear());
        assert_eq!(dropped.load(O::Relaxed), FIRST_CAPACITY * 3);
    }

    #[test]
    fn a_thread_lets_go_of_the_rings_of_dropped_lanes() {
        let dropped = Arc::new(Count::new(0));
        let first = SharedQueue::new(RINGS);
        let t = Token(dropped.clone());
        first.push_submitted(
            Job::new(
                move || {
                    drop(t);
                    Outcome::Done
                },
                0,
            ),
            None,
        );
        let ring = first.submitters[0].clone();
        drop(first);
        // Our claim still holds the ring (and the job in it): it and our clone.
        assert_eq!(Held::strong_count(&ring), 2);
        assert_eq!(dropped.load(O::Relaxed), 0);
        // Claiming in another lane lets go of the dead one's claim, and with it its job.
        let second = SharedQueue::new(RINGS);
        second.push_submitted(Job::new(|| Outcome::Done, 0), None);
        assert_eq!(Held::strong_count(&ring), 1);
        drop(ring);
        assert_eq!(dropped.load(O::Relaxed), 1);
        assert_eq!(CLAIMS.with(|c| c.borrow().0.len()), 1);
        if let Some(job) = second.steal(0) {
            job.run();
        }
    }

    #[test]
    fn threads_get_their_own_rings_until_none_is_left_then_the_injector() {
        let q = Arc::new(SharedQueue::new(RINGS));
        let ran = Arc::new(Count::new(0));
        let threads = RINGS + 3;
        let each = if cfg!(miri) { 5 } else { 100 };
        let pushed = std::sync::Barrier::new(threads + 1);
        let checked = std::sync::Barrier::new(threads + 1);
        std::thread::scope(|s| {
            for _ in 0..threads {
                let (q, ran, pushed, checked) = (&q, &ran, &pushed, &checked);
                s.spawn(move || {
                    for _ in 0..each {
                        let ran = ran.clone();
                        q.push_submitted(
                            Job::new(
                                move || {
                                    ran.fetch_add(1, O::Relaxed);
                                    Outcome::Done
                                },
                                0,
                            ),
                            None,
                        );
                    }
                    pushed.wait();
                    checked.wait(); // hold the claim until the main thread has looked
                });
            }
            pushed.wait();
            let owned = q
                .submitters
                .iter()
                .filter(|r| r.owned.load(O::Relaxed))
                .count();
            assert_eq!(owned, RINGS);
            assert_eq!(q.used.load(O::Relaxed), RINGS);
            assert_eq!(q.injector.len(), 3 * each);
            checked.wait();
        });
        // Every owner left: each ring is free again (a thread's claims go with its
        // thread-locals, which a scope's join does not wait for), its jobs still queued.
        let free = || q.submitters.iter().all(|r| !r.owned.load(O::Acquire));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !free() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(free());
        assert_eq!(q.len(), threads * each);
        assert_eq!(drain(&q), threads * each);
        assert_eq!(ran.load(O::Relaxed), threads * each);
    }

    /// Three consumers race the producer: one retries a lost race for the head (`steal`, as
    /// `purge` does), two give up (`steal_noting`, as workers do) and come back.
    #[test]
    fn consumers_racing_the_producer_take_each_job_once_and_in_order() {
        let q = SharedQueue::new(RINGS);
        let n: usize = if cfg!(miri) { 300 } else { 200_000 };
        let seen: Vec<Count> = (0..n).map(|_| Count::new(0)).collect();
        let done = Count::new(0);
        let order: Vec<Vec<usize>> = std::thread::scope(|s| {
            let consumers: Vec<_> = (0..3)
                .map(|c| {
                    let (q, done) = (&q, &done);
                    s.spawn(move || {
                        let mut ran = Vec::new();
                        let mut probe = c;
                        while done.load(O::Acquire) < n {
                            probe += 1;
                            let job = if c == 0 {
                                q.steal(probe)
                            } else {
                                q.steal_noting(probe).map(|(job, _)| job)
                            };
                            if let Some(job) = job {
                                ran.push(job.queued_at_ns() as usize);
                                job.run();
                            }
                        }
                        ran
                    })
                })
                .collect();
            let (q, seen, done) = (&q, &seen, &done);
            s.spawn(move || {
                for (i, mark) in seen.iter().enumerate() {
                    // SAFETY: the job runs before the scope (which owns `seen` and `done`
                    // by borrow) ends: the consumers loop until all `n` have run.
                    let mut job = unsafe {
                        Job::new_unchecked(
                            move || {
                                mark.fetch_add(1, O::Relaxed);
                                done.fetch_add(1, O::Release);
                                Outcome::Done
                            },
                            0,
                        )
                    };
                    job.stamp(i as u64); // its index, for the order check
                    q.push_submitted(job, None);
                }
            });
            consumers.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert!(seen.iter().all(|c| c.load(O::Relaxed) == 1));
        // One producer: each consumer took its jobs oldest first.
        for ran in &order {
            assert!(ran.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(order.iter().map(Vec::len).sum::<usize>(), n);
    }
}
