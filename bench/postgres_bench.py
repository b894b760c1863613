#!/usr/bin/python3
"""to_postgres against `psql \\copy` of the same rows into the same table (issue 17).

    /usr/bin/python3 bench/postgres_bench.py --build-dir DIR [--quick | --smoke] [--json F]

Starts a throwaway PostgreSQL 15 (tests/postgres/pg_server.py: initdb, pg_ctl on a loopback
port, fsync off, as the `postgres` user when run as root) and loads the same N rows
(id bigint, name text, score double precision) into an empty table, three times each,
timing from process start to exit:

  copy        psql -c "\\copy t FROM 'rows.csv' CSV" (the baseline: COPY, one statement)
  insert      sluiced run: from_textfile -> json_parse -> to_postgres, no checkpoints
              (multi-row INSERTs of batch_rows 1000, each committing)
  exactly     the same with [checkpoint] (interval 1 s) and exactly_once: one prepared
              transaction per epoch, COMMIT PREPARED per checkpoint
  upsert      the same as insert with key_columns = ["id"] into a table with a primary key

Figures: rows/s (median of 3) and each as a ratio to copy's median in the same run, so the
noise of a shared machine cancels out. The table is checked after each run (N rows).
bench/bench.py calls postgres_bench(build, mode, tmp); run alone, this file does the same.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from bench_support import Skip, log, ratio_rows, run  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "postgres"))

SIZES = {"full": 500_000, "quick": 100_000, "smoke": 2_000}
REPEAT = {"full": 3, "quick": 3, "smoke": 1}




def postgres_bench(build, mode, tmp):
    try:
        from pg_server import PSQL, PgServer  # noqa: WPS433 (optional dependency)
    except RuntimeError as e:
        raise Skip(str(e)) from e
    sluiced = os.path.join(build, "host", "sluiced")
    plugins = os.path.join(build, "plugins-out")
    if not os.path.exists(sluiced) or not any("postgres" in f for f in os.listdir(plugins)):
        raise Skip(f"{sluiced} or the postgres plugin is not built")
    n, repeat = SIZES[mode], REPEAT[mode]
    d = tempfile.mkdtemp(prefix="pgbench-", dir=tmp)
    os.chmod(d, 0o755)
    rows_json, rows_csv = os.path.join(d, "rows.jsonl"), os.path.join(d, "rows.csv")
    with open(rows_json, "w") as fj, open(rows_csv, "w") as fc:
        for i in range(n):
            name, score = f"name-{i}", i * 0.25
            fj.write(json.dumps({"id": i, "name": name, "score": score}) + "\n")
            fc.write(f"{i},{name},{score}\n")
    server = PgServer().start()
    try:
        server.psql("CREATE TABLE t (id bigint, name text, score double precision); "
                    "CREATE TABLE u (id bigint PRIMARY KEY, name text, score double precision)")

        def config(table, checkpoint, keys):
            ck = (f'[checkpoint]\ninterval_ms = 1000\ndir = "{d}/ck"\n' if checkpoint else "")
            return f"""name = "pgbench"
{ck}
[sources.lines]
type = "from_textfile"
path = "{rows_json}"
[operators.rows]
type = "map"
inputs = ["lines"]
function = "json_parse"
[sinks.db]
type = "to_postgres"
inputs = ["rows"]
conninfo = "{server.conninfo()}"
table = "{table}"
columns = {{ id = "id", name = "name", score = "score" }}
batch_rows = 1000
{keys}
"""

        variants = {
            "copy": ("t", [PSQL, "-X", "-q", "-h", "127.0.0.1", "-p", str(server.port), "-U",
                           "postgres", "-d", "postgres", "-c",
                           f"\\copy t FROM '{rows_csv}' CSV"]),
            "insert": ("t", config("t", False, "")),
            "exactly": ("t", config("t", True, "")),
            "upsert": ("u", config("u", False, 'key_columns = ["id"]')),
        }
        times = {k: [] for k in variants}
        for _ in range(repeat):
            for name, (table, what) in variants.items():
                server.psql(f"TRUNCATE {table}")
                if isinstance(what, str):
                    cfg = os.path.join(d, f"{name}.toml")
                    with open(cfg, "w") as f:
                        f.write(what)
                    subprocess.run(["rm", "-rf", f"{d}/ck"], check=True)
                    cmd = [sluiced, "run", cfg, "--plugin-dir", plugins]
                else:
                    cmd = what
                t0 = time.monotonic()
                cp = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                                    env=dict(os.environ, SLUICE_PLUGIN_PATH=""))
                elapsed = time.monotonic() - t0
                if cp.returncode != 0:
                    raise RuntimeError(f"{name}: exit {cp.returncode}: {cp.stderr[-2000:]}")
                got = server.psql(f"SELECT count(*) FROM {table}")[0][0]
                if int(got) != n:
                    raise RuntimeError(f"{name}: {got} rows in the table, expected {n}")
                times[name].append(elapsed)
    finally:
        server.destroy()
    out = {"rows": n}
    log(f"\nto_postgres, {n} rows (id, name, score), median of {repeat}; "
        f"ratio = copy's time / this time (1.0 = as fast as psql \\copy)")
    out.update(ratio_rows(times, "copy", n, "rows"))
    return out


if __name__ == "__main__":
    run(__doc__, "postgres", postgres_bench)
