//! When a run stops: limits and the stopper.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// When [`Receiver::run`](super::Receiver::run) stops. With no limit at all it runs until
/// [`Stopper::stop`] is called.
///
/// ```
/// use qtrace::receiver::RunLimit;
/// use std::time::Duration;
///
/// assert_eq!(RunLimit::duration(Duration::from_secs(10)).events, None);
/// assert_eq!(RunLimit::events(1000).events, Some(1000));
/// assert_eq!(RunLimit::default(), RunLimit { duration: None, events: None }); // until stopped
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimit {
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop once this many events are accounted for: received, or marked
    /// lost (in transit, dropped or never sent by their sender; see
    /// [`Progress::accounted`](super::Progress::accounted)), so a lossy stream still reaches the count.
    /// Events lost after a sender's last datagram count once its close
    /// datagram arrives; add a duration so a stream that ends without one
    /// cannot keep the receiver waiting. Once the count is reached, the
    /// receiver waits up to 1 s more for every sender's close datagram (a
    /// sender closes right after its last events), so a run that lost
    /// nothing is not reported with an unclosed stream.
    pub events: Option<u64>,
}

impl RunLimit {
    /// Run for `d`.
    pub fn duration(d: Duration) -> Self {
        RunLimit {
            duration: Some(d),
            events: None,
        }
    }
    /// Run until `n` events are accounted for (received or marked lost).
    pub fn events(n: u64) -> Self {
        RunLimit {
            duration: None,
            events: Some(n),
        }
    }
    /// Also stop after `d`: whichever comes first.
    ///
    /// ```
    /// use qtrace::receiver::RunLimit;
    /// use std::time::Duration;
    ///
    /// let limit = RunLimit::events(1000).or_after(Duration::from_secs(5));
    /// assert_eq!((limit.events, limit.duration), (Some(1000), Some(Duration::from_secs(5))));
    /// ```
    pub fn or_after(mut self, d: Duration) -> Self {
        self.duration = Some(d);
        self
    }
}

/// Stops a running [`Receiver`](super::Receiver) from another thread.
///
/// ```
/// use qtrace::receiver::{Receiver, RunLimit};
///
/// let mut receiver = Receiver::bind("127.0.0.1:0".parse()?)?;
/// let stopper = receiver.stopper();
/// let stopping = std::thread::spawn(move || stopper.stop());
/// // No limit: it runs until stopped.
/// let summary = receiver.run_with(RunLimit::default(), &mut |_| {})?;
/// stopping.join().unwrap();
/// assert_eq!(summary.events(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stopper(pub(super) Arc<AtomicBool>);

impl Stopper {
    /// Asks the receiver to stop (within about 20 ms); it then writes its
    /// file and returns its summary.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Release);
    }
}
