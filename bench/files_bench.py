#!/usr/bin/python3
"""to_files against sink_to_textfile writing the same rows (issue 17).

    /usr/bin/python3 bench/files_bench.py --build-dir DIR [--quick | --smoke] [--json F]

The same N JSON rows ({"id": i, "k": "k<i % 8>", "name": ..., "score": ...}) go through
`sluiced run`: from_textfile -> json_parse -> a sink, three times each, timed from process
start to exit:

  textfile    sink_to_textfile into one file (the baseline: the existing file sink)
  files       to_files, path "{key}/part.jsonl" keyed by "k" (8 buckets), no checkpoints
              (128 MiB rolls: one part file per bucket, published at the end)
  exactly     the same with [checkpoint] (interval 1 s): every checkpoint finishes, fsyncs
              and publishes the open part files
  rolling     files with roll_bytes = 1 MiB (about 100 files of 1 MiB at 1 M rows)
  gzip        files with compression = "gzip" (zlib level 6)

Figures: rows/s (median of 3) and each as a ratio to textfile's median in the same run, so
the noise of a shared machine cancels out. Every run's output is read back and counted (N
lines; gzip through Python's gzip).
"""
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import time

from bench_support import Skip, log, ratio_rows, run  # beside this file

SIZES = {"full": 1_000_000, "quick": 200_000, "smoke": 5_000}
REPEAT = {"full": 3, "quick": 3, "smoke": 1}


def count_lines(root):
    n = 0
    for d, _, names in os.walk(root):
        for name in names:
            if name.startswith("."):
                raise RuntimeError(f"an in-progress file is left: {os.path.join(d, name)}")
            path = os.path.join(d, name)
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rb") as f:
                n += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return n


def files_bench(build, mode, tmp):
    sluiced = os.path.join(build, "host", "sluiced")
    plugins = os.path.join(build, "plugins-out")
    if not os.path.exists(sluiced) or not any("files" in f for f in os.listdir(plugins)):
        raise Skip(f"{sluiced} or the files plugin is not built")
    n, repeat = SIZES[mode], REPEAT[mode]
    d = tempfile.mkdtemp(prefix="filesbench-", dir=tmp)
    rows = os.path.join(d, "rows.jsonl")
    with open(rows, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "k": f"k{i % 8}", "name": f"name-{i}",
                                "score": i * 0.25}) + "\n")
    out = os.path.join(d, "out")

    def config(sink, checkpoint=False):
        ck = f'[checkpoint]\ninterval_ms = 1000\ndir = "{d}/ck"\n' if checkpoint else ""
        return f"""name = "filesbench"
{ck}
[sources.lines]
type = "from_textfile"
path = "{rows}"
[operators.rows]
type = "map"
inputs = ["lines"]
function = "json_parse"
[sinks.out]
inputs = ["rows"]
{sink}
"""

    to_files = f'type = "to_files"\ndir = "{out}"\npath = "{{key}}/part.jsonl"\nkey = "k"\n'
    variants = {
        "textfile": config(f'type = "sink_to_textfile"\npath = "{out}/all.jsonl"\n'),
        "files": config(to_files),
        "exactly": config(to_files, checkpoint=True),
        "rolling": config(to_files + "roll_bytes = 1048576\n"),
        "gzip": config(to_files + 'compression = "gzip"\n'),
    }
    times = {k: [] for k in variants}
    files_made = {}
    for _ in range(repeat):
        for name, text in variants.items():
            cfg = os.path.join(d, f"{name}.toml")
            with open(cfg, "w") as f:
                f.write(text)
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(f"{d}/ck", ignore_errors=True)
            os.makedirs(out)
            t0 = time.monotonic()
            cp = subprocess.run([sluiced, "run", cfg, "--plugin-dir", plugins],
                                capture_output=True, text=True, timeout=3600,
                                env=dict(os.environ, SLUICE_PLUGIN_PATH=""))
            elapsed = time.monotonic() - t0
            if cp.returncode != 0:
                raise RuntimeError(f"{name}: exit {cp.returncode}: {cp.stderr[-2000:]}")
            got = count_lines(out)
            if got != n:
                raise RuntimeError(f"{name}: {got} lines written, expected {n}")
            files_made[name] = sum(len(names) for _, _, names in os.walk(out))
            times[name].append(elapsed)
    result = {"rows": n}
    log(f"\nto_files, {n} rows, median of {repeat}; ratio = textfile's time / this time "
        f"(1.0 = as fast as sink_to_textfile)")
    result.update(ratio_rows(times, "textfile", n, "rows",
                             extra=lambda name: f"{files_made[name]:5d} files"))
    for name in times:
        result[name]["files"] = files_made[name]
    return result


if __name__ == "__main__":
    run(__doc__, "files", files_bench)
