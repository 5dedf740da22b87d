//! Pinning threads to cores: the one place flock talks to `core_affinity`, which the `pin`
//! feature (on by default) brings in. Without the feature no core is ever listed, and a
//! builder that asks for pinning fails with [`BuildError::PinningUnavailable`] before any
//! thread starts, so [`pin_current_thread`] is never reached with a core.
//!
//! [`BuildError::PinningUnavailable`]: crate::BuildError::PinningUnavailable

/// Whether this build can pin at all (the `pin` feature).
pub(crate) const AVAILABLE: bool = cfg!(feature = "pin");

/// The ids of the cores this process may run on; empty when the OS does not say.
#[cfg(feature = "pin")]
pub(crate) fn available_cores() -> Vec<usize> {
    core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect()
}

/// Pins the calling thread to `core`; whether the OS agreed.
#[cfg(feature = "pin")]
pub(crate) fn pin_current_thread(core: usize) -> bool {
    core_affinity::set_for_current(core_affinity::CoreId { id: core })
}

/// Without the `pin` feature: no core is known.
#[cfg(not(feature = "pin"))]
pub(crate) fn available_cores() -> Vec<usize> {
    Vec::new()
}

/// Without the `pin` feature: never pins (and is never asked to, see the module doc).
#[cfg(not(feature = "pin"))]
pub(crate) fn pin_current_thread(_core: usize) -> bool {
    false
}
