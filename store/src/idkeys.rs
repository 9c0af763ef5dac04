//! A run's name keys by event id: its class and event keys as the events
//! rows hold them, cached per id looked up. Ids below [`LOW`] (the built-in
//! ones and the first user-defined ones, what real streams log) are indexed
//! directly, grown to the largest used; the ids above in blocks of
//! [`BLOCK`], made when an id of the block is first looked up. A stream that
//! logs event id 0xffff takes two blocks' worth (4 KiB), not 512 KiB (an
//! index of every id up to it); a stream of ids below 0x100 pays one compare
//! a record for it.

/// Keys of an id not looked up yet (a key is -1 or more).
const UNSEEN: [i32; 2] = [i32::MIN; 2];

/// Ids below this are indexed directly.
pub(crate) const LOW: usize = 0x100;
/// Ids per block above [`LOW`].
pub(crate) const BLOCK: usize = 0x100;

type Block = [[i32; 2]; BLOCK];

/// The class and event keys (-1: none) of the ids looked up.
#[derive(Debug, Default)]
pub(crate) struct IdKeys {
    /// Ids below [`LOW`], up to the largest looked up.
    low: Vec<[i32; 2]>,
    /// Block `b` holds ids `(b + 1) × BLOCK ..`; up to the largest used.
    high: Vec<Option<Box<Block>>>,
}

impl IdKeys {
    /// The keys of `id`, if looked up.
    #[inline]
    pub(crate) fn get(&self, id: u16) -> Option<[i32; 2]> {
        let i = id as usize;
        let k = if i < LOW {
            *self.low.get(i)?
        } else {
            self.get_high(i)?
        };
        (k != UNSEEN).then_some(k)
    }

    #[inline(never)]
    fn get_high(&self, i: usize) -> Option<[i32; 2]> {
        let block = self.high.get(i / BLOCK - 1)?.as_ref()?;
        Some(block[i % BLOCK])
    }

    /// Keeps the keys of `id`.
    pub(crate) fn insert(&mut self, id: u16, keys: [i32; 2]) {
        let i = id as usize;
        if i < LOW {
            if self.low.len() <= i {
                // Doubling, but never past LOW ids.
                let want = (2 * self.low.len()).clamp(i + 1, LOW);
                self.low.reserve_exact(want - self.low.len());
                self.low.resize(i + 1, UNSEEN);
            }
            self.low[i] = keys;
        } else {
            let b = i / BLOCK - 1;
            if self.high.len() <= b {
                self.high.reserve_exact(b + 1 - self.high.len());
                self.high.resize_with(b + 1, || None);
            }
            let block = self.high[b].get_or_insert_with(|| Box::new([UNSEEN; BLOCK]));
            block[i % BLOCK] = keys;
        }
    }

    /// Forgets every id's keys (their names changed), keeping the room.
    pub(crate) fn clear(&mut self) {
        self.low.fill(UNSEEN);
        for block in self.high.iter_mut().flatten() {
            block.fill(UNSEEN);
        }
    }

    /// The heap held, in bytes.
    #[cfg(test)]
    fn heap(&self) -> usize {
        self.low.capacity() * 8
            + self.high.capacity() * 8
            + self.high.iter().flatten().count() * size_of::<Block>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_keeps_its_own_keys() {
        let mut k = IdKeys::default();
        let ids = [
            0u16, 1, 0x0b, 0xff, 0x100, 0x1ff, 0x200, 0x7fff, 0xfffe, 0xffff,
        ];
        for &id in &ids {
            assert_eq!(k.get(id), None);
        }
        for (n, &id) in ids.iter().enumerate() {
            k.insert(id, [n as i32, -1]);
        }
        for (n, &id) in ids.iter().enumerate() {
            assert_eq!(k.get(id), Some([n as i32, -1]), "{id:#x}");
        }
        // Neighbours in the same blocks were not looked up.
        for id in [2u16, 0xfe, 0x101, 0x201, 0xfffd] {
            assert_eq!(k.get(id), None, "{id:#x}");
        }
        k.clear();
        for &id in &ids {
            assert_eq!(k.get(id), None);
        }
    }

    #[test]
    fn the_room_taken_follows_the_blocks_used() {
        let mut k = IdKeys::default();
        for id in 0..0x17 {
            k.insert(id, [0, 0]);
        }
        // Doubling, never 2 × what is used.
        assert!(k.heap() <= 2 * 8 * 0x17, "{}", k.heap());
        for id in 0x17..0x100 {
            k.insert(id, [0, 0]);
        }
        // Every low id: LOW entries, not a doubling past them.
        let low = k.heap();
        assert_eq!(low, 8 * LOW);
        k.insert(0xffff, [1, 1]);
        assert_eq!(k.heap(), low + 8 * 255 + 8 * BLOCK);
        k.insert(0xff00, [1, 1]);
        k.insert(0x8000, [1, 1]);
        assert_eq!(k.heap(), low + 8 * 255 + 2 * 8 * BLOCK);
    }
}
