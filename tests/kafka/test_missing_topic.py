"""A topic that does not exist, without a consumer group: from_kafka assigns partitions
itself from a metadata lookup of all topics, which does not make the mock create the topic,
so this runs on the test broker. sluiced stops with an error naming the topic. (With a
group, the subscription's metadata request would make the mock create the topic: that case
is in test_real_cluster.py.)"""

import subprocess
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str


class MissingTopicTest(KafkaTestCase):
    TOPICS = {"present": 1}

    def test_missing_topic_is_a_clear_error(self):
        out = self.path("out.txt")
        proc, err = self.start_sluiced(f"""\
name = "missing-topic"

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["present", "no-such-topic"]
config = {self.consumer_config()}

[sinks.out]
type = "sink_to_textfile"
inputs = ["in"]
path = {toml_str(out)}
""")
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.fail(f"sluiced kept running on a topic that does not exist\n{self.read(err)}")
        stderr = self.read(err)
        self.assertNotEqual(rc, EXIT_OK, stderr)
        lines = [line for line in stderr.splitlines() if "no-such-topic" in line]
        self.assertTrue(lines, f"no error names the topic:\n{stderr}")
        self.assertRegex(" ".join(lines).lower(), "not exist|unknown")
        self.assertIn("node 'in'", " ".join(lines))
        # Asking did not create it.
        self.assertEqual(self.broker.watermarks("no-such-topic"), {})


if __name__ == "__main__":
    unittest.main()
