//! A worker that waits inside a task (`join`, a scope's end, `JoinHandle::join`) stays a full
//! worker: it runs its own pool's tasks, new work and `resume` reach it, and it parks only
//! as a listed sleeper that the awaited latch's set also wakes (docs/protocol.md, "Waiting
//! workers"). Each test is a case of issue 14 that hung or failed before.
mod common;

use common::{all_parked, eventually, watchdog, Gate};
use flock::Pool;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Case 1: with lanes and the lane reserve, the only worker busy with a batch task, a `join`
/// from outside is taken by the reserve (off the workers): it runs both halves there.
#[test]
fn join_from_outside_taken_by_the_lane_reserve() {
    watchdog(20, "join from outside behind a busy batch lane", || {
        let pool = Pool::builder()
            .workers(1)
            .lanes(&[("interactive", 8), ("batch", 1)])
            .build()
            .unwrap();
        let gate = Gate::new();
        let (tx, rx) = mpsc::channel();
        let g = gate.clone();
        let batch = pool.spawn_to("batch", move || {
            tx.send(()).unwrap();
            g.wait();
        });
        rx.recv().unwrap();
        assert_eq!(pool.join(|| 1, || 2), (1, 2));
        gate.open();
        batch.join().unwrap();
        pool.shutdown().unwrap();
    });
}

/// Case 2: the only worker's task A waits for B, queued from outside behind it, while the pool
/// is paused. B does not start while paused; `resume` reaches the waiting worker, which runs B.
#[test]
fn resume_reaches_a_worker_waiting_on_a_paused_task() {
    watchdog(20, "join of a task queued behind a pause", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let gate = Gate::new();
        let (started_tx, started) = mpsc::channel();
        let (handle_tx, handle_rx) = mpsc::channel::<flock::JoinHandle<u32>>();
        let g = gate.clone();
        let a = pool.spawn(move || {
            started_tx.send(()).unwrap();
            g.wait();
            handle_rx.recv().unwrap().join().unwrap()
        });
        started.recv().unwrap();
        let b_started = Arc::new(AtomicBool::new(false));
        let flag = b_started.clone();
        let b = pool.spawn(move || {
            flag.store(true, Ordering::SeqCst);
            7
        });
        pool.pause();
        handle_tx.send(b).unwrap();
        gate.open();
        // A now waits for B: its worker runs out of things it may run and parks.
        all_parked(&pool);
        assert!(
            !b_started.load(Ordering::SeqCst),
            "a task from outside started while paused"
        );
        pool.resume();
        assert_eq!(a.join().unwrap(), 7);
        pool.shutdown().unwrap();
    });
}

/// Case 3 (stress; the loom model `loom_push_locally_then_block` is the deterministic check):
/// a task submits B to its own deque, then blocks until B has run on the other worker; and a
/// `join` whose first half blocks until the second half ran on the other worker. Both with
/// the membarrier (the push unfenced) and without it (`membarrier(false)`, the push fenced).
#[test]
fn a_task_blocking_on_what_it_pushed_locally_is_not_stranded() {
    let rounds = if cfg!(miri) { 10 } else { 10_000 };
    watchdog(120, "push locally, then block on it", move || {
        for membarrier in [true, false] {
            let pool = Arc::new(
                Pool::builder()
                    .workers(2)
                    .spin_limit(0)
                    .membarrier(membarrier)
                    .build()
                    .unwrap(),
            );
            if !membarrier {
                assert!(!pool.uses_membarrier());
            }
            for _ in 0..rounds {
                let p = pool.clone();
                pool.submit(move || {
                    let (tx, rx) = mpsc::channel();
                    p.submit(move || tx.send(()).unwrap()).unwrap();
                    rx.recv().unwrap();
                })
                .unwrap();
                pool.wait().unwrap();
                pool.install(|| {
                    let (tx, rx) = mpsc::channel();
                    flock::join(move || rx.recv().unwrap(), move || tx.send(()).unwrap());
                });
            }
            pool.shutdown().unwrap();
        }
    });
}

/// Case 3 across every queue a task's push can land in: the lanes' deques (its own lane's and
/// another's, with and without strict priority), the FIFO queues of `fifo()` pools and of
/// `spawn_fifo`, the join deque (a `join` half, a scope task) and a batch. The task pushes
/// B, then blocks until B has run, so only the other worker can run it; in each pool the
/// first round waits until that worker is parked before the push (then nothing but the
/// push's own wake-up can start B: a path that skipped it hangs here every time, not only
/// when it races a parking worker), and the rest race its parking (`spin_limit(0)`), with
/// the membarrier and without.
#[test]
#[cfg_attr(
    miri,
    ignore = "a stress loop over 10 pools; Miri runs case 3 and the loom models the race"
)]
fn a_task_blocking_on_what_it_pushed_is_not_stranded_in_any_queue() {
    type Push = fn(&Arc<Pool>, mpsc::Sender<()>);
    let pushes: [(&str, Push); 8] = [
        ("submit", |p, tx| {
            p.submit(move || tx.send(()).unwrap()).unwrap()
        }),
        ("submit_to b", |p, tx| {
            p.submit_to("b", move || tx.send(()).unwrap()).unwrap()
        }),
        ("spawn_fifo", |p, tx| {
            drop(p.spawn_fifo(move || tx.send(()).unwrap()))
        }),
        ("submit_batch", |p, tx| {
            let one = std::iter::once(move || tx.send(()).unwrap());
            assert_eq!(p.submit_batch(one).unwrap(), 1);
        }),
        ("join", |_, _| unreachable!("run by `block`")),
        ("scope spawn", |_, _| unreachable!("run by `block`")),
        ("scope spawn_fifo", |_, _| unreachable!("run by `block`")),
        ("submit_batch_to b", |p, tx| {
            let one = std::iter::once(move || tx.send(()).unwrap());
            assert_eq!(p.submit_batch_to("b", one).unwrap(), 1);
        }),
    ];
    // On a worker: push B the `kind` way, then block until it ran.
    fn block(pool: &Arc<Pool>, kind: &str, push: Push) {
        let (tx, rx) = mpsc::channel::<()>();
        match kind {
            "join" => {
                flock::join(move || rx.recv().unwrap(), move || tx.send(()).unwrap());
            }
            "scope spawn" => pool.in_place_scope(|s| {
                s.spawn(move |_| tx.send(()).unwrap());
                rx.recv().unwrap();
            }),
            "scope spawn_fifo" => pool.in_place_scope(|s| {
                s.spawn_fifo(move |_| tx.send(()).unwrap());
                rx.recv().unwrap();
            }),
            _ => {
                push(pool, tx);
                rx.recv().unwrap();
            }
        }
    }
    let rounds = 300;
    watchdog(120, "push to any queue, then block on it", move || {
        let lanes = [("a", 1), ("b", 1)];
        for membarrier in [true, false] {
            for (config, two_lanes) in [
                ("one lane", false),
                ("two lanes", true),
                ("two lanes, strict priority", true),
                ("fifo", false),
                ("two lanes, fifo", true),
            ] {
                let mut b = Pool::builder()
                    .workers(2)
                    .spin_limit(0)
                    .membarrier(membarrier);
                if two_lanes {
                    b = b.lanes(&lanes);
                }
                if config.contains("strict") {
                    b = b.strict_priority(true);
                }
                if config.contains("fifo") {
                    b = b.fifo();
                }
                let pool = Arc::new(b.build().unwrap());
                for &(kind, push) in &pushes {
                    if kind.ends_with(" b") && !two_lanes {
                        continue;
                    }
                    eprintln!("{config}, membarrier {membarrier}: {kind}");
                    for round in 0..rounds {
                        let p = pool.clone();
                        pool.submit(move || {
                            if round == 0 {
                                // The other worker parked: only our push can wake it.
                                eventually(|| {
                                    p.stats()
                                        .per_worker
                                        .iter()
                                        .any(|w| w.state == flock::WorkerState::Parked)
                                });
                            }
                            block(&p, kind, push);
                        })
                        .unwrap();
                        pool.wait().unwrap();
                    }
                }
                pool.shutdown().unwrap();
            }
        }
    });
}

/// Case 4: the owner of a scope waits while a scope task that another worker stole spawns
/// slow tasks. The waiting owner takes its share (before, it blocked on the latch and the
/// thief ran all eight in series).
#[test]
fn a_waiting_scope_owner_helps_with_tasks_a_thief_spawned() {
    watchdog(30, "scope owner helping a thief", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let ran_on = Arc::new(Mutex::new(BTreeSet::new()));
        let (p, seen) = (pool.clone(), ran_on.clone());
        let owner = pool.spawn(move || {
            let me = flock::current_worker_index().unwrap();
            let (stolen_tx, stolen) = mpsc::channel();
            // In place (on this worker, as `scope` from here would be): the body borrows the
            // receiver, which is not `Sync`.
            p.in_place_scope(|s| {
                s.spawn(|s| {
                    stolen_tx.send(flock::current_worker_index()).unwrap();
                    // Long enough that the owner has finished spinning and parked.
                    std::thread::sleep(Duration::from_millis(30));
                    for _ in 0..8 {
                        let seen = seen.clone();
                        s.spawn(move |_| {
                            seen.lock().unwrap().insert(flock::current_worker_index());
                            std::thread::sleep(Duration::from_millis(20));
                        });
                    }
                });
                // The body blocks until the task is running elsewhere: it was stolen.
                let thief = stolen.recv().unwrap();
                assert_ne!(thief, Some(me), "the scope task ran on its owner");
            });
            me
        });
        owner.join().unwrap();
        let workers = ran_on.lock().unwrap().clone();
        assert_eq!(
            workers,
            BTreeSet::from([Some(0), Some(1)]),
            "both workers share the eight tasks"
        );
        pool.shutdown().unwrap();
    });
}

/// Case 4, second half: a scope task spawns a sibling and blocks on a channel until the
/// sibling ran, while the scope's owner waits: the owner must be woken to run it.
#[test]
fn a_scope_task_blocking_on_a_sibling_it_spawned_gets_it_run() {
    watchdog(30, "scope task waiting for its sibling", || {
        let pool = Arc::new(Pool::builder().workers(2).spin_limit(0).build().unwrap());
        for _ in 0..200 {
            let p = pool.clone();
            pool.spawn(move || {
                p.scope(|s| {
                    s.spawn(|s| {
                        let (tx, rx) = mpsc::channel();
                        s.spawn(move |_| tx.send(()).unwrap());
                        rx.recv().unwrap();
                    });
                });
            })
            .join()
            .unwrap();
        }
        pool.shutdown().unwrap();
    });
}

/// Case 5 (rayon-core's `mutual_install`): pools with one worker each wait on each other.
#[test]
fn two_pools_waiting_on_each_other_complete() {
    watchdog(20, "mutual join across pools", || {
        let a = Arc::new(Pool::builder().workers(1).build().unwrap());
        let b = Arc::new(Pool::builder().workers(1).build().unwrap());
        let (a2, b2) = (a.clone(), b.clone());
        let r = a
            .spawn(move || b2.join(|| a2.join(|| 1, || 2), || 3))
            .join()
            .unwrap();
        assert_eq!(r, ((1, 2), 3));
    });
}

/// Case 5 with scopes, and the sleepy variant (rayon-core's `mutual_install_sleepy`): the
/// inner task sleeps so the outer waiters have parked before it ends.
#[test]
fn nested_scopes_across_pools_complete() {
    watchdog(20, "a B-scope task opening an A-scope", || {
        let a = Arc::new(Pool::builder().workers(1).build().unwrap());
        let b = Arc::new(Pool::builder().workers(1).build().unwrap());
        let hits = AtomicUsize::new(0);
        let a2 = a.clone();
        let (a3, b3) = (a.clone(), b.clone());
        a.spawn(move || {
            b3.scope(|s| {
                s.spawn(|_| {
                    a3.scope(|s2| {
                        s2.spawn(|_| {
                            std::thread::sleep(Duration::from_millis(20));
                        });
                    })
                });
            })
        })
        .join()
        .unwrap();
        b.scope(|s| {
            s.spawn(|_| {
                a2.scope(|s2| {
                    s2.spawn(|_| {
                        std::thread::sleep(Duration::from_millis(20));
                        hits.fetch_add(1, Ordering::SeqCst);
                    });
                })
            });
        });
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    });
}

/// Case 6: in a FIFO pool, a task's `join` after `pause()` starts none of the tasks queued
/// from outside. Before, the worker took the blocking task together with a batch of the
/// queued ones into its deque, and `join`'s pops ran them while paused.
#[test]
fn join_inside_a_task_starts_nothing_from_outside_while_paused() {
    watchdog(20, "join while paused", || {
        let pool = Arc::new(Pool::builder().workers(1).fifo().build().unwrap());
        let gate = Gate::new();
        let (tx, rx) = mpsc::channel();
        let (g, p) = (gate.clone(), pool.clone());
        let started = Arc::new(AtomicUsize::new(0));
        // Everything is queued before the worker looks: it finds the blocking task first.
        pool.pause();
        let runner = pool.spawn(move || {
            tx.send(()).unwrap();
            g.wait();
            p.join(|| (), || ());
        });
        for _ in 0..8 {
            let s = started.clone();
            pool.submit(move || {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        }
        pool.resume();
        rx.recv().unwrap();
        pool.pause();
        let before = started.load(Ordering::SeqCst);
        gate.open();
        runner.join().unwrap();
        assert_eq!(
            started.load(Ordering::SeqCst),
            before,
            "tasks from outside started while paused"
        );
        pool.resume();
        pool.wait().unwrap();
        assert_eq!(started.load(Ordering::SeqCst), 8);
        pool.shutdown().unwrap();
    });
}

/// A worker waiting on a latch of another pool keeps running its own pool's tasks: its
/// pool's queued task completes while it waits, and the other pool's task is what it waits
/// for (it needs that first task's result).
#[test]
fn a_worker_waiting_on_another_pools_task_runs_its_own_pools_tasks() {
    watchdog(20, "own-pool work while waiting cross-pool", || {
        let a = Arc::new(Pool::builder().workers(1).build().unwrap());
        let b = Arc::new(Pool::builder().workers(1).build().unwrap());
        let (tx, rx) = mpsc::channel::<u32>();
        let (a2, b2) = (a.clone(), b.clone());
        let outer = a.spawn(move || {
            // Queued on A's only worker, which is us: only we can run it, while we wait.
            a2.submit(move || tx.send(5).unwrap()).unwrap();
            b2.spawn(move || rx.recv().unwrap() + 1).join().unwrap()
        });
        assert_eq!(outer.join().unwrap(), 6);
        eventually(|| a.stats().completed == 2);
    });
}
