"""Two sluiced processes in one consumer group split the partitions of `in` (each one
produces some of the output), and when one is SIGKILLed the survivor takes over its
partitions: every record appears in the output (at-least-once: duplicates allowed, no
loss). Each process writes to its own output topic so that the test can tell who did what.

Slow by nature (label torture): the mock spends session.timeout.ms - 1 s on each rebalance,
and noticing a killed member takes session.timeout.ms (6 s here)."""

import signal
import time
import unittest

from kafka_it import KafkaTestCase, toml_str, wait_for

PARTITIONS = 4


class ConsumerGroupTest(KafkaTestCase):
    TOPICS = {"in": PARTITIONS, "out-a": 1, "out-b": 1}

    def member(self, out_topic):
        return f"""\
name = "member-{out_topic}"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "split"
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "{out_topic}"
config = {self.producer_config()}
"""

    def produce_wave(self, wave, per_partition=5):
        """Records "w<wave>-p<partition>-<i>" to each partition; returns their values."""
        values = []
        for p in range(PARTITIONS):
            batch = [f"w{wave}-p{p}-{i}" for i in range(per_partition)]
            self.produce("in", batch, partition=p)
            values += batch
        return values

    def outputs(self, topic):
        return [r["value"] for r in self.consume(topic)]

    def test_split_and_takeover(self):
        a, a_err = self.start_sluiced(self.member("out-a"), "a.toml")
        b, b_err = self.start_sluiced(self.member("out-b"), "b.toml")
        procs = [a, b]

        # Until both members hold partitions, one of them may consume everything: keep
        # producing small waves until both have written something.
        sent, wave = [], 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sent += self.produce_wave(wave)
            wave += 1
            time.sleep(1.0)
            for proc, err in ((a, a_err), (b, b_err)):
                self.assertRunning(proc, err, "while the group forms")
            if self.broker.count("out-a") > 0 and self.broker.count("out-b") > 0:
                break
        self.assertGreater(self.broker.count("out-a"), 0,
                           f"member a never got partitions\n{self.read(a_err)}")
        self.assertGreater(self.broker.count("out-b"), 0,
                           f"member b never got partitions\n{self.read(b_err)}")

        # A settled split: one more wave, and each member's share is disjoint.
        sent += self.produce_wave(wave)
        wave += 1
        self.assertTrue(wait_for(lambda: set(sent) <= set(self.outputs("out-a"))
                                 | set(self.outputs("out-b")), 30, interval=0.5),
                        "records missing before the kill")
        out_a, out_b = self.outputs("out-a"), self.outputs("out-b")
        last_wave = {v for v in sent if v.startswith(f"w{wave - 1}-")}
        parts_a = {v.split("-")[1] for v in out_a if v in last_wave}
        parts_b = {v.split("-")[1] for v in out_b if v in last_wave}
        self.assertTrue(parts_a and parts_b, f"after the split each member should read some "
                        f"partitions: a read {sorted(parts_a)}, b read {sorted(parts_b)}")
        self.assertFalse(parts_a & parts_b, "two members read the same partition")

        # Kill b without a chance to leave the group; a must take over b's partitions.
        b.send_signal(signal.SIGKILL)
        b.wait()
        procs.remove(b)
        after_kill = []
        for _ in range(3):
            after_kill += self.produce_wave(wave)
            wave += 1
        sent += after_kill
        done = wait_for(lambda: set(after_kill) <= set(self.outputs("out-a")), 60, interval=0.5)
        self.assertRunning(a, a_err, "after b was killed")
        missing = sorted(set(after_kill) - set(self.outputs("out-a")))
        self.assertTrue(done, f"the survivor did not process {len(missing)} records written "
                        f"after the kill, e.g. {missing[:5]}\n{self.read(a_err)}")
        # Nothing at all is lost (duplicates are allowed: at-least-once).
        union = set(self.outputs("out-a")) | set(self.outputs("out-b"))
        self.assertEqual(sorted(set(sent) - union), [])
        # b's partitions are among those a now reads.
        parts_after = {v.split("-")[1] for v in self.outputs("out-a") if v in set(after_kill)}
        self.assertEqual(parts_after, {f"p{p}" for p in range(PARTITIONS)})

        rc, _ = self.stop_sluiced(a, a_err)
        self.assertEqual(rc, 0, self.read(a_err))


if __name__ == "__main__":
    unittest.main()
