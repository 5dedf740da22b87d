//! `TaskGroup`: a wait covers exactly the group's tasks, runs tasks on a waiting worker
//! (nested fan-outs on one worker complete), reports panics, times out, cancels, and is
//! reusable.

mod common;

use common::{stall_all, watchdog, Gate, Live};
use flock::{GroupError, Pool, TaskGroup};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn count() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// Polls `f` on this thread until ready, parking between polls (woken by its waker).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn wait_covers_the_groups_tasks_and_not_the_pools_others() {
    watchdog(30, "group wait ignores other tasks", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let outsider = Gate::new();
        let g = outsider.clone();
        pool.submit(move || g.wait()).unwrap(); // never ends before we open it
        let group = TaskGroup::new(&pool);
        let ran = count();
        for _ in 0..100 {
            let ran = ran.clone();
            group.spawn(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            });
        }
        group.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 100);
        assert_eq!(group.unfinished(), 0);
        outsider.open();
        pool.wait().unwrap();
    });
}

#[test]
fn nested_fan_out_on_one_worker_completes() {
    watchdog(60, "nested fan-out on one worker", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let leaves = count();
        let outer = TaskGroup::new(&pool);
        for _ in 0..8 {
            let (pool2, leaves) = (pool.clone(), leaves.clone());
            outer.spawn(move || {
                let inner = TaskGroup::new(&pool2);
                for _ in 0..8 {
                    let (pool3, leaves) = (pool2.clone(), leaves.clone());
                    inner.spawn(move || {
                        // Three levels: the innermost wait runs tasks too.
                        let leaf = TaskGroup::new(&pool3);
                        for _ in 0..4 {
                            let leaves = leaves.clone();
                            leaf.spawn(move || {
                                leaves.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                        leaf.wait().unwrap();
                    });
                }
                inner.wait().unwrap();
            });
        }
        outer.wait().unwrap();
        assert_eq!(leaves.load(Ordering::SeqCst), 8 * 8 * 4);
    });
}

#[test]
fn a_worker_of_another_pool_waits_by_running_its_own_tasks() {
    watchdog(30, "cross-pool group wait", || {
        let a = Arc::new(Pool::builder().workers(1).build().unwrap());
        let b = Arc::new(Pool::builder().workers(1).build().unwrap());
        let (a2, b2) = (a.clone(), b.clone());
        // A's only worker waits on a group of B whose task needs a task of A to run first.
        let h = a.spawn(move || {
            let on_b = TaskGroup::new(&b2);
            let (tx, rx) = std::sync::mpsc::channel();
            let a_task = a2.spawn(move || tx.send(5).unwrap());
            on_b.spawn(move || {
                assert_eq!(rx.recv().unwrap(), 5);
            });
            on_b.wait().unwrap();
            a_task.join().unwrap();
            7
        });
        assert_eq!(h.join().unwrap(), 7);
    });
}

#[test]
fn panics_are_reported_once_and_the_group_is_reusable() {
    let pool = Pool::new();
    let group = TaskGroup::new(&pool);
    for i in 0..10 {
        group.spawn(move || assert!(i % 3 != 0, "task {i} fails"));
    }
    assert_eq!(group.wait(), Err(GroupError::Panicked(4)));
    assert_eq!(group.wait(), Ok(()));
    let ran = count();
    for _ in 0..3 {
        let r = ran.clone();
        group.spawn(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        group.wait().unwrap();
    }
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    pool.wait().unwrap();
    assert_eq!(pool.stats().panicked, 4, "the pool counts the panics too");
}

#[test]
fn wait_timeout_times_out_then_succeeds() {
    let pool = Pool::new();
    let group = TaskGroup::new(&pool);
    let gate = Gate::new();
    let g = gate.clone();
    group.spawn(move || g.wait());
    assert_eq!(
        group.wait_timeout(Duration::from_millis(20)),
        Err(GroupError::Timeout)
    );
    gate.open();
    assert_eq!(group.wait_timeout(Duration::from_secs(30)), Ok(()));
}

#[test]
fn cancel_drops_the_unstarted_tasks_and_counts_them() {
    watchdog(30, "group cancel", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let group = TaskGroup::new(&pool);
        let gate = Gate::new();
        let (tx, started) = std::sync::mpsc::channel();
        let g = gate.clone();
        group.spawn(move || {
            tx.send(()).unwrap();
            g.wait();
        });
        started.recv().unwrap();
        let (live, ran) = (count(), count());
        for _ in 0..10 {
            let (l, r) = (Live::new(&live), ran.clone());
            group.spawn(move || {
                let _l = l;
                r.fetch_add(1, Ordering::SeqCst);
            });
        }
        assert_eq!(live.load(Ordering::SeqCst), 10);
        assert_eq!(group.cancel(), 10);
        assert_eq!(live.load(Ordering::SeqCst), 0, "destructors ran in cancel");
        assert_eq!(group.unfinished(), 1, "only the running task is left");
        gate.open();
        group.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!((s.dropped, s.completed), (10, 1));
        // Reusable after a cancel.
        let r = ran.clone();
        group.spawn(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        group.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn two_threads_may_wait_on_one_group_at_once() {
    watchdog(30, "two waiters", || {
        let pool = Pool::builder().workers(2).build().unwrap();
        let group = Arc::new(TaskGroup::new(&pool));
        let gate = Gate::new();
        for _ in 0..4 {
            let g = gate.clone();
            group.spawn(move || g.wait());
        }
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let group = group.clone();
                std::thread::spawn(move || group.wait())
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        gate.open();
        for w in waiters {
            assert_eq!(w.join().unwrap(), Ok(()));
        }
    });
}

#[test]
fn a_refused_task_is_not_part_of_the_group() {
    let pool = Pool::new();
    let group = TaskGroup::new(&pool);
    pool.shutdown().unwrap();
    let live = count();
    let l = Live::new(&live);
    let back = group.submit(move || drop(l)).unwrap_err();
    assert_eq!(group.unfinished(), 0);
    drop(back);
    let l = Live::new(&live);
    group.spawn(move || drop(l)); // refused and dropped
    assert_eq!(live.load(Ordering::SeqCst), 0);
    assert_eq!(group.wait(), Ok(()));
}

#[test]
fn shutdown_now_drops_a_groups_queued_tasks_and_its_wait_returns() {
    watchdog(30, "shutdown_now with a group", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let group = TaskGroup::new(&pool);
        let gate = stall_all(&pool);
        let live = count();
        for _ in 0..5 {
            let l = Live::new(&live);
            group.spawn(move || drop(l));
        }
        let opener = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                gate.open();
            })
        };
        assert_eq!(pool.shutdown_now().unwrap(), 5);
        group.wait().unwrap();
        assert_eq!(live.load(Ordering::SeqCst), 0);
        opener.join().unwrap();
    });
}

#[test]
fn stress_many_threads_spawning_and_waiting() {
    watchdog(60, "group stress", || {
        let pool = Arc::new(Pool::builder().workers(4).build().unwrap());
        let rounds = if cfg!(miri) { 5 } else { 200 };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let group = TaskGroup::new(&pool);
                    let ran = count();
                    for round in 1..=rounds {
                        for _ in 0..16 {
                            let r = ran.clone();
                            group.spawn(move || {
                                r.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                        group.wait().unwrap();
                        assert_eq!(ran.load(Ordering::SeqCst), round * 16);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// Threads sharing one group, each spawning its own tasks and waiting (by turns `wait`,
/// `wait_timeout` and `wait_async`): every wait returns with the caller's own tasks run,
/// whatever zeros the others' tasks made just before it began (a finisher of an earlier zero
/// must not end a later wait: `loom_a_group_wait_after_a_zero_waits_for_the_next_task` is
/// the model of that race).
#[test]
fn threads_sharing_a_group_each_find_their_own_tasks_run_after_a_wait() {
    watchdog(120, "shared group stress", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let group = Arc::new(TaskGroup::new(&pool));
        let rounds = if cfg!(miri) { 5 } else { 3_000 };
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let group = group.clone();
                std::thread::spawn(move || {
                    for round in 0..rounds {
                        let ran = count();
                        for _ in 0..1 + round % 3 {
                            let r = ran.clone();
                            group.spawn(move || {
                                r.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                        match (t + round) % 3 {
                            0 => group.wait().unwrap(),
                            1 => group.wait_timeout(Duration::from_secs(3600)).unwrap(),
                            _ => block_on(group.wait_async()).unwrap(),
                        }
                        assert_eq!(
                            ran.load(Ordering::SeqCst),
                            1 + round % 3,
                            "round {round}: the wait returned before this thread's tasks ran"
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
}

/// A wait on a group from one of its own tasks would wait for that task: refused at once
/// with `WouldDeadlock`, on a worker (the task's code) and off the workers (the caller
/// running it under `CallerRuns`), for both waits; a wait on another group, or on an inner
/// group from the same task, still waits. Before, these waits never returned.
#[test]
fn a_wait_from_one_of_the_groups_own_tasks_is_refused() {
    watchdog(30, "group self-wait refused", || {
        let pool = Arc::new(Pool::builder().workers(2).build().unwrap());
        let group = Arc::new(TaskGroup::new(&pool));
        let other = Arc::new(TaskGroup::new(&pool));
        let answers = Arc::new(std::sync::Mutex::new(Vec::new()));
        for _ in 0..8 {
            let (g, o, p, answers) = (group.clone(), other.clone(), pool.clone(), answers.clone());
            group.spawn(move || {
                o.spawn(|| ());
                let inner = TaskGroup::new(&p);
                inner.spawn(|| ());
                let mine = (g.wait(), g.wait_timeout(Duration::from_secs(60)));
                // Not ours: these wait (and return once those tasks ran).
                let theirs = (o.wait(), inner.wait());
                answers.lock().unwrap().push((mine, theirs));
            });
        }
        group.wait().unwrap();
        other.wait().unwrap();
        let answers = answers.lock().unwrap();
        assert_eq!(answers.len(), 8);
        for answer in answers.iter() {
            assert_eq!(
                *answer,
                (
                    (
                        Err(GroupError::WouldDeadlock),
                        Err(GroupError::WouldDeadlock)
                    ),
                    (Ok(()), Ok(()))
                )
            );
        }
    });
}

#[test]
fn a_wait_from_a_group_task_run_by_the_caller_is_refused() {
    watchdog(30, "group self-wait refused off the workers", || {
        let pool = Pool::builder()
            .workers(1)
            .capacity(1)
            .when_full(flock::Backpressure::CallerRuns)
            .build()
            .unwrap();
        let (gate, started) = (Gate::new(), Gate::new());
        let (g, s) = (gate.clone(), started.clone());
        // Holds the only worker. Capacity counts tasks not started yet, so this one, once
        // running, leaves the place free: it is filled next by a task that cannot start.
        pool.submit(move || {
            s.open();
            g.wait()
        })
        .unwrap();
        started.wait();
        let here = std::thread::current().id();
        // Until one is queued rather than run here (a place handed back late is taken by a
        // submit that then runs its task here, as the group's below must).
        loop {
            let ran_here = Arc::new(AtomicBool::new(false));
            let r = ran_here.clone();
            pool.submit(move || r.store(std::thread::current().id() == here, Ordering::SeqCst))
                .unwrap();
            if !ran_here.load(Ordering::SeqCst) {
                break;
            }
        }
        let group = Arc::new(TaskGroup::new(&pool));
        let (tx, rx) = std::sync::mpsc::channel();
        let g = group.clone();
        group.spawn(move || tx.send((std::thread::current().id(), g.wait())).unwrap());
        let (ran_on, answer) = rx.recv().unwrap();
        assert_eq!(ran_on, here, "the task ran on the caller");
        assert_eq!(answer, Err(GroupError::WouldDeadlock));
        gate.open();
        group.wait().unwrap();
        pool.wait().unwrap();
    });
}

/// The destructor of a group task that `cancel` drops runs while that task is unfinished: a
/// wait on the group from there is refused too (also when the destructor runs on a worker,
/// under `shutdown_now`), and a wait on another group is not.
#[test]
fn a_wait_from_a_dropped_group_tasks_destructor_is_refused() {
    struct WaitsOnDrop {
        group: Arc<TaskGroup>,
        answers: Arc<std::sync::Mutex<Vec<Result<(), GroupError>>>>,
    }
    impl Drop for WaitsOnDrop {
        fn drop(&mut self) {
            let answer = self.group.wait();
            self.answers.lock().unwrap().push(answer);
        }
    }
    watchdog(30, "group wait from a dropped task's destructor", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let group = Arc::new(TaskGroup::new(&pool));
        let unrelated = Arc::new(TaskGroup::new(&pool));
        let answers = Arc::new(std::sync::Mutex::new(Vec::new()));
        pool.pause();
        for target in [&group, &unrelated] {
            let w = WaitsOnDrop {
                group: target.clone(),
                answers: answers.clone(),
            };
            group.spawn(move || drop(w));
        }
        assert_eq!(group.cancel(), 2);
        pool.resume();
        group.wait().unwrap();
        assert_eq!(
            *answers.lock().unwrap(),
            vec![Err(GroupError::WouldDeadlock), Ok(())]
        );
        pool.shutdown().unwrap();
    });
}

/// `cancel` racing a wait that prunes the group's handles: a wait that returns drops the
/// handles of finished tasks, and must not hide the others from a `cancel` meanwhile. The
/// pool is paused, so every task spawned here is still queued when its round's `cancel`
/// comes, which must drop it. (The pruning took the whole list out and put the unfinished
/// back: a `cancel` in between found none and the task later ran.)
#[test]
fn cancel_racing_a_waits_pruning_cancels_the_task() {
    watchdog(120, "group cancel racing wait", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        pool.pause();
        let group = Arc::new(TaskGroup::new(&pool));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (g, s) = (group.clone(), stop.clone());
        let waiter = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                g.wait().unwrap();
            }
        });
        let ran = count();
        let rounds = if cfg!(miri) { 100 } else { 50_000 };
        let mut missed = 0;
        for _ in 0..rounds {
            let r = ran.clone();
            group.spawn(move || {
                r.fetch_add(1, Ordering::SeqCst);
            });
            missed += usize::from(group.cancel() != 1);
        }
        stop.store(true, Ordering::Relaxed);
        waiter.join().unwrap();
        pool.resume();
        group.wait().unwrap();
        pool.wait().unwrap();
        assert_eq!((missed, ran.load(Ordering::SeqCst)), (0, 0));
        assert_eq!(pool.stats().dropped, rounds as u64);
    });
}

/// Dropping a group waits for its tasks, as `wait` does: the running one and the one queued
/// behind it have both finished when the drop returns.
#[test]
fn dropping_a_group_waits_for_its_running_and_queued_tasks() {
    watchdog(30, "group drop waits", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let group = TaskGroup::new(&pool);
        let (gate, done) = (Gate::new(), count());
        let (started_tx, started) = std::sync::mpsc::channel();
        let (g, d) = (gate.clone(), done.clone());
        group.spawn(move || {
            started_tx.send(()).unwrap();
            g.wait();
            d.fetch_add(1, Ordering::SeqCst);
        });
        let d = done.clone();
        group.spawn(move || {
            d.fetch_add(1, Ordering::SeqCst);
        });
        started.recv().unwrap(); // one running, one queued behind it
        let opener = std::thread::spawn(move || {
            // Only so that the drop below has begun when the gate opens; the drop waits either way.
            std::thread::sleep(Duration::from_millis(50));
            gate.open();
        });
        drop(group);
        assert_eq!(done.load(Ordering::SeqCst), 2);
        opener.join().unwrap();
    });
}

/// A group whose last handle goes inside one of its own tasks, as it ran or as `purge` drops
/// it unrun, does not wait for that task (it never could) and the drop returns.
#[test]
fn a_group_dropped_inside_one_of_its_own_tasks_does_not_hang() {
    watchdog(30, "group dropped by its own task", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let gate = stall_all(&pool);
        let group = Arc::new(TaskGroup::new(&pool));
        let ran = count();
        let (g, r) = (group.clone(), ran.clone());
        group.spawn(move || {
            r.fetch_add(1, Ordering::SeqCst);
            drop(g); // the last handle: main's went below
        });
        drop(group);
        gate.open();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);

        // Dropped unrun: `purge` runs the task's destructor, which drops the last handle.
        pool.pause();
        // The worker parked, so no job is taken (and kept for the resume, out of purge's
        // reach) by a worker still searching as the pause began.
        common::eventually(|| pool.stats().per_worker[0].state == flock::WorkerState::Parked);
        let group = Arc::new(TaskGroup::new(&pool));
        for _ in 0..3 {
            let g = group.clone();
            group.spawn(move || drop(g));
        }
        group.spawn(|| ());
        drop(group);
        assert_eq!(pool.purge(), 4);
        pool.resume();
        pool.wait().unwrap();
    });
}

/// A task that opens a group and drops it, on a pool of one worker: the group's tasks are
/// queued behind the dropping task on the only worker, which runs them while its drop waits.
#[test]
fn a_group_dropped_in_a_task_of_a_one_worker_pool_runs_its_queued_tasks() {
    watchdog(30, "group dropped in a task on one worker", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        let p = pool.clone();
        let handle = pool.spawn(move || {
            let leaves = count();
            let group = TaskGroup::new(&p);
            for _ in 0..8 {
                let leaves = leaves.clone();
                group.spawn(move || {
                    leaves.fetch_add(1, Ordering::SeqCst);
                });
            }
            drop(group);
            leaves.load(Ordering::SeqCst)
        });
        assert_eq!(handle.join().unwrap(), 8);
    });
}

/// A group dropped while its thread unwinds does not wait (its tasks still run): the unwind
/// returns although the group's task is blocked until after it.
#[test]
fn a_group_dropped_while_unwinding_does_not_wait() {
    watchdog(30, "group dropped during a panic", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let (gate, ran) = (Gate::new(), count());
        let (g, r) = (gate.clone(), ran.clone());
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let group = TaskGroup::new(&pool);
            group.spawn(move || {
                g.wait();
                r.fetch_add(1, Ordering::SeqCst);
            });
            std::panic::panic_any("unwinding past the group");
        }));
        assert!(unwound.is_err());
        assert_eq!(ran.load(Ordering::SeqCst), 0, "not waited for");
        gate.open();
        pool.wait().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1, "and still run");
    });
}

/// A panic that the drop's wait finds is not raised from the drop (a destructor must not
/// panic): the pool counts it, as it counts any task's.
#[test]
fn a_panic_found_by_the_drop_is_counted_not_raised() {
    watchdog(30, "group drop with a panicked task", || {
        let pool = Pool::builder().workers(1).build().unwrap();
        let group = TaskGroup::new(&pool);
        group.spawn(|| panic!("a task of a dropped group"));
        drop(group);
        pool.wait().unwrap();
        assert_eq!(pool.stats().panicked, 1);
    });
}

/// On a paused pool the drop waits as `wait` does: the group's queued task starts once the
/// pool is resumed, and has run when the drop returns.
#[test]
fn a_group_dropped_on_a_paused_pool_waits_for_the_resume() {
    watchdog(30, "group drop on a paused pool", || {
        let pool = Arc::new(Pool::builder().workers(1).build().unwrap());
        pool.pause();
        let group = TaskGroup::new(&pool);
        let ran = count();
        let r = ran.clone();
        group.spawn(move || {
            r.fetch_add(1, Ordering::SeqCst);
        });
        let p = pool.clone();
        let resumer = std::thread::spawn(move || {
            // Only so that the drop below has begun; it waits for the resume either way.
            std::thread::sleep(Duration::from_millis(50));
            p.resume();
        });
        drop(group);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        resumer.join().unwrap();
    });
}

/// Two cancels at once share the work, and neither waits for the other: while the first is
/// in a destructor that waits for the second to return, the second finds the list taken and
/// returns 0. The counts add up, and a wait on the group covers the destructors still running.
#[test]
fn concurrent_cancels_share_the_work_and_neither_waits() {
    watchdog(30, "concurrent group cancels", || {
        struct Blocks(Option<(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>)>);
        impl Drop for Blocks {
            fn drop(&mut self) {
                if let Some((entered, release)) = self.0.take() {
                    entered.send(()).unwrap();
                    release.recv().unwrap();
                }
            }
        }
        let pool = Pool::builder().workers(1).build().unwrap();
        let group = TaskGroup::new(&pool);
        let gate = Gate::new();
        let (tx, started) = std::sync::mpsc::channel();
        let g = gate.clone();
        group.spawn(move || {
            tx.send(()).unwrap();
            g.wait();
        });
        started.recv().unwrap();
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel();
        let blocks = Blocks(Some((entered_tx, release_rx)));
        let live = count();
        group.spawn(move || drop(blocks));
        for _ in 0..9 {
            let l = Live::new(&live);
            group.spawn(move || drop(l));
        }
        std::thread::scope(|s| {
            let first = s.spawn(|| group.cancel());
            entered.recv().unwrap();
            assert_eq!(group.cancel(), 0, "the list is the first call's");
            release.send(()).unwrap();
            assert_eq!(first.join().unwrap(), 10);
        });
        assert_eq!(live.load(Ordering::SeqCst), 0);
        gate.open();
        group.wait().unwrap();
        pool.wait().unwrap();
        let s = pool.stats();
        assert_eq!((s.dropped, s.completed), (10, 1));
    });
}
