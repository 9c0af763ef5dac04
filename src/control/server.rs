//! The endpoint's thread: accepts connections, checks each peer's
//! credentials, reads request frames and answers each with a reply.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::protocol::{ErrorCode, Reply, Request};
use super::Counters;
use crate::filters::{FilterQueue, Scope, TriggerQueue};
use crate::model::handle::QueueHandle;
use crate::queue::config_error::ConfigError;
use crate::queue::Queue;
use crate::router::registry::Phase;
use crate::router::tracer::Tracer;

/// How long a connection may stay idle (or a frame take to arrive).
const IDLE: Duration = Duration::from_secs(5);

pub(super) fn serve(
    listener: UnixListener,
    tracer: &Tracer,
    name: &str,
    group: Option<u32>,
    counters: &Counters,
) {
    let started = Instant::now();
    for conn in listener.incoming() {
        if counters.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = conn else { continue };
        if !peer_allowed(&stream, group) {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_write_timeout(Some(IDLE));
            let reply = Reply::Error(
                ErrorCode::PermissionDenied,
                match group {
                    None => "this endpoint serves its own user only (SO_PEERCRED): run qtrace ctl as the traced program's user".into(),
                    Some(gid) => format!("this endpoint serves its own user and the members of group {gid} only (SO_PEERCRED, SO_PEERGROUPS): run qtrace ctl as the traced program's user, or as a member of that group"),
                },
            );
            let _ = (&stream).write_all(&reply.frame());
            continue;
        }
        counters.connections.fetch_add(1, Ordering::Relaxed);
        let ctx = Ctx {
            tracer,
            name,
            started,
            counters,
        };
        ctx.connection(stream);
    }
}

/// The peer's user id is this process's, or `group` is its effective group
/// id or one of its supplementary groups, all as they were when it
/// connected (`SO_PEERCRED`, `SO_PEERGROUPS`). Credentials that cannot be
/// read refuse the peer.
fn peer_allowed(stream: &UnixStream, group: Option<u32>) -> bool {
    let Ok(c) = rustix::net::sockopt::socket_peercred(stream) else {
        return false;
    };
    c.uid.as_raw() == super::uid()
        || group.is_some_and(|g| {
            c.gid.as_raw() == g || peer_groups(stream).is_some_and(|gs| gs.contains(&g))
        })
}

/// The most supplementary groups a Linux process has (`NGROUPS_MAX`).
const MAX_GROUPS: usize = 65_536;

/// The peer's supplementary groups when it connected (`SO_PEERGROUPS`,
/// Linux 4.13 and later), or `None` when they cannot be read (an older
/// kernel: a member by a supplementary group only is then refused, never
/// let in on a guess).
fn peer_groups(stream: &UnixStream) -> Option<Vec<libc::gid_t>> {
    use std::os::fd::AsRawFd;
    const GID: usize = std::mem::size_of::<libc::gid_t>();
    let mut groups: Vec<libc::gid_t> = vec![0; 32];
    loop {
        let mut len = (groups.len() * GID) as libc::socklen_t;
        // SAFETY: the descriptor is `stream`'s, open for the whole call;
        // the kernel writes at most `len` bytes into `groups`, which has
        // that many, and the length it wrote (or needs) into `len`. No safe
        // wrapper has this option (rustix 1.1 has none).
        let r = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &mut len,
            )
        };
        let len = len as usize;
        if r == 0 {
            groups.truncate(len / GID);
            return Some(groups);
        }
        // Too small: the kernel said how much it needs.
        let more = std::io::Error::last_os_error().raw_os_error() == Some(libc::ERANGE)
            && len > groups.len() * GID
            && len <= MAX_GROUPS * GID;
        if !more {
            return None;
        }
        groups.resize(len.div_ceil(GID), 0);
    }
}

struct Ctx<'a> {
    tracer: &'a Tracer,
    name: &'a str,
    started: Instant,
    counters: &'a Counters,
}

impl Ctx<'_> {
    fn connection(&self, mut stream: UnixStream) {
        if stream.set_read_timeout(Some(IDLE)).is_err()
            || stream.set_write_timeout(Some(IDLE)).is_err()
        {
            return;
        }
        loop {
            let mut len = [0u8; 4];
            if stream.read_exact(&mut len).is_err() {
                return; // closed, idle or broken
            }
            let len = u32::from_be_bytes(len) as usize;
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            if len == 0 || len > Request::MAX_LEN {
                // The body is not read: the stream cannot be resynchronised.
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                let reply = Reply::Error(
                    ErrorCode::TooLarge,
                    format!("a frame of {len} bytes: requests are 2 to {} bytes (FORMAT.md 9.1); closing the connection", Request::MAX_LEN),
                );
                let _ = stream.write_all(&reply.frame());
                return;
            }
            let mut body = vec![0u8; len];
            if stream.read_exact(&mut body).is_err() {
                return;
            }
            let reply = match Request::parse(&body) {
                Ok(request) => self.answer(request),
                Err(reply) => reply,
            };
            if matches!(reply, Reply::Error(..)) {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
            }
            if stream.write_all(&reply.frame()).is_err() {
                return;
            }
        }
    }

    fn answer(&self, request: Request) -> Reply {
        let t = self.tracer;
        let done = |r: Result<(), ConfigError>| r.map_or_else(config_error, |()| Reply::Done);
        match request {
            Request::Status => Reply::Status(self.status()),
            Request::Suspend => done(t.suspend()),
            Request::Resume => done(t.resume()),
            Request::Start(q) | Request::Stop(q) => {
                let on = matches!(request, Request::Start(_));
                let scope = match q {
                    None => Scope::Global,
                    Some(q) => match self.recording_queue(q) {
                        Ok(h) => Scope::Queue(h),
                        Err(reply) => return reply,
                    },
                };
                done(t.set_recording(scope, on))
            }
            Request::EnableClass(ref n) | Request::DisableClass(ref n) => {
                let on = matches!(request, Request::EnableClass(_));
                let Some(class) = t.catalog().class_by_name(n).map(|c| c.id) else {
                    return no_name("class", n, self.tracer);
                };
                done(if on {
                    t.trace_class(class)
                } else {
                    t.notrace_class(class)
                })
            }
            Request::EnableEvent(ref n) | Request::DisableEvent(ref n) => {
                let on = matches!(request, Request::EnableEvent(_));
                let Some(id) = t.catalog().event_by_name(n).map(|e| e.id) else {
                    return no_name("event", n, self.tracer);
                };
                done(if on {
                    t.trace_event(id)
                } else {
                    t.notrace_event(id)
                })
            }
            Request::Snapshot { queue, path } => self.snapshot(queue, &path),
            Request::Rotate(q) => {
                let Ok(queue) = t.queue(QueueHandle(q)) else {
                    return no_queue(q, t);
                };
                match queue.as_online() {
                    Some(online) if online.request_rotation() => Reply::Done,
                    _ => Reply::Error(
                        ErrorCode::WrongQueueType,
                        format!("queue {q} is not an online queue with rotation (OnlineParams::with_rotation): nothing to rotate"),
                    ),
                }
            }
        }
    }

    /// Queue `q`, if it exists and records events (not a filter, gate or
    /// trigger).
    fn recording_queue(&self, q: u16) -> Result<QueueHandle, Reply> {
        match self.tracer.queue_type_of(QueueHandle(q)) {
            None => Err(no_queue(q, self.tracer)),
            Some(name @ ("filter" | "gate" | "trigger")) => Err(Reply::Error(
                ErrorCode::WrongQueueType,
                format!("queue {q} is a `{name}` queue, which only forwards events: name a queue that records them"),
            )),
            Some(_) => Ok(QueueHandle(q)),
        }
    }

    fn snapshot(&self, queue: Option<u16>, path: &str) -> Reply {
        let t = self.tracer;
        if !std::path::Path::new(path).is_absolute() {
            return Reply::Error(
                ErrorCode::BadFrame,
                format!("the snapshot path {path:?} is not absolute: the traced process writes it, from its own working directory; give an absolute path"),
            );
        }
        let handle = match queue {
            Some(q) => QueueHandle(q),
            None => match (0..t.queue_count())
                .map(|i| QueueHandle(i as u16))
                .find(|&h| t.queue(h).is_ok_and(|q| q.as_circular().is_some()))
            {
                Some(h) => h,
                None => {
                    return Reply::Error(
                        ErrorCode::WrongQueueType,
                        "this tracer has no circular queue to snapshot".into(),
                    )
                }
            },
        };
        let Ok(q) = t.queue(handle) else {
            return no_queue(handle.0, t);
        };
        let Some(circular) = q.as_circular() else {
            return Reply::Error(
                ErrorCode::WrongQueueType,
                format!(
                    "queue {} is a `{}` queue: only circular queues are snapshot",
                    handle.0,
                    t.queue_type_of(handle).unwrap_or("?")
                ),
            );
        };
        if t.phase() == Phase::ShutDown {
            return config_error(ConfigError::AfterShutdown {
                operation: "snapshot a queue",
            });
        }
        match circular.snapshot(path) {
            Ok(records) => Reply::Snapshot(records),
            Err(e) => config_error(e),
        }
    }

    /// The status object of FORMAT.md §9.4.
    fn status(&self) -> String {
        let t = self.tracer;
        let c = self.counters;
        let phase = match t.phase() {
            Phase::Configuring => "configuring",
            Phase::Active => "active",
            Phase::ShutDown => "shut_down",
        };
        let mut s = format!(
            "{{\"protocol\":1,\"pid\":{},\"name\":\"{}\",\"phase\":\"{phase}\",\"suspended\":{},\"recording\":{},\"uptime_ns\":{},\"endpoint\":{{\"connections\":{},\"refused\":{},\"requests\":{},\"errors\":{}}},\"queues\":[",
            std::process::id(),
            self.name,
            t.is_suspended(),
            t.is_recording(Scope::Global).unwrap_or(true),
            self.started.elapsed().as_nanos(),
            c.connections.load(Ordering::Relaxed),
            c.refused.load(Ordering::Relaxed),
            c.requests.load(Ordering::Relaxed),
            c.errors.load(Ordering::Relaxed),
        );
        for i in 0..t.queue_count() {
            let h = QueueHandle(i as u16);
            let Ok(q) = t.queue(h) else { continue };
            let n = q.counters();
            let st = q.status();
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!(
                "{{\"queue\":{i},\"type\":\"{}\",\"recording\":{},\"accepted\":{},\"dropped\":{},\"overwritten\":{},\"delivered\":{},\"queued\":{},\"io_errors\":{},\"last_error\":",
                t.queue_type_of(h).unwrap_or("?"),
                t.is_recording(Scope::Queue(h)).unwrap_or(true),
                n.accepted,
                n.dropped,
                n.overwritten,
                n.delivered,
                n.queued,
                st.io_errors,
            ));
            match &st.last_error {
                Some(e) => json_string(&mut s, e),
                None => s.push_str("null"),
            }
            s.push_str(",\"files\":[");
            for (k, f) in st.files.iter().enumerate() {
                if k > 0 {
                    s.push(',');
                }
                json_string(&mut s, &f.to_string_lossy());
            }
            s.push(']');
            // What a filter or trigger did, beside the counters every
            // queue has (FORMAT.md 9.4).
            if let Some(f) = q.as_custom::<FilterQueue>() {
                s.push_str(&format!(
                    ",\"filter\":{{\"passed\":{},\"rejected\":{},\"panicked\":{}}}",
                    f.passed(),
                    f.rejected(),
                    f.panicked()
                ));
            } else if let Some(g) = q.as_custom::<TriggerQueue>() {
                s.push_str(&format!(
                    ",\"trigger\":{{\"seen\":{},\"fired\":{},\"written\":{},\"suppressed\":{},\"failed\":{},\"pending\":{}}}",
                    g.seen(),
                    g.fired(),
                    g.written(),
                    g.suppressed(),
                    g.failed(),
                    g.is_pending()
                ));
            }
            s.push('}');
        }
        s.push_str("]}");
        s
    }
}

/// `text` as a JSON string: qtrace-core's one escaper, in quotes.
fn json_string(out: &mut String, text: &str) {
    use std::fmt::Write as _;
    let _ = write!(out, "\"{}\"", qtrace_core::json::JsonEscaped(text));
}

fn no_queue(q: u16, t: &Tracer) -> Reply {
    Reply::Error(
        ErrorCode::NoSuchQueue,
        format!(
            "no queue {q}: this tracer has queues 0 to {} (qtrace ctl … status lists them)",
            t.queue_count().saturating_sub(1)
        ),
    )
}

fn no_name(what: &str, name: &str, t: &Tracer) -> Reply {
    let catalog = t.catalog();
    let known: Vec<&str> = if what == "class" {
        catalog.classes().iter().map(|c| c.name.as_str()).collect()
    } else {
        catalog
            .events()
            .iter()
            .take(12)
            .map(|e| e.name.as_str())
            .collect()
    };
    Reply::Error(
        ErrorCode::NoSuchName,
        format!(
            "no {what} named {name:?} (known: {}{})",
            known.join(", "),
            if what == "event" { ", …" } else { "" }
        ),
    )
}

fn config_error(e: ConfigError) -> Reply {
    let code = match e {
        ConfigError::AfterShutdown { .. } | ConfigError::InheritedAcrossFork { .. } => {
            ErrorCode::NotRunning
        }
        ConfigError::BadQueueHandle { .. } => ErrorCode::NoSuchQueue,
        ConfigError::EventOutOfRange { .. } | ConfigError::ClassOutOfRange { .. } => {
            ErrorCode::NoSuchName
        }
        _ => ErrorCode::Failed,
    };
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message.push_str(&format!(": {s}"));
        source = s.source();
    }
    Reply::Error(code, message)
}
