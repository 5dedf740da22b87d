//! Idle workers: searching, parking and waking. The protocol, with the argument for why no
//! wake-up is lost, is in `docs/protocol.md` ("Sleep"); the two change together.

use crate::sync::{canary, fence, AtomicU64, Canary, Ordering};
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::PoisonError;
#[cfg(not(flock_loom))]
use std::time::{Duration, Instant};

pub(crate) mod barrier;
mod sleepers;

use sleepers::Sleepers;

const SEARCHING_ONE: u64 = 1;
const SLEEPING_ONE: u64 = 1 << 32;
/// The top bit of the `searching` field (never reached by the count, which stays under
/// `MAX_WORKERS`): local pushes that find a sleeper and a searcher may skip F1, and the
/// state change that leaves no searcher must issue the membarrier before its re-check
/// (docs/protocol.md, "Pushes that rely on a searcher's membarrier").
const UNFENCED: u64 = 1 << 31;

/// How many fenced local pushes that found a searcher (and a sleeper) a worker makes before
/// it sets `UNFENCED`: the flag costs the next last searcher a membarrier, so a worker that
/// pushes once a round (a two-way join each round) sets it once in so many rounds, while one
/// that forks thousands of times a search (fib) pays the fence on this many pushes only.
const FENCED_BEFORE_UNFENCED: u32 = 64;

/// How many sleepers a searcher that found work wakes when more is queued
/// (`Sleep::wake_for_found_work`): two, so the awake workers double each hop of a ramp.
const FINDER_WAKES: usize = 2;

/// How long a worker whose membarrier was refused sleeps before it looks again
/// (`Sleep::park_announced`): far beyond the time a store takes to reach other cores, so
/// that a push that skipped its fence before the fall-back is visible by then.
#[cfg(not(flock_loom))]
const REFUSED_GRACE: Duration = Duration::from_millis(1);

fn searching(state: u64) -> u64 {
    state & (UNFENCED - 1)
}

fn sleeping(state: u64) -> u64 {
    state >> 32
}

/// The most workers the state word's fields can count (kept well inside 32 bits).
pub(crate) const MAX_WORKERS: usize = 1 << 16;
const _: () = assert!((MAX_WORKERS as u64) < UNFENCED);

pub(crate) struct Sleep {
    /// `searching` in bits 0..31, `UNFENCED` at bit 31, `sleeping` in bits 32..64 (see
    /// docs/protocol.md).
    state: CachePadded<AtomicU64>,
    /// std's mutex (loom's under loom), as the parkers' (see `Parker`): a worker that blocks
    /// here when the process forks must leave nothing in a process-wide table.
    sleepers: OwnMutex<Sleepers>,
    /// Held while a parking worker issues the membarrier, so that workers parking meanwhile
    /// wait for it and find themselves covered (`barrier_before_recheck`). std's mutex too:
    /// workers do block here, for a system call's length, and with parking_lot's a fork at
    /// that moment left their entries in the child's copy of its table, where the child's
    /// new threads linked into them and lost a wake-up (ffi/tests/c/global.c under ASan).
    barrier_turn: OwnMutex<()>,
    parkers: Box<[CachePadded<Parker>]>,
    /// The asymmetric barrier's pairing for this pool (`barrier.rs`).
    pub(crate) barrier: barrier::Barrier,
    /// Writes of `state`, for `Stats` (nothing without the `stats` feature).
    counts: CachePadded<SleepCounts>,
}

/// What `Stats::sleep_word_writes` reads: counted on a line of its own (not the state
/// word's, whose sharing it would change), with a std atomic (statistics stay outside
/// loom), and only with the `stats` feature.
#[derive(Default)]
struct SleepCounts {
    /// Read-modify-writes of the state word.
    writes: std::sync::atomic::AtomicU64,
}

impl Sleep {
    /// `membarrier`: whether parks may use the membarrier so that pushes skip their fence
    /// (`PoolBuilder::membarrier`). Called before any worker of the pool starts.
    pub(crate) fn new(workers: usize, membarrier: bool) -> Sleep {
        Sleep {
            state: CachePadded::new(AtomicU64::new(0)),
            sleepers: OwnMutex::new(Sleepers::with_capacity(workers)),
            barrier_turn: OwnMutex::new(()),
            parkers: (0..workers)
                .map(|_| CachePadded::new(Parker::new()))
                .collect(),
            barrier: barrier::Barrier::new(membarrier),
            counts: CachePadded::new(SleepCounts::default()),
        }
    }

    /// Under loom: a pool's sleep state with the given pairing (`Barrier::modeled`; the loom
    /// models' tests only).
    #[cfg(all(flock_loom, test))]
    pub(crate) fn with_barrier(workers: usize, barrier: barrier::Barrier) -> Sleep {
        let mut sleep = Sleep::new(workers, false);
        sleep.barrier = barrier;
        sleep
    }

    /// Under loom: worker `asleep` listed and parked in an era that a membarrier already
    /// covers (issued before the model's threads start), `searchers` workers searching, and
    /// `UNFENCED` set (the loom models' tests only).
    #[cfg(all(flock_loom, test))]
    pub(crate) fn model_unfenced_state(&self, asleep: usize, searchers: u64) {
        let mut sleepers = self.sleepers();
        let era = sleepers.push(asleep);
        sleepers.cover(era);
        self.state
            .fetch_add(SLEEPING_ONE + searchers + UNFENCED, Ordering::SeqCst);
    }

    /// The sleeper list, locked.
    fn sleepers(&self) -> OwnGuard<'_, Sleepers> {
        lock(&self.sleepers)
    }

    /// Read-modify-writes of the state word so far (0 without the `stats` feature).
    pub(crate) fn writes_so_far(&self) -> u64 {
        self.counts
            .writes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn count_write(&self) {
        if cfg!(feature = "stats") {
            let writes = &self.counts.writes;
            writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// A worker out of local work asks to search. Refused when half the workers already
    /// search: more searchers would only fight over the same queues.
    pub(crate) fn transition_to_searching(&self, workers: usize) -> bool {
        let state = self.state.load(Ordering::Relaxed);
        if 2 * searching(state) >= workers as u64 {
            return false;
        }
        // Relaxed suffices: becoming a searcher only tells submitters they may skip waking;
        // the promise that makes that safe is kept by the fence in
        // `transition_from_searching` / after `announce_parked`.
        self.state.fetch_add(SEARCHING_ONE, Ordering::Relaxed);
        self.count_write();
        true
    }

    /// A searcher found a task. Returns true if it was the last searcher, in which case it
    /// must re-check the queues (and call `wake_for_found_work` if work is left) — the promise
    /// in docs/protocol.md.
    pub(crate) fn transition_from_searching(&self) -> bool {
        let prev = self.leave_searching(SEARCHING_ONE.wrapping_neg());
        let last = searching(prev) == 1;
        if last {
            // Pairs with F1 (`notify_new_work`): a submitter that saw us searching and woke
            // no one has its push visible to the re-check that follows.
            fence(Ordering::SeqCst);
            if prev & UNFENCED != 0 {
                self.barrier_for_unfenced();
            }
        }
        last
    }

    /// One searcher leaves the Searching state: `state += delta` (`delta` takes one from
    /// `searching`), one SeqCst RMW as the callers' always were (the promise's pairing with
    /// F1). Returns the state before. When that write leaves no searcher and `UNFENCED` was
    /// set, the flag is cleared by a CAS that expects exactly the value written: if another
    /// write came in between, the flag stays, and the next write that leaves no searcher
    /// sees it and issues the membarrier in turn. The clear must follow no other write: a
    /// searcher that arrived in between could be relied on under the flag and then leave
    /// after the flag was gone (docs/protocol.md, "Pushes that rely on a searcher's
    /// membarrier").
    fn leave_searching(&self, delta: u64) -> u64 {
        let prev = self.state.fetch_add(delta, Ordering::SeqCst);
        self.count_write();
        debug_assert!(
            searching(prev) > 0,
            "a worker left the Searching state twice"
        );
        if searching(prev) == 1 && prev & UNFENCED != 0 {
            let now = prev.wrapping_add(delta);
            // Relaxed: the clear adds nothing to order; the membarrier our caller issues
            // next is what covers the pushes that read the flag.
            if self
                .state
                .compare_exchange(now, now & !UNFENCED, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                self.count_write();
            }
        }
        prev
    }

    /// The last searcher left while `UNFENCED` was set: a local push may have read it
    /// searching and skipped its fence, so the membarrier orders that push before the
    /// re-check that follows (docs/protocol.md, "Pushes that rely on a searcher's
    /// membarrier"). The `unfenced` canary removes it (scripts/loom.sh). Where the
    /// membarrier is refused, the re-check waits out `REFUSED_GRACE`, after which a push
    /// that skipped its fence is visible (as in "A membarrier refused").
    #[cold]
    fn barrier_for_unfenced(&self) {
        if canary(Canary::Unfenced) {
            return;
        }
        if !self.barrier.issue() {
            #[cfg(not(flock_loom))]
            std::thread::sleep(REFUSED_GRACE);
        }
    }

    /// Step 1 and 2 of parking: list ourselves as a sleeper, then fence (F2), then the heavy
    /// side of the asymmetric barrier unless a membarrier already covers our era.
    ///
    /// Returns false when our era needed a membarrier and it was refused: the re-check may
    /// then miss a push that skipped its fence, and the park must be `park_announced`'s
    /// bounded one (docs/protocol.md, "A membarrier refused").
    #[must_use]
    pub(crate) fn announce_parked(&self, index: usize, was_searching: bool) -> bool {
        let mut sleepers = self.sleepers();
        let era = sleepers.push(index);
        let unfenced = if was_searching {
            let prev = self.leave_searching(SLEEPING_ONE - SEARCHING_ONE);
            searching(prev) == 1 && prev & UNFENCED != 0
        } else {
            self.state.fetch_add(SLEEPING_ONE, Ordering::SeqCst);
            self.count_write();
            false
        };
        let covered = sleepers.barrier_covers(era);
        drop(sleepers);
        // F2: pairs with F1 in `notify_new_work` and with the fence in
        // `transition_from_searching`; after it, either a submitter sees us sleeping or our
        // re-check sees its job.
        fence(Ordering::SeqCst);
        if unfenced {
            // The last searcher, with `UNFENCED` set: whatever covers our era, a push may
            // have relied on us (`transition_from_searching`).
            if canary(Canary::Unfenced) {
                return covered || self.barrier_before_recheck(era);
            }
            return self.barrier.issue();
        }
        covered || self.barrier_before_recheck(era)
    }

    /// The heavy side of the asymmetric barrier, which pairs with the light side of every
    /// unfenced push (`notify_local_work`, `notify_injected`): one membarrier per era at most
    /// (docs/protocol.md, "One membarrier per era"). A worker that finds one in flight waits
    /// for it, and then needs none of its own if it covers our era.
    #[cold]
    fn barrier_before_recheck(&self, era: u64) -> bool {
        if !self.barrier.registered() {
            return true;
        }
        let _turn = lock(&self.barrier_turn);
        if self.sleepers().barrier_covers(era) {
            return true;
        }
        if !self.barrier.issue() {
            return false;
        }
        self.sleepers().cover(era);
        true
    }

    /// Takes back an announcement: we are a searcher again either way. Returns true if we
    /// removed ourselves (one RMW: `+1 searching −1 sleeping`); false if a waker already chose
    /// us (and counted us as a searcher), in which case the caller must consume the token with
    /// `park`.
    ///
    /// Rejoining as a searcher matters: a submitter may have skipped waking anyone because it
    /// saw us searching before our announcement. Our re-check found its work, but possibly
    /// more than one task; as a searcher, finding a task obliges us to the chain check of
    /// `transition_from_searching`, which wakes the next sleeper for the rest. (Loom found the
    /// lost wake-up when this returned us as a non-searcher.)
    pub(crate) fn cancel_park(&self, index: usize) -> bool {
        let mut sleepers = self.sleepers();
        if !sleepers.remove(index) {
            return false;
        }
        self.state
            .fetch_add(SEARCHING_ONE.wrapping_sub(SLEEPING_ONE), Ordering::SeqCst);
        self.count_write();
        true
    }

    /// Blocks the calling worker, announced and past its re-check, until its token is set;
    /// where `announce_parked` said its membarrier was refused (`ordered` false), for at most
    /// `REFUSED_GRACE`: then it takes its announcement back (or consumes the token of a
    /// waker that chose it meanwhile) and returns a searcher, to look again, as a re-check
    /// that found work does. A wait of the whole grace settles the refusal
    /// (`Barrier::settle`). Either way the caller is a searcher when this returns.
    pub(crate) fn park_announced(&self, index: usize, ordered: bool) {
        #[cfg(not(flock_loom))]
        if !ordered {
            if self.parkers[index].park_timeout(REFUSED_GRACE) {
                return;
            }
            if !self.cancel_park(index) {
                self.park(index);
            }
            self.barrier.settle();
            return;
        }
        #[cfg(flock_loom)]
        debug_assert!(ordered, "the model membarrier is never refused");
        self.park(index);
    }

    /// Blocks the calling worker until its token is set.
    pub(crate) fn park(&self, index: usize) {
        self.parkers[index].park();
        #[cfg(all(test, not(flock_loom)))]
        hops::woke(&self.parkers[index]);
    }

    /// Hands worker `index` its wake-up token (a waker that listed it as woken).
    fn unpark(&self, index: usize) {
        #[cfg(all(test, not(flock_loom)))]
        hops::waking(&self.parkers[index]);
        self.parkers[index].unpark();
    }

    /// After pushing to the injector: wake one sleeper unless someone is searching (F1).
    pub(crate) fn notify_new_work(&self) {
        // F1: pairs with F2 (`announce_parked`) and with the fence in
        // `transition_from_searching`; see docs/protocol.md, "Why no wake-up is lost".
        fence(Ordering::SeqCst);
        let state = self.state.load(Ordering::Relaxed);
        if searching(state) == 0 && sleeping(state) > 0 {
            self.wake_one();
        }
    }

    /// After pushing `n` jobs to an injector at once (a batch): F1, then wake as many
    /// sleepers as there are jobs beyond the current searchers, up to all of them. Waking
    /// them together rather than through the searchers' chain (one at a time) is what a
    /// batch is for; it is not a herd, each woken worker has a job to find.
    pub(crate) fn notify_new_work_n(&self, n: usize) {
        if n <= 1 {
            return self.notify_new_work();
        }
        // F1, as in `notify_new_work`.
        fence(Ordering::SeqCst);
        let state = self.state.load(Ordering::Relaxed);
        if sleeping(state) > 0 && n as u64 > searching(state) {
            self.wake_n(n);
        }
    }

    /// Whether some worker is parked (or on its way to park). Relaxed: for a wake that only
    /// buys parallelism sooner, never for the promise.
    #[inline]
    pub(crate) fn anyone_asleep(&self) -> bool {
        sleeping(self.state.load(Ordering::Relaxed)) > 0
    }

    /// A searcher found a task and saw more work queued (`WorkerThread::stop_searching`):
    /// wakes up to `FINDER_WAKES` sleepers, as searchers, while the searchers stay within
    /// half of `workers` (the bound of `transition_to_searching`), and at least one when no
    /// worker searches. So a pool ramps up from idle doubling its awake workers each hop, as
    /// rayon's does (`work_found` wakes two), instead of one worker per hop; the bound and
    /// the need for visible work keep it from waking workers that would find nothing. With
    /// no searcher and a sleeper it wakes one, which is the promise of `wake_one` that the
    /// last searcher's chain check needs (docs/protocol.md, "The promise a searcher makes").
    #[cold]
    pub(crate) fn wake_for_found_work(&self, workers: usize) {
        let sleepers = self.sleepers();
        // SeqCst: with no searcher left we must wake one (the promise). The last searcher
        // comes here after its SeqCst decrement and fence (`transition_from_searching`), so
        // this load follows them in the single total order and reads a count no older than
        // any decrement ordered before them: a searcher that already stopped is not counted
        // on. (The fence alone would give that to a Relaxed load; SeqCst says it here, and
        // is a plain load on x86-64.) A finder that is not the last comes with no fence:
        // its wakes only buy parallelism sooner.
        let searchers = searching(self.state.load(Ordering::SeqCst)) as usize;
        let room = (workers / 2).max(1).saturating_sub(searchers);
        let take = FINDER_WAKES.min(room).min(sleepers.len());
        self.wake_listed(sleepers, take);
    }

    /// Wakes parked workers, making them searchers, until there are `n` searchers (or no
    /// sleeper is left). With no searcher and a sleeper this wakes at least one, so it keeps
    /// the promise of `wake_one`; with searchers, their chain covers what it leaves.
    #[cold]
    fn wake_n(&self, n: usize) {
        let sleepers = self.sleepers();
        // SeqCst: the callers come after F1 (`notify_new_work_n`, `notify_injected`),
        // so this load follows F1 in the single total order and sees every searcher's
        // decrement ordered before it; a searcher it still counts will fence after F1 and
        // re-check, seeing the work (the pairing of "Why no wake-up is lost"). Leaving out
        // the searchers it counts is what keeps this from a herd. A plain load on x86-64.
        let searchers = searching(self.state.load(Ordering::SeqCst)) as usize;
        let take = n.saturating_sub(searchers).min(sleepers.len());
        self.wake_listed(sleepers, take);
    }

    /// Wakes the last `take` listed sleepers: one RMW counts them all as searchers (so
    /// concurrent submitters skip waking), then, the lock released, each is unparked.
    fn wake_listed(&self, mut sleepers: OwnGuard<'_, Sleepers>, take: usize) {
        if take == 0 {
            return;
        }
        let woken = sleepers.take_last(take);
        let k = take as u64;
        self.state.fetch_add(
            (SEARCHING_ONE * k).wrapping_sub(SLEEPING_ONE * k),
            Ordering::SeqCst,
        );
        self.count_write();
        drop(sleepers);
        for index in woken {
            self.unpark(index);
        }
    }

    /// After a worker pushed onto its own deque (docs/protocol.md, "Local pushes and the
    /// asymmetric barrier"): with nobody asleep, one load and no fence; otherwise the test
    /// of `notify_new_work`, behind its F1, unless `UNFENCED` and a searcher let it skip
    /// F1. Returns whether someone was asleep, for `Stats::local_push_wake_checks`.
    /// `fenced`: the calling worker's count of fenced pushes that found a searcher.
    #[inline]
    pub(crate) fn notify_local_work(&self, fenced: &Cell<u32>) -> bool {
        // The light side: a compiler fence where parking workers issue a membarrier, else
        // a SeqCst fence. Either way this load sees `sleeping` of any worker whose re-check
        // could have missed our push.
        self.barrier.after_local_push();
        let state = self.state.load(Ordering::Relaxed);
        if sleeping(state) > 0 {
            // With `UNFENCED` and a searcher, no F1: the state change that leaves no
            // searcher issues the membarrier before its re-check (docs/protocol.md, "Pushes
            // that rely on a searcher's membarrier").
            if state & UNFENCED == 0 || searching(state) == 0 {
                self.notify_local_work_cold(fenced);
            }
            return true;
        }
        false
    }

    /// After a submitter pushed one job onto an injector, in a pool without a lane reserve:
    /// the light side of the asymmetric barrier, as after a local push. A parking worker's
    /// membarrier orders every thread of the process, not only the workers, and its re-check
    /// reads the injectors as it reads the deques, so the argument of docs/protocol.md's "Local
    /// pushes and the asymmetric barrier" holds for any pusher: F1 is paid only when
    /// someone sleeps.
    ///
    /// With someone asleep, `queued` (the jobs queued in the lane after this push) decides
    /// whether a searcher is enough: a submit wakes one sleeper when no worker searches (as
    /// `notify_new_work`), and also when the searchers are fewer than the queued jobs. A burst
    /// of submits from one thread then wakes a second worker from the submitter as soon as a
    /// second job waits, instead of from the first worker once it found work (the searchers'
    /// chain), whose wake can queue behind its waker until the waker goes idle where CPUs are
    /// few (the `burst` workload). Still at most one wake per submit, and only for a job
    /// that no awake searcher is there to take.
    #[inline]
    pub(crate) fn notify_injected(&self, queued: impl FnOnce() -> usize) {
        // The light side of the barrier, as in `notify_local_work`.
        self.barrier.after_local_push();
        if sleeping(self.state.load(Ordering::Relaxed)) > 0 {
            self.notify_injected_cold(queued);
        }
    }

    #[cold]
    fn notify_injected_cold(&self, queued: impl FnOnce() -> usize) {
        // F1: as in `notify_new_work` (someone sleeps, so a searcher may hold the promise for
        // our job, and its re-check must see the push).
        fence(Ordering::SeqCst);
        let state = self.state.load(Ordering::Relaxed);
        if sleeping(state) == 0 {
            return;
        }
        let searchers = searching(state);
        if searchers == 0 {
            // Exactly `notify_new_work`'s wake: all that "no lost wake-up" needs.
            self.wake_one();
        } else if queued() as u64 > searchers {
            // One more than the searchers we saw: `wake_n` re-reads them under the lock, so
            // this wakes at most one, and none if a searcher appeared meanwhile.
            self.wake_n(searchers as usize + 1);
        }
    }

    #[cold]
    fn notify_local_work_cold(&self, fenced: &Cell<u32>) {
        // F1 (`notify_new_work`): someone sleeps, so a searcher may hold the promise for
        // our job, and its re-check must see the push as it sees a submitter's.
        fence(Ordering::SeqCst);
        let state = self.state.load(Ordering::Relaxed);
        if searching(state) == 0 {
            if sleeping(state) > 0 {
                self.wake_one();
            }
            return;
        }
        // A searcher holds the promise. After enough pushes like this one, ask for the
        // membarrier in its place: only where parks issue it (with fences, the light side
        // already fenced).
        if !self.barrier.heavy() || state & UNFENCED != 0 {
            return;
        }
        let n = fenced.get() + 1;
        if n < FENCED_BEFORE_UNFENCED {
            fenced.set(n);
            return;
        }
        fenced.set(0);
        // Relaxed: the flag only adds an obligation for the searcher that leaves last (which
        // reads it in its own RMW); our later pushes rely on it only once their load reads it.
        self.state.fetch_or(UNFENCED, Ordering::Relaxed);
        self.count_write();
    }

    /// Wakes worker `index` if it is parked (listed), making it a searcher: a latch it
    /// waits on was set (`latch::Wake`). If it is not listed it is awake, or a waker chose
    /// it and its unpark is on the way; either way it re-reads its latch before it parks
    /// again, so there is nothing to do (and an unpark now would leave a stray token).
    #[cold]
    pub(crate) fn wake_specific(&self, index: usize) {
        let mut sleepers = self.sleepers();
        if !sleepers.remove(index) {
            return;
        }
        // As in `wake_one`: counted as a searcher from now on.
        self.state
            .fetch_add(SEARCHING_ONE.wrapping_sub(SLEEPING_ONE), Ordering::SeqCst);
        self.count_write();
        drop(sleepers);
        self.unpark(index);
    }

    /// Wakes one parked worker, making it a searcher, unless a searcher exists. Returns whether
    /// it woke one.
    #[cold]
    pub(crate) fn wake_one(&self) -> bool {
        let mut sleepers = self.sleepers();
        if searching(self.state.load(Ordering::SeqCst)) > 0 {
            return false;
        }
        let Some(index) = sleepers.pop() else {
            return false;
        };
        // One RMW: the woken worker counts as a searcher from now on, so concurrent
        // submitters skip waking (no herd).
        self.state
            .fetch_add(SEARCHING_ONE.wrapping_sub(SLEEPING_ONE), Ordering::SeqCst);
        self.count_write();
        drop(sleepers);
        self.unpark(index);
        true
    }

    /// Wakes every parked worker (shutdown, exit, resume, resize).
    #[cold]
    pub(crate) fn wake_all(&self) {
        let sleepers = self.sleepers();
        let all = sleepers.len();
        self.wake_listed(sleepers, all);
    }

    /// Whether a completed membarrier covers the current era.
    #[cfg(all(test, not(flock_loom)))]
    pub(crate) fn era_covered(&self) -> bool {
        self.sleepers().era_covered()
    }

    #[cfg(all(test, not(flock_loom)))]
    pub(crate) fn counts(&self) -> (u64, u64) {
        let s = self.state.load(Ordering::SeqCst);
        (searching(s), sleeping(s))
    }
}

/// A one-token parker: `unpark` before `park` is remembered.
///
/// Built on std's mutex and condvar (futexes on the parker's own words on Linux), not
/// `parking_lot`'s, whose waiters sit in a process-wide table: a process that forks while its
/// workers sleep there leaves their entries in the child's copy of the table, and the child's
/// new threads, whose stacks glibc hands out again at the same addresses, then link into
/// them and loop forever (the hang `tests/fork.rs` showed, in `unpark_requeue`). Under loom,
/// loom's.
pub(crate) struct Parker {
    token: ParkMutex<bool>,
    cond: ParkCondvar,
    /// In tests: the wake-ups between an outside thread and this worker's last wake
    /// (`hops`).
    #[cfg(all(test, not(flock_loom)))]
    hops: std::sync::atomic::AtomicU32,
}

/// In tests: how many wake-ups lie between an outside thread and each worker's last wake,
/// so a test can see how a pool ramps up from idle (one wake in flight at a time makes the
/// last of `W` workers `W - 1` hops away; a doubling ramp, about log2 `W`).
#[cfg(all(test, not(flock_loom)))]
pub(crate) mod hops {
    use super::Parker;
    use std::cell::Cell;
    use std::sync::atomic::Ordering::Relaxed;

    thread_local! {
        /// This thread's hops: 0 outside the pool, the waker's plus one on a worker.
        static HOPS: Cell<u32> = const { Cell::new(0) };
    }

    /// The calling thread's hops from an outside thread.
    pub(crate) fn here() -> u32 {
        HOPS.with(Cell::get)
    }

    /// Before the calling thread unparks `parker`'s worker.
    pub(super) fn waking(parker: &Parker) {
        parker.hops.store(here() + 1, Relaxed);
    }

    /// After the calling worker was unparked.
    pub(super) fn woke(parker: &Parker) {
        HOPS.with(|h| h.set(parker.hops.load(Relaxed)));
    }
}

#[cfg(flock_loom)]
use loom::sync::{Condvar as ParkCondvar, Mutex as ParkMutex, MutexGuard as OwnGuard};
#[cfg(not(flock_loom))]
use std::sync::{Condvar as ParkCondvar, Mutex as ParkMutex, MutexGuard as OwnGuard};
/// The mutex of the sleep state's own locks: std's (loom's), like the parkers'.
use ParkMutex as OwnMutex;

/// Locks `mutex`. No user code runs under these locks, so a poisoned one is as good as a
/// clean one.
fn lock<T>(mutex: &OwnMutex<T>) -> OwnGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Parker {
    pub(crate) fn new() -> Parker {
        Parker {
            token: ParkMutex::new(false),
            cond: ParkCondvar::new(),
            #[cfg(all(test, not(flock_loom)))]
            hops: std::sync::atomic::AtomicU32::new(0),
        }
    }

    pub(crate) fn park(&self) {
        // No user code runs under this lock, so a poisoned one is as good as a clean one.
        let mut token = self.token.lock().unwrap_or_else(PoisonError::into_inner);
        while !*token {
            token = self
                .cond
                .wait(token)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *token = false;
    }

    /// `park` for at most `timeout`; whether it took a token.
    #[cfg(not(flock_loom))]
    fn park_timeout(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut token = self.token.lock().unwrap_or_else(PoisonError::into_inner);
        while !*token {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            token = self
                .cond
                .wait_timeout(token, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *token = false;
        true
    }

    pub(crate) fn unpark(&self) {
        let mut token = self.token.lock().unwrap_or_else(PoisonError::into_inner);
        *token = true;
        self.cond.notify_one();
    }
}

#[cfg(all(test, not(flock_loom)))]
mod tests {
    use super::*;

    #[test]
    fn searchers_are_capped_at_half_the_workers() {
        let sleep = Sleep::new(4, true);
        assert!(sleep.transition_to_searching(4));
        assert!(sleep.transition_to_searching(4));
        assert!(
            !sleep.transition_to_searching(4),
            "two of four already search"
        );
        assert_eq!(sleep.counts(), (2, 0));
        assert!(!sleep.transition_from_searching());
        assert!(
            sleep.transition_from_searching(),
            "the last searcher is told so"
        );
        assert_eq!(sleep.counts(), (0, 0));
    }

    #[test]
    fn a_wake_moves_one_sleeper_to_searching_and_leaves_a_token() {
        let sleep = Sleep::new(2, true);
        assert!(sleep.transition_to_searching(2));
        assert!(sleep.announce_parked(0, true));
        assert!(sleep.announce_parked(1, false));
        assert_eq!(sleep.counts(), (0, 2));
        assert!(sleep.wake_one());
        assert_eq!(sleep.counts(), (1, 1));
        assert!(
            !sleep.wake_one(),
            "no second wake while someone searches: no herd"
        );
        // The woken worker (1, the last listed) was already chosen: cancelling reports that,
        // and its token is there to consume, so `park` returns at once.
        assert!(!sleep.cancel_park(1));
        sleep.park(1);
        // Worker 0 is still listed and can take its announcement back, as a searcher.
        assert!(sleep.cancel_park(0));
        assert_eq!(sleep.counts(), (2, 0));
    }

    #[test]
    fn wake_all_empties_the_sleeper_list() {
        let sleep = Sleep::new(3, true);
        for i in 0..3 {
            assert!(sleep.announce_parked(i, false));
        }
        sleep.wake_all();
        assert_eq!(sleep.counts(), (3, 0));
        for i in 0..3 {
            sleep.park(i); // each token was set
        }
    }

    /// An outside submit wakes at most one sleeper: with no searcher always one (the lone
    /// job's wake, whatever the queue's length reads), with searchers one only while they
    /// are fewer than the queued jobs.
    #[test]
    fn an_outside_submit_wakes_at_most_one_and_only_for_jobs_beyond_the_searchers() {
        let sleep = Sleep::new(4, true);
        for i in 0..4 {
            assert!(sleep.announce_parked(i, false));
        }
        assert_eq!(sleep.counts(), (0, 4));
        // No searcher: one wake, even if a worker took the job already (length 0).
        sleep.notify_injected(|| 0);
        assert_eq!(sleep.counts(), (1, 3));
        // One searcher, one job: it is the searcher's.
        sleep.notify_injected(|| 1);
        assert_eq!(sleep.counts(), (1, 3));
        // One searcher, five jobs: one more, not four.
        sleep.notify_injected(|| 5);
        assert_eq!(sleep.counts(), (2, 2), "at most one wake per submit");
        sleep.notify_injected(|| 5);
        assert_eq!(sleep.counts(), (3, 1));
        // Three searchers, three jobs: nobody.
        sleep.notify_injected(|| 3);
        assert_eq!(sleep.counts(), (3, 1));
        for i in 1..4 {
            sleep.park(i); // the woken workers' tokens were set
        }
    }

    /// Parks of a pool built with `membarrier(false)` issue no membarrier (its pushes fence
    /// instead); those of a default one-worker pool, where the kernel grants it, issue one
    /// each (with one worker, every park starts an era). Reads
    /// the sleep state, not `Stats::parks`, which builds without the `stats` feature lack.
    #[test]
    fn only_a_pool_that_uses_the_membarrier_issues_it_when_parking() {
        use std::time::{Duration, Instant};
        const TASKS: usize = if cfg!(miri) { 5 } else { 20 };
        /// Runs `TASKS` tasks on `pool`'s only worker, each time waiting until `parked` says
        /// the worker went back to sleep.
        fn tasks_each_followed_by_a_park(pool: &crate::Pool, parked: &dyn Fn(usize) -> bool) {
            for i in 0..TASKS {
                pool.spawn(|| ()).join().unwrap();
                let deadline = Instant::now() + Duration::from_secs(10);
                while !parked(i) {
                    assert!(Instant::now() < deadline, "the worker never parked again");
                    std::thread::yield_now();
                }
            }
        }
        let build = |membarrier| {
            crate::Pool::builder()
                .workers(1)
                .spin_limit(0)
                .membarrier(membarrier)
                .build()
                .unwrap()
        };
        let fenced = build(false);
        assert!(!fenced.uses_membarrier());
        let sleep = &fenced.registry().sleep;
        // The spawn's wake took the worker off the sleeper list (`wake_listed`) before
        // `join` returned, so a listed sleeper now is the worker back in `announce_parked`,
        // which runs the heavy side (`barrier_before_recheck`) at once.
        tasks_each_followed_by_a_park(&fenced, &|_| sleep.counts().1 == 1);
        assert_eq!(sleep.barrier.issued(), 0);

        let heavy = build(true);
        if heavy.uses_membarrier() {
            let barrier = &heavy.registry().sleep.barrier;
            let first = barrier.issued();
            // One more membarrier after each task: the worker's park.
            tasks_each_followed_by_a_park(&heavy, &|i| barrier.issued() > first + i);
        } else {
            // Not Linux, an old kernel, a seccomp filter, Miri: only the fenced half ran.
            eprintln!("no expedited membarrier here: the heavy half was not checked");
        }
    }

    /// One membarrier per era: while some worker stays asleep, a worker that wakes for a task
    /// and parks again issues none (docs/protocol.md, "One membarrier per era"). Four
    /// workers and one task at a time: each task wakes one worker, so three stay listed and
    /// the era the first parks' membarrier covered never ends.
    #[test]
    fn parks_within_a_covered_era_issue_no_membarrier() {
        use std::time::{Duration, Instant};
        const TASKS: usize = if cfg!(miri) { 3 } else { 20 };
        let pool = crate::Pool::builder()
            .workers(4)
            .spin_limit(0)
            .build()
            .unwrap();
        if !pool.uses_membarrier() {
            eprintln!("no expedited membarrier here: nothing to check");
            return;
        }
        let sleep = &pool.registry().sleep;
        let all_parked_and_covered = || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while sleep.counts().1 != 4 || !sleep.era_covered() {
                assert!(Instant::now() < deadline, "the workers never all parked");
                std::thread::yield_now();
            }
        };
        all_parked_and_covered();
        let first = sleep.barrier.issued();
        assert!(first >= 1, "the first park of the pool issues one");
        for _ in 0..TASKS {
            pool.spawn(|| ()).join().unwrap();
            all_parked_and_covered();
        }
        assert_eq!(
            sleep.barrier.issued(),
            first,
            "a worker parking again while three others sleep issued a membarrier"
        );
    }

    /// A probe, run by hand: how many wake-ups lie between the submitting thread and each
    /// worker when a pool ramps up from idle. One task from outside forks (by `join`) into
    /// as many leaves as workers, each of which blocks until every leaf has started, so every
    /// worker must be woken. Prints, by pool size, the hops of the last worker woken
    /// (median and range of the rounds) and the wake-ups counted.
    /// `cargo test --release -p flock-pool --lib ramp_hops -- --ignored --nocapture`
    #[test]
    #[ignore = "a probe that prints counts; run by hand"]
    fn ramp_hops() {
        use std::sync::{Arc, Barrier, Mutex};
        use std::time::{Duration, Instant};
        fn tree(leaves: usize, barrier: &Barrier, seen: &Mutex<Vec<u32>>) {
            if leaves == 1 {
                seen.lock().unwrap().push(hops::here());
                barrier.wait();
            } else {
                let half = leaves / 2;
                crate::join(
                    || tree(half, barrier, seen),
                    || tree(leaves - half, barrier, seen),
                );
            }
        }
        const ROUNDS: usize = 15;
        for workers in [2, 4, 8, 16] {
            let (mut last, mut wakes) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let pool = crate::Pool::builder().workers(workers).build().unwrap();
                let sleep = &pool.registry().sleep;
                let deadline = Instant::now() + Duration::from_secs(10);
                while sleep.counts().1 != workers as u64 {
                    assert!(Instant::now() < deadline, "the workers never all parked");
                    std::thread::sleep(Duration::from_millis(1));
                }
                let before = pool.stats().wakeups;
                let barrier = Arc::new(Barrier::new(workers));
                let seen = Arc::new(Mutex::new(Vec::new()));
                let (b, s) = (barrier.clone(), seen.clone());
                pool.spawn(move || tree(workers, &b, &s)).join().unwrap();
                let seen = seen.lock().unwrap();
                last.push(*seen.iter().max().unwrap());
                wakes.push(pool.stats().wakeups - before);
                pool.shutdown().unwrap();
            }
            last.sort_unstable();
            wakes.sort_unstable();
            println!(
                "ramp {workers:2} workers: hops to the last worker median {} ({}-{}), wake-ups median {} ({}-{}), {ROUNDS} rounds",
                last[ROUNDS / 2],
                last[0],
                last[ROUNDS - 1],
                wakes[ROUNDS / 2],
                wakes[0],
                wakes[ROUNDS - 1],
            );
        }
    }
}
