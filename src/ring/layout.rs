//! The byte layout of a ring's memory: control blocks, slots, shard blocks
//! and records. A ring file (`crate::storage::ring_file`, FORMAT.md section
//! 6) maps this memory byte for byte, so these offsets are part of that
//! format; the rings assert at compile time that their structs match them.

/// Bytes of the control block of the shared ring or the fixed queue.
pub const CTL_BYTES: usize = 512;
/// Bytes of one slot (sequence word, four record words, padding).
pub const SLOT_BYTES: usize = 64;
/// Bytes of one shard's control block.
pub const SHARD_BYTES: usize = 384;
/// Bytes of one shard record (four words, no sequence word).
pub const RECORD_BYTES: usize = 32;
/// In a control block: the ticket counter (every attempt).
pub const TAIL_AT: usize = 0;
/// In the shared ring's control block: attempts refused.
pub const DROPPED_AT: usize = 128;
/// In a shard block: the owning thread's token (0: never used).
pub const OWNER_AT: usize = 0;
/// In a shard block: tickets the producer started writing.
pub const CLAIMED_AT: usize = 128;
/// In a shard block: tickets fully written.
pub const COMMITTED_AT: usize = 136;
