//! The user class (`0x0b`–`0x12`): eight events for the application's own use.
//! Payload: `args[0]` = a 64-bit value (a `long` in S.Ha.R.K.), `args[1]` = a
//! second free argument.
//!
//! Defined in the `no_std` core ([`qtrace_core::classes::user`]) and
//! re-exported here.

pub use qtrace_core::classes::user::{
    user, CLASS, USER0, USER1, USER2, USER3, USER4, USER5, USER6, USER7,
};
