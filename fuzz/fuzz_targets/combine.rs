//! Arbitrary records into the combine-run assembler: never a panic, bounded
//! memory, every record that is not part of a run passes through in order,
//! and a payload reported whole is consistent with its begin record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::combine::{self, Assembler, Item, PayloadState, MAX_PAYLOAD};
use qtrace::Event;

fuzz_target!(|data: &[u8]| {
    let records: Vec<Event> = data
        .chunks_exact(32)
        .map(|c| {
            let w = |i: usize| u64::from_be_bytes(c[i * 8..i * 8 + 8].try_into().unwrap());
            Event::from_words([w(0), w(1), w(2), w(3)])
        })
        .collect();
    let mut items = Vec::new();
    let mut asm = Assembler::new();
    for e in &records {
        asm.push(*e, &mut |i| items.push(i));
    }
    asm.finish(&mut |i| items.push(i));
    let plain: Vec<Event> = records.iter().copied().filter(|e| !combine::is_combine(e)).collect();
    let passed: Vec<Event> = items
        .iter()
        .filter_map(|i| match i {
            Item::Event(e) => Some(*e),
            Item::Payload(_) => None,
        })
        .collect();
    assert_eq!(plain, passed);
    let mut run_records = 0u64;
    for item in &items {
        let Item::Payload(p) = item else { continue };
        match p.state {
            PayloadState::Complete | PayloadState::Mismatch => {
                let logged = p.logged_len.expect("a whole run has its begin record") as usize;
                assert_eq!(p.bytes.len(), logged.min(MAX_PAYLOAD));
                assert!(p.arg.is_some());
                run_records += combine::records_for(p.bytes.len()) as u64;
                if p.state == PayloadState::Complete {
                    // Whole means: re-recording it gives the same checksum
                    // as the begin record had (the assembler checked it).
                    let again = combine::Run::new(p.time, p.id, p.source, p.arg.unwrap(), &p.bytes);
                    assert_eq!(again.len(), combine::records_for(p.bytes.len()));
                }
            }
            PayloadState::Cut { received, expected } => {
                assert!(received >= 1);
                if let Some(n) = expected {
                    assert!(n as usize <= combine::MAX_RECORDS);
                    assert!(p.bytes.len() <= MAX_PAYLOAD);
                }
                run_records += received as u64;
            }
        }
    }
    // Every run record is accounted for in exactly one payload.
    assert_eq!(run_records + plain.len() as u64, records.len() as u64);
});
