//! Counters (FORMAT.md 1.3.2): an event named `S.counter` whose first
//! argument name is the value's kind (`u64`, `i64` or `f64`) and whose
//! second, when present, is the unit. A counter record's `arg0` is the
//! value (an `i64` as two's complement, an `f64` as its IEEE 754 bits);
//! its `arg1` is 0. Only names say so: the class table's bytes and the
//! 32-byte record are unchanged.
//!
//! ```
//! use qtrace_core::classes::counter::{CounterKind, StaticCounter};
//! use qtrace_core::EventId;
//!
//! assert_eq!(CounterKind::from_arg_names(&["f64", "volt"]), Some((CounterKind::F64, "volt")));
//! assert_eq!(CounterKind::from_arg_names(&["len"]), None);
//! let c: StaticCounter<f64> = StaticCounter::__new(EventId(0x17));
//! assert_eq!(c.args(1.5), [1.5f64.to_bits(), 0]);
//! assert_eq!(CounterKind::F64.value(1.5f64.to_bits()), 1.5);
//! assert_eq!(CounterKind::I64.value(-3i64 as u64), -3.0);
//! ```

use core::marker::PhantomData;

use crate::EventId;

/// The suffix of a counter event's name: `S.counter` declares counter `S`.
pub const COUNTER_SUFFIX: &str = ".counter";

/// The kind of a counter's values, named by its event's first argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterKind {
    /// Unsigned 64-bit integers (`u64`).
    U64,
    /// Signed 64-bit integers (`i64`), two's complement in `arg0`.
    I64,
    /// IEEE 754 binary64 (`f64`), its bits in `arg0`.
    F64,
}

impl CounterKind {
    /// The argument name that says this kind: `u64`, `i64` or `f64`.
    pub const fn name(self) -> &'static str {
        match self {
            CounterKind::U64 => "u64",
            CounterKind::I64 => "i64",
            CounterKind::F64 => "f64",
        }
    }

    /// The kind an argument name says, if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "u64" => Some(CounterKind::U64),
            "i64" => Some(CounterKind::I64),
            "f64" => Some(CounterKind::F64),
            _ => None,
        }
    }

    /// The kind and unit (`""` when none) that a counter event's argument
    /// names say: one or two names, the first a kind; `None` otherwise.
    pub fn from_arg_names<S: AsRef<str>>(args: &[S]) -> Option<(Self, &str)> {
        let kind = Self::from_name(args.first()?.as_ref())?;
        match args {
            [_] => Some((kind, "")),
            [_, unit] => Some((kind, unit.as_ref())),
            _ => None,
        }
    }

    /// Whether values of this kind are integers.
    pub const fn is_integer(self) -> bool {
        !matches!(self, CounterKind::F64)
    }

    /// A record's `arg0` as a number (an `i64` or `u64` past 2^53 rounds).
    pub fn value(self, arg0: u64) -> f64 {
        match self {
            CounterKind::U64 => arg0 as f64,
            CounterKind::I64 => arg0 as i64 as f64,
            CounterKind::F64 => f64::from_bits(arg0),
        }
    }
}

/// A type a counter's values have: `u64`, `i64` or `f64`.
pub trait CounterValue: Copy + sealed::Sealed {
    /// Its kind.
    const KIND: CounterKind;
    /// The value as a record's `arg0`.
    fn to_arg(self) -> u64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

impl CounterValue for u64 {
    const KIND: CounterKind = CounterKind::U64;
    #[inline(always)]
    fn to_arg(self) -> u64 {
        self
    }
}

impl CounterValue for i64 {
    const KIND: CounterKind = CounterKind::I64;
    #[inline(always)]
    fn to_arg(self) -> u64 {
        self as u64
    }
}

impl CounterValue for f64 {
    const KIND: CounterKind = CounterKind::F64;
    #[inline(always)]
    fn to_arg(self) -> u64 {
        self.to_bits()
    }
}

/// A counter event whose values are `T`s, as `qtrace::classes!` declares it
/// (`counter NAME = "name": "description" (u64, unit);`) or a catalog finds
/// it by name.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StaticCounter<T> {
    id: EventId,
    kind: PhantomData<fn(T)>,
}

impl<T> Clone for StaticCounter<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for StaticCounter<T> {}

impl<T: CounterValue> StaticCounter<T> {
    /// Used by `qtrace::classes!` and catalogs that checked the kind; not
    /// part of the API.
    #[doc(hidden)]
    pub const fn __new(id: EventId) -> Self {
        StaticCounter {
            id,
            kind: PhantomData,
        }
    }

    /// The `S.counter` event.
    #[inline(always)]
    pub const fn id(self) -> EventId {
        self.id
    }

    /// The record arguments of `value`: `[value as arg0, 0]`.
    #[inline(always)]
    pub fn args(self, value: T) -> [u64; 2] {
        [value.to_arg(), 0]
    }
}

/// The values of one counter, summarised: how many, smallest, largest and
/// their sum (what `qtrace analyze` reports as min/mean/max). NaN values
/// are counted apart, in `nan`, and left out of the rest.
///
/// ```
/// use qtrace_core::classes::counter::CounterStats;
///
/// let mut s = CounterStats::default();
/// for v in [2.0, 5.0, 1.0, f64::NAN] {
///     s.push(v);
/// }
/// assert_eq!((s.count, s.nan, s.min, s.max, s.sum), (3, 1, 1.0, 5.0, 8.0));
/// assert_eq!(s.mean(), Some(8.0 / 3.0));
/// assert_eq!(CounterStats::default().mean(), None);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct CounterStats {
    /// Values seen (NaN excepted).
    pub count: u64,
    /// NaN values seen.
    pub nan: u64,
    /// The smallest value (0 when `count` is 0).
    pub min: f64,
    /// The largest value (0 when `count` is 0).
    pub max: f64,
    /// Their sum.
    pub sum: f64,
}

impl CounterStats {
    /// Adds a value.
    pub fn push(&mut self, v: f64) {
        if v.is_nan() {
            self.nan += 1;
            return;
        }
        if self.count == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.count += 1;
        self.sum += v;
    }

    /// The mean value; `None` before any.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

/// Equal when every field has the same bits (so a summary equals itself,
/// whatever it holds).
impl PartialEq for CounterStats {
    fn eq(&self, o: &Self) -> bool {
        (self.count, self.nan) == (o.count, o.nan)
            && self.min.to_bits() == o.min.to_bits()
            && self.max.to_bits() == o.max.to_bits()
            && self.sum.to_bits() == o.sum.to_bits()
    }
}

impl Eq for CounterStats {}
