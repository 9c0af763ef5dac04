//! The atomics the queue algorithms use: std's normally, loom's under
//! `--cfg loom`, so the same algorithm is model-checked unchanged.

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};
