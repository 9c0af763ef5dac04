//! The parts of Perfetto's schema (`protos/perfetto/trace/…`) the writer
//! encodes: field numbers, enum values and the clocks it uses.

/// The shared packet sequence (the first packet, track descriptors, events
/// of sources without a track); the sources' own sequences follow it: 2, 3, …
pub const SEQUENCE_ID: u64 = 1;

/// The sequence-scoped incremental clock (nanoseconds) of packet timestamps.
pub const INCREMENTAL_CLOCK: u64 = 64;

/// Perfetto's `BUILTIN_CLOCK_BOOTTIME`: time 0 is the trace's clock origin.
pub const BOOTTIME_CLOCK: u64 = 6;

/// Perfetto's `BUILTIN_CLOCK_REALTIME` (Unix time).
pub const REALTIME_CLOCK: u64 = 1;

// Field numbers of perfetto.protos messages (protos/perfetto/trace/…).
pub(super) mod field {
    pub const TRACE_PACKET: u32 = 1;
    // TracePacket
    pub const TIMESTAMP: u32 = 8;
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const TRUSTED_SEQUENCE_ID: u32 = 10;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TRACK_EVENT: u32 = 11;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const INTERNED_DATA: u32 = 12;
    pub const TRACE_PACKET_DEFAULTS: u32 = 59;
    pub const COMPRESSED_PACKETS: u32 = 50;
    // TracePacketDefaults
    pub const DEFAULT_TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const TRACK_EVENT_DEFAULTS: u32 = 11;
    // ClockSnapshot / Clock
    pub const CLOCKS: u32 = 1;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;
    pub const CLOCK_IS_INCREMENTAL: u32 = 3;
    // InternedData
    pub const EVENT_CATEGORIES: u32 = 1;
    pub const EVENT_NAMES: u32 = 2;
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub const IID: u32 = 1;
    pub const INTERNED_NAME: u32 = 2;
    // TrackDescriptor
    pub const UUID: u32 = 1;
    pub const PARENT_UUID: u32 = 5;
    pub const TRACK_NAME: u32 = 2;
    pub const COUNTER: u32 = 8;
    pub const COUNTER_UNIT: u32 = 3;
    pub const COUNTER_UNIT_NAME: u32 = 6;
    pub const SIBLING_MERGE_BEHAVIOR: u32 = 15;
    // TrackEvent
    pub const TYPE: u32 = 9;
    pub const TRACK_UUID: u32 = 11;
    pub const NAME_IID: u32 = 10;
    pub const NAME: u32 = 23;
    pub const CATEGORY_IIDS: u32 = 3;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const COUNTER_VALUE: u32 = 30;
    pub const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const FLOW_IDS: u32 = 47;
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    // DebugAnnotation
    pub const ANNOTATION_NAME_IID: u32 = 1;
    pub const UINT_VALUE: u32 = 3;
    pub const BOOL_VALUE: u32 = 2;
    pub const STRING_VALUE: u32 = 6;
}

/// `TrackEvent.Type`.
pub(super) const SLICE_BEGIN: u64 = 1;

pub(super) const SLICE_END: u64 = 2;

pub(super) const INSTANT: u64 = 3;

pub(super) const COUNTER: u64 = 4;

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub(super) const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;

/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
pub(super) const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

/// `TrackDescriptor.SiblingMergeBehavior.SIBLING_MERGE_BEHAVIOR_NONE`.
pub(super) const SIBLING_MERGE_BEHAVIOR_NONE: u64 = 2;

/// `CounterDescriptor.Unit.UNIT_COUNT`.
pub(super) const UNIT_COUNT: u64 = 2;
