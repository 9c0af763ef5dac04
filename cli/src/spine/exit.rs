//! The exit status of every subcommand: [`Exit`]. `main` alone turns it into
//! the process's code; nothing else names a number.

/// What a command's exit status says. The codes are documented in
/// FORMAT.md ("Exit statuses") and in each subcommand's `--help`, and
/// scripts rely on them: never renumber one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// 0: done; every trace read was complete (or of unknown completeness:
    /// written before close records).
    Ok = 0,
    /// 1: an output could not be written (a full disk, a closed pipe other
    /// than a reader stopping early, a directory that cannot be created), or
    /// `qtrace recv`'s receiver failed while running.
    Failed = 1,
    /// 2: bad usage (an unknown flag, a value out of range, a class or event
    /// no file defines), an input that cannot be opened or is not a qtrace
    /// trace (or ring file), a DAMAGED input (a record that does not decode,
    /// or a close record that disagrees with its file; the events before
    /// the damage are still shown or converted), an address `qtrace recv`
    /// cannot bind.
    BadInput = 2,
    /// 3: no input damaged, but a file is CUT SHORT (no close record: its
    /// writer died or the disk filled; whether the file ends at a record
    /// boundary or inside a record), or it holds a stream that `qtrace recv`
    /// saw end without a close; for
    /// `qtrace recv`, its output stopped being written (the summary says
    /// why).
    Cut = 3,
    /// 4: `qtrace sql` cannot run: this build has no `qtrace-sql` (built
    /// with the feature `sql`) beside it or on `PATH`, or DuckDB's library
    /// is not found (the message says where it was looked for).
    Unavailable = 4,
}

impl Exit {
    /// The status of a command that met both `self` and `other`: an
    /// unavailable engine (4) wins, then a bad input (2), then a cut (3),
    /// then a failed output (1).
    pub fn and(self, other: Exit) -> Exit {
        fn rank(e: Exit) -> u8 {
            match e {
                Exit::Ok => 0,
                Exit::Failed => 1,
                Exit::Cut => 2,
                Exit::BadInput => 3,
                Exit::Unavailable => 4,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }

    /// The process exit code (`main` only).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Prints a failed parse of the arguments and says its status: usage
    /// errors go to stderr with status 2; `--help` and `--version` to stdout
    /// with status 0 (clap says which).
    pub fn of_usage(e: &clap::Error) -> Exit {
        let _ = e.print();
        if e.use_stderr() {
            Exit::BadInput
        } else {
            Exit::Ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(
            [
                Exit::Ok,
                Exit::Failed,
                Exit::BadInput,
                Exit::Cut,
                Exit::Unavailable
            ]
            .map(Exit::code),
            [0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn bad_input_wins_then_cut_then_failed() {
        let all = [
            Exit::Ok,
            Exit::Failed,
            Exit::Cut,
            Exit::BadInput,
            Exit::Unavailable,
        ];
        for (i, &a) in all.iter().enumerate() {
            for (j, &b) in all.iter().enumerate() {
                assert_eq!(a.and(b), all[i.max(j)], "{a:?} and {b:?}");
            }
        }
    }
}
