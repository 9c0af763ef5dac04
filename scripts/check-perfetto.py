#!/usr/bin/env python3
"""Decodes a Perfetto trace written by `qtrace convert --to perfetto` with
Perfetto's own schema (the PyPI `perfetto` package's protobuf bindings; its
trace processor needs a download and is not used) and checks it:

- every packet parses as perfetto.protos.TracePacket;
- timestamps: the incremental clock 64 (deltas) and absolute BOOTTIME packets;
- interned names, categories and argument names resolve;
- every track event names a declared track and sets SEQ_NEEDS_INCREMENTAL_STATE
  (it uses interned names and the incremental clock);
- slices nest on every track once sorted by time (as the trace processor
  sorts), every end closes an open slice no earlier than its begin, and none
  is left open.

Prints a JSON summary on stdout (counts of instants by category and name,
slices by category, tracks, the loss counter's values; with --events, every
instant as [time, track, category, name, {args}]) for tests to compare with
exact expectations; exits 1 with a message on stderr when a check fails, and
3 when the `perfetto` package is missing (pip install perfetto).

    scripts/check-perfetto.py TRACE.pftrace [--events]
"""

import json
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:
    print("check-perfetto: the PyPI package `perfetto` is missing (pip install perfetto)", file=sys.stderr)
    sys.exit(3)

INCREMENTAL_CLOCK = 64
BOOTTIME = 6
TYPES = {1: "B", 2: "E", 3: "i", 4: "C"}


def fail(msg):
    print(f"check-perfetto: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    path = sys.argv[1]
    want_events = "--events" in sys.argv[2:]
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())

    names, cats, ann_names = {}, {}, {}
    tracks = {}  # uuid -> (name, parent uuid, is counter)
    default_clock = None
    clock = None  # time of the incremental clock
    realtime_origin = None
    instants = {}
    instant_list = []
    slice_events = []  # (time, file order, uuid, type, name, category)
    counters = []
    order = 0
    for p in trace.packet:
        order += 1
        if p.trusted_packet_sequence_id != 1:
            fail(f"packet {order}: sequence {p.trusted_packet_sequence_id}, expected 1")
        if p.sequence_flags & 1:
            names.clear(), cats.clear(), ann_names.clear()
        if p.HasField("trace_packet_defaults"):
            default_clock = p.trace_packet_defaults.timestamp_clock_id
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                if c.clock_id == INCREMENTAL_CLOCK:
                    if not c.is_incremental:
                        fail("clock 64 is not incremental")
                    clock = c.timestamp
                elif c.clock_id == 1:
                    realtime_origin = c.timestamp
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
        for e in p.interned_data.event_categories:
            cats[e.iid] = e.name
        for e in p.interned_data.debug_annotation_names:
            ann_names[e.iid] = e.name
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                fail(f"track {d.uuid} declared twice")
            if d.HasField("parent_uuid") and d.parent_uuid not in tracks:
                fail(f"track {d.name} has an undeclared parent")
            tracks[d.uuid] = (d.name, d.parent_uuid if d.HasField("parent_uuid") else None, d.HasField("counter"))
            continue
        if not p.HasField("track_event"):
            continue
        if not p.HasField("timestamp"):
            fail(f"packet {order}: track event without a timestamp")
        if not p.sequence_flags & 2:
            fail(f"packet {order}: uses interned data without SEQ_NEEDS_INCREMENTAL_STATE")
        clock_id = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else default_clock
        if clock_id == INCREMENTAL_CLOCK:
            if clock is None:
                fail("delta timestamp before the clock snapshot")
            clock += p.timestamp
            t = clock
        elif clock_id == BOOTTIME:
            t = p.timestamp
        else:
            fail(f"packet {order}: unexpected clock {clock_id}")
        e = p.track_event
        if e.track_uuid not in tracks:
            fail(f"packet {order}: undeclared track {e.track_uuid}")
        kind = TYPES.get(e.type)
        if kind is None:
            fail(f"packet {order}: event type {e.type}")
        if e.HasField("name_iid"):
            if e.name_iid not in names:
                fail(f"packet {order}: name iid {e.name_iid} not interned")
            name = names[e.name_iid]
        else:
            name = e.name
        if not all(i in cats for i in e.category_iids):
            fail(f"packet {order}: category not interned")
        cat = ",".join([cats[i] for i in e.category_iids] + list(e.categories))
        args = {}
        for a in e.debug_annotations:
            if a.name_iid not in ann_names:
                fail(f"packet {order}: annotation name {a.name_iid} not interned")
            args[ann_names[a.name_iid]] = a.uint_value
        track_name = tracks[e.track_uuid][0]
        if kind == "i":
            key = f"{cat}:{name}"
            instants[key] = instants.get(key, 0) + 1
            if want_events:
                instant_list.append([t, track_name, cat, name, args])
        elif kind == "C":
            if not tracks[e.track_uuid][2]:
                fail(f"counter value on a non-counter track {track_name}")
            counters.append([t, track_name, e.counter_value])
        else:
            slice_events.append((t, order, e.track_uuid, kind, name, cat))

    # The trace processor sorts by time; ties keep file order.
    slice_events.sort(key=lambda s: (s[0], s[1]))
    stacks = {}
    slices = {}
    depth = 0
    for t, order, uuid, kind, name, cat in slice_events:
        stack = stacks.setdefault(uuid, [])
        if kind == "B":
            stack.append((t, name, cat))
            depth = max(depth, len(stack))
            key = f"{cat}:{tracks[uuid][0]}"
            slices[cat] = slices.get(cat, 0) + 1
        else:
            if not stack:
                fail(f"slice end at {t} on {tracks[uuid][0]} closes nothing")
            begin, _, _ = stack.pop()
            if t < begin:
                fail(f"slice on {tracks[uuid][0]} ends at {t} before its begin {begin}")
    for uuid, stack in stacks.items():
        if stack:
            fail(f"{len(stack)} slices left open on {tracks[uuid][0]}")

    summary = {
        "instants": instants,
        "instant_total": sum(instants.values()),
        "slices": slices,
        "max_depth": depth,
        "tracks": sorted(name for name, _, _ in tracks.values()),
        "task_tracks": sum(1 for name, parent, _ in tracks.values() if parent is None and name.startswith("task ")),
        "counters": counters,
        "realtime_origin": realtime_origin,
    }
    if want_events:
        summary["events"] = instant_list
    json.dump(summary, sys.stdout, sort_keys=True)
    print()


main()
