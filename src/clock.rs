//! The clock of latency stamps and lane charging: nanoseconds since a pool started.
//!
//! A pool that tracks latency reads it up to three times per task (queued, started, ended;
//! a task that follows another on a worker starts where that one ended), and a
//! pool with lanes twice. `Instant::now` plus the subtraction and the conversion to
//! nanoseconds cost about 90 instructions a reading (callgrind, `scripts/callgrind.sh`'s
//! probe with `flock-latency`). Where the kernel itself keeps time with the time-stamp
//! counter, this clock reads the counter directly instead: one `rdtsc`, a subtraction and a
//! multiply.
//!
//! The counter is used only on x86-64 Linux whose current clocksource is `tsc`: the kernel
//! picks it only when the counter runs at a constant rate, does not stop in deep sleep
//! states, and is synchronised across CPUs (it watches that and switches away when it is
//! not), so readings on two workers can be compared, as a queue wait's two ends are. Its
//! rate is measured once per process against `Instant` over [`CALIBRATION`]. Everywhere
//! else (other systems, another clocksource, Miri, loom) the clock is `Instant`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long the one-time measurement of the counter's rate spins (on the first build of a
/// pool that tracks time). 200 µs against `Instant`'s resolution of tens of nanoseconds
/// puts the rate within about 0.05%, far finer than the histograms' buckets.
const CALIBRATION: Duration = Duration::from_micros(200);

/// Nanoseconds since some start, cheap to read.
pub(crate) struct Clock {
    start: Instant,
    /// The counter at `start` and the process's nanoseconds per tick in 32.32 fixed point,
    /// when the counter is used.
    tsc: Option<(u64, u64)>,
}

impl Clock {
    /// A clock reading 0 now. With `hot` false it is `Instant`, whose first use costs no
    /// calibration (for pools that read the clock rarely).
    pub(crate) fn new(hot: bool) -> Clock {
        let tsc = if hot { scale() } else { None }.map(|scale| (ticks(), scale));
        Clock {
            start: Instant::now(),
            tsc,
        }
    }

    /// Nanoseconds since `new`. Monotonic on one thread; a reading on another CPU may be a
    /// few nanoseconds behind one taken just before it here (callers saturate differences).
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        match self.tsc {
            Some((start, scale)) => {
                let elapsed = ticks().saturating_sub(start);
                ((u128::from(elapsed) * u128::from(scale)) >> 32) as u64
            }
            None => self.start.elapsed().as_nanos() as u64,
        }
    }
}

/// Nanoseconds per tick in 32.32 fixed point, measured once per process; `None` where the
/// counter is not used.
fn scale() -> Option<u64> {
    static SCALE: OnceLock<Option<u64>> = OnceLock::new();
    *SCALE.get_or_init(|| if tsc_usable() { calibrate() } else { None })
}

/// Spins for [`CALIBRATION`] between two paired readings of both clocks ([`stamp`]).
fn calibrate() -> Option<u64> {
    let (t0, c0) = stamp();
    let mut t1 = Instant::now();
    while t1.duration_since(t0) < CALIBRATION {
        std::hint::spin_loop();
        t1 = Instant::now();
    }
    let (t1, c1) = stamp();
    let ns = t1.duration_since(t0).as_nanos();
    let elapsed = u128::from(c1.checked_sub(c0)?);
    if elapsed == 0 {
        return None;
    }
    u64::try_from((ns << 32) / elapsed).ok().filter(|&s| s > 0)
}

/// The counter and the `Instant` it was read at: the counter read between two `Instant`
/// readings, paired with their midpoint, from the try whose two readings came closest (at
/// most [`STAMP_TRIES`]; the first under [`STAMP_GAP`] ends it). A thread preempted between
/// the two clocks' readings would otherwise pair a counter value with an `Instant` that is
/// microseconds off, and over the calibration's 200 µs a few microseconds are a few percent
/// of the rate.
fn stamp() -> (Instant, u64) {
    let mut best: Option<(Duration, Instant, u64)> = None;
    for _ in 0..STAMP_TRIES {
        let before = Instant::now();
        let c = ticks();
        let after = Instant::now();
        let gap = after.duration_since(before);
        let at = before + gap / 2;
        if best.is_none_or(|(g, _, _)| gap < g) {
            best = Some((gap, at, c));
        }
        if gap <= STAMP_GAP {
            break;
        }
    }
    let (_, at, c) = best.expect("STAMP_TRIES is at least 1");
    (at, c)
}

/// How many paired readings [`stamp`] may try.
const STAMP_TRIES: usize = 16;

/// A gap between the two `Instant` readings around the counter that [`stamp`] accepts at
/// once: two `Instant` reads and one `rdtsc` take well under a microsecond.
const STAMP_GAP: Duration = Duration::from_micros(1);

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(any(miri, flock_loom))
))]
fn tsc_usable() -> bool {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(any(miri, flock_loom))
))]
#[inline]
fn ticks() -> u64 {
    crate::sys::rdtsc()
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(any(miri, flock_loom))
)))]
fn tsc_usable() -> bool {
    false
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    not(any(miri, flock_loom))
)))]
#[inline]
fn ticks() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_follows_instant() {
        // `Instant` read on both sides of the clock's start and of its reading, so a
        // preemption between any two lines (on a loaded machine, or Miri running other
        // tests' threads on its virtual clock) widens the bracket instead of failing.
        let outer = Instant::now();
        let clock = Clock::new(true);
        let inner = Instant::now();
        let a = clock.now_ns();
        std::thread::sleep(Duration::from_millis(20));
        let before = inner.elapsed().as_nanos() as u64;
        let b = clock.now_ns();
        let after = outer.elapsed().as_nanos() as u64;
        assert!(b >= a, "went backwards: {a} then {b}");
        // Within 2% (and 100 µs) of what `Instant` saw: a wrong scale, or a reading in other
        // units, is far outside that.
        let slack = after / 50 + 100_000;
        assert!(
            before.saturating_sub(slack) <= b && b <= after + slack,
            "clock says {b} ns, Instant {before}..{after} ns"
        );
    }
}
