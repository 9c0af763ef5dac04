#!/usr/bin/env python3
"""Reads a `qtrace recv --store` tree with Apache Spark (a standalone
cluster: MASTER is spark://HOST:PORT; `local[N]` runs it in one process, for
a look without a cluster) and checks that its figures equal
`qtrace sql`'s on the same store: row counts of the tables, losses per
sender and kind, and per sender and task the jobs' response-time quantiles
(the `jobs` table, FORMAT.md 7.5a). Run by scripts/spark.sh, which starts
the cluster:

    spark_check.py MASTER STORE QTRACE [LOGGED...]

Also runs the SQL blocks of docs/fleet.md marked `<!-- spark -->` in both
engines. LOGGED: `SENDER=EVENTS` for each sender, the events it logged: then also
checks, per sender, rows of `events` + `hoops` losses = logged.

Each query is one SQL text run by both engines. The store's UINT64 columns
(`task`, `count`, `seq`, …) read as DECIMAL(20,0) in Spark (it has no
unsigned 64-bit type); the values compare as integers here. Exit status 0
when every figure agrees, 1 otherwise (the differing rows are printed).
"""

import csv
import io
import os
import subprocess
import sys
import time
from decimal import Decimal

TABLES = ["events", "losses", "streams", "jobs", "payloads"]

QUERIES = [
    (
        "row counts",
        "SELECT 'events' AS t, count(*) AS n FROM events UNION ALL "
        "SELECT 'losses', count(*) FROM losses UNION ALL "
        "SELECT 'streams', count(*) FROM streams UNION ALL "
        "SELECT 'jobs', count(*) FROM jobs UNION ALL "
        "SELECT 'payloads', count(*) FROM payloads ORDER BY t",
    ),
    (
        "losses per sender and kind",
        "SELECT sender, kind, count(*) AS rows_, sum(count) AS lost "
        "FROM losses GROUP BY sender, kind ORDER BY sender, kind",
    ),
    (
        "events per sender, streams per sender",
        "SELECT e.sender, e.n, s.streams, s.events, s.lost FROM "
        "(SELECT sender, count(*) AS n FROM events GROUP BY sender) e JOIN "
        "(SELECT sender, count(DISTINCT run) AS streams, sum(events) AS events, "
        "sum(lost) AS lost FROM streams GROUP BY sender) s ON e.sender = s.sender "
        "ORDER BY e.sender",
    ),
    (
        "response-time quantiles per sender and task (jobs, not lossy)",
        "SELECT sender, task, count(*) AS jobs, "
        "min(time_ns - activated_ns) AS least, "
        "percentile_disc(0.5) WITHIN GROUP (ORDER BY time_ns - activated_ns) AS p50, "
        "percentile_disc(0.9) WITHIN GROUP (ORDER BY time_ns - activated_ns) AS p90, "
        "percentile_disc(0.99) WITHIN GROUP (ORDER BY time_ns - activated_ns) AS p99, "
        "max(time_ns - activated_ns) AS greatest, "
        "sum(time_ns - activated_ns) AS total "
        "FROM jobs WHERE NOT lossy GROUP BY sender, task ORDER BY sender, task",
    ),
    (
        "lossy jobs per sender",
        "SELECT sender, count(*) AS lossy FROM jobs WHERE lossy "
        "GROUP BY sender ORDER BY sender",
    ),
]


def doc_queries(path):
    """The SQL blocks of docs/fleet.md marked `<!-- spark -->`: the recipe
    the guide shows is run here too."""
    found = []
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "<!-- spark -->" and lines[i + 1].strip() == "```sql":
            end = lines.index("```", i + 2)
            found.append((f"docs/fleet.md line {i + 3}", "\n".join(lines[i + 2 : end])))
    return found


def value(v):
    """One cell as a comparable value: integers (DECIMAL(20,0) included)
    as int, other numbers as float, the rest as text."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, Decimal)):
        if isinstance(v, Decimal) and v != v.to_integral_value():
            return float(v)
        return int(v)
    if isinstance(v, float):
        return int(v) if v.is_integer() else v
    text = str(v)
    for kind in (int, float):
        try:
            return value(kind(text))
        except ValueError:
            pass
    return text


def qtrace_sql(qtrace, store, sql):
    out = subprocess.run(
        [qtrace, "sql", "--format", "csv", store, sql],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return [tuple(value(c) for c in r) for r in rows[1:]]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    master, store, qtrace = sys.argv[1:4]
    logged = dict(a.split("=") for a in sys.argv[4:])
    from pyspark.sql import SparkSession

    began = time.monotonic()
    spark = (
        SparkSession.builder.master(master)
        .appName("qtrace-store-check")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    # The queries must run on the worker's executor, not in the driver:
    # wait for it to register (the status counts the driver too).
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
    for _ in range(600):
        if status().size() > 1 or master.startswith("local"):
            break
        time.sleep(0.1)
    else:
        sys.exit("spark_check: no executor registered with the driver in 60 s")
    print(f"spark_check: Spark {spark.version} at {master}, {status().size() - 1} executor(s)")
    for t in TABLES:
        df = spark.read.parquet(os.path.join(store, t))
        df.createOrReplaceTempView(t)
        if t == "losses":
            types = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in df.schema.fields)
            print(f"spark_check: losses as Spark reads it: {types}")
    print(f"spark_check: session up in {time.monotonic() - began:.1f} s")
    docs = doc_queries(os.path.join(os.path.dirname(__file__), "..", "docs", "fleet.md"))
    if len(docs) < 2:
        sys.exit(f"spark_check: {len(docs)} Spark blocks in docs/fleet.md, 2 or more expected")
    failed = 0
    in_qtrace = in_spark = 0.0
    for name, sql in QUERIES + docs:
        t0 = time.monotonic()
        want = qtrace_sql(qtrace, store, sql)
        t1 = time.monotonic()
        got = [tuple(value(c) for c in r) for r in spark.sql(sql).collect()]
        in_qtrace += t1 - t0
        in_spark += time.monotonic() - t1
        if got == want:
            print(f"spark_check: {name}: {len(got)} rows equal")
            for r in got:
                print(f"    {r}")
        else:
            failed += 1
            print(f"spark_check: {name}: Spark and qtrace sql differ")
            print(f"    qtrace sql: {want}")
            print(f"    Spark:      {got}")
    if logged:
        sql = (
            "SELECT e.sender, e.n + coalesce(l.lost, 0) FROM "
            "(SELECT sender, count(*) AS n FROM events GROUP BY sender) e LEFT JOIN "
            "(SELECT sender, sum(count) AS lost FROM losses WHERE kind = 'hoops' "
            "GROUP BY sender) l ON e.sender = l.sender ORDER BY e.sender"
        )
        got = {int(s): int(n) for s, n in spark.sql(sql).collect()}
        want = {int(s): int(n) for s, n in logged.items()}
        if got == want:
            print(f"spark_check: rows + hoops = logged for every sender: {got}")
        else:
            failed += 1
            print(f"spark_check: rows + hoops per sender {got}, logged {want}")
    spark.stop()
    print(
        f"spark_check: {time.monotonic() - began:.1f} s in all; the queries: "
        f"{in_spark:.1f} s in Spark, {in_qtrace:.1f} s in qtrace sql"
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
