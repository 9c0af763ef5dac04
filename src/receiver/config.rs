//! The receiver's limits and default address.

use std::net::SocketAddr;

use super::sequence::ReorderLimits;

use crate::wire::DEFAULT_PORT;

/// The address a receiver listens on by default: loopback only, port
/// [`DEFAULT_PORT`](crate::wire::DEFAULT_PORT).
///
/// ```
/// use qtrace::receiver::default_listen_addr;
///
/// let addr = default_listen_addr();
/// assert!(addr.ip().is_loopback());
/// assert_eq!(addr.port(), qtrace::wire::DEFAULT_PORT);
/// ```
pub fn default_listen_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT))
}

/// Limits that bound the receiver's memory; [`Default`] gives the values in
/// parentheses. Set the fields you need and keep the rest:
///
/// ```
/// use qtrace::receiver::{ReceiverConfig, ReceiverCore, ReorderLimits};
///
/// let config = ReceiverConfig {
///     max_senders: 64,
///     reorder: ReorderLimits { datagrams: 1024, ..ReorderLimits::default() },
///     ..ReceiverConfig::default()
/// };
/// assert_eq!(config.reorder.bytes, 512 << 10);
/// let core = ReceiverCore::new(config);
/// assert!(core.summary().senders.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Senders tracked at once: the size of the sender table (16). A new
    /// sender beyond it takes the slot of a closed or idle one, or is
    /// refused (counted per source address, [`ReceiverSummary::refused`](super::ReceiverSummary::refused)).
    pub max_senders: usize,
    /// The largest sender header (catalog) accepted, in bytes (1 MiB); a
    /// larger one is counted invalid. Each tracked and parked sender may
    /// hold one, decoded (about 5 bytes a header byte): lower it to lower
    /// the receiver's memory bound (RELIABILITY.md, "Receiver memory").
    pub max_catalog_len: usize,
    /// The socket receive buffer asked for (32 MiB; the kernel may cap it,
    /// see [`Receiver::recv_buffer`](super::Receiver::recv_buffer)): room for
    /// the datagrams that arrive while the receiver waits for the CPU or the
    /// disk. Memory is taken only while datagrams wait.
    pub recv_buffer: usize,
    /// The idle limit: when every slot is taken, a new sender replaces the
    /// sender heard least recently if that one has sent nothing during the
    /// last this many datagrams (16). 0 replaces it whatever it did.
    pub idle_datagrams: u64,
    /// Per sender, how many datagrams (256) and bytes (512 KiB) are held
    /// while a missing datagram may still arrive (the reorder window); beyond
    /// that it is given up on (counted lost).
    pub reorder: ReorderLimits,
    /// Bytes reserved for the header at the start of the file
    /// [`Receiver::run`](super::Receiver::run) writes (64 KiB): the sender's header replaces the
    /// provisional one in place when it fits, otherwise the file is
    /// rewritten (to a temporary file renamed over it).
    pub header_room: usize,
    /// The file [`Receiver::run`](super::Receiver::run) writes holds compact
    /// chunks (`true`, the default: trace-file version 2, FORMAT.md 1.11,
    /// about 4–5 bytes an event) or 32-byte records (`false`: version 1,
    /// `qtrace recv --out FILE --32`). Every reader of this crate reads both.
    pub compact_file: bool,
    /// The keys datagrams are checked with (feature `keys`; FORMAT.md 2.6).
    /// Empty (the default): keyed datagrams are rejected (a key this
    /// receiver does not hold) and unkeyed ones accepted. Otherwise only
    /// keyed datagrams whose tag one of these keys confirms are accepted;
    /// several keys (one per host or group, or an old and a new one while
    /// senders move over) are held at once.
    #[cfg(feature = "keys")]
    pub keys: Vec<crate::wire::DatagramKey>,
}

/// Accounts of replaced senders kept for the summary; beyond this many,
/// replaced senders are only counted ([`ReceiverSummary::retired_uncounted`](super::ReceiverSummary::retired_uncounted)).
/// Also the number of parked senders kept (see the module documentation)
/// and of refusing source addresses counted one by one.
pub const MAX_RETIRED: usize = 1024;

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            max_senders: 16,
            max_catalog_len: 1 << 20,
            recv_buffer: 32 << 20,
            idle_datagrams: 16,
            reorder: ReorderLimits::default(),
            header_room: 64 << 10,
            compact_file: true,
            #[cfg(feature = "keys")]
            keys: Vec::new(),
        }
    }
}
