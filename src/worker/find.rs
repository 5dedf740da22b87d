//! Finding work, the worker's side of the queues: the bundle we took up last, our own deque,
//! the submitter's ring we took our last job from, our join halves, the broadcast mailbox,
//! the lane's shared queue (the bundles on its front, then its rings and injector; taking up
//! a bundle found there), then the other workers' join deques and deques. With several lanes, start-time fair queueing picks
//! the lane first (`find_work_in_lanes`), or strict priority (`worker/priority.rs`), and
//! `yield_to_lanes` serves heavier lanes from inside a task.
//! What is found is run by `worker/execute.rs`.

use super::WorkerThread;
use crate::deque::Steal;
use crate::job::{Bundle, Job, BUNDLE};
use crate::metrics::counters::{LaneStat, Stat};
use crate::registry::Crew;
use crate::submitq::INJECTOR;
use crate::sync::{canary, Arc, Canary};

/// Every lane, as a set of lanes (bit `lane`) for `fair_lane` and `steal_among`.
const ALL_LANES: u32 = u32::MAX;

impl WorkerThread {
    /// The bundle we took up last, then our own deque, then (one lane) the submitter's ring
    /// we took our last job from, if our join deque and mailbox are empty; then our join
    /// halves, the broadcast mailbox, the lane's shared queue (the bundles on its front, then
    /// the submitters' rings and the injector, one job at a time), then the other workers' join deques and deques from a
    /// random victim. `Steal::Retry` is retried, never taken for empty. With several lanes,
    /// the lane to serve is chosen first (`find_work_in_lanes`; by priority level, stealing
    /// included, in a strict-priority pool: `find_work_by_priority`). Returns the job and its
    /// lane.
    #[inline]
    pub(crate) fn find_work(&self) -> Option<(Job, usize)> {
        // A job kept from a pause first: it was taken before anything we take now.
        if self.kept.any() {
            return self.take_kept();
        }
        if self.locals.len() == 1 {
            // The common case first: the bundle we hold, then what we pushed ourselves, then
            // the submitter's ring we took our last job from.
            if let Some(job) = self.claim_taken(0).or_else(|| self.pop_own(0)) {
                return Some((job, 0));
            }
            if let Some(job) = self.take_held_ring() {
                return Some((job, 0));
            }
        }
        self.find_work_beyond_own()
    }

    /// The next job of the submitter's ring we took our last job from (one-lane pools), if
    /// we still hold it: `find_work_beyond_own` would look at our join deque and the
    /// broadcast mailbox first, so we do too (two loads), and then it would scan every
    /// source of the lane. Held for `HOLD_TAKES` takes at most (`worker/taker.rs`), so the
    /// other rings and the injector are looked at too.
    #[inline]
    fn take_held_ring(&self) -> Option<Job> {
        let ring = self.taker.held_ring();
        if ring == INJECTOR {
            return None;
        }
        let left = self.taker.held_left();
        // The front of the lane's shared queue (the rest of a batch taken up) comes before
        // every ring: `take_from_lane_shared` looks there first.
        if left == 0
            || !self.joins.is_empty()
            || self.registry.queues.mailboxes().has(self.index)
            || !self.registry.queues.lane(0).shared().front_is_empty()
        {
            self.taker.let_go_of_ring();
            return None;
        }
        let shared = self.registry.queues.lane(0).shared();
        if let Some((first, second)) = shared.steal_ring_two(ring) {
            return self.took_two(first, second, left);
        }
        match shared.steal_ring(ring) {
            Some(job) if job.flags() & BUNDLE == 0 => {
                self.taker.took_from_ring(left);
                Some(job)
            }
            Some(entry) => {
                self.taker.let_go_of_ring();
                self.take_up(entry, 0)
            }
            None => {
                self.taker.let_go_of_ring();
                None
            }
        }
    }

    /// Two jobs claimed with one CAS from the ring we hold (`steal_ring_two`): the first is
    /// ours to run; the second goes where every other worker can take it and every re-check
    /// reads it, announced as any push (docs/protocol.md, "FIFO within a lane"): below
    /// everything on our own deque, in its slot (`TaskDeque::push_oldest`; our deque is
    /// empty here, since `find_work` pops it first), which we take back with one CAS before
    /// we take anything else of the lane, so on this worker the two start in their order
    /// (thieves take the slot before the deque); a bundle's entry onto the front of the
    /// lane's shared queue, as `take_up` puts one (entries never go to a deque). A first job
    /// that is a bundle's entry is taken up before the second is put anywhere, so that its
    /// rest goes on the front ahead of the second. Out of line and cold, so that the single
    /// take stays the straight path of `take_held_ring` (the build whose figures
    /// docs/bench.md gives).
    #[cold]
    fn took_two(&self, first: Job, second: Job, left: u32) -> Option<Job> {
        let run = if first.flags() & BUNDLE == 0 {
            self.taker.took_from_ring(left);
            Some(first)
        } else {
            self.taker.let_go_of_ring();
            self.take_up(first, 0)
        };
        if second.flags() & BUNDLE != 0 {
            // No worker that looked at the queues since our CAS saw it.
            let bundle = second.into_bundle();
            let rest = bundle.remaining();
            self.put_on_front(0, bundle, rest);
        } else {
            self.locals[0].push_oldest(second);
            // The light side and the state test of a local push: a task we run may block
            // until `second` has run, so a sleeping worker must see it, as after
            // `push_local` (the `claim` canary drops this to prove the loom model needs it).
            if !canary(Canary::Claim) {
                self.notify_local_work();
            }
        }
        // Only if the first was a bundle whose jobs were all claimed: run the second.
        run.or_else(|| self.pop_own(0))
    }

    /// An entry of our join deque (a join half or a scope task), as a `Job`, for the paths
    /// that take any job: `flock::yield_now` (`run_one_task`) and a paused waiting worker's
    /// search (`find_spawned_work`). The worker loop and `wait_until_cold` pop the join
    /// deque themselves, first, and run what they find on the two-word path
    /// (`execute_ref`), so here it is usually empty.
    #[inline]
    pub(super) fn pop_join_as_job(&self) -> Option<(Job, usize)> {
        if self.joins.is_empty() {
            return None; // the common case: no call into the deque
        }
        self.pop_join().map(|job| (job.into_job(), 0))
    }

    /// `find_work` once our own deque (of a one-lane pool) is empty, or with lanes. Out of
    /// line: checking the broadcast mailbox before our own deque cost a spawned scope task
    /// ~50 instructions (callgrind, scripts/callgrind.sh: 380.6 against 358.9 now).
    #[inline(never)]
    fn find_work_beyond_own(&self) -> Option<(Job, usize)> {
        self.shard().stats.stat_owned(Stat::Searches, 1);
        // Our join deque (see `pop_join_as_job`).
        if let Some(found) = self.pop_join_as_job() {
            return Some(found);
        }
        // A `Pool::broadcast` call for this worker only (one Relaxed load when none): before
        // the shared queues, so work from outside cannot hold it back; after our own deque,
        // as rayon's broadcasts (a worker runs them when it next runs out of its own tasks).
        if let Some(job) = self.registry.queues.mailboxes().take(self.index) {
            return Some((job, 0));
        }
        if self.locals.len() > 1 {
            return match &self.priority {
                None => self.find_work_in_lanes(),
                Some(priority) => self.find_work_by_priority(priority),
            };
        }
        self.take_from_lane_shared(0)
            .map(|job| (job, 0))
            .or_else(|| self.steal_from_others())
    }

    /// Whether `lane` has work for us without stealing: in the bundle we claim from, our
    /// deque or its shared queue.
    fn lane_has_work(&self, lane: usize) -> bool {
        !(self.locals[lane].is_empty() && self.registry.queues.lane(lane).shared().is_empty())
            || self.taker.has_left(lane)
    }

    /// Whether a lane of `set` (bit `lane`) has work for us without stealing (`lane_has_work`).
    pub(super) fn level_has_work(&self, set: u32) -> bool {
        (0..self.locals.len()).any(|lane| in_set(set, lane) && self.lane_has_work(lane))
    }

    /// Start-time fair queueing over the lanes, per worker: among the lanes with work in our
    /// bundle, deque or their shared queue, serve the one whose virtual clock is furthest behind;
    /// lanes with no work are brought up to that clock (an idle lane saves no credit, so
    /// when it gets busy it is served at once but cannot then crowd the others out).
    #[inline(never)]
    fn find_work_in_lanes(&self) -> Option<(Job, usize)> {
        if let Some((best, idle)) = self.fair_lane(ALL_LANES) {
            if let Some(job) = self.take_from_lane(best) {
                return Some((job, best));
            }
            // Emptied by thieves meanwhile: any other lane that had work.
            for lane in 0..self.locals.len() {
                if lane != best && idle & (1 << lane) == 0 {
                    if let Some(job) = self.take_from_lane(lane) {
                        return Some((job, lane));
                    }
                }
            }
        }
        self.steal_from_others()
    }

    /// The fair-queueing choice of `find_work_in_lanes` among the lanes of `set` (bit `lane`:
    /// `ALL_LANES` in a weighted pool, one priority level in a strict one): the lane to serve,
    /// and the lanes of `set` that had no work (brought up to its clock). Inline, so that the
    /// weighted pick's `set` is a constant and `in_set` folds away.
    #[inline(always)]
    pub(super) fn fair_lane(&self, set: u32) -> Option<(usize, u32)> {
        let vt = self.clock.vtime();
        let mut best: Option<usize> = None;
        let mut idle = 0u32;
        for lane in 0..self.locals.len() {
            if !in_set(set, lane) {
                continue;
            }
            if !self.lane_has_work(lane) {
                idle |= 1 << lane;
            } else if best.is_none_or(|b| behind(vt[lane].get(), vt[b].get())) {
                best = Some(lane);
            }
        }
        let best = best?;
        let floor = vt[best].get();
        for (lane, clock) in vt.iter().enumerate() {
            if idle & (1 << lane) != 0 && behind(clock.get(), floor) {
                clock.set(floor);
            }
        }
        Some((best, idle))
    }

    #[inline]
    pub(super) fn take_from_lane(&self, lane: usize) -> Option<Job> {
        if let Some(job) = self.claim_taken(lane).or_else(|| self.pop_own(lane)) {
            return Some(job);
        }
        self.take_from_lane_shared(lane)
    }

    /// `take_from_lane` once our bundle and deque are empty: the lane's shared queue, its
    /// front first (kept out of line, so the common pop pays no large frame).
    #[inline(never)]
    fn take_from_lane_shared(&self, lane: usize) -> Option<Job> {
        if let Some(job) = self.claim_front(lane) {
            return Some(job);
        }
        loop {
            let entry = self.steal_from_injector(lane)?;
            if entry.flags() & BUNDLE == 0 {
                return Some(entry);
            }
            if let Some(job) = self.take_up(entry, lane) {
                return Some(job);
            }
            // An emptied bundle's entry: look again, from the top.
            if let Some(job) = self.claim_taken(lane).or_else(|| self.pop_own(lane)) {
                return Some(job);
            }
        }
    }

    /// The most recent job on our deque of `lane` (never a bundle's entry: those stay in
    /// the shared queues, `take_up`).
    #[inline]
    pub(super) fn pop_own(&self, lane: usize) -> Option<Job> {
        let local = &self.locals[lane];
        // `looks_empty` (two loads and our own flag, inline) first: between tasks from
        // outside our deque is empty, and an empty `pop` is a call into crossbeam (callgrind:
        // ~20 instructions an outside task). Only we push here, so when it says empty, `pop`
        // would find nothing; a job in the slot that a thief took since is `pop`'s to notice.
        // (Not under loom, where the model's load would be one more step in every model.)
        if !cfg!(flock_loom) && local.looks_empty() {
            return None;
        }
        local.pop()
    }

    /// The next job of the bundle we took up or claimed from last in `lane`, if it has one
    /// left (others claim from it too, through the front of the shared queue); an emptied
    /// bundle is let go.
    #[inline]
    fn claim_taken(&self, lane: usize) -> Option<Job> {
        if !self.taker.holds(lane) {
            return None; // the common case: no bundle taken up in this lane
        }
        self.claim_taken_cold(lane)
    }

    /// `claim_taken` once we hold a bundle: out of line, so the common take pays no frame
    /// for it.
    #[inline(never)]
    fn claim_taken_cold(&self, lane: usize) -> Option<Job> {
        if let Some(job) = self.taker.claim(lane) {
            self.count_claim(lane);
            return Some(job);
        }
        if let Some(done) = self.taker.let_go(lane) {
            self.registry.release_bundle(done);
        }
        None
    }

    /// The next job of the oldest bundle on the front of `lane`'s shared queue (the rest of
    /// a batch another worker took up, `take_up`), keeping a handle to claim the next ones
    /// from (`claim_taken`).
    fn claim_front(&self, lane: usize) -> Option<Job> {
        let reg = &*self.registry;
        let (job, bundle) = reg
            .queues
            .lane(lane)
            .shared()
            .claim_front(|emptied| reg.bundle_entry_dropped(lane, emptied))?;
        self.count_claim(lane);
        self.hold(lane, bundle);
        Some(job)
    }

    /// Claims the rest of `bundle` through our handle from now on (`claim_taken`).
    fn hold(&self, lane: usize, bundle: Arc<Bundle>) {
        if let Some(previous) = self.taker.hold(lane, bundle) {
            self.registry.release_bundle(previous);
        }
    }

    /// A bundle's entry just taken from `lane`'s shared queue: claims its next job and, if jobs
    /// are left, puts the bundle on the front of the lane's shared queue, where every worker
    /// looks before the rest of that queue (so the batch is not overtaken by what its
    /// submitter queued after it: "FIFO within a lane"), and keeps a handle to claim the
    /// rest from (`claim_taken`): one claim per job instead of a push and a pop (and the
    /// pop's fence) per job. `None` if all its jobs were claimed already.
    ///
    /// Never lost: while a bundle has jobs left, its one entry is in a queue (or in the hands
    /// of a worker here, which puts it back before it runs anything), so a worker that runs
    /// a long task, or waits for one of its siblings, leaves them to the others, as a deque
    /// would. The entry is put back before the wake (F1 of docs/protocol.md, as in
    /// `submit_local_batch`).
    fn take_up(&self, entry: Job, lane: usize) -> Option<Job> {
        let reg = &*self.registry;
        let bundle = entry.into_bundle();
        let Some(job) = bundle.claim() else {
            reg.bundle_entry_dropped(lane, bundle);
            return None;
        };
        self.count_claim(lane);
        let rest = bundle.remaining();
        if rest == 0 {
            reg.bundle_entry_dropped(lane, bundle);
            return Some(job);
        }
        // A worker that looked at the queues between our take and this push may have gone to
        // sleep, and the next job we run may wait for one of its siblings.
        self.put_on_front(lane, bundle.clone(), rest);
        self.hold(lane, bundle);
        Some(job)
    }

    /// Puts a bundle's entry we took from `lane`'s shared queue, with `rest` jobs left to
    /// claim, on the front of that queue, then F1 and wakes for them (`notify_new_work_n`):
    /// a worker may have looked at the queues while we held it, found nothing, and gone to
    /// sleep.
    fn put_on_front(&self, lane: usize, bundle: Arc<Bundle>, rest: usize) {
        let reg = &*self.registry;
        reg.queues.lane(lane).shared().put_front(bundle);
        reg.sleep.notify_new_work_n(rest);
    }

    fn count_claim(&self, lane: usize) {
        self.shard().stats.lane_owned(LaneStat::Claimed, lane, 1);
    }

    /// `flock::yield_to_lanes` on this worker, from inside a task of the running lane: while
    /// a lane weighted above it has work in our deque or its shared queue and its virtual
    /// clock is behind ours (our lane's clock as if the running task ended now, charged its
    /// own time so far), run one task of the lane furthest behind. So the heavier lanes get
    /// their share of the running task's time, no more: a lane of weight 8 against one of
    /// weight 1 gets up to 8 ns per ns the task has run. Returns how many tasks ran.
    ///
    /// Nesting is bounded: a task run here is of a strictly heavier lane, so at most one
    /// level per distinct weight (16 lanes at most). Nothing from outside starts while the
    /// pool is paused (`execute_unless_paused` re-reads the pause after taking the job).
    /// In a strict-priority pool, every queued task of the heavier lanes instead
    /// (`yield_by_priority`).
    pub(crate) fn yield_to_lanes(&self) -> usize {
        let lanes = self.locals.len();
        if lanes < 2 {
            return 0;
        }
        if let Some(priority) = &self.priority {
            return self.yield_by_priority(priority);
        }
        let reg = &*self.registry;
        let running = self.clock.lane();
        let weight = reg.cfg.lanes[running].1;
        let vt = self.clock.vtime();
        let mut ran = 0;
        loop {
            // First what is cheap: is any heavier lane's queue non-empty?
            let mut heavier = 0u32;
            for lane in 0..lanes {
                if reg.cfg.lanes[lane].1 > weight && self.lane_has_work(lane) {
                    heavier |= 1 << lane;
                }
            }
            if heavier == 0 || Crew::paused(reg.crew.control()) {
                return ran;
            }
            let own = self.clock.own_ns(reg.now_ns());
            let ours = vt[running]
                .get()
                .wrapping_add(own.clamp(1, 1 << 40) * reg.queues.lane(running).stride());
            let mut due: Option<usize> = None;
            for lane in (0..lanes).filter(|l| heavier & (1 << l) != 0) {
                if behind(vt[lane].get(), ours)
                    && due.is_none_or(|d| behind(vt[lane].get(), vt[d].get()))
                {
                    due = Some(lane);
                }
            }
            let Some(lane) = due else {
                return ran;
            };
            let Some(job) = self.take_from_lane(lane) else {
                return ran;
            };
            if !self.execute_unless_paused(job, lane) {
                return ran;
            }
            ran += 1;
        }
    }

    /// Charges `ns` of run time to `lane`'s virtual clock.
    pub(super) fn charge(&self, lane: usize, ns: u64) {
        self.clock
            .charge(lane, ns, self.registry.queues.lane(lane).stride());
    }

    /// The oldest entry of `lane`'s shared queue. One at a time, never a batch into our
    /// deque: a batch would sit behind the task we are about to run while idle workers take
    /// younger tasks (and our own pops run it newest first), so tasks of a lane would no
    /// longer start in the order they were submitted (tests/fifo.rs; threadpool's
    /// `test_shrink`). Bulk submissions keep their amortisation through bundles, whose rest
    /// waits on the queue's front (`take_up`); a worker that holds a ring claims two at
    /// most, and only from there (`take_held_ring`, `took_two`).
    fn steal_from_injector(&self, lane: usize) -> Option<Job> {
        let start = self.taker.next_probe();
        // Counted in `execute` (the `INJECTED` flag).
        let (job, source) = self
            .registry
            .queues
            .lane(lane)
            .shared()
            .steal_noting(start)?;
        if self.locals.len() == 1 {
            // Look there first next time (`take_held_ring`); `INJECTOR` holds nothing.
            self.taker.hold_ring(source);
        }
        Some(job)
    }

    /// One task from another worker's deque: victims from a random start, lanes in order.
    #[inline(never)]
    pub(super) fn steal_from_others(&self) -> Option<(Job, usize)> {
        self.steal_among(true, ALL_LANES)
    }

    /// `steal_from_others` from the victims' join deques if `joins` and their deques of the
    /// lanes in `set` (bit `lane`) only. Inline, so `steal_from_others`' arguments are
    /// constants and its tests fold away.
    #[inline(always)]
    pub(super) fn steal_among(&self, joins: bool, set: u32) -> Option<(Job, usize)> {
        let reg = &*self.registry;
        let lanes = self.locals.len();
        let n = reg.crew.shown_slots();
        if n < 2 {
            return None;
        }
        let start = self.taker.next_random() as usize % n;
        loop {
            let mut retry = false;
            for k in 0..n {
                let victim = (start + k) % n;
                if victim == self.index {
                    continue;
                }
                self.shard().stats.stat_owned(Stat::VictimsScanned, 1);
                // Its join halves first: the oldest is the largest piece of a divide and
                // conquer still unclaimed (rayon's thieves take it from the same end).
                // Most victims have none: `is_empty` (two loads) spares the empty deque
                // `steal`'s epoch pin, which under Miri made a thousand-task scope take
                // longer than its watchdog allows.
                let victim_joins = reg.queues.join_stealer(victim);
                if joins && !victim_joins.is_empty() {
                    match victim_joins.steal() {
                        Steal::Success(job) => {
                            self.shard().stats.stat_owned(Stat::Stolen, 1);
                            return Some((job.into_job(), 0));
                        }
                        Steal::Retry => retry = true,
                        Steal::Empty => {}
                    }
                }
                for lane in (0..lanes).filter(|&lane| in_set(set, lane)) {
                    // One task at a time from another worker (as rayon does): its owner keeps
                    // the rest of its deque, and the count is exact.
                    match reg.queues.stealer(victim, lane).steal() {
                        Steal::Success(job) => {
                            self.shard().stats.stat_owned(Stat::Stolen, 1);
                            return Some((job, lane));
                        }
                        Steal::Retry => retry = true,
                        Steal::Empty => {}
                    }
                }
            }
            if !retry {
                self.shard().stats.stat_owned(Stat::FailedSteals, 1);
                return None;
            }
            std::hint::spin_loop();
        }
    }
}

/// Whether `lane` is in `set` (bit `lane`). `ALL_LANES` is tested first: the weighted pick's
/// constant `set` folds it to `true` before any shift is made.
#[inline(always)]
fn in_set(set: u32, lane: usize) -> bool {
    set == ALL_LANES || set & (1 << lane) != 0
}

/// Whether virtual time `a` is behind `b`, on clocks that wrap (differences stay far below
/// 2^63: a lane with work is served in proportion, one without is brought up to the rest).
fn behind(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}
