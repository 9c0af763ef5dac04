-- Response times per task from the Parquet tables, as `qtrace analyze`
-- derives them (src/analysis/mod.rs): per task, the n-th matched
-- `endcycle` closes the n-th `activate` (first in, first out; an endcycle
-- with no activation pending matches none), in the merged order of the
-- files (time, then run, then seq); a job during which a losses row falls
-- (in that order) is left out. Standard SQL with window functions: DuckDB
-- and ClickHouse run it as it is, with {events} and {losses} replaced by
-- their table functions (cli/tests/parquet/engines.py).
WITH marks AS (
  SELECT time_ns, run, seq, event, CAST(arg0 AS BIGINT) AS task, 0 AS lost
  FROM {events}
  WHERE class = 'system' AND event IN ('activate', 'endcycle')
  UNION ALL
  SELECT time_ns, run, seq, 'loss', CAST(-1 AS BIGINT), 1 FROM {losses}
),
ordered AS (
  SELECT time_ns, run, seq, event, task,
         sum(lost) OVER (ORDER BY time_ns, run, seq ROWS UNBOUNDED PRECEDING) AS losses
  FROM marks
),
per_task AS (
  SELECT time_ns, run, seq, event, task, losses,
         CAST(sum(CASE WHEN event = 'activate' THEN 1 ELSE 0 END) OVER w AS BIGINT) AS acts,
         CAST(sum(CASE WHEN event = 'endcycle' THEN 1 ELSE 0 END) OVER w AS BIGINT) AS ends
  FROM ordered WHERE event <> 'loss'
  WINDOW w AS (PARTITION BY task ORDER BY time_ns, run, seq ROWS UNBOUNDED PRECEDING)
),
ends AS (
  SELECT task, time_ns, losses, acts - ends AS slack,
         min(acts - ends) OVER (PARTITION BY task ORDER BY time_ns, run, seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS low,
         min(acts - ends) OVER (PARTITION BY task ORDER BY time_ns, run, seq
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS low_before,
         ends
  FROM per_task WHERE event = 'endcycle'
),
matched AS (
  SELECT task, time_ns, losses, ends + least(0, low) AS n
  FROM ends WHERE slack >= least(0, coalesce(low_before, 0))
),
acts AS (
  SELECT task, time_ns, losses,
         CAST(row_number() OVER (PARTITION BY task ORDER BY time_ns, run, seq) AS BIGINT) AS n
  FROM per_task WHERE event = 'activate'
)
SELECT a.task AS task, count(*) AS jobs, min(m.time_ns - a.time_ns) AS min_ns,
       max(m.time_ns - a.time_ns) AS max_ns, sum(m.time_ns - a.time_ns) AS sum_ns
FROM acts AS a JOIN matched AS m ON a.task = m.task AND a.n = m.n
WHERE a.losses = m.losses
GROUP BY a.task ORDER BY a.task
