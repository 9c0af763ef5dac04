#!/usr/bin/env python3
"""Where the bytes of a Perfetto trace written by `qtrace convert --to perfetto`
go, and what one packet sequence per source would save (BENCHMARKS.md,
"Perfetto bytes"). Needs the PyPI `perfetto` package (its protobuf bindings).

    scripts/perfetto-bytes.py TRACE.pftrace EVENTS

EVENTS is the number of records converted (events + hoops), for bytes an event.

The simulation moves every packet on a source's track to a sequence of that
source, whose TrackEventDefaults name the track (its `track_uuid` goes) and
whose incremental clock counts from the same sequence's previous packet; a
packet on another track (task, task/semaphore, counter) goes on the sequence of
the latest source packet and keeps its `track_uuid`; a packet earlier than its
sequence's clock carries an absolute BOOTTIME time. The extra first packet of
each sequence (about 40 bytes) is left out.
"""

import collections
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:
    print("perfetto-bytes: the PyPI package `perfetto` is missing (pip install perfetto)", file=sys.stderr)
    sys.exit(3)

TYPES = {1: "slice begin", 2: "slice end", 3: "instant", 4: "counter"}


def vlen(v):
    n = 1
    while v >= 128:
        v >>= 7
        n += 1
    return n


def main():
    trace = pb.Trace()
    with open(sys.argv[1], "rb") as f:
        trace.ParseFromString(f.read())
    events = int(sys.argv[2])
    kinds = collections.defaultdict(lambda: [0, 0])
    source_tracks = set()
    clock = 0
    last = {}
    seq = None
    before = after = 0
    for p in trace.packet:
        body = len(p.SerializeToString())
        size = body + 1 + vlen(body)
        before += size
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.name.startswith("source ") or d.name == "tracer":
                source_tracks.add(d.uuid)
        if not p.HasField("track_event"):
            kinds["other"][0] += 1
            kinds["other"][1] += size
            after += size
            continue
        e = p.track_event
        absolute = p.HasField("timestamp_clock_id")
        kind = TYPES[e.type]
        if e.type == 3:
            kind += f" with {len(e.debug_annotations)} argument(s)"
        if absolute:
            kind += ", absolute time"
        kinds[kind][0] += 1
        kinds[kind][1] += size
        if absolute:
            ts = p.timestamp
        else:
            clock += p.timestamp
            ts = clock
        new = body
        if e.track_uuid in source_tracks:
            seq = e.track_uuid
            new -= 1 + vlen(e.track_uuid)
        if not absolute:
            prev = last.get(seq, 0)
            if ts >= prev:
                new += vlen(ts - prev) - vlen(p.timestamp)
                last[seq] = ts
            else:
                new += 3 + vlen(ts) - vlen(p.timestamp)
        after += new + 1 + vlen(new)
    for kind, (count, size) in sorted(kinds.items()):
        print(f"{kind:40s} {count:9d} packets {size / count:6.2f} B each {size / events:6.2f} B/event")
    print(f"total {before} B = {before / events:.2f} B/event")
    print(f"one sequence per source (simulated): {after} B = {after / events:.2f} B/event")


if __name__ == "__main__":
    main()
