//! The keyed sessions a receiver has seen, so that a replayed keyed stream
//! is rejected however many senders came in between and across restarts
//! (FORMAT.md 3.7): per sender id the newest session admitted and whether
//! its stream ended, at most [`MAX_SESSIONS`] ids, and a *floor* — the
//! newest session of the ids forgotten — at or below which a session of an
//! id not remembered is a replay. Bounded: memory and the session file
//! (24 + 24 × ids bytes, at most 393,240) do not grow with the senders seen.

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::model::io_error::IoError;
use crate::wire::WireError;

/// Sender ids whose newest keyed session is remembered one by one; beyond
/// that, the id with the oldest session is forgotten and the floor rises to
/// its session.
pub(super) const MAX_SESSIONS: usize = 16_384;

/// The first 4 bytes of a session file.
const MAGIC: [u8; 4] = *b"QTRS";
/// Its version.
const VERSION: u16 = 1;
/// Bytes before the entries, and per entry.
const HEAD: usize = 24;
const ENTRY: usize = 24;
/// Entry flag: the stream ended (its close was released, or it was ended
/// for good by a newer session or to make room).
const ENDED: u32 = 1;

/// What is known of a sender id's newest session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// A stream of this receiver holds it (tracked or parked).
    Live,
    /// Its stream ended: every datagram of it is a replay.
    Ended,
    /// Its stream was under way when an earlier receiver stopped: it may
    /// go on from datagram number `next` (those below are replays).
    Resume { next: u64 },
}

/// The sessions seen (see the module documentation).
#[derive(Debug)]
pub(super) struct Sessions {
    by_id: HashMap<u32, (u64, State)>,
    /// (session, id) of every entry: the oldest is forgotten first.
    order: BTreeSet<(u64, u32)>,
    floor: u64,
    capacity: usize,
    /// Changed since [`Sessions::encode`] last ran.
    dirty: bool,
}

/// What a keyed datagram of a session no live stream holds starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admission {
    /// A new stream.
    New,
    /// A stream an earlier receiver left under way, going on.
    Resumed,
    /// A replay: an older session, one that ended, a datagram numbered
    /// below where an earlier receiver stopped, or a session at or below
    /// the floor of an id not remembered.
    Replayed,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::with_capacity(MAX_SESSIONS)
    }
}

impl Sessions {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Sessions {
            by_id: HashMap::new(),
            order: BTreeSet::new(),
            floor: 0,
            capacity: capacity.max(1),
            dirty: false,
        }
    }

    /// Ids remembered one by one.
    pub(super) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// What datagram `sequence` of sender `id`'s `session` starts, when no
    /// live stream holds that session. Changes nothing.
    pub(super) fn admission(&self, id: u32, session: u64, sequence: u64) -> Admission {
        match self.by_id.get(&id) {
            Some(&(newest, _)) if session < newest => Admission::Replayed,
            Some(&(newest, state)) if session == newest => match state {
                State::Resume { next } if sequence >= next => Admission::Resumed,
                _ => Admission::Replayed,
            },
            Some(_) => Admission::New,
            None if session <= self.floor => Admission::Replayed,
            None => Admission::New,
        }
    }

    /// Sender `id`'s `session` got a slot: its newest, held by a live
    /// stream.
    pub(super) fn admit(&mut self, id: u32, session: u64) {
        self.set(id, session, State::Live);
    }

    /// Sender `id`'s stream of `session` ended (`resume`: none; or the
    /// receiver stops while it is under way, and the next receiver may let
    /// it go on from that datagram number).
    pub(super) fn end(&mut self, id: u32, session: u64, resume: Option<u64>) {
        let state = match resume {
            Some(next) => State::Resume { next },
            None => State::Ended,
        };
        match self.by_id.get(&id) {
            Some(&(newest, _)) if newest == session => self.set(id, session, state),
            // A newer session of the id was admitted: this one is older.
            Some(_) => {}
            // Forgotten while it ran: the floor covers it unless it is
            // newer than the floor.
            None if session <= self.floor => {}
            None => self.set(id, session, state),
        }
    }

    fn set(&mut self, id: u32, session: u64, state: State) {
        if let Some((old, _)) = self.by_id.insert(id, (session, state)) {
            self.order.remove(&(old, id));
        }
        self.order.insert((session, id));
        self.dirty = true;
        while self.by_id.len() > self.capacity {
            let Some((s, old)) = self.order.pop_first() else {
                break;
            };
            self.by_id.remove(&old);
            self.floor = self.floor.max(s);
        }
    }

    /// Whether anything changed since the last [`Sessions::encode`].
    pub(super) fn dirty(&self) -> bool {
        self.dirty
    }

    /// The session file (FORMAT.md 3.7). `live` gives, for an id whose
    /// newest session a live stream holds, the datagram number it would go
    /// on from after a restart (`None`: it ended); such an entry is
    /// written as that.
    pub(super) fn encode(&mut self, live: impl Fn(u32, u64) -> Option<u64>) -> Vec<u8> {
        self.dirty = false;
        let mut ids: Vec<(&u32, &(u64, State))> = self.by_id.iter().collect();
        ids.sort_unstable_by_key(|(id, _)| **id);
        let mut out = Vec::with_capacity(HEAD + ENTRY * ids.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        out.extend_from_slice(&(ids.len() as u32).to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&self.floor.to_be_bytes());
        for (&id, &(session, state)) in ids {
            let next = match state {
                State::Live => live(id, session),
                State::Ended => None,
                State::Resume { next } => Some(next),
            };
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&(if next.is_none() { ENDED } else { 0 }).to_be_bytes());
            out.extend_from_slice(&session.to_be_bytes());
            out.extend_from_slice(&next.unwrap_or(0).to_be_bytes());
        }
        out
    }

    /// Reads a session file (FORMAT.md 3.7), keeping at most `capacity`
    /// ids (the oldest sessions beyond it raise the floor).
    ///
    /// # Errors
    ///
    /// [`WireError`] at the first field that breaks the format: magic,
    /// version, a reserved field not 0, a length that is not 24 + 24 ×
    /// count, ids not in increasing order, unknown flags, or an ended entry
    /// with a datagram number.
    pub(super) fn decode(bytes: &[u8], capacity: usize) -> Result<Self, WireError> {
        let what = "session file";
        let u16_at = |o: usize| u16::from_be_bytes([bytes[o], bytes[o + 1]]);
        let u32_at = |o: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[o..o + 4]);
            u32::from_be_bytes(b)
        };
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[o..o + 8]);
            u64::from_be_bytes(b)
        };
        if bytes.len() < 4 || bytes[..4] != MAGIC {
            return Err(WireError::BadMagic { what });
        }
        if bytes.len() < HEAD {
            return Err(WireError::Truncated {
                offset: 0,
                needed: HEAD as u64,
                available: bytes.len() as u64,
                what,
            });
        }
        let version = u16_at(4);
        if version != VERSION {
            return Err(WireError::UnsupportedVersion {
                offset: 4,
                version,
                supported: &[VERSION],
            });
        }
        let invalid = |offset: usize, what: &'static str, reason: String| WireError::Invalid {
            offset: offset as u64,
            what,
            reason,
        };
        for (o, v) in [(6, u32::from(u16_at(6))), (12, u32_at(12))] {
            if v != 0 {
                return Err(invalid(o, "reserved field", format!("{v}, not 0")));
            }
        }
        let count = u32_at(8) as usize;
        let len = HEAD as u64 + ENTRY as u64 * count as u64;
        if bytes.len() as u64 != len {
            return Err(invalid(
                8,
                "id count",
                format!(
                    "{count} entries need {len} bytes, the file has {}",
                    bytes.len()
                ),
            ));
        }
        let mut sessions = Sessions::with_capacity(capacity);
        sessions.floor = u64_at(16);
        let mut previous: Option<u32> = None;
        for i in 0..count {
            let o = HEAD + ENTRY * i;
            let id = u32_at(o);
            if previous.is_some_and(|p| id <= p) {
                return Err(invalid(
                    o,
                    "sender id",
                    format!(
                        "{id} after {}: ids go in increasing order",
                        previous.unwrap_or(0)
                    ),
                ));
            }
            previous = Some(id);
            let flags = u32_at(o + 4);
            let (session, next) = (u64_at(o + 8), u64_at(o + 16));
            let state = match flags {
                0 => State::Resume { next },
                ENDED if next == 0 => State::Ended,
                ENDED => {
                    return Err(invalid(
                        o + 16,
                        "next datagram",
                        format!("{next} in an ended entry (0 there)"),
                    ))
                }
                f => {
                    return Err(invalid(
                        o + 4,
                        "flags",
                        format!("{f:#x}: only bit 0 is defined"),
                    ))
                }
            };
            sessions.set(id, session, state);
        }
        sessions.dirty = false;
        Ok(sessions)
    }
}

/// How often, at most, a receiver rewrites its session file while it
/// runs (and once more when it stops).
const SAVE_EVERY: Duration = Duration::from_secs(1);

/// Where a receiver keeps its session file
/// ([`Receiver::keep_sessions`](super::Receiver::keep_sessions)).
#[derive(Debug)]
pub(super) struct SessionFile {
    path: PathBuf,
    written: Option<Instant>,
    /// The last write that failed (cleared by one that works).
    pub(super) error: Option<String>,
}

impl SessionFile {
    pub(super) fn new(path: &Path) -> Self {
        SessionFile {
            path: path.to_path_buf(),
            written: None,
            error: None,
        }
    }

    /// Reads the file if there is one: `None` when there is none yet.
    pub(super) fn read(&self) -> Result<Option<Vec<u8>>, IoError> {
        match std::fs::read(&self.path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(IoError::new("read the session file", &self.path, e)),
        }
    }

    /// Writes `bytes()` when the sessions `changed`, at most once per
    /// [`SAVE_EVERY`] unless `now`: to a temporary file beside it, synced,
    /// renamed over it (a reader sees the old file or the new one).
    pub(super) fn save(&mut self, changed: bool, now: bool, bytes: impl FnOnce() -> Vec<u8>) {
        let recent = matches!(self.written, Some(t) if t.elapsed() < SAVE_EVERY);
        if !changed || (recent && !now) {
            return;
        }
        self.written = Some(Instant::now());
        self.error = write_whole(&self.path, &bytes())
            .err()
            .map(|e| IoError::new("write the session file", &self.path, e).to_string());
    }
}

fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    let temp = path.with_file_name(name);
    let written = std::fs::File::create(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_data()))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forgotten_id_is_covered_by_the_floor() {
        let mut s = Sessions::with_capacity(2);
        s.admit(1, 100);
        s.end(1, 100, None);
        s.admit(2, 200);
        s.admit(3, 300);
        // Id 1 (the oldest session) was forgotten: the floor is 100.
        assert_eq!(s.len(), 2);
        assert_eq!(s.admission(1, 100, 0), Admission::Replayed);
        assert_eq!(s.admission(1, 99, 0), Admission::Replayed);
        assert_eq!(s.admission(1, 101, 0), Admission::New);
        assert_eq!(s.admission(9, 100, 0), Admission::Replayed);
        assert_eq!(s.admission(2, 199, 0), Admission::Replayed);
        assert_eq!(s.admission(2, 201, 0), Admission::New);
    }

    #[test]
    fn a_stream_under_way_goes_on_after_a_restart_from_where_it_stopped() {
        let mut s = Sessions::default();
        s.admit(7, 5);
        s.admit(8, 6);
        s.admit(8, 6);
        let bytes = s.encode(|id, _| (id == 7).then_some(40));
        let t = Sessions::decode(&bytes, MAX_SESSIONS).unwrap();
        assert_eq!(t.admission(7, 5, 39), Admission::Replayed);
        assert_eq!(t.admission(7, 5, 40), Admission::Resumed);
        assert_eq!(t.admission(8, 6, 1000), Admission::Replayed);
        assert_eq!(t.admission(8, 7, 0), Admission::New);
    }

    #[test]
    fn the_file_is_byte_exact_and_every_bad_field_is_named() {
        let mut s = Sessions::default();
        s.admit(0x2a, 0x18e9_1efd_5bd3_8000);
        s.end(0x2a, 0x18e9_1efd_5bd3_8000, None);
        s.admit(0x2b, 0x18e9_1efd_5bd3_8001);
        let bytes = s.encode(|_, _| Some(12));
        // FORMAT.md 3.7's example, byte for byte.
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            concat!(
                "5154525300010000000000020000000000000000000000000000",
                "002a0000000118e91efd5bd380000000000000000000",
                "0000002b0000000018e91efd5bd38001000000000000000c"
            )
        );
        assert_eq!(
            Sessions::decode(&bytes, 16).unwrap().encode(|_, _| None),
            bytes
        );
        let bad = |i: usize, v: u8| {
            let mut b = bytes.clone();
            b[i] = v;
            Sessions::decode(&b, 16).unwrap_err()
        };
        assert!(matches!(bad(0, b'X'), WireError::BadMagic { .. }));
        assert_eq!(bad(5, 2).offset(), 4);
        assert_eq!(bad(7, 1).offset(), 6);
        assert_eq!(bad(11, 3).offset(), 8);
        assert_eq!(bad(15, 1).offset(), 12);
        assert_eq!(bad(51, 0x2a).offset(), 48);
        assert_eq!(bad(31, 2).offset(), 28);
        assert_eq!(bad(47, 1).offset(), 40);
        assert!(Sessions::decode(&bytes[..20], 16)
            .unwrap_err()
            .is_truncated());
        assert_eq!(Sessions::decode(&bytes[..70], 16).unwrap_err().offset(), 8);
    }
}
