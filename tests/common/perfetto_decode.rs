//! Decoding qtrace's Perfetto output in tests, shared by the library's
//! `tests/export/perfetto_export.rs` and the command's `cli/tests/export/perfetto_cli.rs`
//! (each uses this file as `common::…`): [`decode`] runs
//! `scripts/check-perfetto.py` (Perfetto's own schema); [`decode_slices`] is
//! a decoder of just the fields the writer uses, independent of the writer.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the check script; `None` (after saying why) when it cannot run here.
pub fn decode(trace: &Path, events: bool) -> Option<Value> {
    // The script is in the repository's `scripts/`: next to the library's
    // manifest, one level above the command's (`cli/`).
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = [manifest, manifest.parent().unwrap_or(manifest)]
        .iter()
        .map(|dir| dir.join("scripts/check-perfetto.py"))
        .find(|p| p.exists())
        .expect("scripts/check-perfetto.py is in the repository");
    let mut cmd = Command::new("python3");
    cmd.arg(script).arg(trace);
    if events {
        cmd.arg("--events");
    }
    let skip = |msg: &str| {
        assert!(
            std::env::var_os("QTRACE_REQUIRE_PERFETTO").is_none(),
            "{msg} (QTRACE_REQUIRE_PERFETTO is set)"
        );
        eprintln!("SKIPPED: {msg}");
    };
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            skip("python3 is not on PATH");
            return None;
        }
        Err(e) => panic!("cannot run python3: {e}"),
    };
    if out.status.code() == Some(3) {
        skip("the PyPI package `perfetto` is missing (pip install perfetto; scripts/test.sh installs it)");
        return None;
    }
    assert!(
        out.status.success(),
        "check-perfetto failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the script prints JSON"))
}

/// A decoder of just the fields the writer uses, independent of the writer's
/// encoder, for the property test (the Python check is too slow per case).
pub mod mini {
    pub fn varint(b: &[u8], at: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[*at];
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    /// (field, wire type, varint value or the bytes of a length-delimited field).
    pub fn fields(b: &[u8]) -> Vec<(u64, u64, u64, &[u8])> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < b.len() {
            let key = varint(b, &mut at);
            let (field, wt) = (key >> 3, key & 7);
            match wt {
                0 => {
                    let v = varint(b, &mut at);
                    out.push((field, wt, v, &b[..0]));
                }
                2 => {
                    let n = varint(b, &mut at) as usize;
                    out.push((field, wt, 0, &b[at..at + n]));
                    at += n;
                }
                // fixed64 (flow ids)
                1 => {
                    out.push((field, wt, 0, &b[at..at + 8]));
                    at += 8;
                }
                _ => panic!("unexpected wire type {wt}"),
            }
        }
        out
    }

    /// The trace's packets in order, each `compressed_packets` chunk (field
    /// 50, a zlib stream of `Trace.packet` entries) inflated in its place; a
    /// chunk packet holds nothing else. Also the number of chunks.
    pub fn packets(trace: &[u8]) -> (Vec<Vec<u8>>, usize) {
        let (mut out, mut chunks) = (Vec::new(), 0);
        for (field, wt, _, packet) in fields(trace) {
            assert_eq!((field, wt), (1, 2), "Trace.packet");
            let inner = fields(packet);
            match inner.iter().find(|f| f.0 == 50) {
                None => out.push(packet.to_vec()),
                Some(z) => {
                    assert_eq!(inner.len(), 1, "a chunk packet holds nothing else");
                    let plain = crate::common::inflate(z.3);
                    let (more, nested) = packets(&plain);
                    assert_eq!(nested, 0, "no chunk inside a chunk");
                    out.extend(more);
                    chunks += 1;
                }
            }
        }
        (out, chunks)
    }

    /// The packets of each `compressed_packets` chunk, chunk by chunk
    /// (packets outside chunks are left out).
    pub fn chunks(trace: &[u8]) -> Vec<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for (_, _, _, packet) in fields(trace) {
            if let Some(z) = fields(packet).iter().find(|f| f.0 == 50) {
                out.push(packets(&crate::common::inflate(z.3)).0);
            }
        }
        out
    }
}

/// (time, file order, track, type) of the slice begins and ends, the number
/// of instants, and the set of declared tracks.
/// A slice begin or end: (time, file order, track, type).
pub type SliceEdge = (u64, usize, u64, u64);

pub fn decode_slices(trace: &[u8]) -> (Vec<SliceEdge>, usize, Vec<u64>) {
    let (mut slices, mut instants, mut tracks) = (Vec::new(), 0, Vec::new());
    // Per packet sequence (field 10): its incremental clock and default track
    // (TracePacketDefaults 59 → TrackEventDefaults 11 → track_uuid 11).
    let mut seqs: std::collections::HashMap<u64, (u64, Option<u64>)> = Default::default();
    for (order, packet) in mini::packets(trace).0.iter().enumerate() {
        let fields = mini::fields(packet);
        let get = |f: u64| fields.iter().find(|x| x.0 == f);
        let seq = get(10).expect("a sequence id").2;
        if get(13).is_some_and(|flags| flags.2 & 1 == 1) {
            let default_track = get(59).and_then(|d| {
                let d = mini::fields(d.3);
                let ted = d.iter().find(|x| x.0 == 11)?;
                let ted = mini::fields(ted.3);
                ted.iter().find(|x| x.0 == 11).map(|x| x.2)
            });
            seqs.insert(seq, (0, default_track));
        }
        let state = seqs.get_mut(&seq).expect("sequence state cleared first");
        if let Some(d) = get(60) {
            tracks.push(mini::fields(d.3).iter().find(|x| x.0 == 1).unwrap().2);
            continue;
        }
        let Some(te) = get(11) else { continue };
        let ts = get(8).expect("a timestamp").2;
        let t = match get(58) {
            Some(c) => {
                assert_eq!(c.2, 6, "absolute times are BOOTTIME");
                ts
            }
            None => {
                state.0 += ts;
                state.0
            }
        };
        let te = mini::fields(te.3);
        let ty = te.iter().find(|x| x.0 == 9).unwrap().2;
        let track = te
            .iter()
            .find(|x| x.0 == 11)
            .map(|x| x.2)
            .or(state.1)
            .expect("a track or a default track");
        assert!(
            tracks.contains(&track),
            "track {track} used before it is declared"
        );
        match ty {
            1 | 2 => slices.push((t, order, track, ty)),
            3 => instants += 1,
            4 => {}
            other => panic!("type {other}"),
        }
    }
    (slices, instants, tracks)
}
