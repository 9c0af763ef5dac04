-- The ready views of `qtrace sql` (sql/src/views.rs runs this file once
-- `events` and `losses` are views over the Parquet files). Plain DuckDB SQL:
-- the same text works in the DuckDB shell over tables of those names.
--
-- The views pair rows within one *stream* (the `stream` column of every
-- view): a received stream is its own (`stream` = its `run`: one sender's
-- run, however many senders share the host's address), and a host's
-- converted files are one trace (`stream` = ''), as `qtrace analyze` reads
-- the files it is given: merged in time order, equal times by run (the input
-- file's name) then by record index (seq). So every figure of a received
-- stream is `analyze` of that sender's own file. Each run must be in time
-- order, as every qtrace queue writes it (analyze raises a time that goes
-- back; these views do not).
-- Built-in event numbers (FORMAT.md): system 0x03 activate, 0x04 schedule,
-- 0x05 delay, 0x06 sleep, 0x07 endcycle, 0x08 destroy, 0x0a disable;
-- lowlevel 0x13 (19) interrupt; semaphore 0x14 (20) wait, 0x15 (21) waitnb,
-- 0x16 (22) signal. A loss mark that is a hoops record (kinds hoops,
-- unreadable, damaged) spoils a measure it falls inside, as in analyze: the
-- measure is flagged `lossy` (analyze leaves it out of its figures and counts
-- it apart).

-- The runs of converted files (streams rows without a sender): their rows
-- are of the host's stream '' even where a row names a sender (the
-- `unclosed` losses rows of a converted file).
CREATE OR REPLACE VIEW qtrace_stream_keys AS
SELECT file, host, run, sender, CASE WHEN sender IS NULL THEN '' ELSE run END AS stream
FROM qtrace_stream_files;

-- events and losses with their stream.
CREATE OR REPLACE VIEW qtrace_events AS
SELECT *, CASE WHEN sender IS NULL THEN '' ELSE run END AS stream FROM events;
CREATE OR REPLACE VIEW qtrace_losses AS
SELECT *, CASE WHEN sender IS NULL
    OR run IN (SELECT run FROM qtrace_stream_files WHERE sender IS NULL) THEN '' ELSE run END
    AS stream
FROM losses;

-- First and last time of each stream's trace.
CREATE OR REPLACE VIEW qtrace_bounds AS
SELECT host, stream, min(first_ns) AS first_ns, max(last_ns) AS last_ns FROM (
    SELECT host, stream, min(time_ns) AS first_ns, max(time_ns) AS last_ns FROM qtrace_events
    GROUP BY host, stream
    UNION ALL
    SELECT host, stream, min(time_ns), max(time_ns) FROM qtrace_losses GROUP BY host, stream
) GROUP BY host, stream;

-- The loss marks that analyze counts as hoops records.
CREATE OR REPLACE VIEW qtrace_hoops AS
SELECT host, stream, run, seq, time_ns, count FROM qtrace_losses
WHERE kind IN ('hoops', 'unreadable', 'damaged');

-- The streams whose jobs the store paired as it wrote them (FORMAT.md 7.5a,
-- the `jobs` table: a row per endcycle that ends a job): a received stream
-- (the store pairs over one run), or a host's converted runs when they are
-- of one conversion (their streams rows are in one file); and none of its
-- hoops records lies in a run without a streams row. Empty when some parts
-- predate the jobs table (`qtrace sql` sets qtrace_jobs_stored).
-- `qtrace_stream_files` is `streams` with each row's file (`qtrace sql`
-- makes it: read_parquet(..., filename = true); over a `streams` table,
-- 'streams' AS file).
CREATE OR REPLACE VIEW qtrace_paired_streams AS
SELECT host, stream FROM qtrace_stream_keys
WHERE coalesce(getvariable('qtrace_jobs_stored'), true)
GROUP BY host, stream
HAVING count(DISTINCT CASE WHEN sender IS NULL THEN 'file ' || file ELSE 'run ' || run END) = 1
EXCEPT
SELECT x.host, x.stream FROM qtrace_hoops x
ANTI JOIN qtrace_stream_files s ON s.host = x.host AND s.run = x.run;

-- The jobs the store paired (the `jobs` table). `qtrace sql` makes
-- response_times exactly this view when every stream is paired (views.rs,
-- ALL_PAIRED).
CREATE OR REPLACE VIEW qtrace_stored_jobs AS
SELECT host, CASE WHEN sender IS NULL THEN '' ELSE run END AS stream, task, activated_ns,
    time_ns AS ended_ns, time_ns - activated_ns AS response_ns, lossy
FROM jobs;

-- Jobs: each activate matched first in, first out with the endcycle of the
-- same task that ends it; an endcycle with no job pending is skipped, a job
-- never ended is not listed. Equal times of one task's activate and endcycle
-- are ordered by record index (seq), whatever their runs.
--
-- Stored path: a paired stream's jobs are qtrace_stored_jobs; nothing is
-- sorted. The other streams' jobs are derived from their activate and
-- endcycle rows, as follows.
--
-- Fast path: where the j-th endcycle of a task comes after its j-th
-- activation for every j (no endcycle ever found no job pending), they pair
-- by rank: each task's two lists sorted and zipped (a sort per task, not a
-- window over all of them). Other tasks take the exact walk: jobs pending
-- after each row are the running count of activations minus endcycles held
-- at zero, p - least(0, min p), so the j-th endcycle that found a job
-- pending ends the j-th activation.
CREATE OR REPLACE VIEW response_times AS
WITH steps AS MATERIALIZED (
    SELECT host, stream, arg0 AS task, run, seq, time_ns, event_id = 3 AS act
    FROM qtrace_events e ANTI JOIN qtrace_paired_streams p ON p.host = e.host AND p.stream = e.stream
    WHERE event_id IN (3, 7)
), lists AS (
    SELECT host, stream, task,
        list_sort(list({t: time_ns, s: seq, r: run}) FILTER (WHERE act)) AS acts,
        list_sort(list({t: time_ns, s: seq, r: run}) FILTER (WHERE NOT act)) AS ends
    FROM steps GROUP BY host, stream, task
), zipped AS (
    SELECT host, stream, task, unnest(acts) AS a, unnest(ends) AS e FROM lists
), paired AS MATERIALIZED (
    SELECT host, stream, task, a.r AS a_run, a.s AS a_seq, a.t AS a_ns, e.r AS e_run, e.s AS e_seq,
        e.t AS e_ns
    FROM zipped WHERE e IS NOT NULL
), irregular AS MATERIALIZED (
    -- an endcycle before its rank's activation, or one with none
    SELECT DISTINCT host, stream, task FROM paired
    WHERE a_ns IS NULL OR e_ns < a_ns OR (e_ns = a_ns AND e_seq < a_seq)
), walk AS (
    SELECT s.*,
        sum(CASE WHEN act THEN 1 ELSE -1 END) OVER w AS p,
        count(*) FILTER (WHERE act) OVER w AS acts
    FROM steps s SEMI JOIN irregular i ON i.host = s.host AND i.stream = s.stream AND i.task = s.task
    WINDOW w AS (PARTITION BY host, stream, task ORDER BY time_ns, seq ROWS UNBOUNDED PRECEDING)
), floor AS (
    SELECT *, least(0, coalesce(min(p) OVER (PARTITION BY host, stream, task ORDER BY time_ns, seq
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)) AS floor_before
    FROM walk
), walked AS (
    SELECT host, stream, task, run, seq, time_ns, act,
        CASE WHEN act THEN acts ELSE acts - (p - least(floor_before, p)) END AS job
    FROM floor WHERE act OR p >= floor_before
), jobs AS (
    SELECT host, stream, task, a_run, a_seq, a_ns, e_run, e_seq, e_ns FROM paired
    ANTI JOIN irregular i
        ON i.host = paired.host AND i.stream = paired.stream AND i.task = paired.task
    UNION ALL
    SELECT a.host, a.stream, a.task, a.run, a.seq, a.time_ns, e.run, e.seq, e.time_ns
    FROM walked a JOIN walked e
        ON a.host = e.host AND a.stream = e.stream AND a.task = e.task AND a.job = e.job
        AND a.act AND NOT e.act
), lossy AS (
    -- Jobs with a hoops record inside (in trace order: time, run, seq).
    SELECT DISTINCT j.host, j.stream, j.task, j.a_ns, j.a_seq
    FROM jobs j JOIN qtrace_hoops x ON x.time_ns BETWEEN j.a_ns AND j.e_ns
    WHERE x.host = j.host AND x.stream = j.stream
      AND (x.time_ns > j.a_ns OR x.run > j.a_run OR (x.run = j.a_run AND x.seq > j.a_seq))
      AND (x.time_ns < j.e_ns OR x.run < j.e_run OR (x.run = j.e_run AND x.seq < j.e_seq))
)
SELECT s.* FROM qtrace_stored_jobs s
SEMI JOIN qtrace_paired_streams p ON p.host = s.host AND p.stream = s.stream
UNION ALL
SELECT j.host, j.stream, j.task, j.a_ns AS activated_ns, j.e_ns AS ended_ns,
    j.e_ns - j.a_ns AS response_ns, l.task IS NOT NULL AS lossy
FROM jobs j LEFT JOIN lossy l
    ON l.host = j.host AND l.stream = j.stream AND l.task = j.task AND l.a_ns = j.a_ns
    AND l.a_seq = j.a_seq;

-- The scheduler's events and the hoops records of each stream in trace order:
-- `pos` numbers them, `hoops_seen` counts the hoops records up to each.
CREATE OR REPLACE VIEW qtrace_sched AS
SELECT *,
    row_number() OVER w AS pos,
    count(*) FILTER (WHERE event_id IS NULL) OVER w AS hoops_seen
FROM (
    SELECT host, stream, run, seq, time_ns, source, event_id, arg0 AS task FROM qtrace_events
    WHERE event_id IN (3, 4, 5, 6, 7, 8, 10, 20, 21, 22)
    UNION ALL
    SELECT host, stream, run, seq, time_ns, NULL, NULL, NULL FROM qtrace_hoops
)
WINDOW w AS (PARTITION BY host, stream ORDER BY time_ns, run, seq ROWS UNBOUNDED PRECEDING);

-- Each task's state after each of its rows: jobs pending (as in
-- response_times) and whether it is in a semaphore wait (its last wait,
-- waitnb, signal or schedule was a wait).
CREATE OR REPLACE VIEW qtrace_task_state AS
WITH walk AS (
    SELECT host, stream, task, pos,
        sum(CASE event_id WHEN 3 THEN 1 WHEN 7 THEN -1 ELSE 0 END) OVER w AS p,
        last_value(CASE WHEN event_id IN (4, 20, 21, 22) THEN event_id END IGNORE NULLS) OVER w AS sem
    FROM qtrace_sched WHERE event_id IS NOT NULL
    WINDOW w AS (PARTITION BY host, stream, task ORDER BY pos ROWS UNBOUNDED PRECEDING)
)
SELECT host, stream, task, pos,
    p - least(0, min(p) OVER (PARTITION BY host, stream, task ORDER BY pos ROWS UNBOUNDED PRECEDING)) AS pending,
    coalesce(sem = 20, false) AS waiting
FROM walk;

-- Each dispatch (schedule) of a task on a source, until the task leaves it:
-- the source's next schedule, or the task's own next schedule elsewhere or
-- delay/sleep/endcycle/destroy/disable, whichever comes first (analyze's
-- running span); `leave_pos` is NULL when it runs to the end of the trace.
CREATE OR REPLACE VIEW qtrace_dispatches AS
WITH s AS (
    SELECT host, stream, source, task, pos, time_ns, hoops_seen,
        lead(pos) OVER (PARTITION BY host, stream, source ORDER BY pos) AS next_here
    FROM qtrace_sched WHERE event_id = 4
), moves AS (
    SELECT host, stream, task, pos,
        lead(pos) OVER (PARTITION BY host, stream, task ORDER BY pos) AS next_move
    FROM qtrace_sched WHERE event_id IN (4, 5, 6, 7, 8, 10)
)
SELECT s.host, s.stream, s.source, s.task, s.pos, s.time_ns, s.hoops_seen, s.next_here,
    CASE WHEN s.next_here IS NULL THEN m.next_move
         WHEN m.next_move IS NULL THEN s.next_here
         ELSE least(s.next_here, m.next_move) END AS leave_pos
FROM s JOIN moves m ON m.host = s.host AND m.stream = s.stream AND m.pos = s.pos;

-- Every source's time line cut at its switches, as analyze cuts it: busy
-- spans (a task runs: `task` set) and idle ones, from the trace's first time
-- to its last; `lossy` when a hoops record lies inside (analyze counts such a
-- span's time as lossy, neither busy nor idle).
CREATE OR REPLACE VIEW qtrace_cpu_spans AS
WITH hb AS (
    SELECT b.host, b.stream, b.first_ns, b.last_ns, count(x.seq) AS total
    FROM qtrace_bounds b LEFT JOIN qtrace_hoops x ON x.host = b.host AND x.stream = b.stream
    GROUP BY b.host, b.stream, b.first_ns, b.last_ns
), d AS (
    SELECT d.*, hb.first_ns,
        coalesce(l.time_ns, hb.last_ns) AS leave_ns,
        coalesce(l.hoops_seen, hb.total) AS leave_hoops,
        coalesce(n.time_ns, hb.last_ns) AS next_ns,
        coalesce(n.hoops_seen, hb.total) AS next_hoops,
        d.pos = min(d.pos) OVER (PARTITION BY d.host, d.stream, d.source) AS first
    FROM qtrace_dispatches d
    JOIN hb ON hb.host = d.host AND hb.stream = d.stream
    LEFT JOIN qtrace_sched l ON l.host = d.host AND l.stream = d.stream AND l.pos = d.leave_pos
    LEFT JOIN qtrace_sched n ON n.host = d.host AND n.stream = d.stream AND n.pos = d.next_here
)
-- running
SELECT host, stream, source, task, time_ns AS begin_ns, leave_ns AS end_ns,
    leave_hoops <> hoops_seen AS lossy
FROM d
UNION ALL
-- idle after the task left, until the next dispatch or the end
SELECT host, stream, source, NULL, leave_ns, next_ns, next_hoops <> leave_hoops
FROM d WHERE leave_pos IS NOT NULL AND (next_here IS NULL OR leave_pos < next_here)
UNION ALL
-- idle from the start of the trace to the source's first dispatch
SELECT host, stream, source, NULL, first_ns, time_ns, hoops_seen <> 0 FROM d WHERE first;

-- Per source (CPU) that ran a task: dispatches, busy and idle time, time
-- lost to losses, utilisation = busy / (busy + idle); `qtrace analyze`'s CPU
-- table.
CREATE OR REPLACE VIEW cpu_busy AS
SELECT host, stream, source,
    count(task) AS dispatches,
    coalesce(sum(end_ns - begin_ns) FILTER (WHERE task IS NOT NULL AND NOT lossy), 0)::UBIGINT AS busy_ns,
    coalesce(sum(end_ns - begin_ns) FILTER (WHERE task IS NULL AND NOT lossy), 0)::UBIGINT AS idle_ns,
    coalesce(sum(end_ns - begin_ns) FILTER (WHERE lossy), 0)::UBIGINT AS lossy_ns,
    round(100.0 * busy_ns / nullif(busy_ns + idle_ns, 0), 3) AS utilisation_pct
FROM qtrace_cpu_spans GROUP BY host, stream, source;

-- A task preempted: another task dispatched on its source while it was
-- running there with a job pending (activated, not yet ended) and not in a
-- semaphore wait (that is blocking, not preemption); analyze's rule.
CREATE OR REPLACE VIEW preemptions AS
SELECT d.host, d.stream, n.time_ns, d.source, d.task, n.task AS by_task
FROM qtrace_dispatches d
JOIN qtrace_sched n ON n.host = d.host AND n.stream = d.stream AND n.pos = d.next_here
ASOF JOIN qtrace_task_state st
    ON st.host = d.host AND st.stream = d.stream AND st.task = d.task AND st.pos < n.pos
WHERE d.leave_pos = d.next_here AND n.task <> d.task AND st.pending > 0 AND NOT st.waiting;

-- The slices the Perfetto and Chrome exports draw (src/export/slices.rs):
-- `task` runs from a schedule to the source's next schedule (or the end of
-- the trace); `irq` from an interrupt to the source's next event, at most
-- getvariable('qtrace_irq_max_ns') later (1 µs unless set: SET VARIABLE
-- qtrace_irq_max_ns = 5000); `semaphore` holds from a wait or waitnb of a
-- (task, semaphore) pair to the signal of the same pair that closes it
-- (innermost first); a blocking wait never signalled is held to the end of
-- the trace, a waitnb never signalled draws nothing.
CREATE OR REPLACE VIEW slices AS
WITH tasks AS (
    SELECT host, stream, source, arg0 AS task, time_ns AS begin_ns,
        lead(time_ns) OVER (PARTITION BY host, stream, source ORDER BY time_ns, run, seq) AS next_ns
    FROM qtrace_events WHERE event_id = 4
), irq_sources AS (
    SELECT DISTINCT host, stream, source FROM qtrace_events WHERE event_id = 19
), irqs AS (
    SELECT * FROM (
        SELECT e.host, e.stream, e.source, e.event_id, e.arg0 AS irq, e.time_ns AS begin_ns,
            lead(e.time_ns) OVER (PARTITION BY e.host, e.stream, e.source
                ORDER BY e.time_ns, e.run, e.seq) AS next_ns
        FROM qtrace_events e
        SEMI JOIN irq_sources i ON i.host = e.host AND i.stream = e.stream AND i.source = e.source
    ) WHERE event_id = 19
), sem_walk AS (
    SELECT host, stream, arg0 AS task, arg1 AS sem, event_id, time_ns,
        sum(CASE WHEN event_id = 22 THEN -1 ELSE 1 END) OVER w AS p,
        row_number() OVER w AS step
    FROM qtrace_events WHERE event_id IN (20, 21, 22)
    WINDOW w AS (PARTITION BY host, stream, arg0, arg1 ORDER BY time_ns, run, seq ROWS UNBOUNDED PRECEDING)
), sem_depth AS (
    SELECT *, p - least(0, min(p) OVER (PARTITION BY host, stream, task, sem ORDER BY step
        ROWS UNBOUNDED PRECEDING)) AS depth
    FROM sem_walk
), opens AS (
    SELECT * FROM sem_depth WHERE event_id <> 22
), closes AS (
    SELECT * FROM sem_depth WHERE event_id = 22
), holds AS (
    -- The wait at depth d is closed by the first later signal that leaves
    -- depth d - 1 (the walk moves by one).
    SELECT o.host, o.stream, o.task, o.sem, o.event_id = 20 AS blocking, o.time_ns AS begin_ns,
        c.time_ns AS signal_ns
    FROM opens o ASOF LEFT JOIN closes c
        ON c.host = o.host AND c.stream = o.stream AND c.task = o.task AND c.sem = o.sem
        AND c.depth = o.depth - 1 AND c.step > o.step
)
SELECT t.host, t.stream, 'task' AS kind, t.source, t.task, NULL::UBIGINT AS irq, NULL::UBIGINT AS sem,
    t.begin_ns, coalesce(t.next_ns, b.last_ns) AS end_ns,
    NULL::BOOLEAN AS blocking, NULL::BOOLEAN AS signalled
FROM tasks t JOIN qtrace_bounds b ON b.host = t.host AND b.stream = t.stream
UNION ALL
SELECT i.host, i.stream, 'irq', i.source, NULL, i.irq, NULL,
    i.begin_ns, least(coalesce(i.next_ns, b.last_ns),
        i.begin_ns + coalesce(getvariable('qtrace_irq_max_ns'), 1000)),
    NULL, NULL
FROM irqs i JOIN qtrace_bounds b ON b.host = i.host AND b.stream = i.stream
UNION ALL
SELECT h.host, h.stream, 'semaphore', NULL, h.task, NULL, h.sem,
    h.begin_ns, coalesce(h.signal_ns, b.last_ns), h.blocking, h.signal_ns IS NOT NULL
FROM holds h JOIN qtrace_bounds b ON b.host = h.host AND b.stream = h.stream
WHERE h.signal_ns IS NOT NULL OR h.blocking;

-- Counter records (FORMAT.md 1.3.2 and 7.5b): the events named `S.counter`,
-- one row each, `name` the counter `class:S`; a queue counter's (class
-- `qtrace`, FORMAT.md 1.3.4) `class:S (queue N)`, `queue` N (its arg1, the
-- sampling queue's handle; NULL for other counters). The tables keep no argument
-- names, so not the counter's kind: `value_u64` is arg0 as it is,
-- `value_i64` arg0 as two's complement, `value_f64` arg0 as IEEE 754 bits
-- (NaN and infinities included); read the one of the counter's kind.
CREATE OR REPLACE VIEW counters AS
WITH c AS (
    SELECT host, stream, run, seq, time_ns, aligned_ns, source,
        class || ':' || left(event, length(event) - 8) AS stem,
        CASE WHEN class = 'qtrace' THEN arg1 END AS queue, arg0,
        (arg0 >> 63)::INTEGER AS sign, ((arg0 >> 52) & 2047)::INTEGER AS e,
        arg0 & 4503599627370495 AS m
    FROM qtrace_events
    WHERE event LIKE '_%.counter' AND class IS NOT NULL
)
SELECT host, stream, run, seq, time_ns, aligned_ns, source,
    CASE WHEN queue IS NULL THEN stem
         ELSE stem || ' (queue ' || queue || ')' END AS name,
    arg0 AS value_u64,
    CASE WHEN arg0 >= 9223372036854775808
        THEN (arg0 - 9223372036854775808)::BIGINT - 9223372036854775807 - 1
        ELSE arg0::BIGINT END AS value_i64,
    CASE WHEN e = 2047 AND m <> 0 THEN 'nan'::DOUBLE
         ELSE (1 - 2 * sign) * CASE
             WHEN e = 2047 THEN 'inf'::DOUBLE
             WHEN e = 0 THEN m::DOUBLE * pow(2.0, -1074)
             ELSE (1 + m::DOUBLE / 4503599627370496) * pow(2.0, e - 1023) END
    END AS value_f64,
    queue
FROM c;

-- Flow records (FORMAT.md 1.3.3 and 7.5b): the events named
-- `S.flow_begin`, `S.flow_step` and `S.flow_end`, one row each, `name` the
-- flow `class:S`, `phase` begin/step/end, `origin` (arg1, its low 32 bits)
-- and `flow_id` (arg0). `instance` pairs them as the exports do: per stream
-- the instances (name, origin, flow_id) are numbered from 1 in the order
-- their begins come (time, run, seq); a step or end belongs to the latest
-- begin of its instance before it unless an end came between (then, and
-- before any begin, `instance` is NULL: unpaired).
CREATE OR REPLACE VIEW flows AS
WITH f AS (
    SELECT host, stream, run, seq, time_ns, aligned_ns, source,
        class || ':' || regexp_replace(event, '\.flow_(begin|step|end)$', '') AS name,
        regexp_extract(event, '\.flow_(begin|step|end)$', 1) AS phase,
        (arg1 & 4294967295)::UINTEGER AS origin, arg0 AS flow_id
    FROM qtrace_events
    WHERE regexp_matches(event, '.\.flow_(begin|step|end)$') AND class IS NOT NULL
), k AS (
    SELECT *,
        count(*) FILTER (WHERE phase = 'begin') OVER w AS k,
        CASE WHEN phase = 'begin' THEN row_number() OVER (PARTITION BY host, stream,
            phase = 'begin' ORDER BY time_ns, run, seq) END AS number
    FROM f
    WINDOW w AS (PARTITION BY host, stream, name, origin, flow_id
        ORDER BY time_ns, run, seq ROWS UNBOUNDED PRECEDING)
), g AS (
    SELECT *,
        max(number) OVER (PARTITION BY host, stream, name, origin, flow_id, k) AS begun,
        count(*) FILTER (WHERE phase = 'end') OVER (PARTITION BY host, stream, name, origin,
            flow_id, k ORDER BY time_ns, run, seq ROWS BETWEEN UNBOUNDED PRECEDING
            AND 1 PRECEDING) AS ends_before
    FROM k
)
SELECT host, stream, run, seq, time_ns, aligned_ns, source, name, phase, origin, flow_id,
    CASE WHEN k > 0 AND ends_before = 0 THEN begun END AS instance
FROM g;

-- `wake_flows` (FORMAT.md 7.5b) is no view of this file: a table that the
-- library's analysis fills at the first query naming it (src/wakes.rs),
-- since which waiter a signal releases depends on every earlier release.
