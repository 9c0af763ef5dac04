//! What capacities a ring accepts, and why one could not be built.

/// Why a ring could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The capacity is not one the ring accepts.
    Capacity(BadCapacity),
    /// The system refused the memory.
    OutOfMemory {
        /// The capacity asked for, in events.
        capacity: usize,
        /// The bytes that were needed (64 per event).
        bytes: usize,
    },
}

impl From<BadCapacity> for RingError {
    fn from(e: BadCapacity) -> Self {
        RingError::Capacity(e)
    }
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingError::Capacity(e) => e.fmt(f),
            RingError::OutOfMemory { capacity, bytes } => write!(
                f,
                "cannot allocate {capacity} events ({bytes} bytes): choose a smaller capacity"
            ),
        }
    }
}

impl std::error::Error for RingError {}

/// A capacity that is not a power of two in the allowed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadCapacity {
    /// The capacity asked for.
    pub requested: usize,
    /// The nearest valid capacity at or below it (0 if none).
    pub below: usize,
    /// The nearest valid capacity above it (0 if none).
    pub above: usize,
    /// The smallest valid capacity.
    pub min: usize,
}

impl std::fmt::Display for BadCapacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "capacity {} is not a power of two between {} and 2^32",
            self.requested, self.min
        )?;
        match (self.below, self.above) {
            (0, 0) => Ok(()),
            (0, a) => write!(f, "; use {a}"),
            (b, 0) => write!(f, "; use {b}"),
            (b, a) => write!(f, "; use {b} or {a}"),
        }
    }
}

/// The largest ring capacity (2^32 slots, 256 GiB: far beyond any real use).
pub const MAX_CAPACITY: usize = 1 << 32;

/// Checks that `capacity` is a power of two in `1..=MAX_CAPACITY` (the
/// capacities of an [`OverwriteRing`](super::OverwriteRing)).
pub fn check_capacity(capacity: usize) -> Result<(), BadCapacity> {
    check_capacity_from(capacity, 1)
}

/// Checks that `capacity` is a power of two in `min..=MAX_CAPACITY`.
pub fn check_capacity_from(capacity: usize, min: usize) -> Result<(), BadCapacity> {
    debug_assert!(min.is_power_of_two());
    if capacity.is_power_of_two() && (min..=MAX_CAPACITY).contains(&capacity) {
        return Ok(());
    }
    let below = if capacity < min {
        0
    } else if capacity > MAX_CAPACITY {
        MAX_CAPACITY
    } else {
        1 << (usize::BITS - 1 - capacity.leading_zeros())
    };
    let above = if capacity < min {
        min
    } else if capacity >= MAX_CAPACITY {
        0
    } else {
        below << 1
    };
    Err(BadCapacity {
        requested: capacity,
        below,
        above,
        min,
    })
}
