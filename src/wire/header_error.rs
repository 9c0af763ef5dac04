//! The error of the header builder: a field value the file format cannot
//! carry (a clock kind, host or queue-type name outside the allowed bytes, a
//! zero clock rate, the reserved queue handle).

use std::fmt;

/// A trace-header field holds a value the file format cannot carry
/// (FORMAT.md §1.2). Returned by [`TraceHeader`](super::TraceHeader)'s
/// `with_…` builders; the crate-level error turns it into
/// [`Error::InvalidHeader`](crate::Error::InvalidHeader).
///
/// ```
/// use qtrace::classes::Catalog;
/// use qtrace::clock::Clock;
/// use qtrace::wire::TraceHeader;
///
/// let header = TraceHeader::new(Catalog::builtin(), &Clock::monotonic());
/// let err = header.with_clock("tsc", 0, 0).unwrap_err();
/// assert_eq!(err.field, "clock rate");
/// assert_eq!(err.to_string(), "invalid trace-header clock rate: ticks per second must not be zero");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderFieldError {
    /// Which field.
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub reason: String,
}

impl fmt::Display for HeaderFieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid trace-header {}: {}", self.field, self.reason)
    }
}

impl std::error::Error for HeaderFieldError {}
