//! The UDP queue type and its parameters (remote, capacity, period, datagram
//! size and rate, sender id), checked when the queue is created.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{Shared, Stats, UdpQueue};
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::queues::drained::feed::Feed;
use crate::queues::drained::lifecycle::{Lifecycle, TaskNames};
use crate::queues::drained::sender::UdpSender;
use crate::queues::{AnyQueue, QueueType};
use crate::wire::datagram::{DEFAULT_MAX_DATAGRAM_LEN, MAX_DATAGRAM_LEN, MIN_DATAGRAM_LEN};
use crate::wire::DEFAULT_PORT;

/// The UDP queue type. Parameters: [`UdpParams`].
///
/// ```
/// use qtrace::classes::user;
/// use qtrace::queues::{Udp, UdpParams, UdpQueue, UdpStats};
///
/// let receiver = std::net::UdpSocket::bind("127.0.0.1:0")?;
/// let tracer = qtrace::Tracer::new();
/// let q = tracer.create_queue::<Udp>(UdpParams::to(receiver.local_addr()?))?;
/// tracer.assign_class(user::CLASS, q)?;
/// tracer.activate()?;
/// tracer.log_event(user::USER0, [1, 0]);
/// tracer.shutdown()?;
/// let udp: &UdpQueue = tracer.queue(q)?.as_udp().unwrap();
/// let stats: UdpStats = udp.stats();
/// assert_eq!(stats.events_sent, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Udp;

/// How many event datagrams the task sends per round.
///
/// ```
/// use qtrace::queues::{DatagramsPerPeriod, UdpParams};
/// let params = UdpParams::default().with_datagrams_per_period(DatagramsPerPeriod::All);
/// assert_eq!(params.datagrams_per_period(), DatagramsPerPeriod::All);
/// assert_eq!(UdpParams::default().datagrams_per_period(), DatagramsPerPeriod::Limit(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramsPerPeriod {
    /// At most this many (S.Ha.R.K. sent 1).
    Limit(u32),
    /// Everything queued.
    All,
}

/// Parameters of a [`Udp`] queue, a builder ([`UdpParams::to`], `with_*`;
/// the getters read a value back). `Default` sends to `127.0.0.1:5510`
/// ([`DEFAULT_PORT`]) with S.Ha.R.K.'s values: 8192 events, a 250 ms period,
/// one datagram per period.
///
/// ```
/// use std::time::Duration;
/// use qtrace::queues::{DatagramsPerPeriod, UdpParams};
///
/// let params = UdpParams::to("192.0.2.7:5510".parse().unwrap())
///     .with_period(Duration::from_millis(50))
///     .with_datagrams_per_period(DatagramsPerPeriod::All);
/// assert_eq!(params.remote().port(), 5510);
/// assert_eq!(params.period(), Duration::from_millis(50));
/// assert_eq!(params.capacity(), 8192);
/// assert_eq!(params.sender_id(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UdpParams {
    /// Capacity in events (a power of two).
    pub(crate) capacity: usize,
    /// The address to send from; `None`: any address of the remote's IP
    /// version, a port the system chooses.
    pub(crate) local: Option<SocketAddr>,
    /// The receiver's address.
    pub(crate) remote: SocketAddr,
    /// How often the task runs.
    pub(crate) period: Duration,
    /// Event datagrams per round.
    pub(crate) datagrams_per_period: DatagramsPerPeriod,
    /// The largest datagram, in bytes (72 to 65507; 1472 fits Ethernet: 44
    /// records in a 1448-byte datagram).
    pub(crate) max_datagram_len: usize,
    /// Fill level (percent, 1–100) that wakes the task early.
    pub(crate) high_water_percent: u8,
    /// How often the catalog is sent again (10 s); it is also sent first and
    /// at shutdown.
    pub(crate) catalog_interval: Duration,
    /// The sender id in every datagram; `None`: derived from the process,
    /// the queue handle and the time.
    pub(crate) sender_id: Option<u32>,
    /// Let the kernel split a batch of full datagrams, handed over in one
    /// call, into datagrams (Linux UDP segmentation offload). On by default;
    /// where the kernel does not support it, one call per datagram is used.
    /// The kernel splits at one length, so a full compact datagram is padded
    /// with zero bytes after its chunk to `max_datagram_len` (at most 38
    /// bytes, FORMAT.md 2.7, "Padding"); 32-byte datagrams are the same
    /// either way. Off, every datagram takes a system call of its own and
    /// no compact datagram is padded: for a receiver that refuses padding
    /// (none of this edition does).
    pub(crate) segmentation_offload: bool,
    /// Send events in the compact encoding (datagram version 3, or 4
    /// keyed: FORMAT.md 2.7), about 5 bytes an event; `false`: 32-byte
    /// records (version 1, or 2 keyed). On by default.
    pub(crate) compact: bool,
    /// Whether the task samples the queue's fill level and losses into the
    /// stream (FORMAT.md 1.3.4). Off by default.
    pub(crate) queue_counters: bool,
    /// The key every datagram is keyed with (feature `keys`); `None`:
    /// unkeyed datagrams. Boxed: the queue's size is fixed (a power of
    /// two, for the tracer's table of queues).
    #[cfg(feature = "keys")]
    pub(crate) key: Option<Box<crate::wire::DatagramKey>>,
}

impl Default for UdpParams {
    fn default() -> Self {
        UdpParams::to(SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)))
    }
}

impl UdpParams {
    /// The defaults, sending to `remote`.
    ///
    /// ```
    /// let params = qtrace::queues::UdpParams::to(([127, 0, 0, 1], 9000).into());
    /// assert_eq!(params.remote().port(), 9000);
    /// ```
    pub fn to(remote: SocketAddr) -> Self {
        UdpParams {
            capacity: 8192,
            local: None,
            remote,
            period: Duration::from_millis(250),
            datagrams_per_period: DatagramsPerPeriod::Limit(1),
            max_datagram_len: DEFAULT_MAX_DATAGRAM_LEN,
            high_water_percent: 80,
            catalog_interval: Duration::from_secs(10),
            sender_id: None,
            segmentation_offload: true,
            compact: true,
            queue_counters: false,
            #[cfg(feature = "keys")]
            key: None,
        }
    }
    /// Holds `capacity` events (a power of two), in `capacity × 64` bytes
    /// (a record and its sequence word in a cache line of its own, an event).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }
    /// Sends from `local`.
    pub fn with_local(mut self, local: SocketAddr) -> Self {
        self.local = Some(local);
        self
    }
    /// Runs the task every `period`.
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }
    /// Sends `n` event datagrams per round.
    pub fn with_datagrams_per_period(mut self, n: DatagramsPerPeriod) -> Self {
        self.datagrams_per_period = n;
        self
    }
    /// Datagrams of at most `len` bytes: 72 to 65,507 (a UDP payload's
    /// limit over IPv4); 1472 by default, one 1500-byte Ethernet frame
    /// after the IPv4 and UDP headers, so that no datagram is fragmented
    /// on the way. Where the path carries more — 8972 fits a 9000-byte
    /// jumbo frame, and loopback's MTU is 65,536 — larger datagrams carry
    /// more events each: compact datagrams (FORMAT.md 2.7) hold about
    /// 290–360 events of a scheduler-like workload at 1472 bytes and about
    /// 2,100 at 8972. With segmentation offload (the default on Linux) up to
    /// 44 datagrams of 1472 bytes already share one system call, so on
    /// loopback both sizes reach about the same zero-loss rate (30 M events/s
    /// and more, BENCHMARKS.md); without it, larger datagrams pay the
    /// per-datagram cost (a `sendto`, a receive slot, a header) that much
    /// less often. A datagram the path
    /// must fragment is lost whole if any fragment is (and counted as lost
    /// by the receiver, as any lost datagram). Out of range, adding the
    /// queue fails with [`ConfigError::InvalidParameter`], whose message
    /// gives the range.
    ///
    /// ```
    /// let params = qtrace::queues::UdpParams::default().with_max_datagram_len(8972);
    /// assert_eq!(params.max_datagram_len(), 8972);
    /// ```
    pub fn with_max_datagram_len(mut self, len: usize) -> Self {
        self.max_datagram_len = len;
        self
    }
    /// Wakes the task at `percent` % full.
    pub fn with_high_water_percent(mut self, percent: u8) -> Self {
        self.high_water_percent = percent;
        self
    }
    /// Switches segmentation offload on or off.
    pub fn with_segmentation_offload(mut self, on: bool) -> Self {
        self.segmentation_offload = on;
        self
    }
    /// Sends events in the compact encoding (`true`, the default: datagram
    /// version 3, or 4 keyed, about 5 bytes an event; FORMAT.md 2.7) or as
    /// 32-byte records (`false`: version 1, or 2 keyed, for a receiver
    /// older than the compact datagrams). Datagrams of at most
    /// [`with_max_datagram_len`](Self::with_max_datagram_len) below 127
    /// bytes (151 keyed) are sent as 32-byte records either way.
    ///
    /// ```
    /// let params = qtrace::queues::UdpParams::default();
    /// assert!(params.compact());
    /// assert!(!params.with_compact(false).compact());
    /// ```
    pub fn with_compact(mut self, on: bool) -> Self {
        self.compact = on;
        self
    }
    /// Has the task sample, at the start of each round, the queue's fill
    /// level and its losses so far into the stream as the counters
    /// `qtrace:queue.fill` and `qtrace:queue.lost` (FORMAT.md 1.3.4: the
    /// class `qtrace` is added to the stream's catalog; its records come
    /// from source `TRACER_SOURCE`). Off by default; producers pay nothing
    /// either way. Activation fails if the catalog already has a class
    /// named `qtrace`.
    ///
    /// ```
    /// let params = qtrace::queues::UdpParams::default();
    /// assert!(!params.queue_counters());
    /// assert!(params.with_queue_counters(true).queue_counters());
    /// ```
    pub fn with_queue_counters(mut self, on: bool) -> Self {
        self.queue_counters = on;
        self
    }
    /// Sends the catalog again every `interval` (10 s by default).
    pub fn with_catalog_interval(mut self, interval: Duration) -> Self {
        self.catalog_interval = interval;
        self
    }
    /// Uses `id` as the sender id.
    pub fn with_sender_id(mut self, id: u32) -> Self {
        self.sender_id = Some(id);
        self
    }
    /// Keys every datagram with `key` (feature `keys`; FORMAT.md 2.6): a
    /// receiver holding the same key
    /// ([`ReceiverConfig::keys`](crate::receiver::ReceiverConfig::keys),
    /// `qtrace recv --key-file`) accepts them, and rejects forgeries and
    /// replays. The tag is computed by the queue's send task, never by
    /// `log_event`. A keyed datagram is 24 bytes longer than the same one
    /// unkeyed: at the default 1,472 bytes it still carries 44 records.
    ///
    /// ```
    /// use qtrace::queues::UdpParams;
    /// use qtrace::wire::DatagramKey;
    ///
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("stream.key");
    /// # #[cfg(unix)] {
    /// # use std::os::unix::fs::OpenOptionsExt;
    /// # std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    /// # }
    /// # std::fs::write(&path, [9u8; 32])?;
    /// // `path`: a file `qtrace keygen` wrote, mode 600.
    /// let key = DatagramKey::from_file(&path)?;
    /// let params = UdpParams::to("127.0.0.1:5510".parse()?).with_key(key.clone());
    /// assert_eq!(params.key(), Some(&key));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "keys")]
    pub fn with_key(mut self, key: crate::wire::DatagramKey) -> Self {
        self.key = Some(Box::new(key));
        self
    }
    /// The key datagrams are keyed with (feature `keys`); `None`: unkeyed.
    #[cfg(feature = "keys")]
    pub fn key(&self) -> Option<&crate::wire::DatagramKey> {
        self.key.as_deref()
    }

    /// Capacity in events (a power of two).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The address to send from; `None`: any address of the remote's IP
    /// version, a port the system chooses.
    pub fn local(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The receiver's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// How often the task runs.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Event datagrams per round.
    pub fn datagrams_per_period(&self) -> DatagramsPerPeriod {
        self.datagrams_per_period
    }

    /// The largest datagram, in bytes (72 to 65507; 1472 fits Ethernet: 44
    /// records in a 1448-byte datagram).
    pub fn max_datagram_len(&self) -> usize {
        self.max_datagram_len
    }

    /// Fill level (percent, 1–100) that wakes the task early.
    pub fn high_water_percent(&self) -> u8 {
        self.high_water_percent
    }

    /// How often the catalog is sent again (10 s); it is also sent first and
    /// at shutdown.
    pub fn catalog_interval(&self) -> Duration {
        self.catalog_interval
    }

    /// The sender id in every datagram; `None`: derived from the process,
    /// the queue handle and the time.
    pub fn sender_id(&self) -> Option<u32> {
        self.sender_id
    }

    /// Let the kernel split a batch of full datagrams, handed over in one
    /// call, into datagrams (Linux UDP segmentation offload). On by default;
    /// where the kernel does not support it, one call per datagram is used.
    /// The kernel splits at one length, so a full compact datagram is padded
    /// with zero bytes after its chunk to `max_datagram_len` (at most 38
    /// bytes, FORMAT.md 2.7, "Padding"); 32-byte datagrams are the same
    /// either way. Off, every datagram takes a system call of its own and
    /// no compact datagram is padded: for a receiver that refuses padding
    /// (none of this edition does).
    pub fn segmentation_offload(&self) -> bool {
        self.segmentation_offload
    }

    /// Whether events are sent in the compact encoding
    /// ([`with_compact`](Self::with_compact)).
    pub fn compact(&self) -> bool {
        self.compact
    }
    /// Whether the task samples the queue's own counters
    /// ([`with_queue_counters`](Self::with_queue_counters)).
    pub fn queue_counters(&self) -> bool {
        self.queue_counters
    }
}

impl QueueType for Udp {
    type Params = UdpParams;
    const NAME: &'static str = "udp";

    fn create(&self, mut params: UdpParams, ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        let bad = |reason: String| ConfigError::InvalidParameter {
            queue_type: Self::NAME,
            reason,
        };
        if params.period.is_zero() {
            return Err(bad("period is zero: use a period such as 250 ms".into()));
        }
        if !(MIN_DATAGRAM_LEN..=MAX_DATAGRAM_LEN).contains(&params.max_datagram_len) {
            return Err(bad(format!(
                "max datagram size {} is out of range: use {MIN_DATAGRAM_LEN} to {MAX_DATAGRAM_LEN} bytes ({DEFAULT_MAX_DATAGRAM_LEN} fits Ethernet)",
                params.max_datagram_len
            )));
        }
        #[cfg(feature = "keys")]
        if params.key.is_some()
            && params.max_datagram_len
                < MIN_DATAGRAM_LEN + crate::wire::datagram::keyed::KEYED_OVERHEAD
        {
            return Err(bad(format!(
                "max datagram size {} leaves no room for a record in a keyed datagram: use at least {} bytes",
                params.max_datagram_len,
                MIN_DATAGRAM_LEN + crate::wire::datagram::keyed::KEYED_OVERHEAD
            )));
        }
        if params.datagrams_per_period == DatagramsPerPeriod::Limit(0) {
            return Err(bad(
                "0 datagrams per period would never send: use Limit(1) or more, or All".into(),
            ));
        }
        if params.catalog_interval.is_zero() {
            return Err(bad("catalog interval is zero: use a few seconds".into()));
        }
        let local = params.local.unwrap_or(if params.remote.is_ipv4() {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
        });
        if local.is_ipv4() != params.remote.is_ipv4() || params.remote.port() == 0 {
            // The sender's own checks give the message.
            UdpSender::open(local, params.remote)?;
        }
        params.local = Some(local);
        let feed = Feed::new(
            Self::NAME,
            params.capacity,
            params.high_water_percent,
            false,
        )?;
        let sender_id = params.sender_id.unwrap_or_else(|| derive_sender_id(ctx));
        let lifecycle = Lifecycle::new(
            (),
            TaskNames {
                thread: "qtrace-udp",
                start: "start the UDP queue's send thread",
                finish: "finish the UDP queue's send task",
                panicked: "send task panicked",
            },
            params.period,
            Arc::clone(&feed.control),
        );
        Ok(AnyQueue::UdpQueue(UdpQueue {
            shared: Arc::new(Shared {
                feed,
                stats: Stats::default(),
                last_error: Mutex::new(None),
            }),
            params,
            sender_id,
            lifecycle,
        }))
    }
}

fn derive_sender_id(ctx: &QueueContext) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ d.as_secs() as u32)
        .unwrap_or(0);
    // A small integer hash mixing the three.
    let mut x = (std::process::id() as u64) << 32 | (ctx.handle.0 as u64) << 16 | nanos as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x as u32
}
