"""from_kafka_batched emits arrays of up to max_batch_size consecutive values of ONE
partition (streamz from_kafka_batched); to_kafka writes each array as one JSON record."""

import json
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for

PARTITIONS = 3
PER_PARTITION = 45
MAX_BATCH = 10


class BatchedTest(KafkaTestCase):
    TOPICS = {"in": PARTITIONS, "out": 1}

    def test_arrays_per_partition(self):
        sent = {}
        for p in range(PARTITIONS):
            sent[p] = [f"p{p}-{i}" for i in range(PER_PARTITION)]
            self.produce("in", sent[p], partition=p)
        total = PARTITIONS * PER_PARTITION
        proc, err = self.start_sluiced(f"""\
name = "batched"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka_batched"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "batched"
value_format = "string"
max_batch_size = {MAX_BATCH}
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
""")
        def values_out():
            return [json.loads(r["value"]) for r in self.consume("out")]

        # Wait until the arrays' contents add up to every record (or sluiced exits).
        wait_for(lambda: proc.poll() is not None
                 or sum(len(b) for b in values_out()) >= total, 30, interval=0.5)
        self.assertRunning(proc, err)
        self.wait_until_stable("out", quiet_s=1.0)
        batches = values_out()
        self.assertEqual(sum(len(b) for b in batches), total, f"{batches}\n{self.read(err)}")
        for b in batches:
            self.assertIsInstance(b, list, f"an element is not an array: {b!r}")
            self.assertTrue(1 <= len(b) <= MAX_BATCH, f"batch of {len(b)}: {b}")
            parts = {v.split("-")[0] for v in b}
            self.assertEqual(len(parts), 1, f"a batch mixes partitions: {b}")
        # Each partition's batches, concatenated in output order, are its records in order.
        for p in range(PARTITIONS):
            got = [v for b in batches for v in b if v.startswith(f"p{p}-")]
            self.assertEqual(got, sent[p], f"partition {p}")
        # The backlog was there before the start: batches fill up to max_batch_size.
        self.assertIn(MAX_BATCH, [len(b) for b in batches])
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))


if __name__ == "__main__":
    unittest.main()
