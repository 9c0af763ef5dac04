//! The `jobs` table (FORMAT.md 7.5a): each endcycle that ends a job gives
//! a row with when that job was activated and whether a hoops record fell
//! inside it, paired as `qtrace analyze` pairs them — every activate is its
//! task's next job, every endcycle ends the task's oldest job still pending
//! (first in, first out) and one that finds none pending ends nothing.
//! Written as the rows are written (in the order analyze reads them), so
//! that a query reads response times off 1 row per job instead of sorting
//! every task's activates and endcycles out of all the events.

use std::collections::{HashMap, VecDeque};

use qtrace::classes::system;
use qtrace::Event;

/// Tasks below this number are kept in a vector, the others in a map.
const DENSE: u64 = 1 << 16;

/// A pending job: its activate's time (ns) and the hoops records seen
/// before it.
type Pending = VecDeque<(i64, u64)>;

/// The jobs pending per task, over the rows of one pairing scope (a
/// conversion's inputs of one host, or one received stream).
#[derive(Debug, Default)]
pub struct Jobs {
    dense: Vec<Pending>,
    sparse: HashMap<u64, Pending>,
    hoops: u64,
}

impl Jobs {
    /// A hoops record (kinds `hoops`, `unreadable`, `damaged`) was written:
    /// every job pending now is lossy.
    pub fn hoops(&mut self) {
        self.hoops += 1;
    }

    /// The job columns of `e`, the next events row, taken at time `ns`:
    /// for an endcycle that ends a job, its activate's time and whether a
    /// hoops record came between them; none for every other row.
    #[inline(always)]
    pub fn pair(&mut self, e: &Event, ns: i64) -> Option<(i64, bool)> {
        // Inlined, so that most rows (neither) cost a comparison, not a
        // call (14.5 M instructions of 500,000 rows when the compiler chose
        // a call); the pairing itself out of line.
        if e.id != system::ACTIVATE && e.id != system::ENDCYCLE {
            return None;
        }
        self.pair_job(e, ns)
    }

    #[inline(never)]
    fn pair_job(&mut self, e: &Event, ns: i64) -> Option<(i64, bool)> {
        let act = e.id == system::ACTIVATE;
        let task = e.args[0];
        let pending = if task < DENSE {
            let i = task as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, VecDeque::new);
            }
            &mut self.dense[i]
        } else {
            self.sparse.entry(task).or_default()
        };
        if act {
            pending.push_back((ns, self.hoops));
            return None;
        }
        let (activated, hoops) = pending.pop_front()?;
        Some((activated, hoops != self.hoops))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qtrace::EventId;

    #[test]
    fn pairs_first_in_first_out_per_task_and_flags_hoops_inside() {
        let mut j = Jobs::default();
        let (a, e, s) = (system::ACTIVATE, system::ENDCYCLE, system::SCHEDULE);
        let big = 1 << 40;
        let mut got = Vec::new();
        let mut step = |j: &mut Jobs, id: EventId, task: u64, ns: i64| {
            got.push(j.pair(&Event::new(ns as u64, id, 0, [task, 0]), ns));
        };
        step(&mut j, e, 5, 1); // nothing pending: ends nothing
        step(&mut j, a, 5, 2);
        step(&mut j, a, 5, 3);
        step(&mut j, a, big, 4);
        step(&mut j, e, 5, 5); // ends the job of 2
        step(&mut j, s, 5, 6);
        j.hoops(); // inside the jobs of 3 and 4
        step(&mut j, e, 5, 7); // ends 3, lossy
        step(&mut j, e, 5, 8); // nothing pending
        step(&mut j, a, 5, 9);
        step(&mut j, e, big, 10); // ends 4, lossy
        step(&mut j, e, 5, 11); // ends 9, clean
        assert_eq!(
            got,
            [
                None,
                None,
                None,
                None,
                Some((2, false)),
                None,
                Some((3, true)),
                None,
                None,
                Some((4, true)),
                Some((9, false)),
            ]
        );
    }
}
