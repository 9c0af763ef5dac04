#!/usr/bin/env python3
"""Decodes a Perfetto trace written by `qtrace convert --to perfetto` with
Perfetto's own schema (the PyPI `perfetto` package's protobuf bindings; its
trace processor needs a download and is not used) and checks it:

- every packet parses as perfetto.protos.TracePacket;
- a `compressed_packets` packet (the default output) holds nothing else;
  its zlib stream is inflated and its packets are checked in its place, the
  sequences' state carrying on across chunks;
- timestamps: the incremental clock 64 (deltas) and absolute BOOTTIME packets;
- interned names, categories and argument names resolve;
- every track descriptor sets SIBLING_MERGE_BEHAVIOR_NONE, and a track
  declared again (renamed by a name record) keeps its parent and kind;
- every packet names its sequence, and each sequence's first packet clears
  its incremental state (until then Perfetto's trace processor ignores
  interned data and may skip packets); interning, the incremental clock and
  the default clock and track are per sequence (one per source);
  every track event names a declared track;
- slices nest on every track once sorted by time (as the trace processor
  sorts), every end closes an open slice no earlier than its begin, and none
  is left open.

Prints a JSON summary on stdout (counts of instants by category and name,
events drawn as a slice begin or end by category and name (a `system:schedule`
is the `task N` begin on its source's track, a `lowlevel:interrupt` the `irq N`
begin, their first argument in the name and the others as annotations; a
blocking `semaphore:wait` the `sem S` begin on the `task T sem S` track,
annotated `source`, and a `semaphore:signal` that slice's end, annotated
`signal source`), tracks renamed by name records,
slices by category, tracks, the loss counter's values; with --events, every
event, instant or slice edge, as [time, track, category, name, {args}] in
file order) for tests to compare with
exact expectations; exits 1 with a message on stderr when a check fails, and
3 when the `perfetto` package is missing (pip install perfetto).

    scripts/check-perfetto.py TRACE.pftrace [--events]
"""

import json
import re
import sys
import zlib

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:
    print("check-perfetto: the PyPI package `perfetto` is missing (pip install perfetto)", file=sys.stderr)
    sys.exit(3)

INCREMENTAL_CLOCK = 64
BOOTTIME = 6
TYPES = {1: "B", 2: "E", 3: "i", 4: "C"}



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
            fail(f"a compressed_packets packet also holds {[f.name for f, _ in p.ListFields()]}")
        yield from chunk.packet

def fail(msg):
    print(f"check-perfetto: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def cat_of_track(name):
    """`pair` for a `task T sem S` track."""
    return "pair" if re.fullmatch(r"task \d+ sem \d+", name) else "other"


def main():
    path = sys.argv[1]
    want_events = "--events" in sys.argv[2:]
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())

    seqs = {}  # sequence id -> its incremental state
    tracks = {}  # uuid -> (name, parent uuid, is counter)
    realtime_origin = None
    instants = {}
    drawn = {}  # events written as a slice begin, by category:name
    instant_list = []  # every event, instant or slice begin, in file order
    slice_events = []  # (time, file order, uuid, type, name, category)
    counters = []
    counter_unit = {}  # uuid -> unit_name of a counter track
    counter_units = {}  # counter label -> its unit name ("" for none)
    flow_events = {}  # flow id -> [(time, file order, track, name, terminating)]
    renamed = []
    order = 0
    for p in inner_packets(trace):
        order += 1
        # Interning, the incremental clock, default clock and default track
        # are per packet sequence (one per source, and sequence 1 for the
        # rest); each sequence's first packet clears its state.
        sid = p.trusted_packet_sequence_id
        if sid == 0:
            fail(f"packet {order}: no trusted_packet_sequence_id")
        if p.sequence_flags & 1:
            seqs[sid] = {"names": {}, "cats": {}, "ann": {}, "clock": None,
                         "default_clock": None, "track": None}
        elif sid not in seqs:
            fail(f"packet {order}: sequence {sid} used before a packet clears its incremental state (SEQ_INCREMENTAL_STATE_CLEARED)")
        st = seqs[sid]
        names, cats, ann_names = st["names"], st["cats"], st["ann"]
        if p.HasField("trace_packet_defaults"):
            st["default_clock"] = p.trace_packet_defaults.timestamp_clock_id
            ted = p.trace_packet_defaults.track_event_defaults
            if ted.HasField("track_uuid"):
                st["track"] = ted.track_uuid
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                if c.clock_id == INCREMENTAL_CLOCK:
                    if not c.is_incremental:
                        fail("clock 64 is not incremental")
                    st["clock"] = c.timestamp
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
            if d.sibling_merge_behavior != 2:
                fail(f"track {d.name}: sibling_merge_behavior is not SIBLING_MERGE_BEHAVIOR_NONE")
            if d.uuid in tracks:
                # Declared again with a new name (a name record named its
                # source or task): the trace processor renames it when the
                # parent and merge behaviour are the same.
                old_name, old_parent, old_counter = tracks[d.uuid]
                parent = d.parent_uuid if d.HasField("parent_uuid") else None
                if (parent, d.HasField("counter")) != (old_parent, old_counter):
                    fail(f"track {d.uuid} declared again as another track")
                tracks[d.uuid] = (d.name, parent, old_counter)
                renamed.append([old_name, d.name])
                continue
            if d.HasField("parent_uuid") and d.parent_uuid not in tracks:
                fail(f"track {d.name} has an undeclared parent")
            tracks[d.uuid] = (d.name, d.parent_uuid if d.HasField("parent_uuid") else None, d.HasField("counter"))
            if d.HasField("counter") and d.counter.unit_name:
                counter_unit[d.uuid] = d.counter.unit_name
            continue
        if not p.HasField("track_event"):
            continue
        if not p.HasField("timestamp"):
            fail(f"packet {order}: track event without a timestamp")
        clock_id = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else st["default_clock"]
        if clock_id == INCREMENTAL_CLOCK:
            if st["clock"] is None:
                fail("delta timestamp before the clock snapshot")
            st["clock"] += p.timestamp
            t = st["clock"]
        elif clock_id == BOOTTIME:
            t = p.timestamp
        else:
            fail(f"packet {order}: unexpected clock {clock_id}")
        e = p.track_event
        track = e.track_uuid if e.HasField("track_uuid") else st["track"]
        if track not in tracks:
            fail(f"packet {order}: undeclared track {track}")
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
            kind_of_value = a.WhichOneof("value")
            if kind_of_value not in ("uint_value", "string_value", "bool_value"):
                fail(f"packet {order}: annotation {ann_names[a.name_iid]} holds {kind_of_value}")
            args[ann_names[a.name_iid]] = getattr(a, kind_of_value)
        track_name = tracks[track][0]
        # Flow ids (FORMAT.md 1.3.3): the trace processor links each event
        # carrying an id to the previous one carrying it; a terminating id
        # ends the chain.
        for v in e.flow_ids:
            flow_events.setdefault(v, []).append((t, order, track_name, name, False))
        for v in e.terminating_flow_ids:
            flow_events.setdefault(v, []).append((t, order, track_name, name, True))
        if e.flow_ids_old or e.terminating_flow_ids_old:
            fail(f"packet {order}: deprecated flow id fields")

        def source_track(source):
            """The current name of the track of `source` (`source N` or
            `source N NAME`), or `other sources` past the writer's limit."""
            if source == 0xFFFFFFFF:
                return "tracer"
            for n, parent, _ in tracks.values():
                if parent is None and (n == f"source {source}" or n.startswith(f"source {source} ")):
                    return n
            return "other sources"

        if kind == "i":
            key = f"{cat}:{name}"
            instants[key] = instants.get(key, 0) + 1
            if want_events:
                instant_list.append([t, track_name, cat, name, args])
        elif kind == "C":
            if not tracks[track][2]:
                fail(f"counter value on a non-counter track {track_name}")
            # A counter of a source (FORMAT.md 1.3.2) is a child of the
            # source's track: named `SOURCE TRACK/class:S`.
            parent = tracks[track][1]
            label = f"{tracks[parent][0]}/{track_name}" if parent in tracks else track_name
            value = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
            counters.append([t, label, value])
            counter_units[label] = counter_unit.get(track, "")
        else:
            slice_events.append((t, order, track, kind, name, cat))
            # A schedule or interrupt is its slice's begin on its source's
            # track (`task N` / `irq N`): the name carries the first argument,
            # debug annotations the others.
            event = None
            if cat_of_track(track_name) == "pair":
                # A blocking semaphore:wait is its `sem S` slice's begin, a
                # semaphore:signal that slice's end, on the `task T sem S`
                # track; the annotation `source` / `signal source` says
                # which source logged it. Begins and ends without it (a
                # waitnb's slice, written at its signal; a wait held to the
                # end of the trace) stand for no event.
                want = {"B": "source", "E": "signal source"}[kind]
                if set(args) - {want}:
                    fail(f"packet {order}: annotations {sorted(args)} on a semaphore slice {kind}")
                if want in args:
                    task, sem = track_name[len("task "):].split(" sem ")
                    ename = "wait" if kind == "B" else "signal"
                    key = f"semaphore:{ename}"
                    drawn[key] = drawn.get(key, 0) + 1
                    if want_events:
                        instant_list.append([t, source_track(args[want]), "semaphore", ename,
                                             {"task": int(task), "sem": int(sem)}])
                args = {}
            elif kind == "B" and cat == "task" and not track_name.startswith("task "):
                event = ("system", "schedule", "task", "task ")
            elif kind == "B" and cat == "interrupt":
                event = ("lowlevel", "interrupt", "irq", "irq ")
            if event is not None:
                ecat, ename, first, prefix = event
                # `task N`, or `task N NAME` once a name record named the task.
                number = name[len(prefix):].split(" ")[0] if name.startswith(prefix) else ""
                if not number.isdigit() or (ecat == "lowlevel" and name != prefix + number):
                    fail(f"packet {order}: {cat} slice named {name!r}, expected {prefix}N")
                key = f"{ecat}:{ename}"
                drawn[key] = drawn.get(key, 0) + 1
                if want_events:
                    instant_list.append([t, track_name, ecat, ename, {first: int(number), **args}])
            elif args:
                fail(f"packet {order}: annotations on a slice {kind} that stands for no event")

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

    # The `flow` table: one row per link, [id, out time, out track, out
    # name, in time, in track, in name], in id order.
    flows = []
    for v in sorted(flow_events):
        chain = sorted(flow_events[v], key=lambda x: (x[0], x[1]))
        for i, (a, b) in enumerate(zip(chain, chain[1:])):
            if a[4]:
                fail(f"flow {v} goes on after its terminating event")
            flows.append([v, a[0], a[2], a[3], b[0], b[2], b[3]])

    summary = {
        "flows": flows,
        "instants": instants,
        "instant_total": sum(instants.values()),
        "drawn": drawn,
        "event_total": sum(instants.values()) + sum(drawn.values()),
        "slices": slices,
        "max_depth": depth,
        "tracks": sorted(name for name, _, _ in tracks.values()),
        "task_tracks": sum(1 for name, parent, _ in tracks.values() if parent is None and name.startswith("task ")),
        "counters": counters,
        "counter_units": counter_units,
        "realtime_origin": realtime_origin,
        "renamed": renamed,
    }
    if want_events:
        summary["events"] = instant_list
    json.dump(summary, sys.stdout, sort_keys=True)
    print()


main()
