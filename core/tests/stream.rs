//! FORMAT.md 10's worked example, byte for byte: a chunk frame and the end
//! frame, written by `encode_frame`, decoded back by `FrameDecoder`.

mod common;
use common::{format_md_example, unhex};

use qtrace_core::compact::{Chunk, ChunkEncoder, ChunkHeader};
use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
use qtrace_core::stream::{encode_frame, Crc32, FrameDecoder, FrameKind};
use qtrace_core::{Event, EventId};

/// FORMAT.md 10.6: the hex below is the document's.
const EXAMPLE: &str = "
0000: 00 06 02 51 54 52 5a 02 01 02 02 01 01 02 2a 01
0010: 01 02 09 01 01 01 01 01 01 02 05 01 01 01 01 01
0020: 01 02 78 01 01 01 01 01 01 02 03 01 01 01 01 01
0030: 05 03 e8 fc 02 01 0a 07 04 fa 01 08 ca e9 64 5c
0040: 00 06 03 51 54 52 55 03 01 03 01 01 01 02 2a 01
0050: 01 01 01 01 01 01 01 01 01 02 06 01 01 01 01 01
0060: 01 02 03 01 01 01 01 01 01 02 7a 01 01 01 01 01
0070: 01 02 7d 01 01 01 01 01 01 01 05 b3 b4 bc a1 00
";

fn events() -> [Event; 2] {
    [
        Event::new(1000, EventId(2), 0, [7, 0]),
        Event::new(1250, EventId(2), 0, [8, 0]),
    ]
}

#[test]
fn the_worked_example_is_byte_exact_with_format_md() {
    assert_eq!(unhex(&format_md_example("stream-frames")), unhex(EXAMPLE));
    assert_eq!(Crc32::of(b"123456789"), 0xcbf4_3926);

    let mut buf = [0u8; 128];
    let h = ChunkHeader {
        sender: 0x2a,
        sequence: 5,
        first_event: 120,
        dropped: 3,
        base_time: 0,
    };
    let mut enc = ChunkEncoder::new(&mut buf, h).unwrap();
    for e in &events() {
        enc.push(e).unwrap();
    }
    let n = enc.finish();
    let chunk = &buf[..n];
    assert_eq!(n, 57);

    let close = DatagramHeader {
        kind: DatagramKind::Close,
        sender: 0x2a,
        sequence: 6,
        dropped: 3,
        first_event: 122,
    };
    let mut end = [0u8; 56];
    close.emit(0, (&mut end[..40]).try_into().unwrap());
    end[40..48].copy_from_slice(&125u64.to_be_bytes());

    let mut stream = vec![0u8];
    let mut out = [0u8; 128];
    let k = encode_frame(FrameKind::Chunk, chunk, &mut out).unwrap();
    assert_eq!(k, 64);
    stream.extend_from_slice(&out[..k]);
    let k = encode_frame(FrameKind::End, &end, &mut out).unwrap();
    stream.extend_from_slice(&out[..k]);
    assert_eq!(stream, unhex(EXAMPLE));

    // And back.
    let mut dbuf = [0u8; 128];
    let mut d = FrameDecoder::new(&mut dbuf);
    let mut got = Vec::new();
    d.feed(&stream, |f| {
        let f = f.unwrap();
        got.push((f.kind, f.body.to_vec()));
    });
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].0, &got[0].1[..]), (FrameKind::Chunk, chunk));
    assert_eq!((got[1].0, &got[1].1[..]), (FrameKind::End, &end[..]));
    let c = Chunk::new_checked(&got[0].1).unwrap();
    let back: Vec<Event> = c.records().map(|r| r.unwrap()).collect();
    assert_eq!(back, events());
    // One byte changed: a bad CRC, counted; the next frame still decodes.
    let mut bad = stream.clone();
    bad[0x22] ^= 0x01; // first event 120 becomes 121
    let mut dbuf = [0u8; 128];
    let mut d = FrameDecoder::new(&mut dbuf);
    let mut kinds = Vec::new();
    d.feed(&bad, |f| kinds.push(f.map(|f| f.kind).map_err(|_| ())));
    assert_eq!(kinds, [Err(()), Ok(FrameKind::End)]);
}
