//! The low-level class (`0x13`): interrupts. Payload: `args[0]` = the interrupt
//! number.
//!
//! Defined in the `no_std` core ([`qtrace_core::classes::lowlevel`]) and
//! re-exported here.

pub use qtrace_core::classes::lowlevel::{CLASS, INTERRUPT};
