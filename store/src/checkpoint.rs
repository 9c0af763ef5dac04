//! What a store holds for good of the streams still under way
//! (`DIR/open-streams`, FORMAT.md 7.1): rewritten each time a part set is
//! whole on disk, read by the next receiver on the folder. A receiver
//! killed mid-stream leaves it; the next one marks each stream listed
//! `unclosed`, and when the same sender (address and id) goes on, counts
//! as lost only what the folder does not hold.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;

use crate::error::StoreError;

/// The file's name in the store's folder.
pub(crate) const NAME: &str = "open-streams";
/// Its first line.
const FIRST_LINE: &str = "qtrace open streams 1";

/// One stream under way: what its closed parts hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its last `streams` row (verdict `unclosed`) is written already: the
    /// receiver stopped normally while the stream was under way (`unclosed`
    /// in the file; `open`: not, it was killed).
    pub(crate) marked: bool,
    /// Its `events` rows plus the counts of its `losses` rows, in the part
    /// sets closed (on disk, whole).
    pub(crate) stored: u64,
    /// The next `seq` of its run after those parts.
    pub(crate) seq: u64,
    /// The greatest `time_ns` of its rows in them (0: none).
    pub(crate) last_ns: u64,
    /// The sender id.
    pub(crate) sender: u32,
    /// Where its datagrams came from.
    pub(crate) addr: SocketAddr,
    /// Its `run` (7.3).
    pub(crate) run: String,
    /// Part sets it wrote to that were still closing: (number, events +
    /// losses, next `seq`, greatest `time_ns`). Whole on disk if the part
    /// is there and no temp of it.
    pub(crate) closing: Vec<(u64, u64, u64, u64)>,
}

impl Entry {
    /// Adds what the sets still closing hold of it, for those of
    /// `whole` (part numbers whole on disk).
    pub(crate) fn settle(&mut self, whole: &[u64]) {
        for &(n, amount, seq, last) in &self.closing {
            if whole.contains(&n) {
                self.stored = self.stored.saturating_add(amount);
                self.seq = self.seq.max(seq);
                self.last_ns = self.last_ns.max(last);
            }
        }
        self.closing.clear();
    }
}

/// What the folder holds of one stream: in the part sets closed, and in
/// those written but still closing (whole only once renamed into place).
#[derive(Clone, Debug, Default)]
pub(crate) struct Kept {
    /// Events rows plus losses counts in the sets closed.
    pub(crate) stored: u64,
    /// The next `seq` after them, and their greatest `time_ns`.
    pub(crate) seq: u64,
    pub(crate) last_ns: u64,
    /// Per set still closing: its number, events + losses, next `seq`,
    /// greatest `time_ns`.
    closing: Vec<(u64, u64, u64, u64)>,
}

impl Kept {
    /// A stream of which the folder holds `stored` already (an earlier
    /// receiver's part of it).
    pub(crate) fn holding(stored: u64) -> Self {
        Kept {
            stored,
            ..Kept::default()
        }
    }

    /// The stream's streams row for part set `number` was written: `amount`
    /// events + losses, `seq` the next, `last_ns` the greatest time.
    pub(crate) fn written(&mut self, number: u64, amount: u64, seq: u64, last_ns: Option<u64>) {
        let last = last_ns.unwrap_or(0);
        match self.closing.iter_mut().find(|c| c.0 == number) {
            Some(c) => {
                c.1 = c.1.saturating_add(amount);
                c.2 = c.2.max(seq);
                c.3 = c.3.max(last);
            }
            None => self.closing.push((number, amount, seq, last)),
        }
    }

    /// Part set `number` is whole on disk.
    pub(crate) fn closed(&mut self, number: u64) {
        self.closing.retain(|&(n, amount, seq, last)| {
            if n != number {
                return true;
            }
            self.stored = self.stored.saturating_add(amount);
            self.seq = self.seq.max(seq);
            self.last_ns = self.last_ns.max(last);
            false
        });
    }

    /// The sets still closing, as `open-streams` lists them.
    pub(crate) fn closing(&self) -> Vec<(u64, u64, u64, u64)> {
        self.closing.clone()
    }

    /// Events and losses written to sets not (yet) whole on disk.
    pub(crate) fn not_whole(&self) -> u64 {
        self.closing.iter().fold(0u64, |n, c| n.saturating_add(c.1))
    }

    /// Whether every set it wrote to is whole on disk.
    pub(crate) fn settled(&self) -> bool {
        self.closing.is_empty()
    }
}

/// The file's text: its first line, then one line per entry, fields
/// separated by one tab (the run last: it holds no tab nor newline).
pub(crate) fn encode(entries: &[Entry]) -> String {
    let mut out = String::from(FIRST_LINE);
    out.push('\n');
    for e in entries {
        let closing: Vec<String> = e
            .closing
            .iter()
            .map(|(n, a, s, l)| format!("{n}:{a}:{s}:{l}"))
            .collect();
        let closing = if closing.is_empty() {
            "-".to_string()
        } else {
            closing.join(",")
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            if e.marked { "unclosed" } else { "open" },
            e.stored,
            e.seq,
            e.last_ns,
            closing,
            e.sender,
            e.addr,
            e.run
        ));
    }
    out
}

/// Reads the file's text; `Err` names the line at fault.
pub(crate) fn decode(text: &str) -> Result<Vec<Entry>, String> {
    let mut lines = text.split_terminator('\n');
    if lines.next() != Some(FIRST_LINE) {
        return Err(format!("line 1 is not \"{FIRST_LINE}\""));
    }
    let mut entries = Vec::new();
    for (i, line) in lines.enumerate() {
        let bad = |what: &str| format!("line {}: {what}", i + 2);
        let f: Vec<&str> = line.splitn(8, '\t').collect();
        let [state, stored, seq, last_ns, closing, sender, addr, run] = f[..] else {
            return Err(bad("not 8 fields separated by tabs"));
        };
        let marked = match state {
            "open" => false,
            "unclosed" => true,
            _ => return Err(bad("the state is neither open nor unclosed")),
        };
        let number = |s: &str, what: &str| s.parse::<u64>().map_err(|_| bad(what));
        if run.is_empty() || run.contains(['\t', '\r']) {
            return Err(bad("the run is empty or holds a tab"));
        }
        let mut sets = Vec::new();
        if closing != "-" {
            for set in closing.split(',') {
                let n: Vec<&str> = set.split(':').collect();
                let [a, b, c, d] = n[..] else {
                    return Err(bad("a closing set is not N:AMOUNT:SEQ:LAST_NS"));
                };
                let what = "a closing set holds a field that is not a number";
                sets.push((
                    number(a, what)?,
                    number(b, what)?,
                    number(c, what)?,
                    number(d, what)?,
                ));
            }
        }
        entries.push(Entry {
            marked,
            stored: number(stored, "stored is not a number")?,
            seq: number(seq, "seq is not a number")?,
            last_ns: number(last_ns, "last_ns is not a number")?,
            sender: sender
                .parse()
                .map_err(|_| bad("the sender id is not a u32"))?,
            addr: addr.parse().map_err(|_| bad("not an address (ip:port)"))?,
            run: run.to_string(),
            closing: sets,
        });
    }
    Ok(entries)
}

/// Reads `root`'s file: none when there is none.
///
/// # Errors
/// [`StoreError`] when it cannot be read or is not such a file.
pub(crate) fn read(root: &Path) -> Result<Vec<Entry>, StoreError> {
    // A receiver killed while writing the file leaves its temp: the file
    // itself is the old one or the new one, whole; the temp goes.
    let _ = std::fs::remove_file(root.join(format!(".{NAME}.tmp")));
    let path = root.join(NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("read", &path, e)),
    };
    decode(&text).map_err(|why| {
        StoreError::io(
            "read (move it away to start without it)",
            &path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, why),
        )
    })
}

/// Writes `root`'s file: a temp beside it, fsynced, renamed over it (a
/// reader sees the old file or the new one); none when `entries` is empty.
///
/// # Errors
/// [`StoreError`] when it cannot be written.
pub(crate) fn write(root: &Path, entries: &[Entry]) -> Result<(), StoreError> {
    let path = root.join(NAME);
    if entries.is_empty() {
        return match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove", &path, e)),
        };
    }
    let temp = root.join(format!(".{NAME}.tmp"));
    let written = std::fs::File::create(&temp)
        .and_then(|mut f| {
            f.write_all(encode(entries).as_bytes())
                .and_then(|()| f.sync_data())
        })
        .and_then(|()| std::fs::rename(&temp, &path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        StoreError::io("write", &path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_written_and_read_back_and_bad_lines_named() {
        let e = Entry {
            marked: false,
            stored: 1200,
            seq: 1203,
            last_ns: 99,
            sender: 7,
            addr: "127.0.0.1:40000".parse().unwrap(),
            run: "127.0.0.1:40000/7/1795000000000.1".into(),
            closing: vec![(4, 10, 1213, 120), (5, 3, 1216, 130)],
        };
        let text = encode(std::slice::from_ref(&e));
        assert_eq!(
            text,
            "qtrace open streams 1\nopen\t1200\t1203\t99\t4:10:1213:120,5:3:1216:130\t7\t127.0.0.1:40000\t127.0.0.1:40000/7/1795000000000.1\n"
        );
        assert_eq!(decode(&text), Ok(vec![e.clone()]));
        // FORMAT.md 7.1's example, byte for byte (indented in its list).
        let format_md = include_str!("../../FORMAT.md");
        let indented: String = text.lines().map(|l| format!("  {l}\n")).collect();
        assert!(format_md.contains(&indented), "FORMAT.md 7.1: {indented}");
        // Part set 4 is whole on disk, 5 is not.
        let mut settled = e;
        settled.settle(&[3, 4]);
        assert_eq!(
            (settled.stored, settled.seq, settled.last_ns),
            (1210, 1213, 120)
        );
        assert_eq!(
            decode("qtrace open streams 2\n").unwrap_err(),
            "line 1 is not \"qtrace open streams 1\""
        );
        assert_eq!(
            decode("qtrace open streams 1\nopen\t1\t2\t3\t-\t4\t127.0.0.1:1\n").unwrap_err(),
            "line 2: not 8 fields separated by tabs"
        );
        assert_eq!(
            decode("qtrace open streams 1\nopen\t1\t2\t3\t-\t-4\t127.0.0.1:1\tr\n").unwrap_err(),
            "line 2: the sender id is not a u32"
        );
        assert_eq!(
            decode("qtrace open streams 1\nopen\t1\t2\t3\t4:5\t4\t127.0.0.1:1\tr\n").unwrap_err(),
            "line 2: a closing set is not N:AMOUNT:SEQ:LAST_NS"
        );
        assert_eq!(
            decode("qtrace open streams 1\nshut\t1\t2\t3\t-\t4\t127.0.0.1:1\tr\n").unwrap_err(),
            "line 2: the state is neither open nor unclosed"
        );
    }
}
