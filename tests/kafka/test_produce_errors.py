"""to_kafka under broker errors injected into Produce requests (the test broker's `error`
command; Produce is protocol request type 0):

  - retriable errors: librdkafka retries, every record arrives, sluiced keeps running;
  - a permanent error: the delivery fails, and the node fails with the broker's error
    (sluiced exits non-zero): a record is never dropped silently.
"""

import subprocess
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str

PRODUCE = 0


class ProduceErrorTest(KafkaTestCase):
    TOPICS = {"in": 1, "out": 1}

    def pipeline(self):
        return f"""\
name = "produce-errors"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def test_retriable_errors_are_retried(self):
        values = [f"v{i}" for i in range(50)]
        self.produce("in", values)
        # Only now: kcat's own produce requests must not take these.
        self.broker.command(f"error {PRODUCE} NOT_ENOUGH_REPLICAS 3")
        proc, err = self.start_sluiced(self.pipeline())
        self.assertEqual(self.wait_for_count("out", len(values), procs=[proc]), len(values),
                         self.read(err))
        self.assertRunning(proc, err, "after retriable produce errors")
        self.assertEqual([r["value"] for r in self.consume("out")], values)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))

    def test_permanent_error_fails_the_node(self):
        values = [f"v{i}" for i in range(5)]
        self.produce("in", values)
        self.broker.command(f"error {PRODUCE} TOPIC_AUTHORIZATION_FAILED 1")
        proc, err = self.start_sluiced(self.pipeline())
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.fail(f"a failed delivery did not stop sluiced\n{self.read(err)}")
        stderr = self.read(err)
        self.assertNotEqual(rc, EXIT_OK, stderr)
        failure = [line for line in stderr.splitlines()
                   if "node 'out'" in line and "authoriz" in line.lower()]
        self.assertTrue(failure, f"no error of node 'out' names the broker's error:\n{stderr}")


if __name__ == "__main__":
    unittest.main()
