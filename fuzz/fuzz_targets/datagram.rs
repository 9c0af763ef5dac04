//! Datagram bytes into the checked view: never a panic, and every datagram it
//! accepts re-encodes to the same bytes (up to ignored flag and reserved bits).
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::wire::datagram::{self, CatalogAssembler, DatagramKind, DatagramView};

fuzz_target!(|data: &[u8]| {
    let Ok(view) = DatagramView::new_checked(data) else {
        return;
    };
    let h = view.header();
    let mut canonical = data.to_vec();
    canonical[7] = 0; // flags
    canonical[14] = 0; // reserved
    canonical[15] = 0;
    match view.kind() {
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
