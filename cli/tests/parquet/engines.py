"""The Parquet tables read by engines that are not qtrace: DuckDB, chdb
(ClickHouse's engine) and pyarrow, each over the same folder.

    python engines.py DIR HIVE [FLEET_MD]

DIR is a folder of tables (`qtrace convert --to parquet`, or a store of
`qtrace recv --store` when HIVE is 1). Prints one JSON object: per engine,
the rows of each table and (DuckDB, chdb) the response times per task of
response_times.sql; with FLEET_MD (docs/fleet.md), the rows of every SQL
block marked `<!-- chdb -->` there, run by chdb on DIR. Run by cli/tests/parquet/engines.rs with the Python of
the virtual environment scripts/test.sh makes (target/pyenv).
"""
import json
import os
import sys

import chdb
import duckdb
import pyarrow.dataset as ds

root, hive = sys.argv[1], sys.argv[2] == "1"
tables = ["events", "losses", "payloads", "streams"]
here = os.path.dirname(os.path.abspath(__file__))
query = open(os.path.join(here, "response_times.sql")).read()
query = "\n".join(l for l in query.splitlines() if not l.startswith("--"))


def glob(table):
    return f"{root}/{table}/**/*.parquet"


def duck(table):
    h = ", hive_partitioning = true" if hive else ""
    return f"read_parquet('{glob(table)}'{h})"


def click(table):
    return f"file('{glob(table)}', Parquet)"


out = {}
con = duckdb.connect()
out["duckdb"] = {
    "rows": {t: con.execute(f"SELECT count(*) FROM {duck(t)}").fetchone()[0] for t in tables},
    "lost": con.execute(f"SELECT coalesce(sum(count), 0) FROM {duck('losses')}").fetchone()[0],
    "response": [list(r) for r in con.execute(
        query.replace("{events}", duck("events")).replace("{losses}", duck("losses"))).fetchall()],
}
if hive:
    out["duckdb"]["hosts"] = [r[0] for r in con.execute(
        f"SELECT DISTINCT host FROM {duck('events')} ORDER BY 1").fetchall()]


def ch(sql):
    text = chdb.query(sql, "CSV").bytes().decode()
    return [[int(x) for x in line.split(",")] for line in text.split()]


out["chdb"] = {
    "rows": {t: ch(f"SELECT count() FROM {click(t)}")[0][0] for t in tables},
    "lost": ch(f"SELECT sum(count) FROM {click('losses')}")[0][0],
    "response": ch(query.replace("{events}", click("events")).replace("{losses}", click("losses"))),
}
out["pyarrow"] = {
    "rows": {t: ds.dataset(f"{root}/{t}", format="parquet",
                           partitioning="hive" if hive else None).count_rows() for t in tables},
}
if len(sys.argv) > 3:
    text = open(sys.argv[3]).read()
    fleet = []
    for block in text.split("<!-- chdb -->")[1:]:
        sql = block.split("```sql\n", 1)[1].split("```", 1)[0]
        sql = sql.replace("'store/", f"'{root}/")
        csv = chdb.query(sql, "CSV").bytes().decode()
        fleet.append([line.split(",") for line in csv.split("\n") if line])
    out["fleet"] = fleet
print(json.dumps(out))
