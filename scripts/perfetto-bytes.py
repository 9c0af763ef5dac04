#!/usr/bin/env python3
"""Where the bytes of a Perfetto trace written by `qtrace convert --to perfetto`
go, and what each further lever would save (docs/benchmarks-history.md, "Perfetto bytes").
The trace is written with one packet sequence per source, whose
TrackEventDefaults name the source's track.
Needs the PyPI `perfetto` package (its protobuf bindings).

    scripts/perfetto-bytes.py TRACE.pftrace EVENTS

EVENTS is the number of records converted (events + hoops), for bytes an event.
Packets inside `compressed_packets` chunks are inflated and measured as
they would be written uncompressed (`PerfettoWriter::with_compression(false)`).

Each lever is simulated on the written packets (re-encoded sizes, packet
header included), alone and all together:

- `class in the name`: no `category_iids`; the event name is `class:name`
  (interned once, like now). Loses Perfetto's category column.
- `arguments as counters`: every debug annotation of an instant becomes one
  `extra_counter_values` entry (field 12, unpacked: key + varint) on counter
  tracks named in the sequence's TrackEventDefaults. Loses the arguments as
  arguments of the event (they become counter samples at its time) and every
  value above 2^53 (the trace processor stores counters as doubles).
- `no task tracks`: the `task N` running slices' copies on the task's track
  go. Loses the per-task view the issue asks for.
- `no semaphore sources`: the `source` / `signal source` annotations of a
  semaphore slice's begin and end go. Loses which source logged the wait and
  the signal.
"""

import sys
import zlib

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:
    print("perfetto-bytes: the PyPI package `perfetto` is missing (pip install perfetto)", file=sys.stderr)
    sys.exit(3)

TYPES = {1: "slice begin", 2: "slice end", 3: "instant", 4: "counter"}
LEVERS = ["class in the name", "arguments as counters",
          "no task tracks", "no semaphore sources"]



def inner_packets(trace):
    """The trace's packets, those of each `compressed_packets` chunk (a zlib
    stream of `Trace.packet` entries, as Perfetto's service writes it) in its
    place. A chunk packet must hold nothing else."""
    for p in trace.packet:
        if not p.HasField("compressed_packets"):
            yield p
            continue
        chunk = pb.Trace()
        chunk.ParseFromString(zlib.decompress(p.compressed_packets))
        p.ClearField("compressed_packets")
        if p.ListFields():
            raise SystemExit(f"a compressed_packets packet also holds {[f.name for f, _ in p.ListFields()]}")
        yield from chunk.packet

def vlen(v):
    n = 1
    while v >= 128:
        v >>= 7
        n += 1
    return n


def field_len(body):
    """Size of a length-delimited field with a 1-byte key."""
    return 1 + vlen(body) + body


def main():
    trace = pb.Trace()
    with open(sys.argv[1], "rb") as f:
        trace.ParseFromString(f.read())
    events = int(sys.argv[2])
    kinds = {}
    tracks = {}  # uuid -> (name, parent)
    default_track = {}  # sequence id -> its TrackEventDefaults.track_uuid
    total = 0
    alone = {lever: 0 for lever in LEVERS}
    together = 0
    for p in inner_packets(trace):
        body = len(p.SerializeToString())
        size = 1 + vlen(body) + body
        total += size
        ted = p.trace_packet_defaults.track_event_defaults
        if ted.HasField("track_uuid"):
            default_track[p.trusted_packet_sequence_id] = ted.track_uuid
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            tracks[d.uuid] = (d.name, d.parent_uuid if d.HasField("parent_uuid") else None)
        if not p.HasField("track_event"):
            kinds.setdefault("other", [0, 0])
            kinds["other"][0] += 1
            kinds["other"][1] += size
            for lever in LEVERS:
                alone[lever] += size
            together += size
            continue
        e = p.track_event
        absolute = p.HasField("timestamp_clock_id")
        kind = TYPES[e.type]
        if len(e.debug_annotations):
            kind += f" with {len(e.debug_annotations)} argument(s)"
        if absolute:
            kind += ", absolute time"
        kinds.setdefault(kind, [0, 0])
        kinds[kind][0] += 1
        kinds[kind][1] += size
        track = e.track_uuid if e.HasField("track_uuid") else default_track[p.trusted_packet_sequence_id]
        track_name, parent = tracks[track]
        te = len(e.SerializeToString())

        # Savings inside the track event (te) and in the packet (pk), per lever.
        saved_te = {lever: 0 for lever in LEVERS}
        saved_pk = {lever: 0 for lever in LEVERS}
        for c in e.category_iids:
            saved_te["class in the name"] += 1 + vlen(c)
        if e.type == 3:
            for a in e.debug_annotations:
                ann = len(a.SerializeToString())
                saved_te["arguments as counters"] += field_len(ann) - (1 + vlen(a.uint_value))
        is_task_track = parent is None and track_name.startswith("task ")
        dropped = e.type in (1, 2) and is_task_track
        if e.type in (1, 2) and " sem " in track_name:
            for a in e.debug_annotations:
                saved_te["no semaphore sources"] += field_len(len(a.SerializeToString()))

        def resize(te_saved, pk_saved):
            new_te = te - te_saved
            new_body = body - (field_len(te) - field_len(new_te)) - pk_saved
            return 1 + vlen(new_body) + new_body

        for lever in LEVERS:
            if lever == "no task tracks" and dropped:
                continue
            alone[lever] += resize(saved_te[lever], saved_pk[lever])
        if not dropped:
            together += resize(sum(saved_te.values()), sum(saved_pk.values()))
    for kind, (count, size) in sorted(kinds.items()):
        print(f"{kind:48s} {count:9d} packets {size / count:6.2f} B each {size / events:6.2f} B/event")
    print(f"total {total} B = {total / events:.2f} B/event")
    for lever in LEVERS:
        print(f"lever {lever:30s} {alone[lever]:11d} B = {alone[lever] / events:6.2f} B/event"
              f" ({(alone[lever] - total) / events:+.2f})")
    print(f"all levers together {together:22d} B = {together / events:6.2f} B/event"
          f" ({(together - total) / events:+.2f})")


if __name__ == "__main__":
    main()
