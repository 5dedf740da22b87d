//! The data-parallel helpers (`src/par.rs`): loops over slices and chunks, `map_reduce` and
//! the sorts give the sequential results, keep what they promise (stability, a repeatable
//! reduction tree), re-raise panics, and the free forms use the current pool.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const LENS: [usize; 7] = [0, 1, 2, 7, 1000, 4097, 100_003];

fn pool(workers: usize) -> flock::Pool {
    flock::Pool::builder()
        .workers(workers)
        .thread_name(|i| format!("par-test-{i}"))
        .build()
        .unwrap()
}

/// Pseudo-random values with many duplicates (xorshift, a fixed seed).
fn data(len: usize, modulo: u64) -> Vec<u64> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % modulo
        })
        .collect()
}

#[test]
fn par_for_each_visits_every_item_once() {
    let pool = pool(3);
    for len in LENS {
        let items: Vec<usize> = (0..len).collect();
        let hits: Vec<AtomicUsize> = (0..len).map(|_| AtomicUsize::new(0)).collect();
        pool.par_for_each(&items, |&i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(
            hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
            "len {len}"
        );
    }
}

#[test]
fn par_for_each_mut_matches_the_sequential_loop() {
    let pool = pool(2);
    for len in LENS {
        let mut got = data(len, u64::MAX);
        let want: Vec<u64> = got.iter().map(|x| x.wrapping_mul(7) ^ 3).collect();
        pool.par_for_each_mut(&mut got, |x| *x = x.wrapping_mul(7) ^ 3);
        assert_eq!(got, want, "len {len}");
    }
}

#[test]
fn par_chunks_mut_matches_enumerated_chunks_mut() {
    let pool = pool(2);
    for len in LENS {
        for size in [1, 3, 64, 5000] {
            let mut got = vec![0usize; len];
            let mut want = vec![0usize; len];
            let f = |i: usize, c: &mut [usize]| {
                let n = c.len();
                for (j, x) in c.iter_mut().enumerate() {
                    *x = i * 10_000 + j + n;
                }
            };
            pool.par_chunks_mut(&mut got, size, f);
            want.chunks_mut(size).enumerate().for_each(|(i, c)| f(i, c));
            assert_eq!(got, want, "len {len}, size {size}");
        }
    }
}

#[test]
#[should_panic(expected = "a chunk of 0 items")]
fn par_chunks_mut_of_zero_panics() {
    pool(1).par_chunks_mut(&mut [1, 2, 3], 0, |_, _| ());
}

#[test]
fn map_reduce_equals_the_sequential_fold() {
    let pool = pool(3);
    for len in LENS {
        let v = data(len, 1 << 20);
        let want: u64 = v.iter().map(|x| x * 3).sum();
        assert_eq!(pool.map_reduce(&v, || 0, |x| x * 3, |a, b| a + b), want);
        assert_eq!(flock::map_reduce(&v, || 0, |x| x * 3, |a, b| a + b), want);
        // Not commutative: the pieces are combined in order.
        let strings: Vec<String> = (0..len.min(5000)).map(|i| i.to_string()).collect();
        let joined = pool.map_reduce(&strings, String::new, |s| s.clone() + ",", |a, b| a + &b);
        assert_eq!(
            joined,
            strings.iter().map(|s| s.clone() + ",").collect::<String>()
        );
    }
    assert_eq!(
        pool.map_reduce(&[] as &[u8], || 42, |_| 0, |a, b| a + b),
        42
    );
}

#[test]
fn map_reduce_combines_in_the_same_tree_every_time() {
    // Floating-point addition is not associative: a tree that followed the schedule would
    // give different bits from run to run.
    let pool = pool(2);
    let v: Vec<f64> = data(200_000, 1 << 30)
        .iter()
        .map(|&x| (x as f64).sqrt() * 1e-3 + 1e10 * ((x & 1) as f64))
        .collect();
    let first = pool.map_reduce(&v, || 0.0, |x| x * 1.0001, |a, b| a + b);
    for _ in 0..20 {
        let again = pool.map_reduce(&v, || 0.0, |x| x * 1.0001, |a, b| a + b);
        assert_eq!(again.to_bits(), first.to_bits());
    }
}

#[test]
fn unstable_sorts_sort() {
    let pool = pool(2);
    for len in LENS.into_iter().chain([300_000]) {
        for modulo in [3, 1000, u64::MAX] {
            let v = data(len, modulo);
            let mut want = v.clone();
            want.sort_unstable();
            let mut got = v.clone();
            pool.par_sort_unstable(&mut got);
            assert_eq!(got, want, "len {len}, modulo {modulo}");
            let mut got = v.clone();
            flock::par_sort_unstable(&mut got);
            assert_eq!(got, want);
            let mut got = v.clone();
            pool.par_sort_unstable_by(&mut got, |a, b| b.cmp(a));
            want.reverse();
            assert_eq!(got, want);
            let mut got = v;
            flock::par_sort_unstable_by(&mut got, |a, b| b.cmp(a));
            assert_eq!(got, want);
        }
    }
}

#[test]
fn stable_sorts_keep_equal_items_in_order() {
    let pool = pool(3);
    for len in LENS.into_iter().chain([300_000]) {
        // Few keys, each item tagged with where it was: a stable sort gives exactly std's.
        let v: Vec<(u64, usize)> = data(len, 5).into_iter().zip(0..).collect();
        let mut want = v.clone();
        want.sort_by_key(|p| p.0);
        let mut got = v.clone();
        pool.par_sort_by(&mut got, |a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "len {len}");
        let mut got = v.clone();
        flock::par_sort_by(&mut got, |a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "len {len}");
        let mut plain = data(len, 1 << 40);
        let mut plain_want = plain.clone();
        plain_want.sort();
        pool.par_sort(&mut plain);
        assert_eq!(plain, plain_want);
        let mut plain = data(len, 1 << 40);
        flock::par_sort(&mut plain);
        assert_eq!(plain, plain_want);
    }
}

#[test]
fn panics_propagate_after_the_other_pieces_ran() {
    let pool = pool(2);
    let items: Vec<usize> = (0..10_000).collect();
    let ran = AtomicUsize::new(0);
    let err = catch_unwind(AssertUnwindSafe(|| {
        pool.par_for_each(&items, |&i| {
            ran.fetch_add(1, Ordering::Relaxed);
            if i == 5000 {
                panic!("item 5000");
            }
        })
    }))
    .unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"item 5000"));
    // Every other piece ran to its end; the panicking piece stopped at 5000.
    assert!(ran.load(Ordering::Relaxed) > 5000);

    let err = catch_unwind(AssertUnwindSafe(|| {
        pool.map_reduce(
            &items,
            || 0,
            |&i| if i == 7 { panic!("map 7") } else { i },
            |a, b| a + b,
        )
    }))
    .unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"map 7"));

    let mut v = data(100_000, 1000);
    let err = catch_unwind(AssertUnwindSafe(|| {
        pool.par_sort_unstable_by(&mut v, |a, b| {
            if *a == 500 || *b == 500 {
                panic!("cmp");
            }
            a.cmp(b)
        })
    }))
    .unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"cmp"));
    // The pool is fine afterwards.
    assert_eq!(
        pool.map_reduce(&items, || 0, |&i| i, |a, b| a + b),
        49_995_000
    );
}

#[test]
fn free_forms_use_the_calling_workers_pool() {
    let pool = pool(2);
    let names = Mutex::new(Vec::new());
    let items: Vec<u32> = (0..1000).collect();
    pool.install(|| {
        flock::par_for_each(&items, |_| {
            names
                .lock()
                .unwrap()
                .push(std::thread::current().name().map(str::to_owned));
        })
    });
    let names = names.into_inner().unwrap();
    assert_eq!(names.len(), 1000);
    assert!(
        names
            .iter()
            .all(|n| n.as_deref().is_some_and(|n| n.starts_with("par-test-"))),
        "{names:?}"
    );
    // From a plain thread: the global pool.
    let outside = Mutex::new(Vec::new());
    flock::par_for_each(&items, |_| {
        outside.lock().unwrap().push(flock::current_worker_index());
    });
    assert!(outside.into_inner().unwrap().iter().all(Option::is_some));
}
