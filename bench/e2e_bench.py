#!/usr/bin/python3
"""Benchmark 8 (issue 20): whole pipelines, whole processes, against what a user would use.

    /usr/bin/python3 bench/e2e_bench.py --build-dir DIR [--quick | --smoke] [--json F]

Generates the input files, then times each tool as a user would (the whole process, from
exec to exit, output to a file), median of 3 runs (1 with --smoke), and checks that every
tool wrote the same output:

ints    N ints, one per line (0 <= x < 10^6):
        to_int -> add 1 -> filter x % 2 == 0 -> running sum -> one JSON line per element.
          sluiced  from_textfile -> map(to_int) -> map(add 1) -> filter(lua = "x % 2 == 0")
                   -> accumulate(sum, start = 0) -> sink_to_textfile(format = "json")
          sluiced, native filter: the same with remove(function = mod 2) instead of the Lua
                   filter (keeps x when x % 2 is 0): the filter without the Lua bridge
          mawk     '{ x = $1 + 1; if (x % 2 == 0) { s += x; printf "%.0f\\n", s } }'
          streamz  Stream().map(int).map(add1).filter(even).accumulate(plus, start=0),
                   fed line by line from the file, each result written to the output file
ndjson  M JSON events of ~110 bytes (ints, a string user name, some non-ASCII, an array):
        parse -> keep amount > 50 -> the user name -> one text line per element.
          sluiced  from_textfile -> map(json_parse) -> filter(gt, value 50, path "amount")
                   -> map(get, path "user") -> print (stdout redirected to the file)
          jq       jq -r 'select(.amount > 50) | .user'
          streamz  Stream().map(json.loads).filter(...).map(...), as above
startup `sluiced run` of an empty pipeline (from_iterable with no values -> print), median
        of 5, with the plugin cache warm (only core_ops and sinks opened) and off (every
        plugin opened); `mawk 'BEGIN {}'` beside it for scale.
kafka   K JSON events (the same shape, bench/kafka_raw_loop produce --json, keyed by user, so
        each user's events are in one partition, in order) in a topic of the test broker (tests/kafka/sluice_test_broker, as benchmark 3):
          sluiced  from_kafka(stop_at_end) -> map(json_parse) -> filter(gt amount 50) ->
                   key_by(get user) -> map(get amount) -> aggregate(sum, start 0) -> to_kafka
          raw      kafka_raw_loop loop --json-aggregate: the same by hand on librdkafka and
                   simdjson On-Demand (parse, filter, a hash map of sums, produce)
        timed from the first output message to the process exit (as benchmark 3), median of
        the runs taking turns; each run writes its own topic, and every output must hold the
        same number of messages and the same final sum per user.

Targets (issue 20): ints >= 3x mawk and >= 200x streamz; ndjson >= 10x jq and >= 50x
streamz; printed PASS/MISS, they never change the exit status (a tool that fails or
disagrees does: RuntimeError). bench/bench.py calls e2e_bench(build, mode, tmp).
"""
import json
import os
import random
import shutil
import subprocess
import time

from bench_support import Skip, log, run  # beside this file

SIZES = {  # mode -> (ints, events, runs)
    "full": dict(ints=2_000_000, events=1_000_000, runs=3),
    "quick": dict(ints=500_000, events=250_000, runs=3),
    "smoke": dict(ints=20_000, events=10_000, runs=1),
}
TARGETS = {  # (pipeline, baseline) -> how many times faster sluiced must be
    ("ints", "mawk"): 3, ("ints", "streamz"): 200,
    ("ndjson", "jq"): 10, ("ndjson", "streamz"): 50,
}
KAFKA_TARGET = 0.80  # sluiced's rate / the raw loop's
KAFKA_SIZES = {"full": (1_000_000, 64), "quick": (300_000, 64), "smoke": (20_000, 8)}




def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


# --- inputs ----------------------------------------------------------------------------------

def write_ints(path, n):
    rng = random.Random(20)
    with open(path, "w") as f:
        for _ in range(n // 1000):
            f.write("".join(f"{rng.randrange(1_000_000)}\n" for _ in range(1000)))
        f.write("".join(f"{rng.randrange(1_000_000)}\n" for _ in range(n % 1000)))


def write_events(path, n):
    rng = random.Random(20)
    users = [f"user{i:04d}" for i in range(1000)] + ["zoë", "müller", "北京"]
    tags = ["web", "mobile", "api", "batch"]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            event = {"id": i, "ts": 1_700_000_000_000 + i * 17,
                     "user": users[rng.randrange(len(users))], "amount": rng.randrange(100),
                     "currency": "EUR", "tags": [tags[rng.randrange(4)], tags[rng.randrange(4)]],
                     "ok": rng.random() < 0.9}
            f.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")


# --- the pipelines as each tool writes them ----------------------------------------------------

def ints_config(src, out, native):
    even = ('type = "remove"\nfunction = { name = "mod", args = { value = 2 } }' if native
            else 'type = "filter"\nlua = "x % 2 == 0"')
    return f"""
[sources.lines]
type = "from_textfile"
path = "{src}"

[operators.parsed]
type = "map"
inputs = ["lines"]
function = "to_int"

[operators.plus1]
type = "map"
inputs = ["parsed"]
function = {{ name = "add", args = {{ value = 1 }} }}

[operators.even]
inputs = ["plus1"]
{even}

[operators.total]
type = "accumulate"
inputs = ["even"]
function = "sum"
start = 0

[sinks.out]
type = "sink_to_textfile"
inputs = ["total"]
path = "{out}"
format = "json"
"""


def ndjson_config(src):
    return f"""
[sources.lines]
type = "from_textfile"
path = "{src}"

[operators.events]
type = "map"
inputs = ["lines"]
function = "json_parse"

[operators.big]
type = "filter"
inputs = ["events"]
function = {{ name = "gt", args = {{ value = 50, path = "amount" }} }}

[operators.users]
type = "map"
inputs = ["big"]
function = {{ name = "get", args = {{ path = "user" }} }}

[sinks.out]
type = "print"
inputs = ["users"]
"""


EMPTY_CONFIG = """
[sources.nothing]
type = "from_iterable"
values = []

[sinks.out]
type = "print"
inputs = ["nothing"]
"""

MAWK_INTS = '{ x = $1 + 1; if (x % 2 == 0) { s += x; printf "%.0f\\n", s } }'
JQ_NDJSON = 'select(.amount > 50) | .user'

STREAMZ_INTS = r"""
import sys
from streamz import Stream
out = open(sys.argv[2], "w")
def add1(x): return x + 1
def even(x): return x % 2 == 0
def plus(a, b): return a + b
def write(x): out.write(f"{x}\n")
s = Stream()
s.map(int).map(add1).filter(even).accumulate(plus, start=0).sink(write)
emit = s.emit
with open(sys.argv[1]) as f:
    for line in f:
        emit(line)
out.close()
"""

STREAMZ_NDJSON = r"""
import json, sys
from streamz import Stream
out = open(sys.argv[2], "w", encoding="utf-8")
def big(e): return e["amount"] > 50
def user(e): return e["user"]
def write(x): out.write(x + "\n")
s = Stream()
s.map(json.loads).filter(big).map(user).sink(write)
emit = s.emit
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        emit(line)
out.close()
"""


# --- running ---------------------------------------------------------------------------------

def timed(cmd, out_path, env, stdout_to_file):
    """One whole-process run: wall seconds and CPU seconds (user + system, all threads)."""
    stdout = open(out_path, "wb") if stdout_to_file else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if stdout_to_file:
        stdout.close()
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code != 0:
        raise RuntimeError(f"{cmd[0]} exited with {code}: {err[-1500:]}")
    return seconds, usage.ru_utime + usage.ru_stime


class Side:
    """One tool running one pipeline: its command, where its output lands, its runs."""

    def __init__(self, name, cmd, out_path, stdout_to_file, env_extra=None):
        self.name, self.cmd, self.out_path, self.stdout_to_file = name, cmd, out_path, \
            stdout_to_file
        self.env_extra = env_extra or {}
        self.runs = []

    def run(self, env):
        if not self.stdout_to_file and os.path.exists(self.out_path):
            os.unlink(self.out_path)
        self.runs.append(timed(self.cmd, self.out_path, dict(env, **self.env_extra),
                               self.stdout_to_file))

    @property
    def seconds(self):
        return median(r[0] for r in self.runs)

    @property
    def cpu(self):
        return median(r[1] for r in self.runs)


def same_output(sides):
    """Every side wrote the same bytes (the first side is the reference)."""
    ref = sides[0]
    with open(ref.out_path, "rb") as f:
        want = f.read()
    if not want:
        raise RuntimeError(f"{ref.name} wrote no output")
    for s in sides[1:]:
        with open(s.out_path, "rb") as f:
            got = f.read()
        if got != want:
            a, b = want.splitlines(), got.splitlines()
            first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
                         min(len(a), len(b)))
            raise RuntimeError(
                f"{s.name} wrote different output than {ref.name}: {len(b)} lines against "
                f"{len(a)}, first difference at line {first + 1}: "
                f"{b[first:first + 1]!r} against {a[first:first + 1]!r}")
    return want.count(b"\n")


def run_pipeline(sides, runs, env):
    # The tools take turns, `runs` times: a slow moment of the shared machine hits them all.
    for _ in range(runs):
        for s in sides:
            s.run(env)
    return same_output(sides)


def report(pipeline, n, lines, sides, baselines):
    log(f"{pipeline}: {n:,} input lines, {lines:,} output lines (all outputs equal); wall "
        f"seconds, median of {len(sides[0].runs)} (CPU seconds beside)")
    rows = {}
    for s in sides:
        rows[s.name] = dict(seconds=s.seconds, cpu=s.cpu, runs=[r[0] for r in s.runs])
        log(f"  {s.name:22} {s.seconds:8.3f} s  cpu {s.cpu:7.3f} s  "
            f"({1e9 * s.seconds / n:6.0f} ns/line)  runs " +
            ", ".join(f"{r[0]:.3f}" for r in s.runs))
    for s in sides:
        if not s.name.startswith("sluiced"):
            continue
        for base in baselines:
            ratio = rows[base]["seconds"] / s.seconds
            target = TARGETS[(pipeline, base)]
            rows[s.name][f"x_{base}"] = ratio
            log(f"  {s.name} vs {base}: {ratio:7.2f}x faster  "
                f"{'PASS' if ratio >= target else 'MISS'} (>= {target}x)")
    return rows


def startup(sluiced, env, tmp, runs=5):
    cfg = os.path.join(tmp, "e2e-empty.toml")
    with open(cfg, "w") as f:
        f.write(EMPTY_CONFIG)
    out = os.path.join(tmp, "e2e-empty.out")
    sides = [Side("sluiced run (empty)", [sluiced, "run", cfg], out, True),
             Side("  no plugin cache", [sluiced, "run", cfg], out, True,
                  {"SLUICE_PLUGIN_CACHE": "off"}),
             Side("mawk 'BEGIN {}'", ["mawk", "BEGIN {}"], out, True)]
    for _ in range(runs):
        for s in sides:
            s.run(env)
    log(f"startup: an empty pipeline (from_iterable, no values -> print), whole process, median "
        f"of {runs}:")
    for s in sides:
        log(f"  {s.name:22} {1e3 * s.seconds:8.1f} ms  cpu {1e3 * s.cpu:6.1f} ms")
    return {s.name: dict(ms=1e3 * s.seconds, cpu_ms=1e3 * s.cpu) for s in sides}


def kafka_json_config(bootstrap, src, dst):
    return f"""
[sources.in]
type = "from_kafka"
brokers = "{bootstrap}"
topics = ["{src}"]
stop_at_end = true
config = {{ "fetch.wait.max.ms" = 10 }}

[operators.events]
type = "map"
inputs = ["in"]
function = "json_parse"

[operators.big]
type = "filter"
inputs = ["events"]
function = {{ name = "gt", args = {{ value = 50, path = "amount" }} }}

[operators.by_user]
type = "key_by"
inputs = ["big"]
function = {{ name = "get", args = {{ path = "user" }} }}

[operators.amounts]
type = "map"
inputs = ["by_user"]
function = {{ name = "get", args = {{ path = "amount" }} }}

[operators.sums]
type = "aggregate"
inputs = ["amounts"]
function = "sum"
start = 0

[sinks.out]
type = "to_kafka"
inputs = ["sums"]
brokers = "{bootstrap}"
topic = "{dst}"
"""


def kafka_run(cmd, broker, topic, env, log_path):
    """One run: seconds from the first message in `topic` to the process exit, CPU seconds."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    first = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if first is None and broker.high_watermark_total(topic) > 0:
            first = time.monotonic()
        if time.monotonic() - start > 600:
            proc.kill()
        time.sleep(0.02)
    end = time.monotonic()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[0]} on {topic}: exit code {os.waitstatus_to_exitcode(status)} "
                           f"(log: {open(log_path).read()[-1500:]})")
    return end - (first or start), usage.ru_utime + usage.ru_stime


def kafka_json(build, mode, tmp, env):
    import bench  # bench.py: the test broker's driver (benchmark 3)
    n, parts = KAFKA_SIZES[mode]
    runs = SIZES[mode]["runs"]
    broker_exe = os.path.join(build, "tests", "kafka", "sluice_test_broker")
    raw = os.path.join(build, "bench", "kafka_raw_loop")
    sluiced = os.path.join(build, "host", "sluiced")
    for f in (broker_exe, raw, os.path.join(build, "plugins-out", "libsluice_kafka.so")):
        if not os.path.exists(f):
            raise Skip(f"{f} not built")
    sides = ["sluiced", "raw"]
    topics = [("events", parts)] + [(f"sums-{s}-{r}", parts) for s in sides for r in range(runs)]
    broker = bench.Broker(broker_exe, topics)
    results = {s: [] for s in sides}
    try:
        b = broker.bootstrap
        bench.run_json([raw, "produce", "--brokers", b, "--topic", "events", "--count", str(n),
                        "--json"], 600)
        outputs = {}
        for r in range(runs):
            for s in sides:
                topic = f"sums-{s}-{r}"
                if s == "raw":
                    cmd = [raw, "loop", "--brokers", b, "--in", "events", "--out", topic,
                           "--stop-at-end", "--json-aggregate"]
                else:
                    cfg = os.path.join(tmp, f"kafka-json-{r}.toml")
                    with open(cfg, "w") as f:
                        f.write(kafka_json_config(b, "events", topic))
                    cmd = [sluiced, "run", cfg]
                results[s].append(kafka_run(cmd, broker, topic, env,
                                            os.path.join(tmp, f"kafka-{s}-{r}.log")))
                outputs[topic] = bench.run_json([raw, "sums", "--brokers", b, "--topic", topic],
                                                600)
    finally:
        broker.close()
    ref = outputs["sums-raw-0"]
    if ref["count"] == 0:
        raise RuntimeError("kafka: the raw loop wrote no output")
    for topic, o in outputs.items():
        if o != ref:
            diff = [(k, v, o["last"].get(k)) for k, v in ref["last"].items() if o["last"].get(k) != v]
            log(f"kafka: {topic}: first differences (user, raw, this): {diff[:3]}")
            raise RuntimeError(f"kafka: {topic} holds {o['count']} messages, "
                               f"{sum(o['last'][k] != v for k, v in ref['last'].items())} users "
                               f"with another final sum than sums-raw-0 ({ref['count']} messages)")
    log(f"kafka: {n:,} JSON events on {parts} partitions -> {ref['count']:,} output messages, "
        f"{len(ref['last'])} users (all outputs equal); from the first output message to the "
        f"exit, median of {runs}:")
    out = {}
    for s in sides:
        secs, cpu = median(x[0] for x in results[s]), median(x[1] for x in results[s])
        out[s] = dict(seconds=secs, rate=n / secs, cpu=cpu, runs=[x[0] for x in results[s]])
        log(f"  {s:22} {secs:8.3f} s  {n / secs:10.0f} events/s  cpu {cpu:7.3f} s  runs " +
            ", ".join(f"{x[0]:.3f}" for x in results[s]))
    ratio = out["raw"]["seconds"] / out["sluiced"]["seconds"]
    out["sluiced"]["ratio_vs_raw"] = ratio
    log(f"  sluiced / raw loop: {ratio * 100:6.1f} %  "
        f"{'PASS' if ratio >= KAFKA_TARGET else 'MISS'} (>= {KAFKA_TARGET * 100:.0f} %)")
    return out


def e2e_bench(build, mode, tmp):
    p = SIZES[mode]
    sluiced = os.path.join(build, "host", "sluiced")
    plugin_dir = os.path.join(build, "plugins-out")
    for f in (sluiced, os.path.join(plugin_dir, "libsluice_core_ops.so"),
              os.path.join(plugin_dir, "libsluice_sinks.so")):
        if not os.path.exists(f):
            raise Skip(f"{f} not built")
    missing = [t for t in ("mawk", "jq") if shutil.which(t) is None]
    if missing:
        raise Skip(f"{', '.join(missing)} not installed (scripts/setup.sh installs them)")
    has_streamz = subprocess.run(["/usr/bin/python3", "-c", "import streamz"],
                                 capture_output=True).returncode == 0
    # A plugin cache of the run's own (written by the first start of each pipeline): the
    # starts open only the plugins they use, as a user's second start does.
    env = dict(os.environ, SLUICE_PLUGIN_PATH=plugin_dir, LC_ALL="C.UTF-8",
               SLUICE_PLUGIN_CACHE=os.path.join(tmp, "plugin-cache.json"))
    d = os.path.join(tmp, "e2e")
    os.makedirs(d, exist_ok=True)
    warm_up = os.path.join(d, "warm-up.toml")
    with open(warm_up, "w") as f:
        f.write(EMPTY_CONFIG)
    timed([sluiced, "run", warm_up], os.path.join(d, "warm-up.out"), env, True)
    ints, events = os.path.join(d, "ints.txt"), os.path.join(d, "events.ndjson")
    write_ints(ints, p["ints"])
    write_events(events, p["events"])
    log(f"\n== 8 (issue 20): whole pipelines, whole processes: sluiced against mawk, jq and "
        f"streamz (files of {p['ints']:,} ints and {p['events']:,} JSON events) ==")
    out = {"ints_n": p["ints"], "events_n": p["events"]}

    sides = []
    for native in (False, True):
        name = "sluiced" if not native else "sluiced (native filter)"
        cfg = os.path.join(d, f"ints{'-native' if native else ''}.toml")
        dst = os.path.join(d, f"ints{'-native' if native else ''}.sluiced.out")
        with open(cfg, "w") as f:
            f.write(ints_config(ints, dst, native))
        sides.append(Side(name, [sluiced, "run", cfg], dst, False))
    sides.append(Side("mawk", ["mawk", MAWK_INTS, ints], os.path.join(d, "ints.mawk.out"), True))
    if has_streamz:
        script = os.path.join(d, "streamz_ints.py")
        with open(script, "w") as f:
            f.write(STREAMZ_INTS)
        dst = os.path.join(d, "ints.streamz.out")
        sides.append(Side("streamz", ["/usr/bin/python3", script, ints, dst], dst, False))
    lines = run_pipeline(sides, p["runs"], env)
    out["ints"] = report("ints", p["ints"], lines, sides,
                         ["mawk"] + (["streamz"] if has_streamz else []))

    cfg = os.path.join(d, "ndjson.toml")
    with open(cfg, "w") as f:
        f.write(ndjson_config(events))
    sides = [Side("sluiced", [sluiced, "run", cfg], os.path.join(d, "ndjson.sluiced.out"), True),
             Side("jq", ["jq", "-r", JQ_NDJSON, events], os.path.join(d, "ndjson.jq.out"), True)]
    if has_streamz:
        script = os.path.join(d, "streamz_ndjson.py")
        with open(script, "w") as f:
            f.write(STREAMZ_NDJSON)
        dst = os.path.join(d, "ndjson.streamz.out")
        sides.append(Side("streamz", ["/usr/bin/python3", script, events, dst], dst, False))
    lines = run_pipeline(sides, p["runs"], env)
    out["ndjson"] = report("ndjson", p["events"], lines, sides,
                           ["jq"] + (["streamz"] if has_streamz else []))
    if not has_streamz:
        log("streamz: SKIPPED (python3-streamz is not installed)")
    out["startup"] = startup(sluiced, env, d)
    try:
        out["kafka"] = kafka_json(build, mode, d, env)
    except Skip as e:
        log(f"kafka: SKIPPED: {e}")
    return out


if __name__ == "__main__":
    run(__doc__, "e2e", e2e_bench)
