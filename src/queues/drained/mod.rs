//! What the two drained queues (circular-online and UDP) share: a bounded
//! ring filled by producers and emptied by a background task (`feed.rs`), the
//! task's periodic lifecycle with its wake-ups and shutdown deadline
//! (`task.rs`), the queue's side of that task from phase 1 to shutdown
//! (`lifecycle.rs`), the UDP socket the UDP queue's task sends with
//! (`sender.rs`), and the queue's own counters its task samples
//! (`samples.rs`).

pub(crate) mod feed;
pub(crate) mod lifecycle;
pub(crate) mod samples;
pub(crate) mod sender;
pub(crate) mod task;
