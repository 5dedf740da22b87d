//! Priority lanes: names, weights, and how callers name a lane.

/// The most lanes a pool may have.
///
/// ```
/// let lanes: Vec<(String, u32)> = (0..=flock::MAX_LANES).map(|i| (format!("l{i}"), 1)).collect();
/// let lanes: Vec<(&str, u32)> = lanes.iter().map(|(n, w)| (n.as_str(), *w)).collect();
/// let err = flock::Pool::builder().lanes(&lanes).build().unwrap_err();
/// assert!(matches!(err, flock::BuildError::TooManyLanes { .. }));
/// ```
pub const MAX_LANES: usize = 16;

/// A lane of a pool, found by name once with [`Pool::lane`](crate::Pool::lane) so that later
/// submits skip the name lookup.
///
/// ```
/// let pool = flock::Pool::builder().lanes(&[("fast", 4), ("slow", 1)]).build().unwrap();
/// let slow = pool.lane("slow").unwrap();
/// assert_eq!(slow.index(), 1);
/// pool.submit_to(slow, || ()).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lane(pub(crate) usize);

impl Lane {
    /// The lane's position in the list given to
    /// [`PoolBuilder::lanes`](crate::PoolBuilder::lanes), from 0.
    ///
    /// ```
    /// let pool = flock::Pool::new();
    /// assert_eq!(pool.lane("default").unwrap().index(), 0);
    /// ```
    pub fn index(self) -> usize {
        self.0
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Anything that names a lane: a [`Lane`], its name (`&str`), or its index (`usize`). A name
/// or index the pool does not have makes the submit fail with
/// [`RejectReason::UnknownLane`](crate::RejectReason::UnknownLane), the task handed back.
///
/// ```
/// use flock::RejectReason;
/// let pool = flock::Pool::builder().lanes(&[("a", 1), ("b", 1)]).build().unwrap();
/// pool.submit_to("a", || ()).unwrap();
/// pool.submit_to(1, || ()).unwrap();
/// assert_eq!(pool.submit_to("c", || ()).unwrap_err().reason(), RejectReason::UnknownLane);
/// ```
pub trait LaneId: sealed::Sealed {
    #[doc(hidden)]
    fn resolve(&self, names: &[(String, u32)]) -> Option<usize>;
}

impl sealed::Sealed for Lane {}
impl LaneId for Lane {
    fn resolve(&self, names: &[(String, u32)]) -> Option<usize> {
        (self.0 < names.len()).then_some(self.0)
    }
}

impl sealed::Sealed for usize {}
impl LaneId for usize {
    fn resolve(&self, names: &[(String, u32)]) -> Option<usize> {
        (*self < names.len()).then_some(*self)
    }
}

impl sealed::Sealed for &str {}
impl LaneId for &str {
    fn resolve(&self, names: &[(String, u32)]) -> Option<usize> {
        names.iter().position(|(name, _)| name == self)
    }
}

impl sealed::Sealed for &String {}
impl LaneId for &String {
    fn resolve(&self, names: &[(String, u32)]) -> Option<usize> {
        self.as_str().resolve(names)
    }
}
