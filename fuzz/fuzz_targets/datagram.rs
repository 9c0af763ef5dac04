//! Datagram bytes into the checked view: never a panic, and every datagram it
//! accepts re-encodes to the same bytes (up to ignored flag and reserved bits).
//! Keyed datagrams (FORMAT.md 2.6): a version 2 input is checked under the
//! target's key (its fields, its tag, the version 1 datagram it carries),
//! and every version 1 datagram accepted is keyed and checked back: the tag
//! verifies, one bit changed does not, and the datagram comes back whole.
//! Compact datagrams (FORMAT.md 2.7, versions 3 and 4) take the same path:
//! every one accepted has exactly `count` records, which re-encode (as many
//! as fit) into a compact datagram that decodes to the same records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::wire::datagram::{self, keyed, CatalogAssembler, DatagramKind, DatagramView};
use qtrace::wire::DatagramKey;

fuzz_target!(|data: &[u8]| {
    let key = DatagramKey::from_bytes([0x5a; 32]);
    if data.len() >= 6 && data[..4] == *b"QTRU" && (data[4..6] == [0, 2] || data[4..6] == [0, 4]) {
        let Ok((id, _session)) = keyed::keyed_fields(data) else {
            return;
        };
        let mut inner = Vec::new();
        keyed::unkeyed_into(data, &mut inner);
        assert_eq!(inner.len(), data.len() - keyed::KEYED_OVERHEAD);
        if keyed::verify(&key, data) {
            assert_eq!(id, key.id(), "a tag verified under a key of another id");
        }
        let _ = DatagramView::new_checked(&inner[..]);
        return;
    }
    let Ok(view) = DatagramView::new_checked(data) else {
        return;
    };
    if data.len() + keyed::KEYED_OVERHEAD <= datagram::MAX_DATAGRAM_LEN {
        let mut sealed = data.to_vec();
        sealed.resize(data.len() + keyed::KEYED_OVERHEAD, 0);
        let len = keyed::seal(&key, 7, &mut sealed, data.len()).expect("room to key it");
        assert!(keyed::verify(&key, &sealed[..len]));
        assert_eq!(keyed::keyed_fields(&sealed[..len]), Ok((key.id(), 7)));
        let mut back = Vec::new();
        keyed::unkeyed_into(&sealed[..len], &mut back);
        let mut plain = data.to_vec();
        plain[14] = 0; // the reserved field carries the key id
        plain[15] = 0;
        assert_eq!(back, plain);
        let bit = data.len() % len;
        sealed[bit] ^= 0x80;
        assert!(!keyed::verify(&key, &sealed[..len]));
    }
    let h = view.header();
    let mut canonical = data.to_vec();
    canonical[7] = 0; // flags
    canonical[14] = 0; // reserved
    canonical[15] = 0;
    match view.kind() {
        DatagramKind::Events if view.is_compact() => {
            let events: Vec<_> = view.events().collect();
            assert_eq!(events.len(), view.count() as usize);
            let mut raw = Vec::new();
            assert_eq!(view.records_into(&mut raw), events.len());
            assert_eq!(raw.len(), 32 * events.len());
            let mut buf = vec![0u8; datagram::MAX_DATAGRAM_LEN];
            let mut enc = datagram::CompactEventsEncoder::new(
                &mut buf,
                h.sender,
                h.sequence,
                h.dropped,
                h.first_event,
            )
            .expect("room for a datagram");
            // As many as fit (the writer's encoding of a record may be
            // longer than the one accepted): they decode to the same.
            let fit = events.iter().take_while(|e| enc.push(e)).count();
            let len = enc.finish();
            let again = DatagramView::new_checked(&buf[..len]).expect("re-encoded datagram checks");
            assert_eq!(again.record_count(), fit);
            assert!(again.events().eq(events[..fit].iter().copied()));
        }
        DatagramKind::Events => {
            let events: Vec<_> = view.events().collect();
            assert_eq!(events.len(), view.count() as usize);
            assert_eq!(data.len(), 40 + 32 * events.len());
            if !events.is_empty() {
                let mut buf = vec![0u8; data.len()];
                let (len, n) = datagram::encode_events(
                    &mut buf,
                    h.sender,
                    h.sequence,
                    h.dropped,
                    h.first_event,
                    &events,
                )
                .expect("room for the records");
                assert_eq!((len, n), (data.len(), events.len()));
                assert_eq!(buf, canonical);
            }
        }
        DatagramKind::Catalog => {
            let f = view.fragment().expect("a catalog datagram has a fragment");
            assert_eq!(f.bytes.len(), view.count() as usize);
            assert!(f.offset as usize + f.bytes.len() <= f.total_len as usize);
            let mut asm = CatalogAssembler::new();
            let _ = asm.push(&f);
        }
        DatagramKind::Close => {
            let counts = view.close().expect("a close datagram has counts");
            assert_eq!(data.len(), 56);
            let mut buf = vec![0u8; 56];
            let len = datagram::encode_close(
                &mut buf,
                h.sender,
                h.sequence,
                h.dropped,
                h.first_event,
                counts,
            )
            .expect("room for a close datagram");
            assert_eq!(len, 56);
            assert_eq!(buf, canonical);
        }
    }
});
