#!/usr/bin/env bash
# Converts the trace that examples/standard_init.rs saves to CTF and to Chrome
# JSON, then checks them with the tools users have:
#   - babeltrace2 (sink.utils.counter) counts exactly the events `qtrace stats`
#     counts, and its "Tracer discarded N events" warnings add up to qtrace's
#     lost count (babeltrace2 can exit 0 after an error, so its output is read);
#   - the Chrome JSON parses (python3's json) and has one instant per event
#     (a counter record's is a counter event, "ph":"C", instead).
# Needs babeltrace2 and python3 (Debian: apt-get install babeltrace2 python3).
#
#   scripts/check-export.sh [TRACE_DIR]   # default: run the example into a temporary directory
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in babeltrace2 python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "check-export: SKIPPED: $tool is not installed (Debian: apt-get install $tool)"
        exit 0
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p qtrace-cli --bin qtrace
qtrace=${CARGO_TARGET_DIR:-target}/release/qtrace

if [[ $# -ge 1 ]]; then
    trace_dir=$1
else
    if [[ ! -f examples/standard_init.rs ]]; then
        echo "check-export: SKIPPED: examples/standard_init.rs does not exist yet"
        exit 0
    fi
    trace_dir=$work/trace
    cargo run --release -q --example standard_init -- "$trace_dir" >"$work/example.log"
fi
shopt -s nullglob
files=("$trace_dir"/*.qtr)
if ((${#files[@]} == 0)); then
    echo "check-export: FAILED: no .qtr file in $trace_dir" >&2
    exit 1
fi

# What qtrace itself counts.
# (per file: "  events: N" and "  lost: L events in H hoops records")
"$qtrace" stats "${files[@]}" >"$work/stats.txt"
events=$(awk '$1 == "events:" { s += $2 } END { print s + 0 }' "$work/stats.txt")
lost=$(awk '$1 == "lost:" { s += $2 } END { print s + 0 }' "$work/stats.txt")
hoops=$(awk '$1 == "lost:" { s += $5 } END { print s + 0 }' "$work/stats.txt")
echo "check-export: qtrace stats: $events events, $lost lost in $hoops hoops records (${#files[@]} files)"

# CTF, read back by babeltrace2.
"$qtrace" convert --to ctf "${files[@]}" --out "$work/ctf" 2>"$work/convert.log"
babeltrace2 "$work/ctf" --component=sink.utils.counter --params=step=+0 >"$work/counter.out" 2>"$work/counter.err"
if grep -q -E 'ERROR|CAUSED BY' "$work/counter.err"; then
    echo "check-export: FAILED: babeltrace2 reported an error:" >&2
    cat "$work/counter.err" >&2
    exit 1
fi
bt_events=$(awk '$2 == "Event" && $3 == "messages" { n = $1 } END { print n + 0 }' "$work/counter.out")
babeltrace2 "$work/ctf" >/dev/null 2>"$work/text.err"
bt_lost=$( (grep -o 'Tracer discarded [0-9]* event' "$work/text.err" || true) | awk '{ s += $3 } END { print s + 0 }')
if grep -q 'may have discarded' "$work/text.err"; then
    echo "check-export: FAILED: babeltrace2 saw a loss without a count" >&2
    exit 1
fi
echo "check-export: babeltrace2: $bt_events events, $bt_lost discarded"
if [[ "$bt_events" != "$events" || "$bt_lost" != "$lost" ]]; then
    echo "check-export: FAILED: babeltrace2 disagrees with qtrace stats" >&2
    exit 1
fi

# Chrome JSON, parsed.
"$qtrace" convert --to chrome "${files[@]}" --out "$work/trace.json" 2>>"$work/convert.log"
python3 - "$work/trace.json" "$events" "$hoops" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
evs = doc["traceEvents"]
instants = sum(1 for e in evs if e["ph"] == "i" and e.get("cat") != "tracer")
counters = sum(1 for e in evs if e["ph"] == "C")
markers = sum(1 for e in evs if e["ph"] == "i" and e.get("cat") == "tracer")
stacks = {}
for e in evs:
    if e["ph"] in "BE":
        s = stacks.setdefault((e["pid"], e["tid"]), [])
        if e["ph"] == "B":
            s.append((e["name"], e["ts"]))
        else:
            name, ts = s.pop()
            assert name == e["name"] and e["ts"] >= ts, e
assert all(not s for s in stacks.values()), "open slices left"
assert instants + counters == int(sys.argv[2]), (instants, counters, sys.argv[2])
assert markers == int(sys.argv[3]), (markers, sys.argv[3])
print(f"check-export: chrome JSON: {instants} instants and {counters} counter values "
      f"for {sys.argv[2]} events, {markers} loss markers, B/E nested")
PY
# Perfetto protobuf, decoded with Perfetto's own schema (scripts/check-perfetto.py).
if python3 -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2' >/dev/null 2>&1; then
    "$qtrace" convert --to perfetto "${files[@]}" --out "$work/trace.pftrace" 2>>"$work/convert.log"
    scripts/check-perfetto.py "$work/trace.pftrace" >"$work/perfetto.json"
    python3 - "$work/perfetto.json" "$work/trace.pftrace" "$events" "$hoops" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
events, hoops = int(sys.argv[3]), int(sys.argv[4])
markers = d["instants"].get("tracer:hoops", 0)
# A counter record is a value on its counter's track; the `lost events`
# track's values are the tracer's own (one a hoops record).
values = sum(1 for _, label, _ in d["counters"] if label != "lost events")
# Every other event is an instant or (a schedule or interrupt) its slice's begin.
assert d["event_total"] - markers + values == events, (d["event_total"], values, d["drawn"], events)
assert markers == hoops, (markers, hoops)
size = os.path.getsize(sys.argv[2])
print(f"check-export: perfetto: {events} events ({values} counter values), {markers} loss markers, slices nested, "
      f"{size} bytes ({size / max(1, events + hoops):.1f} bytes an event)")
PY
else
    echo "check-export: perfetto SKIPPED: the PyPI package perfetto is missing (python3 -m pip install perfetto)"
fi
echo "check-export: ok"
