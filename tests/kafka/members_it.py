"""Shared parts of the multi-daemon keyed tests (issue 13): several `sluiced run --member mN`
processes with one config, sharing the `kafka` checkpoint store, counting words per key
(from_kafka -> [key_by with repartition_topic] -> aggregate count -> to_kafka).

- `Member`: one member name and its successive runs (each run's log in its own file).
- `Producer`: a paced kcat producer on its own thread, so that records flow while members
  are killed, stopped, added or removed; it remembers what it sent (the truth).
- `MembersTestCase`: the pipeline config, the bounded wait for the end (every input record
  consumed and the output quiet) and the check: the last output record per word is its
  true count, no count above it was ever emitted, and every count 1..true appears
  (at-least-once output). A failure prints, per wrong word, the expected and the last seen
  count, and the tail of every member's log.

Environment (by hand):
  SLUICE_TORTURE_KILLS    kills of the kill test (default 10, at least 10)
  SLUICE_TORTURE_RECORDS  input records per test (default 30000)
  SLUICE_TORTURE_SEED     replays a run (the seed is printed in every failure)
"""

import collections
import json
import os
import random
import re
import signal
import subprocess
import threading
import time

from kafka_it import KCAT, KafkaTestCase, toml_str, toml_table
from sluice_it import SLUICED

RECORDS = int(os.environ.get("SLUICE_TORTURE_RECORDS", "30000"))
SEED = int(os.environ.get("SLUICE_TORTURE_SEED", str(random.randrange(1 << 30))))
WORDS = [f"w{i:03d}" for i in range(200)]   # all 4 characters: key_by takes x:sub(1, 4)
PARTITIONS = 6
GROUP = "wordcount"

# from_kafka's rebalance log lines of the source 'in' (tp names as "in [3]").
_ASSIGN_LINE = re.compile(r"node 'in'[^:]*: (assigned|revoked): (.*)$")
_IN_PARTITION = re.compile(r"\bin \[(\d+)\]")
# The host's restore on assignment (issue 13): "task 0: node 'in' was assigned key groups
# 1 (epoch 7 of m2, claim 3), 4 (new, claim 1); restored into 1 keyed node in 0.2 ms".
_RESTORE_LINE = re.compile(r"task (\d+): node 'in' was assigned key groups (.*); restored into")
_RESTORED_GROUP = re.compile(
    r"(\d+) \((?:new|epoch (\d+)(?: of ([^,]+))?), claim (\d+)\)")
_ROUTINE = re.compile(r"info checkpoint epoch \d+: |AUTOCREATE|: committed offset \d+ for ")


def member_flag_supported():
    """Whether this sluiced knows `run --member` (the shared store of issue 13)."""
    cp = subprocess.run([SLUICED, "run", "--help"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, timeout=30, check=False)
    return "--member" in cp.stdout.decode(errors="replace")


class Member:
    """One member name (`--member NAME`, or none) and its runs. Each run logs to
    <tmp>/<name>-<run>.log."""

    def __init__(self, test, name, use_member_flag=True):
        self.test = test
        self.name = name
        self.use_member_flag = use_member_flag
        self.runs = []          # [(Popen, log path, config path)]
        self.stopped = False    # SIGSTOPped right now

    @property
    def proc(self):
        return self.runs[-1][0] if self.runs else None

    @property
    def log_path(self):
        return self.runs[-1][1] if self.runs else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, cfg):
        if self.alive():
            raise AssertionError(f"{self.name} is already running")
        log = self.test.path(f"{self.name}-{len(self.runs)}.log")
        argv = [SLUICED, "run", cfg]
        if self.use_member_flag:
            argv += ["--member", self.name]
        with open(log, "wb") as err:
            proc = subprocess.Popen(argv, env=self.test.env(), cwd=self.test.tmp,
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        self.test._procs.append(proc)   # killed at cleanup when still running
        self.runs.append((proc, log, cfg))
        return proc

    def kill(self):
        """SIGKILL, and reap."""
        p = self.proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
        self.stopped = False

    def stop(self, timeout=60):
        """SIGTERM; returns the exit code (None: had to be killed after `timeout`)."""
        p = self.proc
        if p is None or p.poll() is not None:
            return p.returncode if p is not None else None
        if self.stopped:
            self.cont()
        p.send_signal(signal.SIGTERM)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return None

    def sigstop(self):
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True

    def cont(self):
        self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def log(self, run=-1):
        try:
            with open(self.runs[run][1], "r", encoding="utf-8", errors="replace") as f:
                return f.read()
        except (OSError, IndexError):
            return ""

    def all_logs(self):
        return "".join(self.log(i) for i in range(len(self.runs)))

    def tail(self, lines=40, earlier=8, runs=5):
        """The last `lines` lines of the current run's log, `earlier` of each of the
        `runs` - 1 runs before it (without the routine lines: each checkpoint's timing,
        librdkafka's auto-create notice, each committed offset)."""
        out = []
        first = max(0, len(self.runs) - runs)
        for i in range(first, len(self.runs)):
            p, path = self.runs[i][0], self.runs[i][1]
            state = "running" if p.poll() is None else f"exit {p.returncode}"
            n = lines if i == len(self.runs) - 1 else earlier
            out.append(f"--- {self.name} run {i} ({state}), {path}, last {n} lines ---")
            lines_ = [ln for ln in self.log(i).splitlines() if not _ROUTINE.search(ln)]
            out += lines_[-n:]
        return "\n".join(out)

    def mark(self):
        """Where this member's logs are now: (run index, bytes), for restores(since=...)."""
        if not self.runs:
            return (0, 0)
        return (len(self.runs) - 1, os.path.getsize(self.runs[-1][1]))

    def restores(self, since=(0, 0)):
        """The host's restore-on-assignment events logged after `since` (a mark()), in
        order: [{run, task, group, epoch (None: new), source (member or ""), claim}]."""
        events = []
        run0, offset0 = since
        for i in range(run0, len(self.runs)):
            with open(self.runs[i][1], "rb") as f:
                if i == run0:
                    f.seek(offset0)
                text = f.read().decode("utf-8", errors="replace")
            for line in text.splitlines():
                m = _RESTORE_LINE.search(line)
                if not m:
                    continue
                for g in _RESTORED_GROUP.finditer(m.group(2)):
                    events.append({
                        "run": i, "task": int(m.group(1)), "group": int(g.group(1)),
                        "epoch": int(g.group(2)) if g.group(2) else None,
                        "source": g.group(3) or "", "claim": int(g.group(4)),
                        "line": line})
        return events

    def owned(self):
        """The partitions of `in` this member's current run holds, from its source's
        "node 'in': assigned: in [0], ..." and "revoked: ..." log lines (every task's)."""
        owned = set()
        for line in self.log().splitlines():
            m = _ASSIGN_LINE.search(line)
            if not m:
                continue
            parts = {int(p) for p in _IN_PARTITION.findall(m.group(2))}
            if m.group(1) == "assigned":
                owned |= parts
            else:
                owned -= parts
        return owned


class Producer(threading.Thread):
    """Produces `records` ((key, value) pairs) to `topic` through one kcat process, at
    about `rate` records/s in chunks, while the test does other things. `sent` counts the
    records handed to kcat; `pause()`/`resume()` hold it. kcat's exit code is checked at
    `finish()`."""

    def __init__(self, test, topic, records, rate):
        super().__init__(daemon=True)
        self.test = test
        self.records = records
        self.rate = rate
        self.sent = 0
        self.error = None
        self._go = threading.Event()
        self._go.set()
        self._halt = False
        self._limit = len(records)        # allow(): records beyond it wait
        self._more = threading.Condition()
        self.log_path = test.path(f"kcat-produce-{topic}.log")
        self._log = open(self.log_path, "wb")
        self.kcat = subprocess.Popen(
            [KCAT, "-b", test.bootstrap, "-P", "-t", topic, "-K", "\t",
             "-X", "linger.ms=5", "-X", "queue.buffering.max.messages=1000000"],
            stdin=subprocess.PIPE, stdout=self._log, stderr=self._log)
        test.addCleanup(self._cleanup)

    def run(self):
        chunk = max(1, int(self.rate / 20))   # 20 chunks a second
        try:
            t0 = time.monotonic()
            while self.sent < len(self.records) and not self._halt:
                if not self._go.is_set() or self.sent >= self._limit:
                    paused = time.monotonic()
                    self._go.wait()
                    with self._more:
                        self._more.wait_for(lambda: self.sent < self._limit or self._halt)
                    t0 += time.monotonic() - paused
                batch = self.records[self.sent:min(self.sent + chunk, self._limit)]
                data = "".join(f"{k}\t{v}\n" for k, v in batch).encode()
                self.kcat.stdin.write(data)
                self.kcat.stdin.flush()
                self.sent += len(batch)
                # Pace: the n-th record goes out at about n / rate seconds.
                ahead = self.sent / self.rate - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
        except Exception as e:  # noqa: BLE001 (reported by finish())
            self.error = e

    def pause(self):
        self._go.clear()

    def allow(self, n):
        """Produces at most the first `n` records until allowed more (so that the input
        cannot run out before the test's last action, however slow the machine)."""
        with self._more:
            self._limit = min(max(n, self.sent), len(self.records))
            self._more.notify_all()

    def resume(self):
        self._go.set()

    def fraction(self):
        return self.sent / len(self.records)

    def wait_fraction(self, f, timeout):
        deadline = time.monotonic() + timeout
        while self.fraction() < f and time.monotonic() < deadline and self.is_alive():
            time.sleep(0.05)

    def finish(self, timeout=300):
        """Waits until every record is handed over and kcat has them all delivered."""
        self.allow(len(self.records))
        self.resume()
        self.join(timeout)
        if self.is_alive():
            self._halt = True
            raise AssertionError(f"the producer did not finish within {timeout} s "
                                 f"({self.sent} of {len(self.records)} sent)")
        if self.error:
            raise AssertionError(f"the producer failed: {self.error!r}\n{self._read_log()}")
        self.kcat.stdin.close()
        try:
            rc = self.kcat.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kcat.kill()
            raise AssertionError("kcat did not deliver its records within 60 s")
        if rc != 0:
            raise AssertionError(f"kcat -P failed ({rc})\n{self._read_log()}")

    def _read_log(self):
        self._log.flush()
        with open(self.log_path, "r", errors="replace") as f:
            return f.read()[-3000:]

    def _cleanup(self):
        self._halt = True
        self._go.set()
        with self._more:
            self._more.notify_all()
        if self.kcat.poll() is None:
            self.kcat.kill()
            self.kcat.wait()
        self._log.close()


class MembersTestCase(KafkaTestCase):
    """The word count over `in` (PARTITIONS partitions) shared by several members."""

    TOPICS = {"in": PARTITIONS, "out": PARTITIONS, "checkpoints": 1}
    # Kills and restarts rebalance the group often: a short session keeps each one short
    # (the mock spends session.timeout.ms - 1 s on a rebalance).
    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        "session.timeout.ms": "3000",
        "heartbeat.interval.ms": "300",
    }
    MODE = "by_word"            # or "repartition"
    INTERVAL_MS = 300
    USE_MEMBER_FLAG = True

    def setUp(self):
        super().setUp()
        self.rng = random.Random(SEED)
        self.members = {}
        self.producer = None
        self.notes = []         # printed with a failure: what the test did, in order

    def note(self, text):
        self.notes.append(f"[{time.strftime('%H:%M:%S')}] {text}")

    # -- the pipeline -------------------------------------------------------------

    def pipeline(self, tasks=None, consumer=None):
        # A stop during a rebalance waits for the group (the mock holds a rebalance for
        # session.timeout.ms - 1 s): 10 s was once not enough (m3 of the repartition mode
        # closing its two consumers 7 s after its final checkpoint).
        runtime = "\n[runtime]\n" + (f"tasks = {tasks}\n" if tasks else "") + \
            "shutdown_timeout_ms = 30000\n"
        cfg = dict(self.CONSUMER_CONFIG, **(consumer or {}))
        if self.MODE == "repartition":
            key_by = f"""
[operators.word]
type = "key_by"
inputs = ["in"]
lua = "x:sub(1, 4)"     # the value is "<word> <n>"; the record key is random
repartition_topic = "by-word"
"""
            agg_input = "word"
        else:
            key_by = ""
            agg_input = "in"
        return f"""\
name = "wordcount"
{runtime}
[checkpoint]
store = "kafka"
brokers = {toml_str(self.bootstrap)}
topic = "checkpoints"
interval_ms = {self.INTERVAL_MS}
keep = 3

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = {toml_str(GROUP)}
value_format = "string"
poll_interval_ms = 20
config = {toml_table(cfg)}
{key_by}
[operators.counts]
type = "aggregate"
inputs = [{toml_str(agg_input)}]
function = "count"
start = 0

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
poll_interval_ms = 10
config = {self.producer_config()}
"""

    def write_pipeline(self, name="wordcount.toml", **kw):
        return self.write(name, self.pipeline(**kw))

    def skip_unless_repartition_known(self, cfg):
        """Mode (b) needs key_by's repartition_topic: skip, saying so, while `sluiced
        validate` refuses the key."""
        r = self.sluiced("validate", cfg)
        if r.returncode != 0:
            if "repartition_topic" in r.stderr:
                self.skipTest("key_by's `repartition_topic` is not known to this build "
                              "(sluiced validate refuses it: "
                              f"{r.stderr.strip().splitlines()[0] if r.stderr.strip() else ''})")
            self.fail(f"the pipeline does not validate{r.describe()}")

    def require_member_flag(self):
        if self.USE_MEMBER_FLAG and not member_flag_supported():
            self.fail("`sluiced run` has no --member option: the shared checkpoint store of "
                      "issue 13 (several members, one config) is not in this build")

    def member(self, name):
        if name not in self.members:
            self.members[name] = Member(self, name, self.USE_MEMBER_FLAG)
        return self.members[name]

    # -- input --------------------------------------------------------------------

    def make_records(self, n=RECORDS):
        """n records over the 200 words, uneven (word i drawn with weight i + 1). Mode
        by_word: keyed by the word; repartition: keyed at random. Value "<word> <n>"."""
        words = self.rng.choices(WORDS, weights=range(1, len(WORDS) + 1), k=n)
        if self.MODE == "repartition":
            keys = [f"k{self.rng.randrange(1 << 30)}" for _ in words]
        else:
            keys = words
        self.truth = collections.Counter(words)
        return [(k, f"{w} {i}") for i, (k, w) in enumerate(zip(keys, words))]

    def start_producer(self, records, seconds):
        """Produces `records` evenly over about `seconds`."""
        self.producer = Producer(self, "in", records, rate=max(1.0, len(records) / seconds))
        self.producer.start()
        self.note(f"producing {len(records)} records over ~{seconds:.0f} s")
        return self.producer

    # -- waiting for the end ---------------------------------------------------------

    def input_end(self):
        return {p: hi for p, (_lo, hi) in self.broker.watermarks("in").items()}

    def lag(self):
        """Records of `in` past the group's committed offsets (the committed offsets move
        only with stored checkpoints)."""
        ends = self.input_end()
        committed = self.broker.committed(GROUP, "in")
        return sum(hi - max(committed.get(p, 0), 0) for p, hi in ends.items())

    def outputs(self):
        """The output changelog: [(word, count)] in partition/offset order (each word's
        records are in one partition, in the order they were written)."""
        out = []
        for r in self.consume("out"):
            try:
                count = json.loads(r["value"])
            except (TypeError, ValueError):
                count = r["value"]
            out.append((r["key"], count))
        return out

    def verdict(self, outs):
        """(wrong, problems): wrong = {word: (expected, last seen, max seen)} for every word
        whose last count is not its true count; problems = other failures as text."""
        last, peak = {}, {}
        seen = collections.defaultdict(set)
        problems = []
        for word, count in outs:
            if word not in self.truth or not isinstance(count, int):
                problems.append(f"output record not a (word, count): key={word!r} value={count!r}")
                continue
            last[word] = count
            peak[word] = max(peak.get(word, 0), count)
            seen[word].add(count)
        wrong = {}
        for word, expected in sorted(self.truth.items()):
            if last.get(word) != expected:
                wrong[word] = (expected, last.get(word), peak.get(word))
        over = {w: (self.truth[w], m) for w, m in peak.items() if m > self.truth.get(w, 0)}
        if over:
            problems.append(f"{len(over)} words had a count above their true count at some "
                            f"point (applied twice): " +
                            ", ".join(f"{w} true {t} max {m}" for w, (t, m) in
                                      sorted(over.items())[:20]))
        gaps = {w: sorted(set(range(1, t + 1)) - seen[w]) for w, t in self.truth.items()}
        gaps = {w: g for w, g in gaps.items() if g}
        if gaps:
            problems.append(f"{len(gaps)} words miss counts in the output (lost output): " +
                            ", ".join(f"{w} misses {g[:5]}{'...' if len(g) > 5 else ''}"
                                      for w, g in sorted(gaps.items())[:20]))
        unsent = self.problems_with_unsent_truth()
        if unsent:
            problems.append(unsent)
        return wrong, problems

    def problems_with_unsent_truth(self):
        n = self.broker.count("in")
        total = sum(self.truth.values())
        if n != total:
            return f"the input topic holds {n} records, the test produced {total}"
        return ""

    def wait_for_end(self, live, timeout=240, quiet_s=4.0, settled_s=30.0):
        """Waits (bounded) until the group has committed the whole input, the output
        stopped growing for `quiet_s` and the last count of every word is right; or until
        the output, wrong, did not change for `settled_s` with everything committed; or
        until `timeout`. Returns the output as then (the caller checks it)."""
        deadline = time.monotonic() + timeout
        last_n, since = -1, time.monotonic()
        outs = []
        checked_at = -1
        while time.monotonic() < deadline:
            for m in live:
                if not m.alive():
                    self.fail_with_report(f"member {m.name} exited ({m.proc.returncode}) while "
                                          "the input was being finished")
            n = self.count("out")
            now = time.monotonic()
            if n != last_n:
                last_n, since = n, now
            elif now - since >= quiet_s and self.lag() == 0:
                if checked_at != n:
                    checked_at = n
                    outs = self.outputs()
                    wrong, problems = self.verdict(outs)
                    if not wrong and not problems:
                        self.note(f"converged: {n} output records, lag 0")
                        return outs
                elif now - since >= settled_s:
                    # Everything consumed, nothing written for settled_s: nothing more
                    # will come (a rebalance takes a few seconds here).
                    self.note(f"settled wrong: lag 0, {n} output records, none for "
                              f"{settled_s:.0f} s")
                    return outs
            time.sleep(0.5)
        self.note(f"no convergence within {timeout} s: lag {self.lag()}, {last_n} output records")
        return self.outputs()

    # -- checks and failure reports ------------------------------------------------------

    def stop_all(self, timeout=60):
        """SIGTERM every running member at once (as stopping all units would); each must
        exit 0 (within shutdown_timeout_ms: it writes its final checkpoint and leaves)."""
        running = [m for m in self.members.values() if m.alive()]
        for m in running:
            if m.stopped:
                m.cont()
            m.proc.send_signal(signal.SIGTERM)
        bad = []
        deadline = time.monotonic() + timeout
        for m in running:
            try:
                rc = m.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                m.kill()
                rc = None
            if rc != 0:
                bad.append(f"{m.name}: exit {rc}")
        if bad:
            self.fail_with_report("members did not stop cleanly on SIGTERM: " + ", ".join(bad))

    def check_counts(self, outs=None):
        outs = self.outputs() if outs is None else outs
        wrong, problems = self.verdict(outs)
        if wrong or problems:
            lines = [f"{len(wrong)} of {len(self.truth)} words have a wrong last count "
                     f"({len(outs)} output records for {sum(self.truth.values())} inputs):"]
            for w, (exp, got, peak) in list(wrong.items())[:60]:
                lines.append(f"  {w}: expected {exp}, last seen {got}, max seen {peak}")
            if len(wrong) > 60:
                lines.append(f"  ... and {len(wrong) - 60} more")
            lines += problems
            self.fail_with_report("\n".join(lines))
        restores = sum(len(m.restores()) for m in self.members.values())
        self.note(f"counts exact: {len(self.truth)} words, {sum(self.truth.values())} inputs, "
                  f"{len(outs)} outputs; {restores} key groups restored on assignment, "
                  f"{sum(len(m.runs) for m in self.members.values())} runs")
        print(f"\n[seed {SEED}, mode {self.MODE}]\n" + "\n".join(self.notes))

    def fail_with_report(self, msg):
        parts = [f"[seed {SEED}, mode {self.MODE}] {msg}", "--- what the test did ---",
                 *self.notes]
        try:
            parts.append(f"group lag: {self.lag()}, committed {self.broker.committed(GROUP, 'in')}"
                         f", input ends {self.input_end()}")
        except Exception as e:  # noqa: BLE001 (a report must not hide the failure)
            parts.append(f"(no group offsets: {e})")
        for m in self.members.values():
            parts.append(m.tail())
        self.fail("\n".join(parts))

    def check_store(self, cfg, source="in", groups=PARTITIONS):
        """After every member stopped (each with a final checkpoint): `sluiced checkpoints
        --json` says every key group of `source` is restored from a committed epoch that
        holds the group's highest claim (no newer claim without a committed entry). Returns
        the listing."""
        listing, why = self.checkpoints_listing(cfg)
        if listing is None:
            self.fail_with_report(f"`sluiced checkpoints` failed: {why}")
        self.write("checkpoints.json", json.dumps(listing, indent=1))
        rows = {r.get("group"): r for r in listing.get("key_groups") or []
                if r.get("source") == source}
        problems = []
        for g in range(1, groups + 1):
            r = rows.get(g)
            if r is None or r.get("epoch") is None:
                problems.append(f"key group {g} of '{source}': no committed epoch holds it ({r})")
            elif r.get("claim") != r.get("highest_claim"):
                problems.append(f"key group {g} of '{source}': restored from claim "
                                f"{r.get('claim')} of {r.get('member')}, but the highest claim "
                                f"is {r.get('highest_claim')}")
        if problems:
            self.fail_with_report("the store after the stop (checkpoints.json in the temp "
                                  "dir):\n" + "\n".join(problems))
        self.note(f"store: every key group of '{source}' restores from its highest claim: "
                  + ", ".join(f"{g} claim {rows[g]['claim']} of {rows[g].get('member')}"
                              for g in sorted(rows) if isinstance(g, int)))
        return listing

    def checkpoints_listing(self, cfg):
        """`sluiced checkpoints CFG --json` (as parsed JSON), or None with the reason."""
        r = self.sluiced("checkpoints", cfg, "--json", timeout=120)
        if r.returncode != 0:
            return None, r.describe()
        try:
            return json.loads(r.stdout), ""
        except ValueError as e:
            return None, f"not JSON: {e}\n{r.stdout[:2000]}"


def wait_for_owners(test, members, partitions, timeout, each=False, what=""):
    """Waits (bounded) until `members`, as their logs say ("assigned: in[..]" /
    "revoked: ..."), hold every one of `partitions` partitions of `in`, none twice, and with
    `each` every member holds at least one; fails with the report otherwise."""
    deadline = time.monotonic() + timeout
    started, held = time.monotonic(), False
    producer = getattr(test, "producer", None)
    while True:
        # A rebalance takes a few seconds here; on a loaded machine it can take much
        # longer: then hold the input, so that records still flow after the wait.
        if not held and producer is not None and time.monotonic() - started > 8:
            producer.pause()
            held = True
            test.note(f"producer held at {producer.sent} records while waiting until {what}")
        owned = {m.name: m.owned() for m in members}
        held = [p for ps in owned.values() for p in ps]
        ok = (sorted(held) == list(range(partitions))
              and (not each or all(owned.values())))
        if ok:
            if held:
                producer.resume()
            test.note(f"{what}: " + ", ".join(f"{n} in{sorted(ps)}" for n, ps in owned.items()))
            return owned
        for m in members:
            if not m.alive():
                test.fail_with_report(f"{m.name} exited ({m.proc.returncode}) while waiting "
                                      f"until {what}")
        if time.monotonic() > deadline:
            test.fail_with_report(f"not within {timeout} s: {what} (owned: "
                                  + ", ".join(f"{n} in{sorted(ps)}" for n, ps in owned.items())
                                  + ")")
        time.sleep(0.3)
