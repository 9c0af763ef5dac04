//! The semaphore class (`0x14`–`0x16`). Payload: `args[0]` = the task id,
//! `args[1]` = the semaphore id (both u16 in S.Ha.R.K.).
//!
//! Defined in the `no_std` core ([`qtrace_core::classes::semaphore`]) and
//! re-exported here.

pub use qtrace_core::classes::semaphore::{CLASS, SIGNAL, WAIT, WAITNB};
