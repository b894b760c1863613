"""Event-time windows through Kafka with SIGKILLs (issue 14).

Records with explicit Kafka timestamps (sluice_test_broker --produce: kcat cannot set them)
on 3 partitions of `clicks`, each user always in the same partition, go through

    from_kafka (group, json) -> key_by user -> event_time (the Kafka timestamp,
    max_out_of_orderness_ms 1000) -> window (tumbling 10 s, count, allowed_lateness_ms 5000)
    -> to_kafka "minutes" (exactly_once)        and   "w.late" -> to_kafka "late"

with checkpoints every 200 ms, while sluiced is SIGKILLed and restarted several times in the
middle of the stream. Then kcat reads both topics.

Why the results are deterministic although the partitions are read in any interleaving:
the input comes in phases, and the next phase is produced only once the group's committed
offsets (moved by the checkpoints' transactions) cover the previous one. Every partition
ends each phase with a record at the phase's frontier F, so between phases the watermark is
exactly F - 1000, whatever the interleaving and whichever checkpoint a restart restores
(its positions are at or past the last barrier). Within a phase it stays between the two
frontiers. The frontiers are chosen so that (window j = [j*10 s, (j+1)*10 s) from T0, end e):
  - phase a_j: frontier j*10 s + 5 s; phase b_j: frontier e + 1.5 s, so after b_j the
    watermark is e + 0.5 s: window j has fired and is open for lateness until e + 5 s;
  - every "bulk" record of a phase lies in a window whose end + 5 s is above the phase's
    highest watermark: it is counted (in the first firing, or in a re-firing);
  - phase a_{j+1} also carries records of window j (fired, not closed: each fires it again
    with the new count) and "too late" records of window j-1 or earlier (closed for good:
    they must go to `late`, unchanged, and never count).
After the last phase the watermark is e_7 + 4 s: windows 0..7 have fired; window 8's
records are in no output.

Checked: for every window, the last result in `minutes` is the true count of its records
(too-late ones excluded) and no result ever exceeds it (a record counted twice, or a late
one counted, would); windows that got records within the allowed lateness show the count
before them too (they fired twice); no other window appears; results are keyed by the
user, with the Kafka timestamp end - 1. Every too-late record is in `late`, unchanged (key,
value, timestamp), and nothing else is.

What the mock broker cannot show: it has no transaction markers and no read_committed, so
the output of a transaction a kill left open is visible to kcat here; the test therefore
checks the LAST result per window (a restart replays the open transaction's input and
writes its results again, after the aborted ones) and not that each appears once. The
late output is a second to_kafka, which cannot be transactional too (at most one
exactly_once to_kafka per pipeline: the offsets go into one transaction), so it is
at-least-once: a too-late record a kill caught before the checkpoint is written again by
the replay. Duplicates there are counted and printed, not failed.

SLUICE_TORTURE_SEED replays a run (the seed is printed with every failure).
"""

import collections
import json
import os
import random
import signal
import time
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for

SEED = int(os.environ.get("SLUICE_TORTURE_SEED", str(random.randrange(1 << 30))))
KILLS = 6
BUDGET_S = 180                  # the whole test's bound (ctest TIMEOUT 240)

T0 = 1_700_000_000_000          # a multiple of the window size
SIZE = 10_000                   # tumbling window, ms
OOO = 1_000                     # max_out_of_orderness_ms
LATENESS = 5_000                # allowed_lateness_ms
WINDOWS = 8                     # windows 0..7 fire
PARTITIONS = 3
USERS = [f"u{i}" for i in range(12)]  # u{i} always in partition i % 3


def window_of(ts):
    return (ts - T0) // SIZE


def window_end(j):
    return T0 + (j + 1) * SIZE


class Phases:
    """The input, phase by phase: (partition, ts, key, value) records, and what to expect."""

    def __init__(self, rng):
        self.rng = rng
        self.next_id = 0
        self.phases = []          # [(name, [records])]
        self.counted = collections.Counter()   # (user, window) -> records counted
        self.refired = set()      # (user, window) that got a record within the lateness
        self.too_late = {}        # id -> (partition, ts, key, value)
        frontier = T0 - 1
        for j in range(WINDOWS + 1):
            a = T0 + j * SIZE + 5_000
            recs = self.bulk(frontier, a)
            if j >= 1:
                recs += self.refire(j - 1)
            if j >= 2:
                recs += self.late(j - 2)
            self.phases.append((f"a{j}", self.ordered(recs)))
            frontier = a
            if j == WINDOWS:
                break
            b = window_end(j) + 1_500
            self.phases.append((f"b{j}", self.ordered(self.bulk(frontier, b))))
            frontier = b
        self.final_watermark = frontier - OOO

    def record(self, user, ts, kind):
        self.next_id += 1
        value = json.dumps({"user": user, "id": self.next_id, "kind": kind},
                           separators=(",", ":"))
        return (USERS.index(user) % PARTITIONS, ts, user, value)

    def bulk(self, low, frontier):
        """Records in (low, frontier], the last of each partition at the frontier."""
        recs = []
        for _ in range(self.rng.randrange(40, 80)):
            user = self.rng.choice(USERS)
            recs.append(self.record(user, self.rng.randint(low + 1, frontier), "bulk"))
        for p in range(PARTITIONS):
            recs.append(self.record(USERS[p], frontier, "frontier"))
        for _p, ts, user, _v in recs:
            self.counted[(user, window_of(ts))] += 1
        return recs

    def refire(self, j):
        """Records of window j after it fired, within the allowed lateness."""
        recs = []
        for user in self.rng.sample(USERS, 3):
            ts = self.rng.randint(T0 + j * SIZE, window_end(j) - 1)
            recs.append(self.record(user, ts, "refire"))
            if self.counted[(user, j)]:  # else the record opens the window, which fires once
                self.refired.add((user, j))
            self.counted[(user, j)] += 1
        return recs

    def late(self, newest):
        """Records of window `newest` or earlier, closed for good: to `late`."""
        recs = []
        for _ in range(self.rng.randrange(1, 4)):
            user = self.rng.choice(USERS)
            ts = self.rng.randint(T0, window_end(newest) - 1)
            r = self.record(user, ts, "late")
            recs.append(r)
            self.too_late[json.loads(r[3])["id"]] = r
        return recs

    def ordered(self, recs):
        """Per partition by event time, with about 1 in 10 records a little out of order
        (the phase's bounds hold whatever the order)."""
        recs = sorted(recs, key=lambda r: r[1])
        for i in range(1, len(recs)):
            if self.rng.random() < 0.1:
                recs[i - 1], recs[i] = recs[i], recs[i - 1]
        return recs

    def expected(self):
        """{(user, window start): count} of the windows that fired."""
        return {(u, T0 + j * SIZE): n for (u, j), n in self.counted.items()
                if window_end(j) <= self.final_watermark}


class EventTimeWindowKillTest(KafkaTestCase):
    GROUP = "evtime-group"
    # Each restart joins the group again, and the killed member stays in it until its
    # session times out: keep it short so that the kills stay fast.
    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        "session.timeout.ms": "3000",
        "heartbeat.interval.ms": "300",
    }

    def setUp(self):
        super().setUp()
        self.broker.create_topic("clicks", PARTITIONS)
        self.broker.create_topic("minutes", 2)
        self.broker.create_topic("late", 1)

    def pipeline(self):
        return f"""\
name = "evtime-kafka"

[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = 200
keep = 3

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["clicks"]
group_id = {toml_str(self.GROUP)}
value_format = "json"
poll_interval_ms = 20
config = {self.consumer_config()}

[operators.by_user]
type = "key_by"
inputs = ["in"]
function = "get"
args = {{ path = "user" }}

[operators.et]
type = "event_time"
inputs = ["by_user"]
max_out_of_orderness_ms = {OOO}

[operators.w]
type = "window"
inputs = ["et"]
kind = "tumbling"
size_ms = {SIZE}
function = "count"
start = 0
allowed_lateness_ms = {LATENESS}

[sinks.out]
type = "to_kafka"
inputs = ["w"]
brokers = {toml_str(self.bootstrap)}
topic = "minutes"
exactly_once = true
poll_interval_ms = 10
config = {self.producer_config()}

[sinks.late]
type = "to_kafka"
inputs = ["w.late"]
brokers = {toml_str(self.bootstrap)}
topic = "late"
poll_interval_ms = 10
config = {self.producer_config()}
"""

    def barrier(self, proc, err, what):
        """Waits until the group's committed offsets are at the end of `clicks`: every
        record produced so far is processed and its output committed. Bounded by 40 s and
        by what is left of the test's budget."""
        timeout = max(1.0, min(40.0, self.deadline - time.monotonic()))
        def caught_up():
            if proc.poll() is not None:
                return True
            ends = {p: hi for p, (_lo, hi) in self.broker.watermarks("clicks").items()}
            return self.broker.committed(self.GROUP, "clicks") == ends
        wait_for(caught_up, timeout, interval=0.1)
        self.assertRunning(proc, err, f"[seed {SEED}] {what}")
        ends = {p: hi for p, (_lo, hi) in self.broker.watermarks("clicks").items()}
        self.assertEqual(self.broker.committed(self.GROUP, "clicks"), ends,
                         f"[seed {SEED}] {what}: the offsets were not committed within "
                         f"{timeout:.0f} s\n{self.read(err)[-3000:]}")

    def test_windows_exact_and_late_records_out_through_kills(self):
        self.deadline = time.monotonic() + BUDGET_S
        rng = random.Random(SEED)
        phases = Phases(rng)
        names = [name for name, _ in phases.phases]
        # The kills: after producing these phases, a random moment into their processing.
        kill_after = set(rng.sample(names[1:-1], KILLS))
        cfg = self.write("pipeline.toml", self.pipeline())
        proc, _out, err = self.spawn("run", cfg)
        logs, story = [err], []
        for name, recs in phases.phases:
            self.produce_timestamped("clicks", recs)
            if name in kill_after:
                time.sleep(rng.uniform(0.0, 0.4))
                self.assertRunning(proc, err, f"[seed {SEED}] before the kill in phase {name}")
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                story.append(f"phase {name}: {len(recs)} records, SIGKILL")
                proc, _out, err = self.spawn("run", cfg)
                logs.append(err)
            else:
                story.append(f"phase {name}: {len(recs)} records")
            self.barrier(proc, err, f"after phase {name}")
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, f"[seed {SEED}] exit code of the last run\n{self.read(err)}")
        context = (f"[seed {SEED}] " + "; ".join(story) + "\n--- last run's log ---\n"
                   + self.read(err)[-3000:])

        # --- the window results ------------------------------------------------------
        expected = phases.expected()
        results = collections.defaultdict(list)  # (user, start) -> values, in topic order
        for r in self.consume("minutes"):
            out = json.loads(r["value"])
            self.assertEqual(list(out), ["key", "start", "end", "value"], context)
            self.assertEqual(out["end"] - out["start"], SIZE, f"{out}\n{context}")
            self.assertEqual(r["key"], out["key"], f"record key of {out}\n{context}")
            self.assertEqual(r["timestamp"], out["end"] - 1, f"timestamp of {out}\n{context}")
            results[(out["key"], out["start"])].append(out["value"])
        self.assertEqual(sorted(set(results) - set(expected)), [],
                         f"results for windows that got no counted record or never fired\n"
                         f"{context}")
        self.assertEqual(sorted(set(expected) - set(results)), [],
                         f"windows that fired without a result\n{context}")
        wrong = {w: (expected[w], vs) for w, vs in results.items() if vs[-1] != expected[w]}
        self.assertEqual(wrong, {}, f"windows whose last result is not the true count "
                                    f"(expected, results)\n{context}")
        over = {w: (expected[w], vs) for w, vs in results.items() if max(vs) > expected[w]}
        self.assertEqual(over, {}, f"windows with a result above the true count: a record "
                                   f"counted twice, or a late one counted\n{context}")
        for (user, j) in phases.refired:
            w = (user, T0 + j * SIZE)
            self.assertTrue(any(v < expected[w] for v in results[w]),
                            f"window {w} got records within the allowed lateness after it "
                            f"fired, but shows no firing before them: {results[w]}\n{context}")

        # --- the late records ----------------------------------------------------------
        late_seen = collections.Counter()
        for r in self.consume("late"):
            rec = json.loads(r["value"])
            self.assertIn(rec["id"], phases.too_late,
                          f"{rec} is in `late` but was not too late\n{context}")
            _p, ts, user, value = phases.too_late[rec["id"]]
            self.assertEqual((r["key"], r["value"], r["timestamp"]), (user, value, ts),
                             f"a late record changed on its way\n{context}")
            late_seen[rec["id"]] += 1
        missing = sorted(set(phases.too_late) - set(late_seen))
        self.assertEqual(missing, [], f"too-late records missing from `late`\n{context}")
        dupes = {i: n for i, n in late_seen.items() if n > 1}
        print(f"\n[seed {SEED}] {len(expected)} windows, {sum(expected.values())} counted "
              f"records, {sum(len(vs) for vs in results.values())} window results in "
              f"`minutes` (replays after the kills included), "
              f"{len(phases.refired)} late firings, {len(phases.too_late)} too-late "
              f"records ({len(dupes)} written more than once by a replay: that sink is "
              f"at-least-once); kills after phases {sorted(kill_after)}")


if __name__ == "__main__":
    unittest.main()
