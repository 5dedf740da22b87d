//! Counters and, later, the statistics built from them.

pub(crate) mod counters;
