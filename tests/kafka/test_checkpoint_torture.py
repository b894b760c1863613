"""SIGKILL torture tests of checkpointing with Kafka (issue 5): from_kafka -> map(strip) ->
filter(truthy) -> accumulate(count_by) -> to_kafka, with a [checkpoint] table (fs store,
small interval). sluiced is killed with SIGKILL at random points many times while input
keeps arriving, restarted each time, finally stopped with SIGTERM; then kcat reads the
output topic:

  - every counted input record is reflected: the running total (sum of the counts table)
    of the outputs covers 1..N, N = the number of words in the input;
  - the last output equals the true counts: state was restored from the checkpoint and
    consistent with the restored positions (lost state would undercount, re-reading without
    rewinding the state would overcount).

SLUICE_TORTURE_KILLS (default 20) sets the number of kills of the main test;
SLUICE_TORTURE_SEED replays a run (the seed is printed on failure).

The exactly-once variant (to_kafka exactly_once = true, transactions) is checked for
exactly-once against a real cluster only (test_checkpoint_eos_real_cluster.py,
SLUICE_KAFKA_BROKERS): there a read_committed consumer must see every running total exactly
once. The mock broker has no read_committed, so here the same kills run with the
at-least-once checks only (the transactional calls, fencing a killed run's producer by
init_transactions, and recovery through the group's committed offsets are exercised).
"""

import collections
import json
import os
import random
import signal
import time
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for

KILLS = int(os.environ.get("SLUICE_TORTURE_KILLS", "20"))
SEED = int(os.environ.get("SLUICE_TORTURE_SEED", str(random.randrange(1 << 30))))
WORDS = [f"w{i}" for i in range(23)]


def batch_records(rng, n):
    """n input values: words, some padded with spaces, some blank (filtered out)."""
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            out.append("  ")                       # stripped to "" -> filtered
        elif r < 0.3:
            out.append(f"  {rng.choice(WORDS)} ")   # stripped to the word
        else:
            out.append(rng.choice(WORDS))
    return out


def true_counts(records):
    return dict(collections.Counter(r.strip() for r in records if r.strip()))


class TortureMixin:
    """The pipeline, the kill loop and the checks; subclasses choose group / exactly-once."""

    GROUP = True
    EXACTLY_ONCE = False
    PARTITIONS = 2

    def topics(self):
        return self.in_topic, self.out_topic

    def pipeline(self):
        group = f'group_id = {toml_str(self.group)}\n' if self.GROUP else ""
        eos = "exactly_once = true\n" if self.EXACTLY_ONCE else ""
        return f"""\
name = {toml_str(self.name)}

[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = 150
keep = 3

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = [{toml_str(self.in_topic)}]
{group}value_format = "string"
poll_interval_ms = 20
config = {self.consumer_config()}

[operators.word]
type = "map"
inputs = ["in"]
function = "strip"

[operators.nonblank]
type = "filter"
inputs = ["word"]
function = "truthy"

[operators.counts]
type = "accumulate"
inputs = ["nonblank"]
function = "count_by"
start = {{}}

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = {toml_str(self.out_topic)}
poll_interval_ms = 10
{eos}config = {self.producer_config()}
"""

    def outputs(self, *kcat_args):
        recs = self.consume(self.out_topic, *kcat_args)
        return [json.loads(r["value"]) for r in recs]

    def run_torture(self, kills):
        rng = random.Random(SEED)
        cfg = self.write("pipeline.toml", self.pipeline())
        sent = []
        killed_with_output = 0
        for k in range(kills):
            # Half of the batch before the start, half while it runs.
            batch = batch_records(rng, rng.randrange(40, 300))
            half = len(batch) // 2
            self.produce(self.in_topic, batch[:half])
            sent += batch[:half]
            before = self.count(self.out_topic)
            proc, _out, err = self.spawn("run", cfg)
            if rng.random() < 0.2:
                time.sleep(rng.uniform(0.0, 0.5))  # a kill while starting or joining
            else:
                # A kill while it works: once output flows (the group assignment can take
                # session.timeout.ms after the previous kill), at a random point.
                wait_for(lambda: proc.poll() is not None or self.count(self.out_topic) > before,
                         20, interval=0.05)
                self.produce(self.in_topic, batch[half:])
                sent += batch[half:]
                time.sleep(rng.uniform(0.0, 0.4))
            if proc.poll() is not None:
                self.fail(f"[seed {SEED}] sluiced exited ({proc.returncode}) before kill {k + 1}"
                          f"\n{self.read(err)}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if self.count(self.out_topic) > before:
                killed_with_output += 1
        # The last run: let it finish the input, then stop it the graceful way.
        batch = batch_records(rng, 100)
        self.produce(self.in_topic, batch)
        sent += batch
        expected = true_counts(sent)
        total = sum(expected.values())
        proc, _out, err = self.spawn("run", cfg)

        def caught_up():
            if proc.poll() is not None:
                return True
            outs = self.outputs()
            return bool(outs) and sum(outs[-1].values()) >= total
        wait_for(caught_up, 90, interval=0.5)
        self.assertRunning(proc, err, f"[seed {SEED}] in the last run")
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, f"[seed {SEED}] exit code of the last run\n{self.read(err)}")
        return expected, total, err, killed_with_output

    def check_at_least_once(self, outs, expected, total, err):
        self.assertTrue(outs, "no output at all")
        final = outs[-1]
        self.assertEqual(final, expected,
                         f"[seed {SEED}] the final counts differ from the true counts "
                         f"(restored state inconsistent with restored positions)\n"
                         f"{self.read(err)[-3000:]}")
        totals = {sum(o.values()) for o in outs}
        missing = sorted(set(range(1, total + 1)) - totals)
        self.assertEqual(missing, [], f"[seed {SEED}] input records not reflected in any "
                                      f"output (running totals never seen)")
        self.assertLessEqual(max(totals), total, f"[seed {SEED}] a record was counted twice")


class AtLeastOnceTortureTest(TortureMixin, KafkaTestCase):
    """Consumer group mode (offsets committed to the group only with checkpoints)."""

    def setUp(self):
        super().setUp()
        self.name = "torture"
        self.group = "torture-group"
        self.in_topic, self.out_topic = "words", "counts"
        self.broker.create_topic(self.in_topic, self.PARTITIONS)
        self.broker.create_topic(self.out_topic, 1)

    # Each restart joins the group again; the killed member stays in it until its session
    # times out (session.timeout.ms): keep it short so that the kills stay fast.
    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        "session.timeout.ms": "3000",
        "heartbeat.interval.ms": "300",
    }

    def test_sigkill_many_times_group(self):
        expected, total, err, with_output = self.run_torture(KILLS)
        outs = self.outputs()
        self.check_at_least_once(outs, expected, total, err)
        # The group's offsets were committed by checkpoints: they are at the end of the input.
        committed = self.broker.committed(self.group, self.in_topic)
        ends = {p: hi for p, (_lo, hi) in self.broker.watermarks(self.in_topic).items()}
        self.assertEqual(committed, ends, "the final checkpoint's offsets are not committed")
        self.assertIn("restored positions", self.read(err))
        self.assertGreater(with_output, 0, "no kill happened while output was produced")


class AtLeastOnceManualTortureTest(TortureMixin, KafkaTestCase):
    """Without a group: positions live in the checkpoint only."""

    GROUP = False

    def setUp(self):
        super().setUp()
        self.name = "torture-manual"
        self.in_topic, self.out_topic = "words", "counts"
        self.broker.create_topic(self.in_topic, self.PARTITIONS)
        self.broker.create_topic(self.out_topic, 1)

    def test_sigkill_many_times_manual(self):
        expected, total, err, _ = self.run_torture(max(KILLS // 2, 5))
        self.check_at_least_once(self.outputs(), expected, total, err)


class ExactlyOnceMockTortureTest(TortureMixin, KafkaTestCase):
    """exactly_once = true against the mock: transactions per epoch, offsets in them. The
    mock shows aborted records to every reader, so only the at-least-once checks apply
    (plus: the group's offsets come from the transactions)."""

    EXACTLY_ONCE = True
    CONSUMER_CONFIG = AtLeastOnceTortureTest.CONSUMER_CONFIG

    def setUp(self):
        super().setUp()
        self.name = "torture-eos"
        self.group = "torture-eos-group"
        self.in_topic, self.out_topic = "words", "counts"
        self.broker.create_topic(self.in_topic, self.PARTITIONS)
        self.broker.create_topic(self.out_topic, 1)

    def test_sigkill_transactions_on_mock(self):
        expected, total, err, _ = self.run_torture(max(KILLS // 4, 3))
        self.check_at_least_once(self.outputs(), expected, total, err)
        committed = self.broker.committed(self.group, self.in_topic)
        ends = {p: hi for p, (_lo, hi) in self.broker.watermarks(self.in_topic).items()}
        self.assertEqual(committed, ends, "the last transaction did not commit the offsets")
        self.assertIn("transactions on", self.read(err))


if __name__ == "__main__":
    unittest.main()
