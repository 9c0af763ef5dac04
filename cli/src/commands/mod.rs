//! The subcommands, one module each. None imports another: what two share
//! is in the spine (`crate::spine`) or in the library.

pub mod analyze;
pub mod convert;
pub mod ctl;
pub mod dump;
pub mod events;
pub mod keygen;
pub mod live;
pub mod plot;
pub mod recover;
pub mod recv;
pub mod sql;
pub mod stats;
