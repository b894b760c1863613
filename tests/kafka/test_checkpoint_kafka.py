"""from_kafka / to_kafka in the checkpoint protocol (at-least-once, the default), against
the test broker:

  - with a [checkpoint] table the group's offsets move only with checkpoints (the periodic
    commit is off), and SIGTERM's final checkpoint commits the end;
  - a restart restores the source's positions and the operator state from the checkpoint;
  - a delivery that fails fails the epoch: no checkpoint covers output that is not in
    Kafka, and the restart produces it (nothing lost, the counts exact).
"""

import json
import time
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for


class CheckpointKafkaTest(KafkaTestCase):
    TOPICS = {"in": 2, "out": 1}
    GROUP = "cp-group"

    def pipeline(self, interval_ms=200, commit_interval_ms=5000, sink_extra="", batched=False):
        source_type = "from_kafka_batched" if batched else "from_kafka"
        # A batched source emits arrays: flatten them before counting.
        flatten = """
[operators.items]
type = "flatten"
inputs = ["in"]
""" if batched else ""
        counted = "items" if batched else "in"
        return f"""\
name = "cpk"

[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = {interval_ms}

[sources.in]
type = "{source_type}"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = {toml_str(self.GROUP)}
value_format = "string"
commit_interval_ms = {commit_interval_ms}
config = {self.consumer_config()}

{flatten}
[operators.counts]
type = "accumulate"
inputs = ["{counted}"]
function = "count_by"
start = {{}}

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
{sink_extra}config = {self.producer_config()}
"""

    def produce_spread(self, records):
        """Half of `records` to each partition of "in". Unkeyed records from kcat stick to
        one partition for the producer's linger, so the other could stay empty; the consumer
        learns an empty partition's end only from its first fetch, and a SIGTERM before that
        commits nothing for it (as Flink's Kafka source: no position read, none committed),
        which made the offset checks below race with that fetch."""
        half = len(records) // 2
        self.produce("in", records[:half], partition=0)
        self.produce("in", records[half:], partition=1)

    def outputs(self):
        return [json.loads(r["value"]) for r in self.consume("out")]

    def committed(self):
        return self.broker.committed(self.GROUP, "in")

    def ends(self):
        return {p: hi for p, (_lo, hi) in self.broker.watermarks("in").items()}

    def wait_total(self, proc, total, skip=0, timeout=40):
        def done():
            if proc.poll() is not None:
                return True
            outs = self.outputs()[skip:]
            return bool(outs) and sum(outs[-1].values()) >= total
        wait_for(done, timeout, interval=0.2)

    def test_offsets_move_only_with_checkpoints(self):
        words = [f"w{i % 3}" for i in range(30)]
        self.produce_spread(words)
        # Periodic commits every 100 ms would be visible at once; checkpoints only every 60 s.
        cfg = self.write("p.toml", self.pipeline(interval_ms=60000, commit_interval_ms=100))
        proc, _out, err = self.spawn("run", cfg)
        self.wait_total(proc, len(words))
        self.assertRunning(proc, err)
        time.sleep(1.0)  # ten periodic commit intervals
        self.assertEqual(set(self.committed().values()), {-1001},
                         "offsets were committed without a checkpoint\n" + self.read(err))
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        # SIGTERM: the final checkpoint committed exactly the end of the input.
        self.assertEqual(self.committed(), self.ends(), self.read(err))

    def test_restart_restores_positions_and_state(self):
        self.restart_restores(batched=False)

    def test_restart_restores_positions_and_state_batched(self):
        self.restart_restores(batched=True)

    def restart_restores(self, batched):
        self.produce("in", ["a", "b", "a"])
        cfg = self.write("p.toml", self.pipeline(batched=batched))
        proc, _out, err = self.spawn("run", cfg)
        self.wait_total(proc, 3)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        first = len(self.outputs())
        self.produce("in", ["b", "c"])
        proc, _out, err = self.spawn("run", cfg)
        self.wait_total(proc, 5, skip=first)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        outs = self.outputs()
        # The second run read only the two new records, on top of the restored counts.
        self.assertEqual(len(outs), first + 2)
        self.assertEqual(outs[-1], {"a": 2, "b": 2, "c": 1})
        self.assertIn("restored positions", self.read(err))

    def test_failed_delivery_fails_the_epoch_and_restart_recovers(self):
        words = [f"w{i % 4}" for i in range(40)]
        self.produce_spread(words[:20])
        # Deliveries give up after 2 s (message.timeout.ms) when "out" has no leader.
        cfg = self.write("p.toml", self.pipeline().replace(
            'topic = "out"\nconfig = { ', 'topic = "out"\nconfig = { "message.timeout.ms" = "2000", '))
        proc, _out, err = self.spawn("run", cfg)
        self.wait_total(proc, 20)
        wait_for(lambda: sum(self.committed().values()) == 20, 10)
        self.assertEqual(sum(self.committed().values()), 20, self.read(err))
        # The output partition loses its leader: the next deliveries time out and fail.
        self.broker.set_leader("out", 0, -1)
        self.produce_spread(words[20:])
        try:
            rc = proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - report the log
            self.fail("sluiced did not fail on failed deliveries\n" + self.read(err))
        self.assertNotEqual(rc, EXIT_OK)
        self.assertIn("delivery to topic 'out' failed", self.read(err))
        # No checkpoint covered the undelivered output: the offsets did not move.
        self.assertEqual(sum(self.committed().values()), 20)
        self.broker.set_leader("out", 0, 1)
        before = len(self.outputs())
        proc, _out, err = self.spawn("run", cfg)
        self.wait_total(proc, 40, skip=before)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertEqual(self.outputs()[-1], {f"w{i}": 10 for i in range(4)})
        self.assertEqual(self.committed(), self.ends())


if __name__ == "__main__":
    unittest.main()
