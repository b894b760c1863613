"""The "kafka" checkpoint store (`[checkpoint] store = "kafka"`) against the test broker:
checkpoints land in the topic keyed "<pipeline>/<epoch>" with "<pipeline>/<epoch>/committed"
markers; retention writes tombstones so that only `keep` epochs remain; a restarted daemon
reads the topic back and restores its state from it, also after SIGKILLs."""

import json
import os
import time
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for
from test_checkpoint_torture import TortureMixin

KEEP = 2


class KafkaStoreTest(KafkaTestCase):
    TOPICS = {"in": 1, "out": 1, "cp": 1}

    def pipeline(self, name="stored", keep=KEEP, topic="cp"):
        return f"""\
name = {toml_str(name)}

[checkpoint]
store = "kafka"
brokers = {toml_str(self.bootstrap)}
topic = {toml_str(topic)}
interval_ms = 100
keep = {keep}

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
value_format = "string"
config = {self.consumer_config()}

[operators.counts]
type = "accumulate"
inputs = ["in"]
function = "count_by"
start = {{}}

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def outputs(self):
        return [json.loads(r["value"]) for r in self.consume("out")]

    def records(self):
        """The store topic's records as (key, value-or-None), in order."""
        cp = self.kcat("-C", "-t", "cp", "-o", "beginning", "-e", "-J", "-q",
                       "-X", "fetch.wait.max.ms=10")
        out = []
        for line in cp.stdout.decode(errors="replace").splitlines():
            if line.strip():
                env = json.loads(line)
                out.append((env.get("key"), env.get("payload")))
        return out

    def live_epochs(self, pipeline):
        """Epochs whose last record is not a tombstone (what compaction keeps)."""
        last = {}
        for key, value in self.records():
            if key and key.startswith(pipeline + "/") and not key.endswith("/committed"):
                last[int(key.split("/")[1])] = value is not None
        return sorted(e for e, live in last.items() if live)

    def run_until(self, cfg, total):
        """Starts sluiced; waits until one of ITS outputs has the running total `total`."""
        before = self.count("out")
        proc, _out, err = self.spawn("run", cfg)

        def done():
            if proc.poll() is not None:
                return True
            outs = self.outputs()[before:]
            return bool(outs) and sum(outs[-1].values()) >= total
        wait_for(done, 40, interval=0.3)
        self.assertRunning(proc, err)
        return proc, err

    def test_checkpoints_in_topic_keep_and_restore(self):
        self.produce("in", ["a", "b", "a"])
        cfg = self.write("p.toml", self.pipeline())
        proc, err = self.run_until(cfg, 3)
        time.sleep(1.0)  # several epochs of 100 ms: retention must have removed some
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        keys = [k for k, _ in self.records()]
        self.assertTrue(any(k == "stored/1" for k in keys), keys[:10])
        self.assertTrue(any(k.endswith("/committed") for k in keys), keys[:10])
        live = self.live_epochs("stored")
        self.assertEqual(len(live), KEEP, f"live epochs {live}")
        self.assertTrue(any(v is None for _, v in self.records()), "no tombstone written")

        # `sluiced checkpoints` reads the store back from the topic.
        listing = self.sluiced("checkpoints", cfg, "--json")
        self.assertExit(listing, EXIT_OK)
        epochs = json.loads(listing.stdout)["epochs"]
        self.assertEqual(sorted(e["epoch"] for e in epochs), live)
        self.assertTrue(all(e["committed"] for e in epochs), epochs)

        # A new run restores the counts from the topic and goes on counting.
        self.produce("in", ["b", "c"])
        proc, err = self.run_until(cfg, 5)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertEqual(self.outputs()[-1], {"a": 2, "b": 2, "c": 1})
        self.assertIn("restored positions", self.read(err))

    def test_pipelines_share_a_topic_without_mixing(self):
        self.produce("in", ["x"])
        for name in ("one", "two"):
            cfg = self.write(f"{name}.toml", self.pipeline(name=name))
            proc, err = self.run_until(cfg, 1)
            rc, _ = self.stop_sluiced(proc, err)
            self.assertEqual(rc, EXIT_OK, self.read(err))
        for name in ("one", "two"):
            listing = self.sluiced("checkpoints", self.path(f"{name}.toml"), "--json")
            self.assertExit(listing, EXIT_OK)
            self.assertEqual(sorted(e["epoch"] for e in json.loads(listing.stdout)["epochs"]),
                             self.live_epochs(name))

    def test_embedded_brokers_are_refused(self):
        cfg = self.write("p.toml", self.pipeline().replace(
            f'brokers = {toml_str(self.bootstrap)}\ntopic = "cp"', 'brokers = "embedded"\ntopic = "cp"', 1))
        result = self.sluiced("run", cfg, timeout=60)
        self.assertNotEqual(result.returncode, EXIT_OK)
        self.assertInStderr("lives and dies with the process", result)


class KafkaStoreTortureTest(TortureMixin, KafkaTestCase):
    """SIGKILLs with the checkpoints in Kafka: restored from the topic each time."""

    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        "session.timeout.ms": "3000",
        "heartbeat.interval.ms": "300",
    }

    def setUp(self):
        super().setUp()
        self.name = "torture-kstore"
        self.group = "torture-kstore-group"
        self.in_topic, self.out_topic = "words", "counts"
        self.broker.create_topic(self.in_topic, self.PARTITIONS)
        self.broker.create_topic(self.out_topic, 1)
        self.broker.create_topic("cp", 1)

    def pipeline(self):
        text = super().pipeline()
        start = text.index("[checkpoint]")
        end = text.index("[sources.in]")
        return text[:start] + f"""[checkpoint]
store = "kafka"
brokers = {toml_str(self.bootstrap)}
topic = "cp"
interval_ms = 150
keep = 3

""" + text[end:]

    def test_sigkill_with_kafka_store(self):
        kills = max(int(os.environ.get("SLUICE_TORTURE_KILLS", "20")) // 4, 4)
        expected, total, err, _ = self.run_torture(kills)
        self.check_at_least_once(self.outputs(), expected, total, err)


if __name__ == "__main__":
    unittest.main()
