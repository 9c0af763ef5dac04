//! The control protocol's frames (FORMAT.md §9): [`Request`], [`Reply`] and
//! [`ErrorCode`], each parsed from untrusted bytes by safe code that never
//! panics (the fuzz target `control_request` feeds it arbitrary bytes) and
//! emitted byte for byte as FORMAT.md §9 gives them.

use std::fmt;

/// The protocol version this release speaks (the first byte of every
/// frame body).
const VERSION: u8 = 1;
/// The longest request body a server reads (FORMAT.md §9.1).
const MAX_REQUEST: usize = 4096;
/// The longest reply body a client reads (FORMAT.md §9.1).
const MAX_REPLY: usize = 1 << 20;
/// `u16 queue` meaning "every queue" (start, stop) or "the first circular
/// queue" (snapshot).
const ANY_QUEUE: u16 = 0xffff;

/// A request to a control endpoint (FORMAT.md §9.2), as
/// [`Request::parse`] reads it from a frame body and [`Request::emit`]
/// writes it.
///
/// ```
/// use qtrace::control::Request;
///
/// let frame = Request::DisableClass("system".into()).frame();
/// assert_eq!(frame, b"\x00\x00\x00\x0a\x01\x08\x00\x06system");
/// assert_eq!(Request::parse(&frame[4..]), Ok(Request::DisableClass("system".into())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// `0x01`: the tracer's phase, its queues and their counters, the
    /// endpoint's own counters (a [`Reply::Status`]).
    Status,
    /// `0x02`: save a circular queue's ring to `path` (absolute, written by
    /// the traced process) as a complete trace file; `queue` `None` is the
    /// first circular queue.
    Snapshot {
        /// The circular queue's handle, or `None` for the first one.
        queue: Option<u16>,
        /// Where the traced process writes the file.
        path: String,
    },
    /// `0x03`: switch recording on for one queue, or every queue (`None`),
    /// through the gates start/stop triggers use.
    Start(Option<u16>),
    /// `0x04`: switch recording off for one queue, or every queue (`None`).
    Stop(Option<u16>),
    /// `0x05`: suspend the whole tracer (`Tracer::suspend`).
    Suspend,
    /// `0x06`: resume it (`Tracer::resume`).
    Resume,
    /// `0x07`: switch a class on by name (`Tracer::trace_class`).
    EnableClass(String),
    /// `0x08`: switch a class off by name (`Tracer::notrace_class`).
    DisableClass(String),
    /// `0x09`: switch an event on by name (`Tracer::trace_event`).
    EnableEvent(String),
    /// `0x0a`: switch an event off by name (`Tracer::notrace_event`).
    DisableEvent(String),
    /// `0x0b`: close an online queue's open chunk now and go on in the next
    /// (a queue made with `OnlineParams::with_rotation`).
    Rotate(u16),
}

/// A reply from a control endpoint (FORMAT.md §9.3).
///
/// ```
/// use qtrace::control::{ErrorCode, Reply};
///
/// let reply = Reply::Error(ErrorCode::NoSuchName, "no class named `sys`".into());
/// let frame = reply.frame();
/// assert_eq!(&frame[..8], b"\x00\x00\x00\x17\x01\x03\x06n");
/// assert_eq!(Reply::parse(&frame[4..]), Ok(reply));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// Kind `0x00`: done.
    Done,
    /// Kind `0x01`: the status, a JSON object (FORMAT.md §9.4).
    Status(String),
    /// Kind `0x02`: a snapshot was written; the records in the file (events
    /// and hoops records, the close run not counted).
    Snapshot(u64),
    /// Kind `0x03`: refused or failed, with a message saying why.
    Error(ErrorCode, String),
}

/// Why a request was refused or failed (FORMAT.md §9.3). A client that
/// meets a code it does not know treats it as [`ErrorCode::Failed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[repr(u8)]
pub enum ErrorCode {
    /// 1: the frame's body does not parse (too short, bytes left over, a
    /// name that is not UTF-8).
    BadFrame = 1,
    /// 2: a protocol version this endpoint does not speak.
    UnsupportedVersion = 2,
    /// 3: a request code this endpoint does not know.
    UnknownRequest = 3,
    /// 4: a frame longer than 4096 bytes (or of length 0): the connection
    /// is closed after this reply.
    TooLarge = 4,
    /// 5: no queue has that handle.
    NoSuchQueue = 5,
    /// 6: no class or event has that name.
    NoSuchName = 6,
    /// 7: the queue is of the wrong type (a snapshot of a queue that is not
    /// circular, a rotation of one that is not a rotating online queue).
    WrongQueueType = 7,
    /// 8: the tracer is shut down (or is a fork's inherited copy).
    NotRunning = 8,
    /// 9: the request was valid but failed (an I/O error writing a
    /// snapshot, say): the message says why.
    Failed = 9,
    /// 10: the peer's credentials are not allowed (another user): the
    /// connection is closed after this reply.
    PermissionDenied = 10,
}

impl ErrorCode {
    /// The code of byte `b` (an unknown code reads as [`ErrorCode::Failed`]).
    pub fn from_byte(b: u8) -> ErrorCode {
        match b {
            1 => ErrorCode::BadFrame,
            2 => ErrorCode::UnsupportedVersion,
            3 => ErrorCode::UnknownRequest,
            4 => ErrorCode::TooLarge,
            5 => ErrorCode::NoSuchQueue,
            6 => ErrorCode::NoSuchName,
            7 => ErrorCode::WrongQueueType,
            8 => ErrorCode::NotRunning,
            10 => ErrorCode::PermissionDenied,
            _ => ErrorCode::Failed,
        }
    }

    /// The code's name in FORMAT.md §9.3 and in `qtrace ctl --json`
    /// (`"no_such_queue"`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::UnsupportedVersion => "unsupported_version",
            ErrorCode::UnknownRequest => "unknown_request",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::NoSuchQueue => "no_such_queue",
            ErrorCode::NoSuchName => "no_such_name",
            ErrorCode::WrongQueueType => "wrong_queue_type",
            ErrorCode::NotRunning => "not_running",
            ErrorCode::Failed => "failed",
            ErrorCode::PermissionDenied => "permission_denied",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A checked reader over a frame body: every accessor returns `None`
/// rather than read past the end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_be_bytes(a))
    }
    fn str(&mut self) -> Option<Result<String, ()>> {
        let n = self.u16()? as usize;
        let b = self.take(n)?;
        Some(String::from_utf8(b.to_vec()).map_err(|_| ()))
    }
}

fn queue_of(q: u16) -> Option<u16> {
    (q != ANY_QUEUE).then_some(q)
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    // A longer string cannot be sent (u16 length): cut at a char boundary.
    let mut end = s.len().min(u16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_be_bytes());
    out.extend_from_slice(&s.as_bytes()[..end]);
}

fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

impl Request {
    /// The longest request body an endpoint reads: 4096 bytes.
    pub const MAX_LEN: usize = MAX_REQUEST;
    /// The protocol version: 1.
    pub const VERSION: u8 = VERSION;

    /// Reads a request from a frame body (the bytes after the 4-byte
    /// length).
    ///
    /// # Errors
    ///
    /// The [`Reply::Error`] an endpoint answers with: its code and message
    /// ([`ErrorCode::TooLarge`] for an empty body or one over
    /// [`Request::MAX_LEN`], [`ErrorCode::UnsupportedVersion`],
    /// [`ErrorCode::UnknownRequest`], [`ErrorCode::BadFrame`]).
    pub fn parse(body: &[u8]) -> Result<Request, Reply> {
        let bad = |what: &str| Reply::Error(ErrorCode::BadFrame, what.to_string());
        if body.is_empty() || body.len() > MAX_REQUEST {
            return Err(Reply::Error(
                ErrorCode::TooLarge,
                format!(
                    "a request body of {} bytes: send 2 to {MAX_REQUEST} (FORMAT.md 9.1)",
                    body.len()
                ),
            ));
        }
        let mut c = Cursor(body);
        let version = c.u8().unwrap_or(0);
        if version != VERSION {
            return Err(Reply::Error(
                ErrorCode::UnsupportedVersion,
                format!("protocol version {version}: this endpoint speaks version {VERSION}"),
            ));
        }
        let Some(op) = c.u8() else {
            return Err(bad("the body ends before its request code (byte 1)"));
        };
        let name = |c: &mut Cursor<'_>| match c.str() {
            None => Err(bad("the name's length runs past the body")),
            Some(Err(())) => Err(bad("the name is not UTF-8")),
            Some(Ok(s)) => Ok(s),
        };
        let queue = |c: &mut Cursor<'_>| {
            c.u16()
                .ok_or_else(|| bad("the body ends inside its u16 queue"))
        };
        let request = match op {
            0x01 => Request::Status,
            0x02 => {
                let q = queue(&mut c)?;
                Request::Snapshot {
                    queue: queue_of(q),
                    path: name(&mut c)?,
                }
            }
            0x03 => Request::Start(queue_of(queue(&mut c)?)),
            0x04 => Request::Stop(queue_of(queue(&mut c)?)),
            0x05 => Request::Suspend,
            0x06 => Request::Resume,
            0x07 => Request::EnableClass(name(&mut c)?),
            0x08 => Request::DisableClass(name(&mut c)?),
            0x09 => Request::EnableEvent(name(&mut c)?),
            0x0a => Request::DisableEvent(name(&mut c)?),
            0x0b => Request::Rotate(queue(&mut c)?),
            other => {
                return Err(Reply::Error(
                    ErrorCode::UnknownRequest,
                    format!("request code {other:#04x}: this endpoint knows 0x01 to 0x0b"),
                ))
            }
        };
        if !c.0.is_empty() {
            return Err(bad(&format!(
                "{} bytes after the request's last field",
                c.0.len()
            )));
        }
        Ok(request)
    }

    /// The frame body (version, request code, fields).
    pub fn emit(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        let q = |q: &Option<u16>| q.unwrap_or(ANY_QUEUE).to_be_bytes();
        match self {
            Request::Status => out.push(0x01),
            Request::Snapshot { queue, path } => {
                out.push(0x02);
                out.extend_from_slice(&q(queue));
                push_str(&mut out, path);
            }
            Request::Start(queue) => {
                out.push(0x03);
                out.extend_from_slice(&q(queue));
            }
            Request::Stop(queue) => {
                out.push(0x04);
                out.extend_from_slice(&q(queue));
            }
            Request::Suspend => out.push(0x05),
            Request::Resume => out.push(0x06),
            Request::EnableClass(n)
            | Request::DisableClass(n)
            | Request::EnableEvent(n)
            | Request::DisableEvent(n) => {
                out.push(match self {
                    Request::EnableClass(_) => 0x07,
                    Request::DisableClass(_) => 0x08,
                    Request::EnableEvent(_) => 0x09,
                    _ => 0x0a,
                });
                push_str(&mut out, n);
            }
            Request::Rotate(queue) => {
                out.push(0x0b);
                out.extend_from_slice(&queue.to_be_bytes());
            }
        }
        out
    }

    /// The whole frame: the body's `u32` length, then the body.
    pub fn frame(&self) -> Vec<u8> {
        framed(self.emit())
    }
}

impl Reply {
    /// The longest reply body a client reads: 1 MiB.
    pub const MAX_LEN: usize = MAX_REPLY;

    /// Reads a reply from a frame body (the bytes after the 4-byte length).
    ///
    /// # Errors
    ///
    /// A message saying what is wrong with the body (a client's error: the
    /// endpoint sent bytes this release cannot read).
    pub fn parse(body: &[u8]) -> Result<Reply, String> {
        let mut c = Cursor(body);
        match c.u8() {
            Some(VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "a reply of protocol version {v}: this qtrace reads version {VERSION}"
                ))
            }
            None => return Err("an empty reply".to_string()),
        }
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| "a reply whose text is not UTF-8".to_string())
        };
        let reply = match c.u8() {
            Some(0x00) => Reply::Done,
            Some(0x01) => Reply::Status(text(c.0)?),
            Some(0x02) => Reply::Snapshot(
                c.u64()
                    .ok_or("a snapshot reply without its u64 record count")?,
            ),
            Some(0x03) => {
                let code = c.u8().ok_or("an error reply without its code")?;
                Reply::Error(ErrorCode::from_byte(code), text(c.0)?)
            }
            Some(k) => {
                return Err(format!(
                    "a reply of kind {k:#04x}: this qtrace reads kinds 0x00 to 0x03"
                ))
            }
            None => return Err("a reply without its kind (byte 1)".to_string()),
        };
        match &reply {
            Reply::Done | Reply::Snapshot(_) if !c.0.is_empty() => {
                Err(format!("{} bytes after the reply's last field", c.0.len()))
            }
            _ => Ok(reply),
        }
    }

    /// The frame body (version, kind, fields).
    pub fn emit(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        match self {
            Reply::Done => out.push(0x00),
            Reply::Status(json) => {
                out.push(0x01);
                out.extend_from_slice(json.as_bytes());
            }
            Reply::Snapshot(records) => {
                out.push(0x02);
                out.extend_from_slice(&records.to_be_bytes());
            }
            Reply::Error(code, message) => {
                out.push(0x03);
                out.push(*code as u8);
                out.extend_from_slice(message.as_bytes());
            }
        }
        out.truncate(MAX_REPLY);
        out
    }

    /// The whole frame: the body's `u32` length, then the body.
    pub fn frame(&self) -> Vec<u8> {
        framed(self.emit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_round_trips() {
        let all = [
            Request::Status,
            Request::Snapshot {
                queue: None,
                path: "/tmp/a.qtr".into(),
            },
            Request::Snapshot {
                queue: Some(3),
                path: "é".into(),
            },
            Request::Start(None),
            Request::Start(Some(0)),
            Request::Stop(Some(7)),
            Request::Suspend,
            Request::Resume,
            Request::EnableClass("user".into()),
            Request::DisableClass("system".into()),
            Request::EnableEvent("schedule".into()),
            Request::DisableEvent("x".into()),
            Request::Rotate(2),
        ];
        for r in all {
            assert_eq!(Request::parse(&r.emit()), Ok(r));
        }
    }

    #[test]
    fn bad_bodies_get_their_codes() {
        let code = |b: &[u8]| match Request::parse(b) {
            Err(Reply::Error(c, _)) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(b""), ErrorCode::TooLarge);
        assert_eq!(code(&[1; 4097]), ErrorCode::TooLarge);
        assert_eq!(code(b"\x02\x01"), ErrorCode::UnsupportedVersion);
        assert_eq!(code(b"\x01"), ErrorCode::BadFrame);
        assert_eq!(code(b"\x01\x0c"), ErrorCode::UnknownRequest);
        assert_eq!(code(b"\x01\x01\x00"), ErrorCode::BadFrame);
        assert_eq!(code(b"\x01\x03\x00"), ErrorCode::BadFrame);
        assert_eq!(code(b"\x01\x07\x00\x05abc"), ErrorCode::BadFrame);
        assert_eq!(code(b"\x01\x07\x00\x01\xff"), ErrorCode::BadFrame);
    }

    #[test]
    fn replies_round_trip() {
        for r in [
            Reply::Done,
            Reply::Status("{}".into()),
            Reply::Snapshot(1 << 40),
            Reply::Error(ErrorCode::PermissionDenied, "no".into()),
        ] {
            assert_eq!(Reply::parse(&r.emit()), Ok(r));
        }
        assert!(Reply::parse(b"\x01\x00\x00").is_err());
        assert!(Reply::parse(b"\x01\x02\x00").is_err());
        assert_eq!(
            Reply::parse(b"\x01\x03\xee"),
            Ok(Reply::Error(ErrorCode::Failed, String::new()))
        );
    }
}
