//! rayon-core's own test suite, mirrored onto flock's API.
//!
//! Each test here checks a behaviour that one of rayon-core's tests (in
//! `rayon-core/src/{scope,join,spawn,thread_pool,broadcast}/test.rs`, `rayon-core/src/test.rs`
//! and `rayon-core/tests/`) encodes and that code moved from rayon relies on: panics out of
//! `join` and `scope` with the other work still run, nested scopes, the LIFO / FIFO order of
//! spawns on one worker, pools waiting on each other, broadcasts, worker hooks and stacks. The
//! tests are written afresh for flock, each with a comment naming the rayon test it mirrors.
//! What `tests/rayon_api.rs` already checks is not repeated here, and where flock deliberately
//! differs from rayon (a dropped `Pool` joins its threads) the test checks flock's documented
//! behaviour instead.
//!
//! Every test that waits on the pool runs under a watchdog, and every wait on a channel is
//! bounded, so a hang fails the test instead of stalling CI.

mod common;

use common::{all_parked, eventually, watchdog};
use flock::{BuildError, Pool, Scope};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Duration;

/// How long any single wait for a message may take before the test fails.
const BOUND: Duration = Duration::from_secs(30);

/// The watchdog's limit for one test, in seconds.
const LIMIT: u64 = 60;

fn one_worker() -> Pool {
    Pool::builder().workers(1).build().unwrap()
}

/// The message of a caught panic, when it is a string.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Runs `f`, expecting it to panic with `expected`.
fn expect_panic<R>(expected: &str, f: impl FnOnce() -> R) {
    let Err(payload) = catch_unwind(AssertUnwindSafe(f)) else {
        panic!("the panic did not propagate");
    };
    assert_eq!(panic_message(&*payload), Some(expected));
}

/// A small deterministic generator (xorshift), so the tests need no `rand`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Which kind of spawn an order test uses.
#[derive(Clone, Copy, Debug)]
enum Order {
    Lifo,
    Fifo,
}

/// `flock::scope` or `flock::scope_fifo`.
fn scope_of<'scope, R: Send>(order: Order, op: impl FnOnce(&Scope<'scope>) -> R + Send) -> R {
    match order {
        Order::Lifo => flock::scope(op),
        Order::Fifo => flock::scope_fifo(op),
    }
}

/// `Scope::spawn` or `Scope::spawn_fifo`.
fn spawn_in<'scope>(
    s: &Scope<'scope>,
    order: Order,
    f: impl FnOnce(&Scope<'scope>) + Send + 'scope,
) {
    match order {
        Order::Lifo => s.spawn(f),
        Order::Fifo => s.spawn_fifo(f),
    }
}

/// `flock::spawn` or `flock::spawn_fifo`, handle dropped (the task still runs).
fn spawn_free(order: Order, f: impl FnOnce() + Send + 'static) {
    match order {
        Order::Lifo => drop(flock::spawn(f)),
        Order::Fifo => drop(flock::spawn_fifo(f)),
    }
}

/// Receives `n` values, each within `BOUND`.
fn receive<T>(rx: &mpsc::Receiver<T>, n: usize) -> Vec<T> {
    (0..n)
        .map(|k| {
            rx.recv_timeout(BOUND)
                .unwrap_or_else(|e| panic!("value {k} of {n} never came: {e}"))
        })
        .collect()
}

// ===== scope (rayon-core/src/scope/test.rs) ===============================================

// Mirrors rayon's `scope_empty`.
#[test]
fn an_empty_scope_returns() {
    watchdog(LIMIT, "empty scope", || {
        flock::scope(|_| {});
        let pool = Pool::builder().workers(2).build().unwrap();
        pool.scope(|_| {});
        pool.install(|| flock::scope_fifo(|_| {}));
    });
}

/// A tree whose nodes a scope updates in place through `&mut` borrows.
struct Tree {
    value: u32,
    children: Vec<Tree>,
}

impl Tree {
    fn random(depth: usize, rng: &mut Rng) -> Tree {
        let children = if depth == 0 {
            Vec::new()
        } else {
            (0..rng.below(4))
                .map(|_| Tree::random(depth - 1, rng))
                .collect()
        };
        Tree {
            value: rng.below(1_000_000) as u32,
            children,
        }
    }

    fn values(&self, out: &mut Vec<u32>) {
        out.push(self.value);
        for child in &self.children {
            child.values(out);
        }
    }

    fn update_in_scope<'scope>(
        &'scope mut self,
        op: &'scope (dyn Fn(&mut u32) + Sync),
        s: &Scope<'scope>,
    ) {
        let Tree { value, children } = self;
        s.spawn(move |s| {
            for child in children {
                s.spawn(move |s| child.update_in_scope(op, s));
            }
        });
        op(value);
    }
}

// Mirrors rayon's `update_tree`.
#[test]
fn scope_updates_a_borrowed_tree_in_place() {
    watchdog(LIMIT, "update tree", || {
        let mut tree = Tree::random(10, &mut Rng(0x9E37_79B9_7F4A_7C15));
        let mut before = Vec::new();
        tree.values(&mut before);
        let bump = |v: &mut u32| *v += 1;
        flock::scope(|s| tree.update_in_scope(&bump, s));
        let mut after = Vec::new();
        tree.values(&mut after);
        assert_eq!(before.len(), after.len());
        assert!(before.iter().zip(&after).all(|(b, a)| b + 1 == *a));
    });
}

/// Records the deepest stack distance from `bottom` seen so far, then spawns the next link.
fn countdown<'scope>(s: &Scope<'scope>, bottom: &'scope i32, max: &'scope Mutex<usize>, n: usize) {
    let top = 0i32;
    let here = std::hint::black_box(&top) as *const i32 as usize;
    let diff = (bottom as *const i32 as usize).abs_diff(here);
    {
        let mut deepest = max.lock().unwrap();
        *deepest = (*deepest).max(diff);
    }
    if n > 0 {
        s.spawn(move |s| countdown(s, bottom, max, n - 1));
    }
}

// Mirrors rayon's `linear_stack_growth`: a chain of scope tasks, each spawning the next, runs
// on one worker without the stack growing with the chain's length.
#[test]
fn a_chain_of_scope_spawns_does_not_grow_the_stack() {
    watchdog(LIMIT, "stack growth", || {
        let pool = one_worker();
        let (short, long) = pool.install(|| {
            let bottom = 0i32;
            let bottom = std::hint::black_box(&bottom);
            let max = Mutex::new(0usize);
            flock::scope(|s| countdown(s, bottom, &max, 5));
            let short = *max.lock().unwrap();
            flock::scope(|s| countdown(s, bottom, &max, 500));
            let long = *max.lock().unwrap();
            (short as f64, long as f64)
        });
        let ratio = short / long;
        assert!(
            ratio > 0.9 && ratio < 1.1,
            "stack use grew with the chain: {short} bytes for 5 links, {long} for 500"
        );
    });
}

// Mirrors rayon's `panic_propagate_scope`.
#[test]
fn a_panic_in_the_scope_body_propagates() {
    watchdog(LIMIT, "body panic", || {
        expect_panic("Hello, world!", || {
            flock::scope(|_| panic!("Hello, world!"))
        });
        let pool = Pool::builder().workers(2).build().unwrap();
        expect_panic("Hello, world!", || {
            pool.install(|| flock::scope(|_| panic!("Hello, world!")))
        });
    });
}

// Mirrors rayon's `panic_propagate_nested_spawn`.
#[test]
fn a_panic_three_spawns_deep_propagates() {
    watchdog(LIMIT, "nested spawn panic", || {
        expect_panic("Hello, world!", || {
            flock::scope(|s| s.spawn(|s| s.spawn(|s| s.spawn(|_| panic!("Hello, world!")))))
        });
    });
}

// Mirrors rayon's `panic_propagate_nested_scope_spawn`.
#[test]
fn a_panic_in_a_nested_scope_propagates_through_the_outer() {
    watchdog(LIMIT, "nested scope panic", || {
        expect_panic("Hello, world!", || {
            flock::scope(|s| s.spawn(|_| flock::scope(|s| s.spawn(|_| panic!("Hello, world!")))))
        });
    });
}

// Mirrors rayon's `panic_propagate_still_execute_2`: a task spawned before the panicking one
// still runs.
#[test]
fn a_task_spawned_before_a_panicking_one_still_runs() {
    watchdog(LIMIT, "still execute 2", || {
        let mut ran = false;
        expect_panic("Hello, world!", || {
            flock::scope(|s| {
                s.spawn(|_| ran = true);
                s.spawn(|_| panic!("Hello, world!"));
            })
        });
        assert!(ran, "the other task was not run");
    });
}

// Mirrors rayon's `panic_propagate_still_execute_3`: the body panics after spawning; the task
// still runs before the panic leaves the scope.
#[test]
fn a_body_panic_still_waits_for_spawned_tasks() {
    watchdog(LIMIT, "still execute 3", || {
        let mut ran = false;
        expect_panic("Hello, world!", || {
            flock::scope(|s| {
                s.spawn(|_| ran = true);
                panic!("Hello, world!");
            })
        });
        assert!(ran, "the spawned task was not run");
    });
}

// Mirrors rayon's `panic_propagate_still_execute_4`: a task's panic does not cut the body short.
#[test]
fn a_task_panic_does_not_stop_the_body() {
    watchdog(LIMIT, "still execute 4", || {
        let mut finished = false;
        expect_panic("Hello, world!", || {
            flock::scope(|s| {
                s.spawn(|_| panic!("Hello, world!"));
                finished = true;
            })
        });
        assert!(finished, "the body did not run to its end");
    });
}

/// On a one-worker pool: a scope whose ten tasks each spawn ten more into it.
fn two_level_scope_order(order: Order) -> Vec<u32> {
    two_level_scope_order_on(&one_worker(), order)
}

/// `two_level_scope_order` on `pool`.
fn two_level_scope_order_on(pool: &Pool, order: Order) -> Vec<u32> {
    pool.install(|| {
        let seen = Mutex::new(Vec::new());
        scope_of(order, |s| {
            let seen = &seen;
            for i in 0..10 {
                spawn_in(s, order, move |s| {
                    for j in 0..10 {
                        spawn_in(s, order, move |_| seen.lock().unwrap().push(i * 10 + j));
                    }
                });
            }
        });
        seen.into_inner().unwrap()
    })
}

// Mirrors rayon's scope `lifo_order`.
#[test]
fn scope_spawns_two_levels_deep_run_lifo_on_one_worker() {
    watchdog(LIMIT, "scope lifo order", || {
        let want: Vec<u32> = (0..100).rev().collect();
        assert_eq!(two_level_scope_order(Order::Lifo), want);
    });
}

// Mirrors rayon's scope `fifo_order`.
#[test]
fn scope_fifo_spawns_two_levels_deep_run_fifo_on_one_worker() {
    watchdog(LIMIT, "scope fifo order", || {
        let want: Vec<u32> = (0..100).collect();
        assert_eq!(two_level_scope_order(Order::Fifo), want);
    });
}

/// On a one-worker pool: ten outer tasks, each running an inner scope of ten tasks.
fn nested_scope_order(outer: Order, inner: Order) -> Vec<u32> {
    nested_scope_order_on(&one_worker(), outer, inner)
}

/// `nested_scope_order` on `pool`.
fn nested_scope_order_on(pool: &Pool, outer: Order, inner: Order) -> Vec<u32> {
    pool.install(|| {
        let seen = Mutex::new(Vec::new());
        scope_of(outer, |s| {
            let seen = &seen;
            for i in 0..10 {
                spawn_in(s, outer, move |_| {
                    scope_of(inner, |s| {
                        for j in 0..10 {
                            spawn_in(s, inner, move |_| seen.lock().unwrap().push(i * 10 + j));
                        }
                    })
                });
            }
        });
        seen.into_inner().unwrap()
    })
}

// Mirrors rayon's `nested_lifo_order`.
#[test]
fn nested_scopes_lifo_inside_lifo() {
    watchdog(LIMIT, "nested lifo", || {
        let want: Vec<u32> = (0..100).rev().collect();
        assert_eq!(nested_scope_order(Order::Lifo, Order::Lifo), want);
    });
}

// Mirrors rayon's `nested_fifo_order`.
#[test]
fn nested_scopes_fifo_inside_fifo() {
    watchdog(LIMIT, "nested fifo", || {
        let want: Vec<u32> = (0..100).collect();
        assert_eq!(nested_scope_order(Order::Fifo, Order::Fifo), want);
    });
}

// Mirrors rayon's `nested_lifo_fifo_order`.
#[test]
fn nested_scopes_fifo_inside_lifo() {
    watchdog(LIMIT, "nested lifo/fifo", || {
        let want: Vec<u32> = (0..10)
            .rev()
            .flat_map(|i| (0..10).map(move |j| i * 10 + j))
            .collect();
        assert_eq!(nested_scope_order(Order::Lifo, Order::Fifo), want);
    });
}

// Mirrors rayon's `nested_fifo_lifo_order`.
#[test]
fn nested_scopes_lifo_inside_fifo() {
    watchdog(LIMIT, "nested fifo/lifo", || {
        let want: Vec<u32> = (0..10)
            .flat_map(|i| (0..10).rev().map(move |j| i * 10 + j))
            .collect();
        assert_eq!(nested_scope_order(Order::Fifo, Order::Lifo), want);
    });
}

/// On a one-worker pool: spawns into an outer and an inner scope, interleaved (the inner
/// scope's values negative).
fn mixed_scope_order(outer: Order, inner: Order) -> Vec<i32> {
    mixed_scope_order_on(&one_worker(), outer, inner)
}

/// `mixed_scope_order` on `pool`.
fn mixed_scope_order_on(pool: &Pool, outer: Order, inner: Order) -> Vec<i32> {
    pool.install(|| {
        let seen = Mutex::new(Vec::new());
        scope_of(outer, |o| {
            let seen = &seen;
            let push = move |v: i32| move |_: &Scope<'_>| seen.lock().unwrap().push(v);
            spawn_in(o, outer, push(0));
            scope_of(inner, |i| {
                spawn_in(i, inner, push(-1));
                spawn_in(o, outer, push(1));
                spawn_in(i, inner, push(-2));
                spawn_in(o, outer, push(2));
                spawn_in(i, inner, push(-3));
            });
            spawn_in(o, outer, push(3));
        });
        seen.into_inner().unwrap()
    })
}

/// The values of `seen` that `keep` selects, in the order they ran.
fn only(seen: &[i32], keep: impl Fn(i32) -> bool) -> Vec<i32> {
    seen.iter().copied().filter(|&v| keep(v)).collect()
}

/// All seven tasks of `mixed_scope_order` ran, each once.
fn all_seven_ran_once(seen: &[i32]) {
    let mut sorted = seen.to_vec();
    sorted.sort_unstable();
    assert_eq!(sorted, [-3, -2, -1, 0, 1, 2, 3], "{seen:?}");
}

// Mirrors rayon's scope `mixed_lifo_order`: the inner scope returns as soon as its last task
// has run, before the worker takes up the outer scope's task 0.
#[test]
fn mixed_scopes_lifo_and_lifo() {
    watchdog(LIMIT, "mixed lifo", || {
        assert_eq!(
            mixed_scope_order(Order::Lifo, Order::Lifo),
            [-3, 2, -2, 1, -1, 3, 0]
        );
    });
}

// Mirrors rayon's `mixed_lifo_order` in its smallest form, where the difference was a hang:
// on one worker, the outer scope's task waits for what the body sends after the inner scope
// returns. rayon runs the inner task, returns from the inner scope, sends, and only then
// runs the outer task. flock used to run the outer task inside the inner scope's wait (the
// worker kept the inner task's unit of the scope's count, so the scope looked unfinished),
// where the message could never come.
#[test]
fn an_inner_scope_returns_before_its_owner_runs_an_outer_task() {
    watchdog(LIMIT, "inner scope returns first", || {
        let pool = one_worker();
        pool.install(|| {
            flock::scope(|outer| {
                let (tx, rx) = mpsc::channel::<()>();
                outer.spawn(move |_| {
                    rx.recv_timeout(BOUND)
                        .expect("the outer task ran before the inner scope returned")
                });
                flock::scope(|inner| inner.spawn(|_| ()));
                tx.send(()).unwrap();
            })
        });
    });
}

// Mirrors rayon's scope `mixed_fifo_order`. rayon keeps a FIFO queue per scope (per worker),
// so the inner scope's and the outer scope's FIFO spawns alternate ([-1, 0, -2, 1, -3, 2, 3]);
// flock keeps one per worker thread and kind of spawn (a scope's tasks all have one kind), and
// documents that the FIFO spawns of one kind from one worker start in the order they were
// made, whatever their scope (`src/fifo.rs`).
#[test]
fn mixed_scopes_fifo_and_fifo() {
    watchdog(LIMIT, "mixed fifo", || {
        assert_eq!(
            mixed_scope_order(Order::Fifo, Order::Fifo),
            [0, -1, 1, -2, 2, -3, 3]
        );
    });
}

// Mirrors rayon's scope `mixed_lifo_fifo_order` (rayon: [-1, 2, -2, 1, -3, 3, 0]). In flock a
// scope's `spawn` on a worker goes to the worker's two-word join deque and a `spawn_fifo` to a
// trigger on its task deque, and a waiting worker looks at the join deque first; so the
// interleaving of the two kinds is not rayon's. What flock documents is checked: the inner
// FIFO spawns start oldest first, the outer spawns made before the inner scope ended start
// newest first, and every task runs once.
#[test]
fn mixed_scopes_lifo_outside_fifo_inside() {
    watchdog(LIMIT, "mixed lifo/fifo", || {
        let seen = mixed_scope_order(Order::Lifo, Order::Fifo);
        all_seven_ran_once(&seen);
        assert_eq!(only(&seen, |v| v < 0), [-1, -2, -3], "{seen:?}");
        assert_eq!(only(&seen, |v| (0..3).contains(&v)), [2, 1, 0], "{seen:?}");
    });
}

// Mirrors rayon's scope `mixed_fifo_lifo_order` (rayon: [-3, 0, -2, 1, -1, 2, 3]); as above,
// the interleaving of the two kinds differs by design, and each kind's own order is checked.
#[test]
fn mixed_scopes_fifo_outside_lifo_inside() {
    watchdog(LIMIT, "mixed fifo/lifo", || {
        let seen = mixed_scope_order(Order::Fifo, Order::Lifo);
        all_seven_ran_once(&seen);
        assert_eq!(only(&seen, |v| v < 0), [-3, -2, -1], "{seen:?}");
        assert_eq!(only(&seen, |v| v >= 0), [0, 1, 2, 3], "{seen:?}");
    });
}

/// A one-worker pool built with `fifo()`: each worker runs the tasks it spawned oldest first
/// (rayon's `breadth_first()`), a scope's `spawn` too.
fn one_fifo_worker() -> Pool {
    Pool::builder().workers(1).fifo().build().unwrap()
}

// The issue's own case: ten scope spawns from inside a `fifo()` pool run oldest first, as the
// same scope does from outside the pool.
#[test]
fn a_fifo_pools_scope_spawns_from_a_worker_run_oldest_first() {
    watchdog(LIMIT, "fifo pool scope", || {
        let pool = one_fifo_worker();
        fn spawn_ten<'scope>(s: &Scope<'scope>, order: &'scope Mutex<Vec<u32>>) {
            for i in 0..10 {
                s.spawn(move |_| order.lock().unwrap().push(i));
            }
        }
        let order = Mutex::new(Vec::new());
        pool.install(|| pool.scope(|s| spawn_ten(s, &order)));
        pool.scope(|s| spawn_ten(s, &order));
        let want: Vec<u32> = (0..10).chain(0..10).collect();
        assert_eq!(order.into_inner().unwrap(), want);
    });
}

// Mirrors rayon's scope `lifo_order` on a pool built with `fifo()` (rayon: `breadth_first()`):
// the spawns run oldest first.
#[test]
fn scope_spawns_two_levels_deep_run_fifo_on_a_fifo_pool() {
    watchdog(LIMIT, "scope order on a fifo pool", || {
        let want: Vec<u32> = (0..100).collect();
        assert_eq!(
            two_level_scope_order_on(&one_fifo_worker(), Order::Lifo),
            want
        );
    });
}

// Mirrors rayon's `nested_lifo_order` on a `fifo()` pool: an outer task's inner scope waits,
// and the worker runs meanwhile what it spawned first (the next outer task), so every inner
// scope opens before the first inner task runs, and the inner tasks run oldest first.
#[test]
fn nested_scopes_on_a_fifo_pool_run_oldest_first() {
    watchdog(LIMIT, "nested scopes on a fifo pool", || {
        let want: Vec<u32> = (0..100).collect();
        let pool = one_fifo_worker();
        assert_eq!(nested_scope_order_on(&pool, Order::Lifo, Order::Lifo), want);
    });
}

// Mirrors rayon's `nested_lifo_fifo_order` on a `fifo()` pool: outer `spawn`, inner
// `spawn_fifo`, all oldest first.
#[test]
fn nested_fifo_scopes_inside_a_fifo_pools_scope_run_oldest_first() {
    watchdog(LIMIT, "nested fifo scopes on a fifo pool", || {
        let want: Vec<u32> = (0..100).collect();
        let pool = one_fifo_worker();
        assert_eq!(nested_scope_order_on(&pool, Order::Lifo, Order::Fifo), want);
    });
}

// Mirrors rayon's scope `mixed_lifo_order` on a `fifo()` pool: the inner scope's wait runs
// the worker's spawns oldest first, the outer scope's among them, and returns once its own
// three have run.
#[test]
fn mixed_scopes_on_a_fifo_pool_run_oldest_first() {
    watchdog(LIMIT, "mixed scopes on a fifo pool", || {
        let pool = one_fifo_worker();
        for inner in [Order::Lifo, Order::Fifo] {
            assert_eq!(
                mixed_scope_order_on(&pool, Order::Lifo, inner),
                [0, -1, 1, -2, 2, -3, 3],
                "inner {inner:?}"
            );
        }
    });
}

// Mirrors rayon's `static_scope` and `static_scope_fifo`: a `Scope<'static>` whose body
// borrows a local iterator while its tasks capture only `'static` data.
#[test]
fn a_static_scope_spawns_static_tasks_from_a_borrowed_iterator() {
    watchdog(LIMIT, "static scope", || {
        static SUM: AtomicUsize = AtomicUsize::new(0);
        for order in [Order::Lifo, Order::Fifo] {
            SUM.store(0, Ordering::Relaxed);
            let mut range = 0..100usize;
            let want: usize = range.clone().sum();
            let iter = &mut range;
            scope_of(order, |s: &Scope<'static>| {
                for i in iter {
                    spawn_in(s, order, move |_| {
                        SUM.fetch_add(i, Ordering::Relaxed);
                    });
                }
            });
            assert_eq!(SUM.load(Ordering::Relaxed), want, "{order:?}");
        }
    });
}

// Mirrors rayon's `mixed_lifetime_scope` and `mixed_lifetime_scope_fifo`: the body borrows a
// short-lived slice, the tasks only the longer-lived counters it holds.
#[test]
fn scope_tasks_borrow_only_the_scope_lifetime() {
    fn increment<'counter>(counters: &[&'counter AtomicUsize], order: Order) {
        scope_of(order, move |s: &Scope<'counter>| {
            for &c in counters {
                spawn_in(s, order, move |_| {
                    c.fetch_add(1, Ordering::Relaxed);
                });
            }
        });
    }
    watchdog(LIMIT, "mixed lifetimes", || {
        for order in [Order::Lifo, Order::Fifo] {
            let counter = AtomicUsize::new(0);
            increment(&[&counter; 100], order);
            assert_eq!(counter.into_inner(), 100, "{order:?}");
        }
    });
}

// ===== join (rayon-core/src/join/test.rs, tests/simple_panic.rs) ===========================

/// Lomuto partition around the last element; returns the pivot's final place.
fn partition<T: PartialOrd>(v: &mut [T]) -> usize {
    let pivot = v.len() - 1;
    let mut i = 0;
    for j in 0..pivot {
        if v[j] <= v[pivot] {
            v.swap(i, j);
            i += 1;
        }
    }
    v.swap(i, pivot);
    i
}

fn join_sort<T: PartialOrd + Send>(v: &mut [T]) {
    if v.len() <= 1 {
        return;
    }
    let mid = partition(v);
    let (lo, hi) = v.split_at_mut(mid);
    flock::join(|| join_sort(lo), || join_sort(hi));
}

// Mirrors rayon's join `sort` (outside any pool: the free `join` uses the global pool).
#[test]
fn free_join_sorts_from_outside_any_pool() {
    watchdog(LIMIT, "join sort", || {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut data: Vec<u32> = (0..6 * 1024).map(|_| rng.next() as u32).collect();
        let mut want = data.clone();
        want.sort_unstable();
        join_sort(&mut data);
        assert_eq!(data, want);
    });
}

// Mirrors rayon's `panic_propagate_both`: with both halves panicking, `a`'s panic is the one
// re-raised.
#[test]
fn when_both_join_halves_panic_the_first_halfs_panic_wins() {
    watchdog(LIMIT, "both panic", || {
        expect_panic("Hello, world!", || {
            flock::join(|| panic!("Hello, world!"), || panic!("Goodbye, world!"))
        });
        let pool = Pool::builder().workers(2).build().unwrap();
        expect_panic("Hello, world!", || {
            pool.install(|| flock::join(|| panic!("Hello, world!"), || panic!("Goodbye, world!")))
        });
        expect_panic("Hello, world!", || {
            pool.join(|| panic!("Hello, world!"), || panic!("Goodbye, world!"))
        });
    });
}

// Mirrors rayon's `join_counter_overflow`, scaled down: many joins in a row, from outside and
// from a worker, each half run exactly once.
#[test]
fn many_joins_in_a_row_run_each_half_once() {
    watchdog(LIMIT, "many joins", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let (mut i, mut j) = (0u32, 0u32);
        for _ in 0..2_000 {
            pool.join(|| i += 1, || j += 1);
        }
        assert_eq!((i, j), (2_000, 2_000));
        pool.install(|| {
            for _ in 0..100_000 {
                flock::join(|| i += 1, || j += 1);
            }
        });
        assert_eq!((i, j), (102_000, 102_000));
    });
}

// ===== spawn (rayon-core/src/spawn/test.rs) ================================================

// Mirrors rayon's `custom_panic_handler_and_nested_spawn`: fire-and-forget tasks that a task
// submits inherit its pool's panic handler. (flock's analogue of rayon's `spawn` is
// `submit`; a `spawn`ed task's panic goes to its `JoinHandle` instead.)
#[test]
fn panics_of_tasks_submitted_by_a_task_reach_the_panic_handler() {
    watchdog(LIMIT, "nested panic handler", || {
        const PANICS: usize = 3;
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let pool = Pool::builder()
            .workers(2)
            .panic_handler(move |p| {
                let msg = p.message().map(str::to_owned);
                tx.lock().unwrap().send(msg).unwrap();
            })
            .build()
            .unwrap();
        pool.submit(|| {
            for _ in 0..PANICS {
                flock::submit(|| panic!("Hello, world!")).unwrap();
            }
        })
        .unwrap();
        for msg in receive(&rx, PANICS) {
            assert_eq!(msg.as_deref(), Some("Hello, world!"));
        }
        pool.wait().unwrap();
        assert_eq!(pool.stats().panicked, PANICS as u64);
    });
}

// Mirrors rayon's `termination_while_things_are_executing`, for flock's documented drop: the
// pool is dropped while a task still runs; that task can still submit into the pool, and the
// drop returns only after both have run (rayon's drop returns at once instead).
#[test]
fn dropping_the_pool_lets_a_running_task_finish_and_submit_more() {
    watchdog(LIMIT, "drop while executing", || {
        let (tx0, rx0) = mpsc::channel::<u32>();
        let (tx1, rx1) = mpsc::channel::<u32>();
        let (dropping_tx, dropping) = mpsc::channel();
        let pool = Pool::builder().workers(2).build().unwrap();
        pool.submit(move || {
            let data = rx0.recv_timeout(BOUND).unwrap();
            flock::submit(move || tx1.send(data).unwrap()).unwrap();
        })
        .unwrap();
        let dropper = std::thread::spawn(move || {
            dropping_tx.send(()).unwrap();
            drop(pool);
        });
        dropping.recv_timeout(BOUND).unwrap();
        tx0.send(22).unwrap();
        dropper.join().unwrap();
        assert_eq!(
            rx1.try_recv(),
            Ok(22),
            "the drop returned before the nested task ran"
        );
    });
}

/// On a one-worker pool: ten outer spawns from a task, each spawning ten inner ones.
fn two_level_spawn_order(outer: Order, inner: Order) -> Vec<i32> {
    let pool = one_worker();
    let (tx, rx) = mpsc::channel();
    pool.install(move || {
        for i in 0..10 {
            let tx = tx.clone();
            spawn_free(outer, move || {
                for j in 0..10 {
                    let tx = tx.clone();
                    spawn_free(inner, move || tx.send(i * 10 + j).unwrap());
                }
            });
        }
    });
    let seen = receive(&rx, 100);
    pool.wait().unwrap();
    assert!(rx.try_recv().is_err(), "more than 100 values");
    seen
}

// Mirrors rayon's spawn `lifo_order`.
#[test]
fn spawns_two_levels_deep_run_lifo_on_one_worker() {
    watchdog(LIMIT, "spawn lifo", || {
        let want: Vec<i32> = (0..100).rev().collect();
        assert_eq!(two_level_spawn_order(Order::Lifo, Order::Lifo), want);
    });
}

// Mirrors rayon's spawn `fifo_order`.
#[test]
fn spawn_fifos_two_levels_deep_run_fifo_on_one_worker() {
    watchdog(LIMIT, "spawn fifo", || {
        let want: Vec<i32> = (0..100).collect();
        assert_eq!(two_level_spawn_order(Order::Fifo, Order::Fifo), want);
    });
}

// Mirrors rayon's spawn `lifo_fifo_order`.
#[test]
fn spawn_fifos_inside_lifo_spawns() {
    watchdog(LIMIT, "spawn lifo/fifo", || {
        let want: Vec<i32> = (0..10)
            .rev()
            .flat_map(|i| (0..10).map(move |j| i * 10 + j))
            .collect();
        assert_eq!(two_level_spawn_order(Order::Lifo, Order::Fifo), want);
    });
}

// Mirrors rayon's spawn `fifo_lifo_order`.
#[test]
fn lifo_spawns_inside_spawn_fifos() {
    watchdog(LIMIT, "spawn fifo/lifo", || {
        let want: Vec<i32> = (0..10)
            .flat_map(|i| (0..10).rev().map(move |j| i * 10 + j))
            .collect();
        assert_eq!(two_level_spawn_order(Order::Fifo, Order::Lifo), want);
    });
}

/// On a one-worker pool: seven spawns from one task, alternating `pos` (values 0..=3) and
/// `neg` (values -1..=-3).
fn mixed_spawn_order(pos: Order, neg: Order) -> Vec<i32> {
    let pool = one_worker();
    let (tx, rx) = mpsc::channel();
    pool.install(move || {
        for v in [0, -1, 1, -2, 2, -3, 3] {
            let tx = tx.clone();
            spawn_free(if v < 0 { neg } else { pos }, move || tx.send(v).unwrap());
        }
    });
    let seen = receive(&rx, 7);
    pool.wait().unwrap();
    seen
}

// Mirrors rayon's spawn `mixed_lifo_fifo_order` and `mixed_fifo_lifo_order`.
#[test]
fn mixed_spawns_and_spawn_fifos_on_one_worker() {
    watchdog(LIMIT, "mixed spawns", || {
        assert_eq!(
            mixed_spawn_order(Order::Lifo, Order::Fifo),
            [3, -1, 2, -2, 1, -3, 0]
        );
        assert_eq!(
            mixed_spawn_order(Order::Fifo, Order::Lifo),
            [0, -3, 1, -2, 2, -1, 3]
        );
    });
}

// ===== thread pools (rayon-core/src/thread_pool/test.rs) ===================================

/// A counter of hook calls, and the hook that bumps it.
fn counting_hook() -> (Arc<AtomicUsize>, impl Fn(usize) + Send + Sync + 'static) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    (count, move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

fn join_a_lot(n: usize) {
    if n > 0 {
        flock::join(|| join_a_lot(n - 1), || join_a_lot(n - 1));
    }
}

// Mirrors rayon's `workers_stop`: after a burst of joins, dropping the pool stops every worker.
#[test]
fn dropping_a_pool_after_joins_stops_every_worker() {
    watchdog(LIMIT, "workers stop", || {
        let (stopped, on_stop) = counting_hook();
        let pool = Pool::builder()
            .workers(22)
            .on_worker_stop(on_stop)
            .build()
            .unwrap();
        let n = pool.install(|| {
            join_a_lot(12);
            flock::current_num_workers()
        });
        assert_eq!(n, 22);
        drop(pool);
        assert_eq!(stopped.load(Ordering::SeqCst), 22);
    });
}

// Mirrors rayon's `sleeper_stop`: dropping a pool whose workers are all asleep stops them.
#[test]
fn dropping_a_pool_of_parked_workers_stops_them() {
    watchdog(LIMIT, "sleeper stop", || {
        let (stopped, on_stop) = counting_hook();
        let pool = Pool::builder()
            .workers(22)
            .on_worker_stop(on_stop)
            .build()
            .unwrap();
        all_parked(&pool);
        drop(pool);
        assert_eq!(stopped.load(Ordering::SeqCst), 22);
    });
}

// Mirrors rayon's `failed_thread_stack`: a stack no thread can have fails the build with an
// error; every worker that did start (at most one) is stopped, and nothing is leaked.
#[test]
fn an_impossible_stack_size_fails_the_build_cleanly() {
    watchdog(LIMIT, "failed thread stack", || {
        let (started, on_start) = counting_hook();
        let (stopped, on_stop) = counting_hook();
        let built = Pool::builder()
            .workers(10)
            .stack_size(isize::MAX as usize)
            .on_worker_start(on_start)
            .on_worker_stop(on_stop)
            .build();
        match built {
            Err(BuildError::ThreadSpawn(_)) => {}
            Err(other) => panic!("expected ThreadSpawn, got {other:?}"),
            Ok(_) => panic!("a stack of isize::MAX bytes was granted"),
        }
        // Once the hooks are no longer held, no worker thread is left.
        eventually(|| Arc::strong_count(&started) == 1 && Arc::strong_count(&stopped) == 1);
        let started = started.load(Ordering::SeqCst);
        assert!(started <= 1, "{started} workers started");
        assert_eq!(started, stopped.load(Ordering::SeqCst));
    });
}

// Mirrors rayon's `mutual_install_sleepy`: as `mutual_install` (in tests/rayon_api.rs), but
// each pool's worker has parked before the other pool calls back into it.
#[test]
fn pools_installing_into_each_other_after_parking() {
    watchdog(LIMIT, "mutual install sleepy", || {
        let (p1, p2) = (one_worker(), one_worker());
        let ok = p1.install(|| {
            p2.install(|| {
                all_parked(&p1); // p1's worker waits for us, asleep
                p1.install(|| {
                    all_parked(&p2); // and p2's worker for this
                    true
                })
            })
        });
        assert!(ok);
    });
}

// Mirrors rayon's `check_config_build` and `worker_thread_index` (rayon-core/src/test.rs).
#[test]
fn worker_count_and_index_inside_and_outside() {
    watchdog(LIMIT, "worker index", || {
        let pool = Pool::builder().workers(22).build().unwrap();
        assert_eq!(pool.workers(), 22);
        assert_eq!(flock::current_worker_index(), None);
        let index = pool.install(|| flock::current_worker_index().unwrap());
        assert!(index < 22, "{index}");
    });
}

/// On a one-worker pool: ten `Pool::spawn` or `Pool::spawn_fifo` calls from one task.
fn pool_spawn_order(fifo: bool) -> Vec<u32> {
    let pool = one_worker();
    let (tx, rx) = mpsc::channel();
    pool.install(|| {
        for i in 0..10 {
            let tx = tx.clone();
            let task = move || tx.send(i).unwrap();
            drop(if fifo {
                pool.spawn_fifo(task)
            } else {
                pool.spawn(task)
            });
        }
    });
    let seen = receive(&rx, 10);
    pool.wait().unwrap();
    seen
}

// Mirrors rayon's `spawn_lifo_order` and `spawn_fifo_order` (the pool's methods, called from
// one of its tasks).
#[test]
fn pool_spawn_from_a_task_is_lifo_and_pool_spawn_fifo_is_fifo() {
    watchdog(LIMIT, "pool spawn order", || {
        assert_eq!(pool_spawn_order(false), (0..10).rev().collect::<Vec<_>>());
        assert_eq!(pool_spawn_order(true), (0..10).collect::<Vec<_>>());
    });
}

/// Opens a scope of every pool in `pools`, one inside the other, then calls `op` with all of
/// them.
fn nest<'scope>(
    pools: &[Pool],
    fifo: bool,
    scopes: Vec<&Scope<'scope>>,
    op: impl FnOnce(&[&Scope<'scope>]) + Send,
) {
    match pools.split_first() {
        Some((pool, rest)) => {
            let body = move |s: &Scope<'scope>| {
                let mut scopes = scopes;
                scopes.push(s);
                nest(rest, fifo, scopes, op)
            };
            if fifo {
                pool.scope_fifo(body)
            } else {
                pool.scope(body)
            }
        }
        None => op(&scopes),
    }
}

// Mirrors rayon's `nested_scopes` and `nested_fifo_scopes`: scopes of ten pools nested, and a
// task spawned into each from the innermost body, borrowing the same counter.
#[test]
fn scopes_nested_across_ten_pools() {
    watchdog(LIMIT, "nested scopes", || {
        let pools: Vec<Pool> = (0..10).map(|_| one_worker()).collect();
        for fifo in [false, true] {
            let counter = AtomicUsize::new(0);
            nest(&pools, fifo, Vec::new(), |scopes| {
                for s in scopes {
                    let counter = &counter;
                    let task = move |_: &Scope<'_>| {
                        counter.fetch_add(1, Ordering::Relaxed);
                    };
                    if fifo {
                        s.spawn_fifo(task)
                    } else {
                        s.spawn(task)
                    }
                }
            });
            assert_eq!(counter.into_inner(), pools.len(), "fifo={fifo}");
        }
    });
}

// Mirrors rayon's `in_place_scope_no_deadlock` and `in_place_scope_fifo_no_deadlock`:
// `Pool::in_place_scope` runs its body on the calling thread, so a body blocking on its own
// task does not take the only worker away from it (`Pool::scope` would run the body on that
// worker, where it would wait for a task queued behind itself, as rayon's does).
#[test]
fn an_in_place_scope_body_may_block_on_its_task() {
    watchdog(LIMIT, "in-place scope", || {
        let pool = one_worker();
        for fifo in [false, true] {
            let (tx, rx) = mpsc::channel();
            let body = |s: &Scope<'_>| {
                let task = move |_: &Scope<'_>| tx.send(()).unwrap();
                if fifo {
                    s.spawn_fifo(task)
                } else {
                    s.spawn(task)
                }
                rx.recv_timeout(BOUND).expect("the scope's task never ran");
            };
            if fifo {
                pool.in_place_scope_fifo(body)
            } else {
                pool.in_place_scope(body)
            }
        }
    });
}

// ===== broadcast (rayon-core/src/broadcast/test.rs) ========================================

// Mirrors rayon's `broadcast_global`.
#[test]
fn broadcast_on_the_global_pool_reaches_every_worker() {
    watchdog(LIMIT, "broadcast global", || {
        let seen = flock::global().broadcast(|i| i);
        assert!(seen.into_iter().eq(0..flock::current_num_workers()));
    });
}

// Mirrors rayon's `broadcast_mutual`: a task of pool 1 broadcasts on pool 2, whose every call
// broadcasts back on pool 1.
#[test]
fn broadcasts_nested_across_two_pools() {
    watchdog(LIMIT, "broadcast mutual", || {
        let count = AtomicUsize::new(0);
        let p1 = Pool::builder().workers(3).build().unwrap();
        let p2 = Pool::builder().workers(7).build().unwrap();
        p1.install(|| {
            p2.broadcast(|_| {
                p1.broadcast(|_| {
                    count.fetch_add(1, Ordering::Relaxed);
                })
            })
        });
        assert_eq!(count.into_inner(), 3 * 7);
    });
}

// Mirrors rayon's `broadcast_mutual_sleepy`: the same with naps, so workers of each pool fall
// asleep before the other pool calls on them (the naps give time to park; nothing is timed).
#[test]
fn broadcasts_nested_across_two_pools_with_naps() {
    watchdog(LIMIT, "broadcast mutual sleepy", || {
        let nap = |ms| std::thread::sleep(Duration::from_millis(ms));
        let count = AtomicUsize::new(0);
        let p1 = Pool::builder().workers(3).build().unwrap();
        let p2 = Pool::builder().workers(7).build().unwrap();
        p1.install(|| {
            nap(20);
            p2.broadcast(|_| {
                nap(20);
                p1.broadcast(|_| {
                    nap(2);
                    count.fetch_add(1, Ordering::Relaxed);
                })
            })
        });
        assert_eq!(count.into_inner(), 3 * 7);
    });
}

// Mirrors rayon's `broadcast_after_spawn`: a worker runs its broadcast call only once the
// tasks queued on its own deque have run.
#[test]
fn a_broadcast_runs_after_the_workers_queued_spawns() {
    watchdog(LIMIT, "broadcast after spawn", || {
        for workers in [1, 2] {
            let pool = Pool::builder().workers(workers).build().unwrap();
            let (tx, rx) = mpsc::channel();
            pool.install(move || drop(flock::spawn(move || tx.send(22).unwrap())));
            pool.broadcast(|_| ());
            assert_eq!(rx.try_recv(), Ok(22), "workers={workers}");
        }
    });
}

// ===== builder and hooks (rayon-core/src/test.rs) ===========================================

// Mirrors rayon's `start_callback_called`: `build` does not wait for the start hooks, which
// all run, here meeting the test's thread at a barrier.
#[test]
fn start_hooks_run_on_every_worker_while_build_has_returned() {
    watchdog(LIMIT, "start hooks", || {
        const N: usize = 16;
        let calls = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(N + 1));
        let (c, b) = (calls.clone(), barrier.clone());
        let pool = Pool::builder()
            .workers(N)
            .on_worker_start(move |_| {
                c.fetch_add(1, Ordering::SeqCst);
                b.wait();
            })
            .build()
            .unwrap();
        barrier.wait();
        assert_eq!(calls.load(Ordering::SeqCst), N);
        drop(pool);
    });
}

// Mirrors rayon's `exit_callback_called`. A dropped flock pool joins its workers, so the drop
// happens on a thread of its own while the test's thread meets the exit hooks at a barrier.
#[test]
fn stop_hooks_run_on_every_worker_when_the_pool_is_dropped() {
    watchdog(LIMIT, "stop hooks", || {
        const N: usize = 16;
        let calls = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(N + 1));
        let (c, b) = (calls.clone(), barrier.clone());
        let pool = Pool::builder()
            .workers(N)
            .on_worker_stop(move |_| {
                c.fetch_add(1, Ordering::SeqCst);
                b.wait();
            })
            .build()
            .unwrap();
        let dropper = std::thread::spawn(move || drop(pool));
        barrier.wait();
        dropper.join().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), N);
    });
}

// Mirrors rayon's `check_error_send_sync`.
#[test]
fn build_error_is_a_send_sync_error() {
    fn check<E: std::error::Error + Send + Sync + 'static>() {}
    check::<BuildError>();
}

// Mirrors rayon's `configuration` and `default_pool`: every builder option at once builds a
// working pool, and so does the builder with none.
#[test]
fn every_builder_option_at_once_builds() {
    watchdog(LIMIT, "configuration", || {
        let pool = Pool::builder()
            .thread_name(|i| format!("thread_name_{i}"))
            .workers(5)
            .panic_handler(|_| {})
            .stack_size(4_000_000)
            .fifo()
            .on_worker_start(|_| {})
            .on_worker_stop(|_| {})
            .build()
            .unwrap();
        let name = pool.install(|| std::thread::current().name().map(str::to_owned));
        assert!(name.unwrap().starts_with("thread_name_"));
        drop(pool);
        let pool = Pool::builder().build().unwrap();
        assert_eq!(pool.install(|| 1 + 1), 2);
    });
}

// ===== rayon-core/tests ====================================================================

/// `join` made of a scope: `g` spawned, `f` run by the body.
fn pseudo_join(f: impl FnOnce() + Send, g: impl FnOnce() + Send) {
    flock::scope(|s| {
        s.spawn(|_| g());
        f();
    });
}

fn scope_sort<T: PartialOrd + Send>(v: &mut [T]) {
    if v.len() <= 1 {
        return;
    }
    let mid = partition(v);
    let (lo, hi) = v.split_at_mut(mid);
    pseudo_join(|| scope_sort(lo), || scope_sort(hi));
}

// Mirrors rayon's tests/scope_join.rs `scope_join`.
#[test]
fn a_scope_emulates_join_in_a_quicksort() {
    watchdog(LIMIT, "scope join", || {
        let mut v: Vec<i32> = (0..256).rev().collect();
        scope_sort(&mut v);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    });
}

thread_local! {
    static LOCAL: Cell<i32> = const { Cell::new(0) };
}

// Mirrors rayon's tests/scoped_threadpool.rs `missing_scoped_tls`: `install` runs on a worker,
// which does not see the caller's thread-local values.
#[test]
fn install_does_not_carry_the_callers_thread_locals() {
    watchdog(LIMIT, "thread locals", || {
        LOCAL.with(|l| l.set(42));
        let pool = Pool::builder().workers(2).build().unwrap();
        assert_eq!(pool.install(|| LOCAL.with(Cell::get)), 0);
        assert_eq!(LOCAL.with(Cell::get), 42);
    });
}

/// Recurses `depth` times with a megabyte on the stack in each frame.
fn deep_recursion(depth: u32) {
    let mut buffer = [0u8; 1024 * 1024];
    std::hint::black_box(&mut buffer);
    if depth > 0 {
        deep_recursion(depth - 1);
    }
}

/// Set in a child process of this test binary to the case it runs.
const CHILD_VAR: &str = "FLOCK_RAYON_CORE_SUITE_CHILD";

/// The child's side of `worker_stack_size_decides_whether_deep_recursion_fits`: with the
/// variable unset (an ordinary run) it does nothing.
#[test]
fn child_process_entry() {
    if std::env::var(CHILD_VAR).as_deref() != Ok("small_stack") {
        return;
    }
    #[cfg(unix)]
    {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct we pass and changes only this process's limit.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
    }
    let pool = Pool::builder().stack_size(4 << 20).build().unwrap();
    pool.install(|| deep_recursion(32)); // ~33 MiB on a 4 MiB stack: overflows
}

// Mirrors rayon's tests/stack_overflow_crash.rs: 33 MiB of recursion overflows a worker with
// a 4 MiB stack (in a child process, which the overflow kills) and fits in one of 48 MiB.
#[test]
fn worker_stack_size_decides_whether_deep_recursion_fits() {
    watchdog(LIMIT, "stack overflow", || {
        let exe = std::env::current_exe().unwrap();
        let mut child = std::process::Command::new(exe)
            .args(["--exact", "child_process_entry", "--test-threads=1"])
            .env(CHILD_VAR, "small_stack")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + BOUND;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child did not end within {BOUND:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(!status.success(), "a 4 MiB stack held 33 MiB: {status}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert!(
                matches!(status.signal(), Some(libc::SIGABRT | libc::SIGSEGV)),
                "{status}"
            );
        }
        let pool = Pool::builder().stack_size(48 << 20).build().unwrap();
        pool.install(|| deep_recursion(32));
    });
}
