//! The system class (`0x02`–`0x0a`): what the kernel or scheduler does to tasks.
//! Payload: `args[0]` = the task id (a u16 in S.Ha.R.K.).
//!
//! Defined in the `no_std` core ([`qtrace_core::classes::system`]) and
//! re-exported here.

pub use qtrace_core::classes::system::{
    ACTIVATE, CLASS, CREATE, DELAY, DESTROY, DISABLE, ENDCYCLE, INTACTIVATION, SCHEDULE, SLEEP,
};
