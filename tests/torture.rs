//! A randomized torture test of the public API (issue 37): rounds of random pools, each
//! driven by 2–4 threads drawing random operations, checked for what the docs promise.
//!
//! Each round builds a pool with a random configuration (1–4 workers, `max_workers`, capacity
//! and backpressure policy, FIFO or not, lanes or not (weighted or strict priority), latency
//! tracking or not, a panic handler and worker hooks that sometimes panic, a stop hook that
//! submits a task), then its driver threads draw operations for a while:
//! submit, spawn, join, scope and `scope_fifo`, FIFO spawns, batches, task groups (spawn,
//! wait, timed and async waits, cancel, racing each other), `JoinHandle::cancel` and `cancel_on_drop`, purge,
//! pause/resume, resize (some from a thread that may not start threads, or may not let them pin or issue a membarrier), broadcast, async admission (`submit_async` / `spawn_async`, and
//! handles awaited, polled with a hand-written waker that sometimes panics), waits and the
//! shutdown variants, data-parallel calls (`for_each`, `par_for_each_mut`, `par_chunks_mut`,
//! `map_reduce`, the sorts, `install`; in tasks the free functions too), whose results must
//! be the sequential ones. Tasks do more of the same inside them: joins, scopes with
//! `Scope::spawn_fifo` beside `Pool::spawn_fifo`, groups, a handle joined, a pause around a
//! scope, waits that must answer `WouldDeadlock`, and, on a `.fifo()` one-worker pool, a
//! scope whose spawns must start oldest first. In one round in five a driver shuts the pool
//! down two thirds of the way through while the others go on. The round ends with a random
//! shutdown (`shutdown`, `shutdown_timeout`, `shutdown_now` or dropping the pool). One round
//! in three draws from only 2 to 5 kinds of operation (chosen at random), each then drawn
//! many times over, so that a race between two features comes up often.
//!
//! Every closure carries a token that records, per task, whether it ran or was dropped and
//! on which kind of call (refused, abandoned, cancelled, purged...). After the round:
//! every token ran or was dropped exactly once, never both; scope tasks and `join` halves
//! ran; `stats()` balances at quiescence (`submitted = completed + panicked + dropped`,
//! nothing in flight, nothing queued) and after the shutdown; `dropped` is the tokens the
//! pool dropped, `panicked` the tokens that panicked on purpose, and (with the `stats`
//! feature) `rejected` the tokens refused; each task group's waits reported exactly the
//! panics of its tasks; every worker thread that ran its start hook ran its stop hook. Along the way: each purge and cancel returns the count of the tokens
//! it dropped on the calling thread; each join and scope returns with its tasks run; a group
//! wait (of any of the three kinds, unless timed out) returns with the waiting driver's tasks
//! of the group finished; a handle's `join` or
//! `.await` agrees with what its token saw; a broadcast makes one call per worker, each on
//! that worker; waits and shutdowns from a task answer `WouldDeadlock`; no panic of a task,
//! waker or hook reaches a caller. A per-round watchdog turns a hang into a failure (a
//! generous deadline, never a speed check) and prints the seed, the configuration, what each
//! driver was doing and the tail of the round's operation log.
//!
//! Knobs (environment):
//! * `FLOCK_TORTURE_SEED=<u64>`: the first round's seed (each failure prints the seed of
//!   its round, so this replays that round's configuration, its kinds of operation and its
//!   draws first, given the same `FLOCK_TORTURE_OPS`; thread timing is not replayed).
//! * `FLOCK_TORTURE_SECS=<n>`: time budget in seconds (default 10; `.ci/run` gives 60).
//! * `FLOCK_TORTURE_OPS=<list>`: comma list of operation kinds to keep (`submit,purge`) or,
//!   each prefixed with `-`, to leave out (`-waker,-badname`), to isolate a failure. Kinds:
//!   submit, spawn, join, scope, fifo, batch, group, cancel, purge, pause, resize,
//!   broadcast, async, waker (panicking wakers), wait, shutdown, nested (operations inside
//!   tasks), badname (a `thread_name` that panics for the last slot), order (FIFO order of a
//!   `.fifo()` one-worker pool's scope), unknownlane (submits naming a lane the pool lacks),
//!   hooks (`on_worker_start` / `on_worker_stop`), par (data-parallel calls).

mod common;

use flock::{
    Backpressure, GroupError, JoinError, JoinHandle, Pool, RejectReason, TaskGroup, WaitError,
    WorkerState,
};
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, Once, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// A generous bound on one round (rounds run for ~0.1–0.4 s): only a hang passes it.
const ROUND_DEADLINE: Duration = Duration::from_secs(45);
/// Payload of the panics this test makes on purpose (tasks, wakers, handlers, thread names).
const TASK_PANIC: &str = "torture: deliberate task panic";
const WAKER_PANIC: &str = "torture: deliberate waker panic";
const HANDLER_PANIC: &str = "torture: deliberate panic-handler panic";
const NAME_PANIC: &str = "torture: deliberate thread_name panic";
const HOOK_PANIC: &str = "torture: deliberate worker hook panic";

// ---------------------------------------------------------------------------------------
// Seedable PRNG (splitmix64)

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo + 1) as u64) as usize
    }
    /// True with probability `num / den`.
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    fn fork(&mut self) -> Rng {
        Rng(self.next())
    }
}

// ---------------------------------------------------------------------------------------
// Operation kinds and their selection (FLOCK_TORTURE_OPS)

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Submit,
    Spawn,
    Join,
    Scope,
    Fifo,
    Batch,
    Group,
    Cancel,
    Purge,
    Pause,
    Resize,
    Broadcast,
    Async,
    Waker,
    Wait,
    Shutdown,
    Nested,
    BadName,
    Order,
    UnknownLane,
    Hooks,
    Par,
}

const KINDS: &[(Kind, &str, u64)] = &[
    (Kind::Submit, "submit", 10),
    (Kind::Spawn, "spawn", 10),
    (Kind::Join, "join", 5),
    (Kind::Scope, "scope", 6),
    (Kind::Fifo, "fifo", 4),
    (Kind::Batch, "batch", 4),
    (Kind::Group, "group", 8),
    (Kind::Cancel, "cancel", 6),
    (Kind::Purge, "purge", 2),
    (Kind::Pause, "pause", 2),
    (Kind::Resize, "resize", 3),
    (Kind::Broadcast, "broadcast", 3),
    (Kind::Async, "async", 6),
    (Kind::Waker, "waker", 0),
    (Kind::Wait, "wait", 1),
    (Kind::Shutdown, "shutdown", 0),
    (Kind::Nested, "nested", 0),
    (Kind::BadName, "badname", 0),
    (Kind::Order, "order", 0),
    (Kind::UnknownLane, "unknownlane", 0),
    (Kind::Hooks, "hooks", 0),
    (Kind::Par, "par", 4),
];

#[derive(Clone, Debug)]
struct OpSet(Vec<Kind>);

impl OpSet {
    fn from_env() -> OpSet {
        let all: Vec<Kind> = KINDS.iter().map(|k| k.0).collect();
        let Ok(spec) = std::env::var("FLOCK_TORTURE_OPS") else {
            return OpSet(all);
        };
        let lookup = |name: &str| {
            KINDS
                .iter()
                .find(|k| k.1 == name)
                .map(|k| k.0)
                .unwrap_or_else(|| panic!("FLOCK_TORTURE_OPS: unknown kind {name:?}"))
        };
        let words: Vec<&str> = spec
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        let keep: Vec<Kind> = words
            .iter()
            .filter(|w| !w.starts_with('-'))
            .map(|w| lookup(w))
            .collect();
        let drop: Vec<Kind> = words
            .iter()
            .filter_map(|w| w.strip_prefix('-'))
            .map(lookup)
            .collect();
        let base = if keep.is_empty() { all } else { keep };
        OpSet(base.into_iter().filter(|k| !drop.contains(k)).collect())
    }
    fn has(&self, k: Kind) -> bool {
        self.0.contains(&k)
    }
    /// A round's kinds: in one round in three, 2 to 5 of the operations drivers draw (kept
    /// with their weights) and every modifier (the kinds of weight 0); else all of `self`.
    /// A narrow round draws the few operations it has many times over, so a race between
    /// two of them comes up in seconds where a full round needs minutes (a group's wait
    /// against its tasks' zeros: 4 s against the 60 s CI run that first hit it).
    fn for_round(&self, rng: &mut Rng) -> OpSet {
        if !rng.chance(1, 3) {
            return self.clone();
        }
        let weight = |k: Kind| KINDS.iter().find(|e| e.0 == k).map_or(0, |e| e.2);
        let mut drawn: Vec<Kind> = self.0.iter().copied().filter(|&k| weight(k) > 0).collect();
        let keep = rng.range(2, 5).min(drawn.len());
        // A partial Fisher-Yates shuffle: the first `keep` are a uniform choice.
        for i in 0..keep {
            let j = i + rng.below((drawn.len() - i) as u64) as usize;
            drawn.swap(i, j);
        }
        drawn.truncate(keep);
        OpSet(
            self.0
                .iter()
                .copied()
                .filter(|&k| weight(k) == 0 || drawn.contains(&k))
                .collect(),
        )
    }
    /// A driver's next operation, by weight among the kinds kept.
    fn draw(&self, rng: &mut Rng) -> Option<Kind> {
        let kept: Vec<(Kind, u64)> = KINDS
            .iter()
            .filter(|k| self.has(k.0) && k.2 > 0)
            .map(|k| (k.0, k.2))
            .collect();
        let total: u64 = kept.iter().map(|k| k.1).sum();
        if total == 0 {
            return None;
        }
        let mut x = rng.below(total);
        for (k, w) in kept {
            if x < w {
                return Some(k);
            }
            x -= w;
        }
        None
    }
}

// ---------------------------------------------------------------------------------------
// Tokens: each closure carries one; it records whether the task ran or was dropped

/// Where a token was dropped unrun, as the thread that dropped it was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    /// On a pool's thread or anywhere not marked below: the pool dropped it.
    Pool = 0,
    /// Inside a submitting call (a refused spawn drops its closure there).
    Admission,
    /// A refused task handed back, dropped by the test.
    Refused,
    /// A pending async admission future dropped by the test (gives up; not the pool's).
    Abandoned,
    Cancel,
    CancelOnDrop,
    GroupCancel,
    Purge,
    Shutdown,
}
const CTXS: usize = 9;

thread_local! {
    static CTX: Cell<Ctx> = const { Cell::new(Ctx::Pool) };
    /// Tokens dropped unrun on this thread, ever.
    static DROPS_HERE: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` with drops on this thread attributed to `ctx`; returns what it gave and how
/// many tokens were dropped here meanwhile.
fn in_ctx<R>(ctx: Ctx, f: impl FnOnce() -> R) -> (R, u64) {
    struct Restore(Ctx);
    impl Drop for Restore {
        fn drop(&mut self) {
            CTX.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CTX.with(|c| c.replace(ctx)));
    let before = DROPS_HERE.with(Cell::get);
    let r = f();
    (r, DROPS_HERE.with(Cell::get) - before)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskKind {
    /// submit, batch, a detached or joined spawn, async admission: may run or be dropped.
    Loose,
    /// Of the round's task group `g`.
    Group(usize),
    /// A scope's task or a join's half: must run.
    MustRun,
}

struct Rec {
    id: u64,
    kind: TaskKind,
    /// Panics on purpose when run.
    panics: bool,
    ran: AtomicU32,
    ended: AtomicBool,
    dropped: AtomicU32,
    drop_ctx: AtomicU32,
    /// A join said it was not run (cancelled, dropped, refused).
    expect_unrun: AtomicBool,
}

struct Token {
    rec: Arc<Rec>,
    round: Arc<Round>,
    done: bool,
}

impl Token {
    /// Marks the task started; the body runs next.
    fn start(&mut self) {
        self.done = true;
        if self.rec.ran.fetch_add(1, SeqCst) != 0 {
            self.round.fail(format!("task {} ran twice", self.rec.id));
        }
        if self.rec.dropped.load(SeqCst) != 0 {
            self.round
                .fail(format!("task {} ran after it was dropped", self.rec.id));
        }
    }
    fn end(&self) {
        self.rec.ended.store(true, SeqCst);
        if self.rec.panics {
            self.round.tracker.panics.fetch_add(1, SeqCst);
            std::panic::panic_any(TASK_PANIC);
        }
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let ctx = CTX.with(Cell::get);
        DROPS_HERE.with(|d| d.set(d.get() + 1));
        self.rec.drop_ctx.store(ctx as u32, SeqCst);
        self.round.tracker.drops[ctx as usize].fetch_add(1, SeqCst);
        if self.rec.dropped.fetch_add(1, SeqCst) != 0 {
            self.round
                .fail(format!("task {} dropped twice", self.rec.id));
        }
        if self.rec.ran.load(SeqCst) != 0 {
            self.round
                .fail(format!("task {} dropped after it ran", self.rec.id));
        }
        if self.rec.kind == TaskKind::MustRun {
            self.round.fail(format!(
                "task {} (a scope task or join half) dropped unrun ({ctx:?})",
                self.rec.id
            ));
        }
    }
}

thread_local! {
    /// The last tasks made on this thread, newest last.
    static MADE_HERE: std::cell::RefCell<Vec<Arc<Rec>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The task this thread made last.
fn last_rec() -> Arc<Rec> {
    MADE_HERE.with(|m| m.borrow().last().cloned().expect("a task was made here"))
}

/// The `k` tasks this thread made last (k ≤ 64).
fn last_recs(k: usize) -> Vec<Arc<Rec>> {
    MADE_HERE.with(|m| {
        let m = m.borrow();
        m[m.len() - k..].to_vec()
    })
}

#[derive(Default)]
struct Tracker {
    recs: Mutex<Vec<Arc<Rec>>>,
    next: AtomicU64,
    panics: AtomicU64,
    drops: [AtomicU64; CTXS],
}

impl Tracker {
    fn drops_in(&self, ctxs: &[Ctx]) -> u64 {
        ctxs.iter()
            .map(|&c| self.drops[c as usize].load(SeqCst))
            .sum()
    }
}

// ---------------------------------------------------------------------------------------
// A round: its configuration, shared state, log and failures

#[derive(Clone, Debug)]
struct Config {
    workers: usize,
    max_workers: usize,
    capacity: usize,
    policy: Backpressure,
    block_timeout: Option<Duration>,
    fifo: bool,
    lanes: Option<[u32; 2]>,
    lane_reserve: bool,
    /// With lanes: `strict_priority(true)`. Drawn last: a seed draws its other settings as
    /// before.
    strict_priority: bool,
    /// One resize in two made from a thread on which the OS refuses what a grow needs (a
    /// seccomp filter, `common::refuse`): new threads (`ThreadSpawn`), or, the workers
    /// being pinned (`pin_workers`) where the build can pin, pinning them (`PinFailed`), or
    /// the membarrier their parks issue (the pool falls back to fences, and the refused
    /// worker's parks are bounded until the refusal settles). Drawn after `strict_priority`.
    refuse_os: bool,
    latency: bool,
    handler: bool,
    membarrier: bool,
    bad_name: bool,
    drivers: usize,
    millis: u64,
    /// A driver shuts the pool down two thirds into the round.
    mid_shutdown: bool,
    /// `on_worker_start` / `on_worker_stop` hooks (counting, sometimes panicking; the stop
    /// hook sometimes submits a task).
    hooks: bool,
    end: End,
}

/// Whether this platform can refuse threads and pinning to one thread (`common::refuse`).
const CAN_REFUSE: bool = cfg!(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Shutdown,
    ShutdownTimeout,
    ShutdownNow,
    Drop,
}

impl Config {
    fn draw(rng: &mut Rng, ops: &OpSet) -> Config {
        let order = ops.has(Kind::Order) && rng.chance(1, 10);
        let workers = if order { 1 } else { rng.range(1, 4) };
        let max_workers = if order { 1 } else { workers + rng.range(0, 2) };
        let policy = match rng.below(4) {
            0 => Backpressure::Block,
            1 => Backpressure::Reject,
            2 => Backpressure::CallerRuns,
            _ => Backpressure::SpawnThread,
        };
        Config {
            workers,
            max_workers,
            capacity: [2, 4, 16, 64, flock::DEFAULT_CAPACITY][rng.below(5) as usize],
            policy,
            block_timeout: rng
                .chance(1, 3)
                .then(|| Duration::from_millis(rng.below(5))),
            fifo: order || rng.chance(1, 4),
            lanes: (!order && rng.chance(1, 3))
                .then(|| [rng.range(1, 4) as u32, rng.range(1, 4) as u32]),
            lane_reserve: rng.chance(1, 2),
            latency: rng.chance(1, 3),
            handler: rng.chance(1, 2),
            membarrier: rng.chance(2, 3),
            bad_name: ops.has(Kind::BadName) && max_workers > workers && rng.chance(1, 6),
            drivers: rng.range(2, 4),
            mid_shutdown: ops.has(Kind::Shutdown) && rng.chance(1, 5),
            hooks: ops.has(Kind::Hooks) && rng.chance(1, 2),
            millis: 100 + rng.below(250),
            end: [
                End::Shutdown,
                End::ShutdownTimeout,
                End::ShutdownNow,
                End::Drop,
            ][rng.below(4) as usize],
            strict_priority: rng.chance(1, 2),
            refuse_os: CAN_REFUSE
                && ops.has(Kind::Resize)
                && max_workers > workers
                && rng.chance(1, 4),
        }
    }
}

struct Group {
    group: TaskGroup,
    /// Panics its waits reported (`GroupError::Panicked(n)`, summed).
    reported: AtomicUsize,
    /// `cancel` calls on the group in progress (`Group::cancel`).
    cancels: AtomicUsize,
}

impl Group {
    /// `TaskGroup::cancel`, counted in `cancels` while it runs: concurrent cancels share the
    /// work (one may return 0 while another still drops the tasks it took), so a check that
    /// a cancel dropped a task waits for the cancels in progress to return.
    fn cancel(&self) -> usize {
        self.cancels.fetch_add(1, SeqCst);
        let n = self.group.cancel();
        self.cancels.fetch_sub(1, SeqCst);
        n
    }
}

struct Round {
    seed: u64,
    cfg: Config,
    ops: OpSet,
    pool: Mutex<Weak<Pool>>,
    tracker: Tracker,
    groups: std::sync::OnceLock<Vec<Group>>,
    log: Mutex<VecDeque<String>>,
    failures: Mutex<Vec<String>>,
    /// Bumped by each purge (as it begins) and shutdown (the FIFO order check skips scopes
    /// that saw one).
    purges: AtomicU64,
    /// Purges in progress: a scope that begins during one may have its spawns taken by it
    /// (and handed back behind later ones) with no bump after its first look.
    purging: AtomicU64,
    shut: AtomicBool,
    name_armed: Arc<AtomicBool>,
    handler_calls: Arc<AtomicU64>,
    ops_run: AtomicU64,
    /// What each driver is doing now (for the report of a hang).
    doing: Mutex<Vec<String>>,
    /// Bumped before every `resume` (and by a shutdown, which resumes).
    resumes: AtomicU64,
    /// Drivers between their `pause` and the bump of `resumes` before their `resume` (the
    /// `Pause` op, whose section never waits for a task).
    pausing: AtomicU64,
    /// Calls of the worker hooks.
    starts: AtomicU64,
    stops: AtomicU64,
}

impl Round {
    fn fail(&self, what: String) {
        self.log(format!("FAILURE: {what}"));
        self.failures.lock().unwrap().push(what);
    }
    fn log(&self, line: String) {
        let mut log = self.log.lock().unwrap();
        if log.len() == 400 {
            log.pop_front();
        }
        log.push_back(line);
    }
    fn pool(&self) -> Option<Arc<Pool>> {
        self.pool.lock().unwrap().upgrade()
    }
    fn token(self: &Arc<Self>, kind: TaskKind, panics: bool) -> Token {
        let rec = Arc::new(Rec {
            id: self.tracker.next.fetch_add(1, SeqCst),
            kind,
            panics,
            ran: AtomicU32::new(0),
            ended: AtomicBool::new(false),
            dropped: AtomicU32::new(0),
            drop_ctx: AtomicU32::new(0),
            expect_unrun: AtomicBool::new(false),
        });
        self.tracker.recs.lock().unwrap().push(rec.clone());
        MADE_HERE.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() == 64 {
                m.remove(0);
            }
            m.push(rec.clone());
        });
        Token {
            rec,
            round: self.clone(),
            done: false,
        }
    }
    /// A task: runs its token, maybe nested operations (below `depth` 2), maybe a short
    /// nap, then ends (panicking if its token says so). Returns its id.
    fn task(
        self: &Arc<Self>,
        kind: TaskKind,
        depth: u32,
        rng: &mut Rng,
    ) -> impl FnOnce() -> u64 + Send + 'static {
        let panics = kind != TaskKind::MustRun && rng.chance(1, 12);
        let mut token = self.token(kind, panics);
        let mut rng = rng.fork();
        move || {
            token.start();
            let id = token.rec.id;
            let round = token.round.clone();
            in_ctx(Ctx::Pool, || {
                if depth < 2 && round.ops.has(Kind::Nested) && rng.chance(1, 4) {
                    nested(&round, &token, depth + 1, &mut rng);
                }
                match rng.below(8) {
                    0 => std::thread::sleep(Duration::from_micros(rng.below(500))),
                    1 => std::thread::yield_now(),
                    _ => {}
                }
            });
            token.end();
            id
        }
    }
    fn groups(&self) -> &[Group] {
        self.groups
            .get()
            .expect("the round's groups are made with its pool")
    }
    fn pick_group(&self, rng: &mut Rng) -> usize {
        rng.below(self.groups().len() as u64) as usize
    }
}

// ---------------------------------------------------------------------------------------
// Async polling with a hand-written waker that sometimes panics

struct TestWaker {
    thread: std::thread::Thread,
    woken: AtomicBool,
    panicky: bool,
    wakes: AtomicU32,
}

impl Wake for TestWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        // The wake itself is done first: a panic afterwards loses nothing on our side.
        self.woken.store(true, SeqCst);
        self.thread.unpark();
        if self.panicky && self.wakes.fetch_add(1, SeqCst) % 2 == 0 {
            std::panic::panic_any(WAKER_PANIC);
        }
    }
}

fn test_waker(panicky: bool) -> Arc<TestWaker> {
    Arc::new(TestWaker {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
        panicky,
        wakes: AtomicU32::new(0),
    })
}

/// Polls `fut` to its end, re-polling only when woken (a lost wake-up hangs, and the
/// watchdog reports it).
fn block_on<F: Future + Unpin>(fut: &mut F, waker: &Arc<TestWaker>) -> F::Output {
    let w = Waker::from(waker.clone());
    let mut cx = Context::from_waker(&w);
    loop {
        if let Poll::Ready(v) = Pin::new(&mut *fut).poll(&mut cx) {
            return v;
        }
        while !waker.woken.swap(false, SeqCst) {
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checks on results

fn check_join(round: &Round, rec: &Rec, r: Result<u64, JoinError>, how: &str) {
    match r {
        Ok(v) if v == rec.id && rec.ran.load(SeqCst) == 1 && rec.ended.load(SeqCst) => {}
        Ok(v) => round.fail(format!(
            "{how} of task {} gave Ok({v}) but ran={} ended={}",
            rec.id,
            rec.ran.load(SeqCst),
            rec.ended.load(SeqCst)
        )),
        Err(JoinError::Panicked(_)) if rec.panics && rec.ran.load(SeqCst) == 1 => {}
        Err(JoinError::Panicked(_)) => round.fail(format!(
            "{how} of task {} says panicked (panics={})",
            rec.id, rec.panics
        )),
        Err(JoinError::Cancelled | JoinError::Dropped | JoinError::Refused(_)) => {
            rec.expect_unrun.store(true, SeqCst);
        }
        Err(e) => round.fail(format!("{how} of task {}: unexpected {e:?}", rec.id)),
    }
}

fn check_ran(round: &Round, recs: &[Arc<Rec>], what: &str) {
    for r in recs {
        if r.ran.load(SeqCst) != 1 || !r.ended.load(SeqCst) {
            round.fail(format!(
                "{what} returned, task {} ran={} ended={} dropped={}",
                r.id,
                r.ran.load(SeqCst),
                r.ended.load(SeqCst),
                r.dropped.load(SeqCst)
            ));
        }
    }
}

/// What a thread that resizes may not do (`Config::refuse_os`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refuse {
    Pinning,
    Threads,
    Membarrier,
}

/// Whether the round's pool pins its workers: `refuse_os` in a build that can pin.
fn pins(cfg: &Config) -> bool {
    cfg.refuse_os && cfg!(feature = "pin")
}

/// `pool.resize(n)` from a thread on which the OS refuses `what`.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn resize_where_refused(
    pool: &Arc<Pool>,
    n: usize,
    what: Refuse,
) -> Result<(), flock::ResizeError> {
    let pool = pool.clone();
    let r = match what {
        Refuse::Pinning => common::refuse::pinning(move || pool.resize(n)),
        Refuse::Threads => common::refuse::threads(move || pool.resize(n)),
        Refuse::Membarrier => common::refuse::membarrier(move || pool.resize(n)),
    };
    let failed = matches!(
        r,
        Err(flock::ResizeError::PinFailed { .. } | flock::ResizeError::ThreadSpawn(_))
    );
    REFUSED_RESIZES[what as usize][0].fetch_add(1, SeqCst);
    REFUSED_RESIZES[what as usize][1].fetch_add(u64::from(failed), SeqCst);
    r
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn resize_where_refused(_: &Arc<Pool>, _: usize, _: Refuse) -> Result<(), flock::ResizeError> {
    unreachable!("refuse_os is drawn only where CAN_REFUSE")
}

fn check_broadcast(round: &Round, pool: &Pool, out: &[usize], bad: &AtomicUsize) {
    if bad.load(SeqCst) != 0 {
        round.fail("a broadcast call ran where current_worker_index() is not its index".into());
    }
    if out.windows(2).any(|w| w[0] >= w[1]) || out.len() > round.cfg.max_workers {
        round.fail(format!("broadcast returned {out:?}"));
    }
    if out.is_empty() && !pool.is_shutdown() {
        round.fail("broadcast returned no call on an open pool".into());
    }
}

/// A broadcast call made while a driver is in its `Pause` section waits for that driver's
/// resume. Workers do not look for work while paused, but one that a shrink retires runs its
/// calls first, and the pausing driver may grow the pool meanwhile: the grow must not wait
/// for the call (`tests/resize.rs`, `a_broadcast_call_that_blocks_past_a_shrink_does_not_
/// hold_a_grow`). A driver's section never waits for a task, so the resume comes.
fn blocking_broadcast_call(round: &Round) {
    let resumes = round.resumes.load(SeqCst);
    if round.pausing.load(SeqCst) == 0 {
        return;
    }
    while round.resumes.load(SeqCst) == resumes {
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn group_wait_result(round: &Round, g: usize, r: Result<(), GroupError>, how: &str) {
    match r {
        Ok(()) => {}
        Err(GroupError::Panicked(n)) => {
            round.groups()[g].reported.fetch_add(n, SeqCst);
        }
        Err(GroupError::Timeout) if how == "wait_timeout" => {}
        Err(e) => round.fail(format!("group {g} {how}: {e:?}")),
    }
}

// ---------------------------------------------------------------------------------------
// Operations inside tasks

fn nested(round: &Arc<Round>, me: &Token, depth: u32, rng: &mut Rng) {
    let Some(pool) = round.pool() else { return };
    let on_worker = flock::current_worker_index().is_some();
    let id = me.rec.id;
    match rng.below(12) {
        0 if round.ops.has(Kind::Join) => {
            let (a, b) = (
                round.task(TaskKind::MustRun, depth, rng),
                round.task(TaskKind::MustRun, depth, rng),
            );
            let recs = last_recs(2);
            round.log(format!("t{id}: join"));
            pool.join(a, b);
            check_ran(round, &recs, "a join in a task");
        }
        1 | 2 if round.ops.has(Kind::Scope) => {
            // The case 1 pattern: Scope::spawn_fifo beside Pool::spawn_fifo.
            let fifo_scope = rng.chance(1, 2);
            let mut recs = Vec::new();
            let mut how = Vec::new();
            let body = |s: &flock::Scope<'_>| {
                for _ in 0..rng.range(1, 4) {
                    let t = round.task(TaskKind::MustRun, depth, rng);
                    recs.push(last_rec());
                    let fifo = round.ops.has(Kind::Fifo) && rng.chance(2, 3);
                    how.push(format!(
                        "{} {}",
                        last_rec().id,
                        if fifo {
                            "Scope::spawn_fifo"
                        } else {
                            "Scope::spawn"
                        }
                    ));
                    if fifo {
                        s.spawn_fifo(move |_| {
                            t();
                        });
                    } else {
                        s.spawn(move |_| {
                            t();
                        });
                    }
                    if round.ops.has(Kind::Fifo) && rng.chance(1, 2) {
                        let t = round.task(TaskKind::Loose, depth, rng);
                        // Refused (and dropped) here when this scope runs off the workers.
                        drop(in_ctx(Ctx::Admission, || pool.spawn_fifo(t)));
                        how.push(format!("{} Pool::spawn_fifo", last_rec().id));
                    }
                }
                round.log(format!(
                    "t{id}: scope (fifo scope {fifo_scope}) spawned {how:?}, waits"
                ));
            };
            if fifo_scope {
                pool.scope_fifo(body);
            } else {
                pool.scope(body);
            }
            check_ran(round, &recs, "a scope in a task");
        }
        3 if round.ops.has(Kind::Group) => {
            let group = TaskGroup::new(&pool);
            let mut recs = Vec::new();
            for _ in 0..rng.range(1, 4) {
                let t = round.task(TaskKind::Loose, depth, rng);
                let rec = last_rec();
                let (r, _) = in_ctx(Ctx::Admission, || {
                    group.submit(move || {
                        t();
                    })
                });
                match r {
                    Ok(()) => recs.push(rec),
                    Err(e) => drop(in_ctx(Ctx::Refused, || drop(e.into_inner()))),
                }
            }
            round.log(format!("t{id}: own group of {} waits", recs.len()));
            let waited = group.wait();
            let panicked = recs
                .iter()
                .filter(|r| r.panics && r.ran.load(SeqCst) == 1)
                .count();
            match waited {
                Ok(()) if panicked == 0 => {}
                Err(GroupError::Panicked(n)) if n == panicked => {}
                other => round.fail(format!(
                    "t{id}: a group in a task with {panicked} panics waited: {other:?}"
                )),
            }
            for r in &recs {
                if !r.ended.load(SeqCst) && r.dropped.load(SeqCst) == 0 {
                    round.fail(format!(
                        "t{id}: group wait returned before task {} ended",
                        r.id
                    ));
                }
            }
        }
        4 if round.ops.has(Kind::Spawn) => {
            let t = round.task(TaskKind::Loose, depth, rng);
            let rec = last_rec();
            let (h, _) = in_ctx(Ctx::Admission, || {
                if round.ops.has(Kind::Fifo) && rng.chance(1, 2) {
                    pool.spawn_fifo(t)
                } else {
                    pool.spawn(t)
                }
            });
            round.log(format!("t{id}: spawn+join task {}", rec.id));
            let r = h.join();
            check_join(round, &rec, r, "a join in a task");
        }
        5 if round.ops.has(Kind::Fifo) => {
            round.log(format!("t{id}: spawn_fifo detached"));
            drop(in_ctx(Ctx::Admission, || {
                pool.spawn_fifo(round.task(TaskKind::Loose, depth, rng))
            }));
        }
        6 if round.ops.has(Kind::Pause) && on_worker => {
            // The case 2: a running task pauses the pool and waits for what it spawned.
            round.log(format!("t{id}: pause, then scope/join, then resume"));
            pool.pause();
            let (a, b) = (
                round.task(TaskKind::MustRun, depth, rng),
                round.task(TaskKind::MustRun, depth, rng),
            );
            if rng.chance(1, 2) {
                pool.join(a, b);
            } else {
                pool.scope(|s| {
                    s.spawn(move |_| {
                        a();
                    });
                    s.spawn(move |_| {
                        b();
                    });
                });
            }
            round.resumes.fetch_add(1, SeqCst);
            pool.resume();
        }
        // A scope task or join half run on its caller after a shutdown is not the pool's
        // (`Scope::spawn`'s docs): it may wait for the pool.
        7 if !(me.rec.kind == TaskKind::MustRun && !on_worker && pool.is_shutdown()) => {
            let w = pool.wait();
            let f = pool.wait_for(Duration::from_millis(1));
            let s = pool.shutdown();
            if w != Err(WaitError::WouldDeadlock)
                || f != Err(WaitError::WouldDeadlock)
                || s != Err(WaitError::WouldDeadlock)
            {
                round.fail(format!(
                    "t{id} ({:?}, on a worker: {on_worker}): wait/wait_for/shutdown from a task gave {w:?} {f:?} {s:?}",
                    me.rec.kind
                ));
            }
        }
        8 if round.ops.has(Kind::Group) => {
            if let TaskKind::Group(g) = me.rec.kind {
                let t = round.task(TaskKind::Group(g), depth, rng);
                let (r, _) = in_ctx(Ctx::Admission, || {
                    round.groups()[g].group.submit(move || {
                        t();
                    })
                });
                if let Err(e) = r {
                    in_ctx(Ctx::Refused, || drop(e.into_inner()));
                }
                let w = round.groups()[g].group.wait();
                if w != Err(GroupError::WouldDeadlock) {
                    round.fail(format!("t{id}: a wait on its own group gave {w:?}"));
                }
            }
        }
        9 if round.ops.has(Kind::Order)
            && round.cfg.fifo
            && round.cfg.max_workers == 1
            && round.cfg.lanes.is_none()
            && on_worker =>
        {
            // The case 9: on a `.fifo()` pool a worker runs its scope spawns oldest first.
            let order = Mutex::new(Vec::new());
            let purges = round.purges.load(SeqCst);
            let purging = round.purging.load(SeqCst) > 0;
            pool.scope(|s| {
                for i in 0..6 {
                    let order = &order;
                    s.spawn(move |_| order.lock().unwrap().push(i));
                }
            });
            let order = order.into_inner().unwrap();
            round.log(format!("t{id}: fifo pool scope order {order:?}"));
            if !purging && round.purges.load(SeqCst) == purges && order != [0, 1, 2, 3, 4, 5] {
                round.fail(format!(
                    "t{id}: a .fifo() pool ran its worker's scope spawns in order {order:?}"
                ));
            }
        }
        10 if round.ops.has(Kind::Par) => par_op(round, &pool, depth, rng, &format!("t{id}")),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Data-parallel calls (`Kind::Par`)

/// A task token run by one of a data-parallel call's item calls.
type PieceTask = Mutex<Option<Box<dyn FnOnce() -> u64 + Send>>>;

/// A data-parallel call, from a driver (`depth` 0) or inside a task: `Pool::for_each`,
/// `par_for_each_mut`, `par_chunks_mut`, `map_reduce`, a sort or `install` (inside a task on
/// one of the pool's workers, the free functions on the current pool as often). Up to two of
/// a loop's item calls run a task token (which may nest more operations, a data-parallel
/// call among them). Checks that the call returned the sequential result exactly, with every
/// item call finished (each counts itself as its last act) and its tokens run.
fn par_op(round: &Arc<Round>, pool: &Pool, depth: u32, rng: &mut Rng, who: &str) {
    // The free functions use the calling worker's pool: only on one of ours.
    let free = depth > 0 && flock::current_worker_index().is_some() && rng.chance(1, 2);
    let n = if rng.chance(1, 8) {
        rng.range(0, 1)
    } else {
        rng.range(2, 400)
    };
    let what = rng.below(6);
    // The loops' item calls run in the pool's tasks (or a scope's, on the caller): tokens
    // go there only, never onto this thread outside of one.
    let mut pieces: Vec<(usize, PieceTask)> = Vec::new();
    let mut recs = Vec::new();
    if n > 0 && what < 4 {
        for _ in 0..rng.range(0, 2) {
            let t = round.task(TaskKind::MustRun, depth, rng);
            recs.push(last_rec());
            let t: Box<dyn FnOnce() -> u64 + Send> = Box::new(t);
            pieces.push((rng.below(n as u64) as usize, Mutex::new(Some(t))));
        }
    }
    // Item `i`'s tokens, if it has any.
    let hit = |i: usize| {
        for (at, t) in &pieces {
            if *at == i {
                if let Some(t) = t.lock().unwrap().take() {
                    t();
                }
            }
        }
    };
    let calls = AtomicUsize::new(0);
    round.log(format!(
        "{who}: par {what} of {n} (free functions {free}), tokens {:?}",
        recs.iter().map(|r| r.id).collect::<Vec<_>>()
    ));
    let wrong = match what {
        0 => {
            let chunk = rng.chance(1, 2).then(|| rng.range(1, 40));
            let sum = AtomicUsize::new(0);
            pool.for_each(0..n, chunk, |i| {
                hit(i);
                sum.fetch_add(i, SeqCst);
                calls.fetch_add(1, SeqCst);
            });
            let sum = sum.into_inner();
            (sum != n * n.saturating_sub(1) / 2).then(|| format!("for_each summed {sum}"))
        }
        1 => {
            let mut v: Vec<usize> = (0..n).collect();
            let f = |x: &mut usize| {
                hit(*x);
                *x = *x * 3 + 1;
                calls.fetch_add(1, SeqCst);
            };
            if free {
                flock::par_for_each_mut(&mut v, f);
            } else {
                pool.par_for_each_mut(&mut v, f);
            }
            let bad = v.iter().enumerate().find(|&(i, &x)| x != i * 3 + 1);
            bad.map(|(i, x)| format!("par_for_each_mut left item {i} at {x}"))
        }
        2 => {
            let size = rng.range(1, 50);
            let mut v: Vec<usize> = (0..n).collect();
            let f = |c: usize, chunk: &mut [usize]| {
                for x in chunk.iter_mut() {
                    hit(*x);
                    *x = c;
                    calls.fetch_add(1, SeqCst);
                }
            };
            if free {
                flock::par_chunks_mut(&mut v, size, f);
            } else {
                pool.par_chunks_mut(&mut v, size, f);
            }
            let bad = v.iter().enumerate().find(|&(i, &c)| c != i / size);
            bad.map(|(i, c)| format!("par_chunks_mut({size}) gave item {i} chunk {c}"))
        }
        3 => {
            let items: Vec<usize> = (0..n).collect();
            let map = |x: &usize| {
                hit(*x);
                calls.fetch_add(1, SeqCst);
                vec![*x]
            };
            let reduce = |mut a: Vec<usize>, b: Vec<usize>| {
                a.extend(b);
                a
            };
            let out = if free {
                flock::map_reduce(&items, Vec::new, map, reduce)
            } else {
                pool.map_reduce(&items, Vec::new, map, reduce)
            };
            (out != items).then(|| format!("map_reduce folded {} items out of order", out.len()))
        }
        4 => {
            // Above the sorts' leaf (4,096) half the time, so that they fork.
            let len = if rng.chance(1, 2) {
                rng.range(4097, 12_000)
            } else {
                n
            };
            let keyed: Vec<(u64, usize)> = (0..len).map(|i| (rng.below(500), i)).collect();
            let mut want = keyed.clone();
            want.sort();
            let mut v = keyed.clone();
            let by_key = |a: &(u64, usize), b: &(u64, usize)| a.0.cmp(&b.0);
            // Stable by key alone: equal keys keep their indices' order, so it matches `want`.
            match (rng.below(3), free) {
                (0, true) => flock::par_sort_by(&mut v, by_key),
                (0, false) => pool.par_sort_by(&mut v, by_key),
                (1, true) => flock::par_sort(&mut v),
                (1, false) => pool.par_sort(&mut v),
                (_, true) => flock::par_sort_unstable(&mut v),
                (_, false) => pool.par_sort_unstable(&mut v),
            }
            calls.store(n, SeqCst);
            (v != want).then(|| format!("a sort of {len} items gave a wrong order"))
        }
        _ => {
            // Both halves are tokens here: the join inside `install` must run them.
            let a = round.task(TaskKind::MustRun, depth, rng);
            let b = round.task(TaskKind::MustRun, depth, rng);
            let ab = last_recs(2);
            recs.extend(ab.iter().cloned());
            let (index, (x, y)) = pool.install(|| {
                let index = flock::current_worker_index();
                // Off the workers (the pool shut down, or the lane reserve took `op` up)
                // `flock::join` would use the global pool: this pool's join instead.
                let xy = if index.is_some() {
                    flock::join(a, b)
                } else {
                    pool.join(a, b)
                };
                (index, xy)
            });
            calls.store(n, SeqCst);
            // From a driver, `op` runs on a worker unless the pool is shut down or (with
            // lanes) the lane reserve took it up.
            let off =
                depth == 0 && index.is_none() && !pool.is_shutdown() && round.cfg.lanes.is_none();
            if (x, y) != (ab[0].id, ab[1].id) || off {
                Some(format!(
                    "install gave {index:?}, ({x}, {y}) for tasks {}, {}",
                    ab[0].id, ab[1].id
                ))
            } else {
                None
            }
        }
    };
    if pieces.iter().any(|(_, t)| t.lock().unwrap().is_some()) {
        round.fail(format!(
            "{who}: par {what} of {n} returned with a token's item not called"
        ));
    }
    let calls = calls.into_inner();
    if let Some(wrong) = wrong {
        round.fail(format!("{who}: par {what} of {n}: {wrong}"));
    } else if calls != n {
        round.fail(format!(
            "{who}: par {what} of {n} returned after {calls} item calls"
        ));
    }
    check_ran(round, &recs, "a data-parallel call");
    PAR_CALLS[usize::from(depth > 0)].fetch_add(1, SeqCst);
}

// ---------------------------------------------------------------------------------------
// Drivers: operations from outside the pool

enum Held {
    Handle(JoinHandle<u64>, Arc<Rec>),
    Cod(flock::CancelOnDrop<u64>, Arc<Rec>),
}

struct Driver {
    round: Arc<Round>,
    pool: Arc<Pool>,
    rng: Rng,
    name: String,
    held: Vec<Held>,
    /// Tasks this driver put in the round's groups, not yet seen finished by a wait.
    group_recs: Vec<(usize, Arc<Rec>)>,
    index: usize,
    ops: u64,
    /// Between its `pause` and `resume`.
    pausing: bool,
    /// `Round::resumes` just before its `pause`.
    pause_epoch: u64,
}

impl Driver {
    fn lane(&mut self) -> Option<usize> {
        self.round.cfg.lanes.map(|_| self.rng.below(2) as usize)
    }

    fn run(mut self, deadline: Instant) {
        let mut shut_at = (self.index == 0 && self.round.cfg.mid_shutdown)
            .then(|| deadline - Duration::from_millis(self.round.cfg.millis / 3));
        while Instant::now() < deadline {
            let kind = match shut_at {
                Some(at) if Instant::now() >= at => {
                    shut_at = None;
                    Some(Kind::Shutdown)
                }
                _ => self.round.ops.draw(&mut self.rng),
            };
            let Some(kind) = kind else {
                break;
            };
            self.round.doing.lock().unwrap()[self.index] = format!("{kind:?} (op {})", self.ops);
            self.ops += 1;
            let r = catch_unwind(AssertUnwindSafe(|| self.op(kind)));
            self.round.ops_run.fetch_add(1, SeqCst);
            if let Err(p) = r {
                let msg = panic_text(&*p);
                self.round
                    .fail(format!("{}: {kind:?} panicked: {msg}", self.name));
            }
        }
        self.round.doing.lock().unwrap()[self.index] = "settling its handles".into();
        // Every handle still held: joined, cancelled, or dropped.
        while let Some(h) = self.held.pop() {
            let r = catch_unwind(AssertUnwindSafe(|| self.settle(h)));
            if let Err(p) = r {
                let msg = panic_text(&*p);
                self.round
                    .fail(format!("{}: settling a handle panicked: {msg}", self.name));
            }
        }
        self.round.doing.lock().unwrap()[self.index] = "done".into();
    }

    fn settle(&mut self, h: Held) {
        match (h, self.rng.below(3)) {
            (Held::Handle(h, rec), 0) => check_join(&self.round, &rec, h.join(), "join"),
            (Held::Cod(c, rec), 0) => check_join(&self.round, &rec, c.into_inner().join(), "join"),
            (Held::Handle(h, rec), 1) => {
                let waker = test_waker(self.round.ops.has(Kind::Waker) && self.rng.chance(1, 3));
                let mut h = h;
                let r = block_on(&mut h, &waker);
                check_join(&self.round, &rec, r, "await");
            }
            (Held::Cod(c, _), _) => {
                in_ctx(Ctx::CancelOnDrop, || drop(c));
            }
            (Held::Handle(h, _), _) => drop(h),
        }
    }

    fn op(&mut self, kind: Kind) {
        let round = self.round.clone();
        let pool = self.pool.clone();
        let name = self.name.clone();
        match kind {
            Kind::Submit => {
                let t = round.task(TaskKind::Loose, 0, &mut self.rng);
                let id = last_rec().id;
                let unknown = round.cfg.lanes.is_some()
                    && round.ops.has(Kind::UnknownLane)
                    && self.rng.chance(1, 20);
                let lane = self.lane();
                let (r, _) = in_ctx(Ctx::Admission, || {
                    let t = move || {
                        t();
                    };
                    match lane {
                        _ if unknown => pool.submit_to("nope", t),
                        Some(l) => pool.submit_to(l, t),
                        None => pool.submit(t),
                    }
                });
                round.log(format!(
                    "{name}: submit {id} lane {lane:?} unknown {unknown}: {:?}",
                    r.as_ref().err().map(|e| e.reason())
                ));
                if let Err(e) = r {
                    if unknown && e.reason() != RejectReason::UnknownLane {
                        round.fail(format!("submit_to an unknown lane: {:?}", e.reason()));
                    }
                    in_ctx(Ctx::Refused, || drop(e.into_inner()));
                }
            }
            Kind::Spawn | Kind::Fifo => {
                let t = round.task(TaskKind::Loose, 0, &mut self.rng);
                let rec = last_rec();
                let lane = self.lane();
                let (h, _) = in_ctx(Ctx::Admission, || match (kind, lane) {
                    (Kind::Fifo, _) => pool.spawn_fifo(t),
                    (_, Some(l)) => pool.spawn_to(l, t),
                    _ => pool.spawn(t),
                });
                round.log(format!("{name}: {kind:?} {}", rec.id));
                if self.rng.chance(1, 3) {
                    self.held.push(Held::Cod(h.cancel_on_drop(), rec));
                } else {
                    self.held.push(Held::Handle(h, rec));
                }
                if self.held.len() > 16 {
                    let i = self.rng.below(self.held.len() as u64) as usize;
                    let h = self.held.swap_remove(i);
                    self.settle(h);
                }
            }
            Kind::Cancel => {
                if self.held.is_empty() {
                    return;
                }
                let i = self.rng.below(self.held.len() as u64) as usize;
                let h = self.held.swap_remove(i);
                match h {
                    Held::Handle(h, rec) => {
                        let (cancelled, drops) = in_ctx(Ctx::Cancel, || h.cancel());
                        round.log(format!("{name}: cancel {}: {cancelled}", rec.id));
                        if u64::from(cancelled) != drops {
                            round.fail(format!(
                                "cancel of {} returned {cancelled} and dropped {drops} tokens here",
                                rec.id
                            ));
                        }
                        // Not while this driver holds the pool paused: a task that started
                        // may wait for one it spawned, which may wait for the resume.
                        if self.pausing || self.rng.chance(1, 2) {
                            self.held.push(Held::Handle(h, rec));
                        } else {
                            check_join(&round, &rec, h.join(), "join after cancel");
                        }
                    }
                    Held::Cod(c, rec) => {
                        round.log(format!("{name}: cancel-on-drop {}", rec.id));
                        in_ctx(Ctx::CancelOnDrop, || drop(c));
                    }
                }
            }
            Kind::Join => {
                let (a, b) = (
                    round.task(TaskKind::MustRun, 0, &mut self.rng),
                    round.task(TaskKind::MustRun, 0, &mut self.rng),
                );
                let recs = last_recs(2);
                round.log(format!("{name}: join"));
                pool.join(a, b);
                check_ran(&round, &recs, "join");
            }
            Kind::Scope => {
                let fifo = self.rng.chance(1, 3);
                let mut recs = Vec::new();
                let rng = &mut self.rng;
                round.log(format!("{name}: scope (fifo {fifo})"));
                let body = |s: &flock::Scope<'_>| {
                    for _ in 0..rng.range(1, 6) {
                        let t = round.task(TaskKind::MustRun, 0, rng);
                        recs.push(last_rec());
                        if rng.chance(1, 4) {
                            // A scope task that spawns into the scope.
                            let inner = round.task(TaskKind::MustRun, 1, rng);
                            recs.push(last_rec());
                            s.spawn(move |s| {
                                s.spawn(move |_| {
                                    inner();
                                });
                                t();
                            });
                        } else if rng.chance(1, 2) {
                            s.spawn_fifo(move |_| {
                                t();
                            });
                        } else {
                            s.spawn(move |_| {
                                t();
                            });
                        }
                    }
                    if rng.chance(1, 3) {
                        let k = rng.range(1, 8);
                        let ts: Vec<_> = (0..k)
                            .map(|_| round.task(TaskKind::MustRun, 1, rng))
                            .collect();
                        recs.extend(last_recs(k));
                        s.spawn_batch(ts.into_iter().map(|t| {
                            move |_: &flock::Scope<'_>| {
                                t();
                            }
                        }));
                    }
                };
                if fifo {
                    pool.scope_fifo(body);
                } else {
                    pool.scope(body);
                }
                check_ran(&round, &recs, "scope");
            }
            Kind::Batch => {
                let k = self.rng.range(1, 40);
                let ts: Vec<_> = (0..k)
                    .map(|_| {
                        let t = round.task(TaskKind::Loose, 0, &mut self.rng);
                        move || {
                            t();
                        }
                    })
                    .collect();
                let lane = self.lane();
                let (r, _) = in_ctx(Ctx::Admission, || match lane {
                    Some(l) => pool.submit_batch_to(l, ts),
                    None => pool.submit_batch(ts),
                });
                match r {
                    Ok(n) if n == k => round.log(format!("{name}: batch of {k} lane {lane:?}")),
                    Ok(n) => round.fail(format!("a batch of {k} accepted {n}")),
                    Err(e) => {
                        round.log(format!(
                            "{name}: batch of {k}: {} accepted, {:?}",
                            e.accepted(),
                            e.reason()
                        ));
                        let accepted = e.accepted();
                        let back = e.into_rejected();
                        if accepted + back.len() != k {
                            round.fail(format!(
                                "a batch of {k}: {accepted} accepted, {} back",
                                back.len()
                            ));
                        }
                        in_ctx(Ctx::Refused, || drop(back));
                    }
                }
            }
            Kind::Group => self.group_op(),
            Kind::Purge => {
                // Before the purge: it may take a scope's spawns (non-discardable, so handed
                // back behind the ones it missed) while that scope runs, and the scope's check
                // must see it by its end.
                round.purges.fetch_add(1, SeqCst);
                round.purging.fetch_add(1, SeqCst);
                let (n, drops) = in_ctx(Ctx::Purge, || pool.purge());
                round.purging.fetch_sub(1, SeqCst);
                round.log(format!("{name}: purge: {n}"));
                if n as u64 != drops {
                    round.fail(format!(
                        "purge returned {n} and dropped {drops} tokens on its thread"
                    ));
                }
            }
            Kind::Pause => {
                round.log(format!("{name}: pause"));
                // Read before the pause: a resume by anyone after it shows as a change.
                self.pause_epoch = round.resumes.load(SeqCst);
                round.pausing.fetch_add(1, SeqCst);
                pool.pause();
                // Only operations that never wait for a task until the resume below.
                self.pausing = true;
                for _ in 0..self.rng.range(0, 3) {
                    match self.rng.below(5) {
                        0 if round.ops.has(Kind::Purge) => self.op(Kind::Purge),
                        1 if round.ops.has(Kind::Resize) => self.op(Kind::Resize),
                        2 if round.ops.has(Kind::Cancel) => self.op(Kind::Cancel),
                        3 if round.ops.has(Kind::Group) => self.group_cancel_while_paused(),
                        _ => std::thread::sleep(Duration::from_micros(self.rng.below(1000))),
                    }
                }
                self.pausing = false;
                // Before the bump: a broadcast call that still sees us pausing reads
                // `resumes` before the bump (`blocking_broadcast_call`).
                round.pausing.fetch_sub(1, SeqCst);
                round.resumes.fetch_add(1, SeqCst);
                pool.resume();
                round.log(format!("{name}: resume"));
            }
            Kind::Resize => {
                let n = self.rng.range(1, round.cfg.max_workers);
                let refused = match round.cfg.refuse_os && self.rng.chance(1, 2) {
                    false => None,
                    true if pins(&round.cfg) && self.rng.chance(1, 3) => Some(Refuse::Pinning),
                    true if self.rng.chance(1, 2) => Some(Refuse::Membarrier),
                    true => Some(Refuse::Threads),
                };
                let r = match refused {
                    Some(what) => resize_where_refused(&pool, n, what),
                    None => pool.resize(n),
                };
                round.log(format!("{name}: resize({n}), refused: {refused:?}: {r:?}"));
                match r {
                    Ok(()) | Err(flock::ResizeError::Shutdown) => {}
                    Err(flock::ResizeError::ThreadNamePanicked { .. }) if round.cfg.bad_name => {}
                    // Only a grow starts threads, and the lowest refused is named.
                    Err(flock::ResizeError::PinFailed { worker, .. })
                        if refused == Some(Refuse::Pinning) && worker < n => {}
                    Err(flock::ResizeError::ThreadSpawn(_)) if refused == Some(Refuse::Threads) => {
                    }
                    Err(e) => round.fail(format!("resize({n}): {e:?}")),
                }
            }
            Kind::Broadcast => {
                let bad = AtomicUsize::new(0);
                let blocking = self.rng.chance(1, 3);
                round.log(format!("{name}: broadcast (blocking: {blocking})"));
                let out = pool.broadcast(|i| {
                    if flock::current_worker_index() != Some(i) {
                        bad.fetch_add(1, SeqCst);
                    }
                    if blocking {
                        blocking_broadcast_call(&round);
                    }
                    i
                });
                round.log(format!("{name}: broadcast returned {out:?}"));
                check_broadcast(&round, &pool, &out, &bad);
            }
            Kind::Async => self.async_op(),
            Kind::Wait => {
                let r = if self.rng.chance(1, 2) {
                    pool.wait()
                } else {
                    pool.wait_for(Duration::from_millis(self.rng.below(3)))
                };
                round.log(format!("{name}: wait: {r:?}"));
                if r == Err(WaitError::WouldDeadlock) {
                    round.fail("a wait from a driver thread answered WouldDeadlock".into());
                }
            }
            Kind::Shutdown => {
                // Once, while the other drivers go on (they meet refusals from here on).
                let end = [End::Shutdown, End::ShutdownTimeout, End::ShutdownNow]
                    [self.rng.below(3) as usize];
                round.log(format!("{name}: {end:?} mid-round"));
                round.shut.store(true, SeqCst);
                round.purges.fetch_add(1, SeqCst);
                let (r, _) = in_ctx(Ctx::Shutdown, || match end {
                    End::ShutdownNow => pool.shutdown_now().map(drop),
                    End::ShutdownTimeout => pool.shutdown_timeout(Duration::from_millis(1)),
                    _ => pool.shutdown(),
                });
                round.log(format!("{name}: {end:?} mid-round: {r:?}"));
                match r {
                    Ok(()) | Err(WaitError::Timeout) if end == End::ShutdownTimeout => {}
                    Ok(()) => {}
                    Err(e) => round.fail(format!("{end:?} from a driver: {e:?}")),
                }
            }
            Kind::Par => par_op(&round, &pool, 0, &mut self.rng, &name),
            Kind::Waker
            | Kind::Nested
            | Kind::BadName
            | Kind::Order
            | Kind::UnknownLane
            | Kind::Hooks => {}
        }
    }

    /// While this driver holds the pool paused: a task put in a group from here cannot start
    /// until a resume, so a group `cancel` must drop it (or a purge did), whatever the other
    /// drivers' waits on the group do meanwhile (issue 37's case 5). Only under `Reject` (a
    /// blocked submit would wait for our own resume; `CallerRuns` and helper threads run a
    /// task at once) and with one lane (the lane reserve serves shared queues).
    fn group_cancel_while_paused(&mut self) {
        let round = self.round.clone();
        if round.cfg.policy != Backpressure::Reject || round.cfg.lanes.is_some() {
            return;
        }
        let resumes = self.pause_epoch;
        let g = round.pick_group(&mut self.rng);
        let t = round.task(TaskKind::Group(g), 0, &mut self.rng);
        let rec = last_rec();
        let (r, _) = in_ctx(Ctx::Admission, || {
            round.groups()[g].group.submit(move || {
                t();
            })
        });
        if let Err(e) = r {
            in_ctx(Ctx::Refused, || drop(e.into_inner()));
            return;
        }
        let (n, drops) = in_ctx(Ctx::GroupCancel, || round.groups()[g].cancel());
        let name = &self.name;
        round.log(format!(
            "{name}: paused, group {g} task {} then cancel: {n}",
            rec.id
        ));
        if n as u64 != drops {
            round.fail(format!(
                "group {g} cancel returned {n} and dropped {drops} tokens on its thread"
            ));
        }
        // Another driver's cancel may have taken the task's handle before ours began, or a
        // purge may have claimed the task (then our cancel finds it claimed), and be dropping
        // it still: once no cancel of the group and no purge is in progress, whichever took
        // it has dropped the task (or none did, and ours should have).
        let deadline = Instant::now() + Duration::from_secs(20);
        while rec.dropped.load(SeqCst) == 0
            && (round.groups()[g].cancels.load(SeqCst) != 0 || round.purging.load(SeqCst) != 0)
            && Instant::now() < deadline
        {
            std::thread::yield_now();
        }
        let undisturbed = round.resumes.load(SeqCst) == resumes && !self.pool.is_shutdown();
        if undisturbed {
            PAUSED_CANCEL_CHECKS.fetch_add(1, SeqCst);
        }
        if undisturbed && rec.dropped.load(SeqCst) == 0 {
            round.fail(format!(
                "group {g}'s cancel returned {n} and left task {} queued (ran {}) while the pool was paused, no other cancel of the group and no purge in progress",
                rec.id,
                rec.ran.load(SeqCst)
            ));
        }
    }

    /// After a wait on group `g` that did not time out: this driver's tasks of the group,
    /// accepted before the wait began, have finished (run or dropped); they are then
    /// forgotten.
    fn check_own_group_tasks_finished(&mut self, g: usize, how: &str) {
        for rec in self.group_recs.iter().filter(|r| r.0 == g) {
            if !rec.1.ended.load(SeqCst) && rec.1.dropped.load(SeqCst) == 0 {
                self.round.fail(format!(
                    "group {g}'s {how} returned before its task {} finished (ran {}, {} unfinished in the group now)",
                    rec.1.id,
                    rec.1.ran.load(SeqCst),
                    self.round.groups()[g].group.unfinished()
                ));
            }
        }
        self.group_recs.retain(|r| r.0 != g);
    }

    fn group_op(&mut self) {
        let round = self.round.clone();
        let g = round.pick_group(&mut self.rng);
        let group = &round.groups()[g].group;
        let name = self.name.clone();
        match self.rng.below(6) {
            0 | 1 => {
                for _ in 0..self.rng.range(1, 5) {
                    let t = round.task(TaskKind::Group(g), 0, &mut self.rng);
                    let rec = last_rec();
                    let lane = self.lane();
                    let spawn = self.rng.chance(1, 2);
                    let (r, _) = in_ctx(Ctx::Admission, || {
                        let t = move || {
                            t();
                        };
                        match (spawn, lane) {
                            (true, Some(l)) => {
                                group.spawn_to(l, t);
                                Ok(())
                            }
                            (true, None) => {
                                group.spawn(t);
                                Ok(())
                            }
                            (false, Some(l)) => group.submit_to(l, t),
                            (false, None) => group.submit(t),
                        }
                    });
                    round.log(format!("{name}: group {g} task {} (spawn {spawn})", rec.id));
                    match r {
                        Ok(()) => self.group_recs.push((g, rec)),
                        Err(e) => drop(in_ctx(Ctx::Refused, || drop(e.into_inner()))),
                    }
                }
            }
            2 => {
                round.log(format!("{name}: group {g} wait"));
                let r = group.wait();
                round.log(format!("{name}: group {g} wait: {r:?}"));
                group_wait_result(&round, g, r, "wait");
                self.check_own_group_tasks_finished(g, "wait");
            }
            3 => {
                let r = group.wait_timeout(Duration::from_millis(self.rng.below(3)));
                round.log(format!("{name}: group {g} wait_timeout: {r:?}"));
                if r != Err(GroupError::Timeout) {
                    self.check_own_group_tasks_finished(g, "wait_timeout");
                }
                group_wait_result(&round, g, r, "wait_timeout");
            }
            4 => {
                let panicky = round.ops.has(Kind::Waker) && self.rng.chance(1, 3);
                round.log(format!(
                    "{name}: group {g} wait_async (panicky waker {panicky})"
                ));
                let r = block_on(&mut group.wait_async(), &test_waker(panicky));
                round.log(format!("{name}: group {g} wait_async: {r:?}"));
                group_wait_result(&round, g, r, "wait_async");
                self.check_own_group_tasks_finished(g, "wait_async");
            }
            _ => {
                let (n, drops) = in_ctx(Ctx::GroupCancel, || round.groups()[g].cancel());
                round.log(format!("{name}: group {g} cancel: {n}"));
                if n as u64 != drops {
                    round.fail(format!(
                        "group {g} cancel returned {n} and dropped {drops} tokens on its thread"
                    ));
                }
            }
        }
    }

    fn async_op(&mut self) {
        let round = self.round.clone();
        let pool = self.pool.clone();
        let name = self.name.clone();
        let t = round.task(TaskKind::Loose, 0, &mut self.rng);
        let rec = last_rec();
        let panicky = round.ops.has(Kind::Waker) && self.rng.chance(1, 3);
        let waker = test_waker(panicky);
        let abandon = self.rng.chance(1, 5);
        let unknown =
            round.cfg.lanes.is_some() && round.ops.has(Kind::UnknownLane) && self.rng.chance(1, 20);
        let lane = self.lane();
        round.log(format!(
            "{name}: async {} (panicky waker {panicky}, abandon {abandon}, unknown lane {unknown})",
            rec.id
        ));
        if self.rng.chance(1, 2) {
            let t = move || {
                t();
            };
            let mut fut = match lane {
                _ if unknown => pool.submit_async_to("nope", t),
                Some(l) => pool.submit_async_to(l, t),
                None => pool.submit_async(t),
            };
            let r = match self.first_poll(&mut fut, &waker, abandon) {
                Some(Poll::Ready(r)) => r,
                Some(Poll::Pending) => {
                    in_ctx(Ctx::Abandoned, || drop(fut));
                    return;
                }
                None => in_ctx(Ctx::Admission, || block_on(&mut fut, &waker)).0,
            };
            drop(fut);
            if let Err(e) = r {
                round.log(format!("{name}: async {} refused {:?}", rec.id, e.reason()));
                in_ctx(Ctx::Refused, || drop(e.into_inner()));
            }
        } else {
            let mut fut = match lane {
                _ if unknown => pool.spawn_async_to("nope", t),
                Some(l) => pool.spawn_async_to(l, t),
                None => pool.spawn_async(t),
            };
            let h = match self.first_poll(&mut fut, &waker, abandon) {
                Some(Poll::Ready(h)) => h,
                Some(Poll::Pending) => {
                    in_ctx(Ctx::Abandoned, || drop(fut));
                    return;
                }
                None => in_ctx(Ctx::Admission, || block_on(&mut fut, &waker)).0,
            };
            drop(fut);
            self.held.push(Held::Handle(h, rec));
        }
    }

    /// With `abandon`, polls once: `Some(Pending)` means the caller gives up (drops the
    /// future). Without, `None`: the caller polls to the end.
    fn first_poll<F: Future + Unpin>(
        &self,
        fut: &mut F,
        waker: &Arc<TestWaker>,
        abandon: bool,
    ) -> Option<Poll<F::Output>> {
        if !abandon {
            return None;
        }
        let w = Waker::from(waker.clone());
        Some(
            in_ctx(Ctx::Admission, || {
                Pin::new(&mut *fut).poll(&mut Context::from_waker(&w))
            })
            .0,
        )
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string payload)".into())
}

// ---------------------------------------------------------------------------------------
// A round from start to end

fn build(round: &Arc<Round>) -> Pool {
    let cfg = &round.cfg;
    let mut b = Pool::builder()
        .workers(cfg.workers)
        .max_workers(cfg.max_workers)
        .capacity(cfg.capacity)
        .when_full(cfg.policy)
        .max_spawned_threads(2)
        .track_latency(cfg.latency)
        .membarrier(cfg.membarrier);
    if let Some(t) = cfg.block_timeout {
        b = b.block_timeout(t);
    }
    if cfg.fifo {
        b = b.fifo();
    }
    if pins(cfg) {
        b = b.pin_workers(true);
    }
    if let Some([a, c]) = cfg.lanes {
        b = b
            .lanes(&[("a", a), ("b", c)])
            .lane_reserve(cfg.lane_reserve)
            .strict_priority(cfg.strict_priority);
    }
    if cfg.handler {
        let calls = round.handler_calls.clone();
        b = b.panic_handler(move |_| {
            if calls.fetch_add(1, SeqCst) % 5 == 4 {
                std::panic::panic_any(HANDLER_PANIC);
            }
        });
    }
    let armed = round.name_armed.clone();
    let last = cfg.max_workers - 1;
    b = b.thread_name(move |i| {
        if i == last && armed.load(SeqCst) {
            std::panic::panic_any(NAME_PANIC);
        }
        format!("flock-torture-{i}")
    });
    if cfg.hooks {
        // Weak: the pool's registry holds its hooks, and the round holds the registry (its
        // task groups).
        let r = Arc::downgrade(round);
        b = b.on_worker_start(move |_| {
            let Some(r) = r.upgrade() else { return };
            let n = r.starts.fetch_add(1, SeqCst);
            if n % 5 == 2 {
                // A slow start: other drivers resize meanwhile.
                std::thread::sleep(Duration::from_millis(1));
            }
            if n % 7 == 6 {
                std::panic::panic_any(HOOK_PANIC);
            }
        });
        let r = Arc::downgrade(round);
        b = b.on_worker_stop(move |i| {
            let Some(r) = r.upgrade() else { return };
            let n = r.stops.fetch_add(1, SeqCst);
            if n % 3 == 0 {
                // A task submitted from the stop hook, onto this worker's queue: it runs
                // before the thread exits (also during a shutdown).
                if let Some(pool) = r.pool() {
                    let t = r.task(TaskKind::Loose, 1, &mut Rng(r.seed ^ n));
                    r.log(format!(
                        "stop hook of worker {i}: submits {}",
                        last_rec().id
                    ));
                    let (res, _) = in_ctx(Ctx::Admission, || {
                        pool.submit(move || {
                            t();
                        })
                    });
                    if let Err(e) = res {
                        in_ctx(Ctx::Refused, || drop(e.into_inner()));
                    }
                }
            }
            if n % 5 == 4 {
                std::panic::panic_any(HOOK_PANIC);
            }
        });
    }
    b.build().expect("a valid configuration")
}

/// A hang's evidence: every thread's stack, by `gdb` attached to this process (where it is
/// installed and may attach), printed before the report. Best effort: without `gdb` it says
/// so and the report follows as before.
fn dump_stacks() {
    let out = std::process::Command::new("timeout")
        .args([
            "120",
            "gdb",
            "-p",
            &std::process::id().to_string(),
            "-batch",
            "-nx",
        ])
        .args(["-ex", "set pagination off", "-ex", "thread apply all bt"])
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            eprintln!(
                "torture: the hung process's threads (gdb):\n{}",
                String::from_utf8_lossy(&o.stdout)
            );
        }
        Ok(o) => eprintln!(
            "torture: gdb gave no stacks ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
        Err(e) => eprintln!("torture: no stacks of the hung threads (gdb: {e})"),
    }
}

fn run_round(round: Arc<Round>) {
    let pool = Arc::new(build(&round));
    *round.pool.lock().unwrap() = Arc::downgrade(&pool);
    let groups = (0..2)
        .map(|_| Group {
            group: TaskGroup::new(&pool),
            reported: AtomicUsize::new(0),
            cancels: AtomicUsize::new(0),
        })
        .collect();
    let _ = round.groups.set(groups);
    round.name_armed.store(round.cfg.bad_name, SeqCst);
    let mut rng = Rng(round.seed);
    let deadline = Instant::now() + Duration::from_millis(round.cfg.millis);
    std::thread::scope(|s| {
        for d in 0..round.cfg.drivers {
            let driver = Driver {
                round: round.clone(),
                pool: pool.clone(),
                rng: rng.fork(),
                name: format!("d{d}"),
                held: Vec::new(),
                group_recs: Vec::new(),
                index: d,
                ops: 0,
                pausing: false,
                pause_epoch: 0,
            };
            std::thread::Builder::new()
                .name(format!("torture-driver-{d}"))
                .spawn_scoped(s, move || driver.run(deadline))
                .unwrap();
        }
    });
    round.log("drivers done".into());
    if !round.shut.load(SeqCst) {
        quiet_checks(&round, &pool);
        let recs = round.tracker.recs.lock().unwrap().clone();
        for (g, grp) in round.groups().iter().enumerate() {
            group_wait_result(&round, g, grp.group.wait(), "final wait");
            let panicked = recs
                .iter()
                .filter(|r| r.kind == TaskKind::Group(g) && r.panics && r.ran.load(SeqCst) == 1)
                .count();
            let reported = grp.reported.load(SeqCst);
            if reported != panicked {
                round.fail(format!("group {g}: its waits reported {reported} panics, {panicked} of its tasks panicked"));
            }
        }
        if round.ops.has(Kind::Submit) && rng.chance(1, 2) {
            // A burst the shutdown meets still queued.
            let k = rng.range(1, 30);
            round.log(format!("burst of {k} before the end"));
            for _ in 0..k {
                let t = round.task(TaskKind::Loose, 0, &mut rng);
                let (r, _) = in_ctx(Ctx::Admission, || {
                    pool.submit(move || {
                        t();
                    })
                });
                if let Err(e) = r {
                    in_ctx(Ctx::Refused, || drop(e.into_inner()));
                }
            }
        }
    }
    end_round(&round, pool);
    final_checks(&round);
}

/// After the drivers: waits for quiescence, then checks the books.
fn quiet_checks(round: &Round, pool: &Pool) {
    // Workers retiring after the last shrink may still be on their way out: their
    // `on_worker_stop` hook submits a task, which `wait` below cannot see if it returned
    // first (then `stats()` showed it in flight). `per_worker` shows their slots until they
    // have left. Bounded: a slow exit only makes the check below weaker.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pool.is_shutdown()
        && pool.stats().per_worker.len() > pool.workers()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    round.resumes.fetch_add(1, SeqCst);
    pool.resume();
    let mut r = pool.wait();
    while r == Err(WaitError::Paused) {
        // A task paused the pool and has not resumed yet.
        round.resumes.fetch_add(1, SeqCst);
        pool.resume();
        std::thread::yield_now();
        r = pool.wait();
    }
    if r.is_err() {
        round.fail(format!("wait at the end of the round: {r:?}"));
    }
    let s = pool.stats();
    round.log(format!("quiet: {s:?}").replace('\n', " "));
    balance(round, &s, "at quiescence");
    // Every worker the pool counts has a thread that runs its broadcast call (a grow that
    // counted a thread whose pinning failed, and that then left, would show here).
    if !pool.is_shutdown() {
        let wanted = pool.workers();
        let out = pool.broadcast(|i| i);
        if out != (0..wanted).collect::<Vec<_>>() && !pool.is_shutdown() {
            round.fail(format!(
                "at quiescence a broadcast reached workers {out:?} of the {wanted} wanted"
            ));
        }
    }
}

fn balance(round: &Round, s: &flock::Stats, when: &str) {
    let t = &round.tracker;
    if s.in_flight != 0 || s.queued != 0 || s.submitted != s.completed + s.panicked + s.dropped {
        round.fail(format!(
            "{when}: submitted {} != completed {} + panicked {} + dropped {} (in_flight {}, queued {}, lanes queued {:?})",
            s.submitted, s.completed, s.panicked, s.dropped, s.in_flight, s.queued,
            s.lanes.iter().map(|l| l.queued).collect::<Vec<_>>()
        ));
    }
    if s.waiters != 0 {
        round.fail(format!("{when}: {} waiters", s.waiters));
    }
    let pool_drops = t.drops_in(&[
        Ctx::Pool,
        Ctx::Cancel,
        Ctx::CancelOnDrop,
        Ctx::GroupCancel,
        Ctx::Purge,
        Ctx::Shutdown,
    ]);
    if s.dropped != pool_drops {
        round.fail(format!(
            "{when}: Stats::dropped {} but the pool dropped {pool_drops} tokens",
            s.dropped
        ));
    }
    let panics = t.panics.load(SeqCst);
    if s.panicked != panics {
        round.fail(format!(
            "{when}: Stats::panicked {} but {panics} tasks panicked",
            s.panicked
        ));
    }
    let refused = t.drops_in(&[Ctx::Admission, Ctx::Refused]);
    if cfg!(feature = "stats") && s.rejected != refused {
        round.fail(format!(
            "{when}: Stats::rejected {} (full {}, timeout {}, shutdown {}, unknown lane {}) but {refused} tokens were refused",
            s.rejected, s.rejected_full, s.rejected_timeout, s.rejected_shutdown, s.rejected_unknown_lane
        ));
    }
}

fn end_round(round: &Round, pool: Arc<Pool>) {
    let end = round.cfg.end;
    round.log(format!("end: {end:?}"));
    let r = match end {
        End::Shutdown => pool.shutdown().map(drop),
        End::ShutdownTimeout => match pool.shutdown_timeout(Duration::from_millis(2)) {
            Err(WaitError::Timeout) => pool.shutdown().map(drop),
            r => r.map(drop),
        },
        End::ShutdownNow => {
            let (r, _) = in_ctx(Ctx::Shutdown, || pool.shutdown_now());
            match r {
                Ok(n) if n != pool.dropped_by_shutdown() => {
                    round.fail(format!(
                        "shutdown_now returned {n}, dropped_by_shutdown {}",
                        pool.dropped_by_shutdown()
                    ));
                    Ok(())
                }
                r => r.map(drop),
            }
        }
        End::Drop => {
            // Tasks hold the pool weakly and upgrade it while they run: wait until ours is
            // the last handle, so that the drop (a graceful close) happens here.
            let mut pool = pool;
            loop {
                match Arc::try_unwrap(pool) {
                    Ok(p) => {
                        drop(p);
                        hooks_balance(round);
                        return;
                    }
                    Err(p) => {
                        pool = p;
                        std::thread::yield_now();
                    }
                }
            }
        }
    };
    if let Err(e) = r {
        round.fail(format!("{end:?}: {e:?}"));
    }
    let s = pool.stats();
    round.log(format!("after {end:?}: {s:?}").replace('\n', " "));
    balance(round, &s, "after the shutdown");
    if s.dropped < pool.dropped_by_shutdown() {
        round.fail(format!(
            "dropped {} < dropped_by_shutdown {}",
            s.dropped,
            pool.dropped_by_shutdown()
        ));
    }
    if let Some(w) = s
        .per_worker
        .iter()
        .find(|w| w.state != WorkerState::Stopped)
    {
        round.fail(format!(
            "after the shutdown, worker {} is {:?}",
            w.index, w.state
        ));
    }
    hooks_balance(round);
}

/// Once every worker thread has exited: each that started stopped.
fn hooks_balance(round: &Round) {
    let (starts, stops) = (round.starts.load(SeqCst), round.stops.load(SeqCst));
    if round.cfg.hooks && (starts != stops || starts < round.cfg.workers as u64) {
        round.fail(format!(
            "on_worker_start ran {starts} times, on_worker_stop {stops}"
        ));
    }
}

/// Every token ran or was dropped exactly once; groups' waits reported every panic.
fn final_checks(round: &Round) {
    let recs = round.tracker.recs.lock().unwrap().clone();
    for r in &recs {
        let (ran, dropped) = (r.ran.load(SeqCst), r.dropped.load(SeqCst));
        if ran + dropped != 1 {
            round.fail(format!(
                "task {} ({:?}): ran {ran} times, dropped {dropped} times",
                r.id, r.kind
            ));
        } else if ran == 1 && !r.ended.load(SeqCst) && !r.panics {
            round.fail(format!("task {} started but never ended", r.id));
        } else if ran == 1 && r.expect_unrun.load(SeqCst) {
            round.fail(format!(
                "task {} ran, but its handle said it was not run",
                r.id
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------
// The test

static CURRENT_SEED: AtomicU64 = AtomicU64::new(0);

/// Times `group_cancel_while_paused` made its check (the pause undisturbed to the end).
static PAUSED_CANCEL_CHECKS: AtomicU64 = AtomicU64::new(0);

/// Data-parallel calls checked (`par_op`): from drivers (`[0]`) and in tasks (`[1]`).
static PAR_CALLS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Resizes made from a thread that may not pin (`[0]`), start threads (`[1]`) or issue a
/// membarrier (`[2]`): how many, and how many failed for it (a grow that started a thread).
static REFUSED_RESIZES: [[AtomicU64; 2]; 3] = [
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
    [AtomicU64::new(0), AtomicU64::new(0)],
];

/// Keeps this test's deliberate panics quiet; others go to the default hook. A waker that
/// panics on one of flock's threads is noted once (outside the captured output): flock
/// catches it, and were it to escape into a worker loop the process would abort, leaving no
/// seed behind but this line.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let text = p.downcast_ref::<&str>().copied().unwrap_or("");
            if text.starts_with("torture: deliberate") {
                static NOTED: AtomicBool = AtomicBool::new(false);
                let thread = std::thread::current();
                let on_flock = thread.name().is_some_and(|n| n.starts_with("flock-torture"));
                if text == WAKER_PANIC && on_flock && !NOTED.swap(true, SeqCst) {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "torture: a waker panicked on {:?} in the round of seed {} (caught by flock; an abort after this line means it escaped)",
                        thread.name(),
                        CURRENT_SEED.load(SeqCst)
                    );
                }
                return;
            }
            default(info);
        }));
    });
}

fn report(round: &Round, why: &str) -> String {
    let log = round.log.lock().unwrap();
    let tail: Vec<&String> = log
        .iter()
        .rev()
        .take(80)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let pending: Vec<String> = round
        .tracker
        .recs
        .lock()
        .unwrap()
        .iter()
        .filter(|r| {
            r.ran.load(SeqCst) + r.dropped.load(SeqCst) == 0
                || (r.ran.load(SeqCst) == 1 && !r.ended.load(SeqCst) && !r.panics)
        })
        .take(20)
        .map(|r| format!("{}({:?}, ran {})", r.id, r.kind, r.ran.load(SeqCst)))
        .collect();
    let stats = round.pool().map(|p| format!("{:?}", p.stats()));
    // The log first and the verdict last: a CI log keeps the head and the tail of a long
    // output, and the tail is where the failures and the seed must be.
    format!(
        "torture: round FAILED, its last ops:\n    {}\n  drivers doing: {:?}\n  unfinished tasks: {pending:?}\n  stats now: {stats:?}\n  config {:?}\n  ops {:?}\n  failures: {:#?}\n  round FAILED: {why}\n  seed {} (replay: FLOCK_TORTURE_SEED={})",
        tail.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n    "),
        round.doing.lock().unwrap(),
        round.cfg,
        round.ops.0,
        round.failures.lock().unwrap(),
        round.seed,
        round.seed,
    )
}

#[test]
fn torture() {
    install_hook();
    let secs: u64 = std::env::var("FLOCK_TORTURE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("FLOCK_TORTURE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let ops = OpSet::from_env();
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "torture: seed {seed} (FLOCK_TORTURE_SEED={seed}), {secs} s, ops {:?}",
            ops.0
        );
    }
    let budget = Duration::from_secs(secs);
    let start = Instant::now();
    let mut seeds = Rng(seed);
    let (mut rounds, mut total_ops, mut tasks) = (0u64, 0u64, 0u64);
    let mut next_seed = seed;
    while rounds == 0 || start.elapsed() < budget {
        let round_seed = next_seed;
        next_seed = seeds.next();
        CURRENT_SEED.store(round_seed, SeqCst);
        let mut rng = Rng(round_seed);
        let round_ops = ops.for_round(&mut rng);
        let cfg = Config::draw(&mut rng, &round_ops);
        let round = Arc::new(Round {
            seed: round_seed,
            cfg,
            ops: round_ops,
            pool: Mutex::new(Weak::new()),
            tracker: Tracker::default(),
            groups: std::sync::OnceLock::new(),
            log: Mutex::new(VecDeque::new()),
            failures: Mutex::new(Vec::new()),
            purges: AtomicU64::new(0),
            purging: AtomicU64::new(0),
            shut: AtomicBool::new(false),
            name_armed: Arc::new(AtomicBool::new(false)),
            handler_calls: Arc::new(AtomicU64::new(0)),
            ops_run: AtomicU64::new(0),
            doing: Mutex::new(vec![String::new(); 4]),
            resumes: AtomicU64::new(0),
            pausing: AtomicU64::new(0),
            starts: AtomicU64::new(0),
            stops: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::channel();
        let r = round.clone();
        std::thread::Builder::new()
            .name("torture-round".into())
            .spawn(move || {
                let out = catch_unwind(AssertUnwindSafe(|| run_round(r)));
                let _ = tx.send(out.err().map(|p| panic_text(&*p)));
            })
            .unwrap();
        match rx.recv_timeout(ROUND_DEADLINE) {
            Ok(None) => {}
            Ok(Some(p)) => panic!("{}", report(&round, &format!("the round panicked: {p}"))),
            Err(_) => {
                dump_stacks();
                panic!(
                    "{}",
                    report(
                        &round,
                        &format!("a waiter did not return within {ROUND_DEADLINE:?} (hang)")
                    )
                )
            }
        }
        if !round.failures.lock().unwrap().is_empty() {
            panic!("{}", report(&round, "checks failed"));
        }
        rounds += 1;
        total_ops += round.ops_run.load(SeqCst);
        tasks += round.tracker.next.load(SeqCst);
    }
    // Outside the captured output, so that a passing run shows it did something.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "torture: {rounds} rounds, {total_ops} driver ops, {tasks} tasks, every one ran or was dropped exactly once (seed {seed}); {} paused group cancels checked; data-parallel calls checked {} from drivers, {} in tasks; resizes where pinning was refused {} ({} failed), where threads were {} ({} failed), where membarriers were {}",
        PAUSED_CANCEL_CHECKS.load(SeqCst),
        PAR_CALLS[0].load(SeqCst),
        PAR_CALLS[1].load(SeqCst),
        REFUSED_RESIZES[0][0].load(SeqCst),
        REFUSED_RESIZES[0][1].load(SeqCst),
        REFUSED_RESIZES[1][0].load(SeqCst),
        REFUSED_RESIZES[1][1].load(SeqCst),
        REFUSED_RESIZES[2][0].load(SeqCst),
    );
    assert!(rounds > 0 && tasks > 0);
}

/// Found by the torture test: `submit_async_to` / `spawn_async_to` naming a lane the pool
/// lacks are refused with `UnknownLane`, as `submit_to` is, but only `submit_to`'s refusal is
/// counted in `Stats::rejected` / `rejected_unknown_lane` (whose docs count every task
/// refused for naming an unknown lane).
#[test]
fn async_admission_to_an_unknown_lane_is_counted_refused() {
    let pool = Pool::builder()
        .workers(1)
        .lanes(&[("a", 1), ("b", 2)])
        .build()
        .unwrap();
    let waker = test_waker(false);
    let r = block_on(&mut pool.submit_async_to("nope", || ()), &waker);
    assert_eq!(r.unwrap_err().reason(), RejectReason::UnknownLane);
    let h = block_on(&mut pool.spawn_async_to("nope", || ()), &waker);
    assert!(matches!(
        h.join(),
        Err(JoinError::Refused(RejectReason::UnknownLane))
    ));
    assert_eq!(
        pool.submit_to("nope", || ()).unwrap_err().reason(),
        RejectReason::UnknownLane
    );
    let s = pool.stats();
    if cfg!(feature = "stats") {
        assert_eq!(
            (s.rejected, s.rejected_unknown_lane),
            (3, 3),
            "three refusals, all counted"
        );
    }
}

/// Found by the torture test (a round with worker hooks, lanes, batches and resizes): a
/// task that an `on_worker_stop` hook submitted ran in `run_what_the_stop_hook_left`, which
/// popped the worker's own deques and ran what it found with `execute`. If that task took
/// up a batch's bundle from a shared queue (here through `yield_now`; in the torture round,
/// a `join` waiting there), the bundle's entry went onto that same deque, and the drain ran
/// the entry itself: `debug_assert` "bundles are taken up, never run" failed on the worker
/// (its thread died), and the batch's other tasks never ran, so `wait` never returned. A
/// retiring worker now hands its hook's tasks over instead of running them (outside a
/// shutdown), so here the hook itself yields and takes the bundle up before the worker
/// leaves: its entry must stay where the worker that stays takes the rest.
#[test]
fn a_stop_hook_task_that_takes_up_a_bundle_leaves_no_entry_to_run() {
    use std::sync::OnceLock;
    let armed = Arc::new(AtomicBool::new(false));
    let handle: Arc<OnceLock<Weak<Pool>>> = Arc::new(OnceLock::new());
    let (t_started, t_started_rx) = mpsc::channel::<()>();
    let (go, go_rx) = mpsc::channel::<()>();
    let go_rx = Arc::new(Mutex::new(go_rx));
    // What T's `yield_now` returned: checked here, since a panic in T is caught by the pool.
    let (yielded_tx, yielded) = mpsc::channel::<Option<flock::Yield>>();
    let yielded_tx = Arc::new(Mutex::new(yielded_tx));
    let (a, h) = (armed.clone(), handle.clone());
    let pool = Arc::new(
        Pool::builder()
            .workers(2)
            .max_workers(2)
            .on_worker_stop(move |i| {
                if i != 1 || !a.swap(false, SeqCst) {
                    return;
                }
                let Some(pool) = h.get().and_then(Weak::upgrade) else {
                    return;
                };
                drop(pool);
                // T: worker 1's hook, as it retires.
                t_started.send(()).unwrap();
                go_rx.lock().unwrap().recv().unwrap();
                // Takes up the bundle in the shared queue (worker 0 is still held).
                let took = flock::yield_now();
                yielded_tx.lock().unwrap().send(took).unwrap();
            })
            .build()
            .unwrap(),
    );
    handle.set(Arc::downgrade(&pool)).unwrap();
    // Worker 0 busy until the end, so the bundle waits in the shared queue for worker 1: a
    // broadcast call, which runs on worker 0 whichever worker a submit would have reached.
    let (release, hold) = mpsc::channel::<()>();
    let (busy_tx, busy) = mpsc::channel();
    let (hold, busy_tx) = (Mutex::new(hold), Mutex::new(busy_tx));
    let p = pool.clone();
    let holder = std::thread::spawn(move || {
        p.broadcast(|i| {
            if i == 0 {
                busy_tx.lock().unwrap().send(()).unwrap();
                hold.lock().unwrap().recv().unwrap();
            }
        });
    });
    busy.recv_timeout(Duration::from_secs(20)).unwrap();
    armed.store(true, SeqCst);
    pool.resize(1).unwrap(); // worker 1 retires: its stop hook is T
    t_started_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let batch: Vec<_> = (0..16)
        .map(|_| {
            let ran = ran.clone();
            move || {
                ran.fetch_add(1, SeqCst);
            }
        })
        .collect();
    assert_eq!(pool.submit_batch(batch).unwrap(), 16);
    go.send(()).unwrap();
    // Worker 0 is released only once T has taken the bundle up: released with T, it could
    // take the bundle first and leave T nothing (the path this test is for untaken).
    let took = yielded.recv_timeout(Duration::from_secs(20));
    release.send(()).unwrap();
    holder.join().unwrap();
    // Generous: only a hang (the lost bundle) passes it.
    let waited = pool.wait_for(Duration::from_secs(20));
    let n = ran.load(SeqCst);
    if waited.is_err() || n != 16 || took != Ok(Some(flock::Yield::Executed)) {
        // Dropping the pool would wait for the lost tasks for ever.
        std::mem::forget(pool);
        panic!(
            "wait_for: {waited:?}; {n} of the batch's 16 tasks ran; \
             T's yield_now: {took:?} (it should have taken the batch up)"
        );
    }
}
