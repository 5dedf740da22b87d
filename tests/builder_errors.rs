//! Invalid configurations are typed errors that say what to change; hooks and names apply.

use flock::{Backpressure, BuildError, Pool};
use std::sync::{Arc, Mutex};

/// A builder, a test that its error is the expected variant, and a hint the message must carry.
type Case = (flock::PoolBuilder, fn(&BuildError) -> bool, &'static str);

#[test]
fn invalid_configurations_are_refused_with_a_hint() {
    let cases: Vec<Case> = vec![
        (
            Pool::builder().capacity(0),
            |e| matches!(e, BuildError::ZeroCapacity),
            "pass 1 or more",
        ),
        (
            Pool::builder().stack_size(0),
            |e| matches!(e, BuildError::ZeroStackSize),
            "stack_size(0)",
        ),
        (
            Pool::builder().stack_size(flock::MIN_STACK_SIZE - 1),
            |e| {
                matches!(
                    e,
                    BuildError::StackTooSmall {
                        requested,
                        min: flock::MIN_STACK_SIZE,
                    } if *requested == flock::MIN_STACK_SIZE - 1
                )
            },
            "pass at least 65536 bytes",
        ),
        (
            Pool::builder().pin_to(Vec::new()),
            |e| matches!(e, BuildError::EmptyCoreList),
            "at least one core",
        ),
        (
            Pool::builder()
                .when_full(Backpressure::SpawnThread)
                .max_spawned_threads(0),
            |e| matches!(e, BuildError::ZeroSpawnThreads),
            "max_spawned_threads(0)",
        ),
        (
            Pool::builder().workers(1 << 20),
            |e| {
                matches!(
                    e,
                    BuildError::TooManyWorkers {
                        requested: 1_048_576,
                        ..
                    }
                )
            },
            "pass at most",
        ),
    ];
    for (builder, is_expected, hint) in cases {
        let err = builder.build().unwrap_err();
        assert!(is_expected(&err), "unexpected error {err:?}");
        assert!(err.to_string().contains(hint), "{err} should say '{hint}'");
    }
}

#[test]
fn names_hooks_and_stack_size_apply_to_every_worker() {
    let started: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let stopped: Arc<Mutex<Vec<usize>>> = Arc::default();
    let (s1, s2) = (started.clone(), stopped.clone());
    let pool = Pool::builder()
        .workers(3)
        .thread_name(|i| format!("crunch-{i}"))
        .stack_size(256 * 1024)
        .on_worker_start(move |i| {
            let name = std::thread::current().name().unwrap_or("").to_owned();
            s1.lock().unwrap().push((i, name));
        })
        .on_worker_stop(move |i| s2.lock().unwrap().push(i))
        .build()
        .unwrap();
    pool.shutdown().unwrap();
    let mut started = started.lock().unwrap().clone();
    started.sort();
    assert_eq!(
        started,
        vec![
            (0, "crunch-0".into()),
            (1, "crunch-1".into()),
            (2, "crunch-2".into())
        ]
    );
    let mut stopped = stopped.lock().unwrap().clone();
    stopped.sort();
    assert_eq!(stopped, vec![0, 1, 2]);
}

#[test]
fn fifo_and_lifo_order_local_tasks() {
    for fifo in [true, false] {
        let b = Pool::builder().workers(1);
        let pool = Arc::new(if fifo { b.fifo() } else { b.lifo() }.build().unwrap());
        let order: Arc<Mutex<Vec<u32>>> = Arc::default();
        let (p, o) = (pool.clone(), order.clone());
        pool.submit(move || {
            for i in 0..5 {
                let o = o.clone();
                p.submit(move || o.lock().unwrap().push(i)).unwrap();
            }
        })
        .unwrap();
        pool.wait().unwrap();
        let got = order.lock().unwrap().clone();
        let want: Vec<u32> = if fifo {
            vec![0, 1, 2, 3, 4]
        } else {
            vec![4, 3, 2, 1, 0]
        };
        assert_eq!(got, want, "fifo={fifo}");
    }
}
