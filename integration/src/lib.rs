//! Not a library: the home of the README's doctests (`cargo test -p flock-integration --doc`)
//! and of flock's tests and examples that need tokio (`tests/`, `examples/`). flock itself
//! depends on no runtime; keeping tokio here keeps it out of flock's own build.
#![deny(missing_docs)]

/// The README's examples, compiled and run as doctests so the front door never lies.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
