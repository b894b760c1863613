"""Tests that librdkafka's mock cluster cannot run, against a real Kafka cluster:

  - a topic that does not exist: the mock creates every topic a client asks about, so a
    missing topic can only be seen on a real broker (auto.create.topics.enable or not,
    the consumer sets allow.auto.create.topics=false);
  - read_committed: the mock writes no transaction markers, so aborted records cannot be
    told from committed ones.

Set SLUICE_KAFKA_BROKERS=host:port (the cluster's bootstrap address) to run them; without
it they are SKIPPED, and ctest reports this module as "Not Run". The cluster must allow
creating topics by producing to them (auto.create.topics.enable=true, Kafka's default) and
transactions (a single broker needs transaction.state.log.replication.factor=1 and
transaction.state.log.min.isr=1). Topic names carry a random suffix; nothing is deleted."""

import subprocess
import unittest
import uuid

from kafka_it import EXIT_OK, TEST_BROKER, KafkaTestCase, real_cluster_only, toml_str


@real_cluster_only("the mock broker auto-creates missing topics and has no transaction "
                   "markers")
class RealClusterTest(KafkaTestCase):
    REAL_CLUSTER = True

    def unique(self, stem):
        return f"sluice-it-{stem}-{uuid.uuid4().hex[:10]}"

    def check_missing_topic(self, group_line):
        topic = self.unique("missing")
        out = self.path("out.txt")
        proc, err = self.start_sluiced(f"""\
name = "missing-topic"

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = [{toml_str(topic)}]
{group_line}

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
        line = self.stderr_line_with_text(stderr, topic)
        self.assertRegex(line.lower(), "not exist|unknown", line)
        # The consumer must not have created it by asking.
        md = self.metadata()
        self.assertNotIn(topic, [t["topic"] for t in md["topics"] if not t.get("error")])

    def stderr_line_with_text(self, stderr, needle):
        for line in stderr.splitlines():
            if needle in line:
                return line
        self.fail(f"no stderr line names {needle!r}:\n{stderr}")

    def test_missing_topic_assigned(self):
        self.check_missing_topic("")

    def test_missing_topic_group(self):
        self.check_missing_topic(f'group_id = "{self.unique("group")}"')

    def transactional_produce(self, topic, values, abort):
        """Produces `values` to partition 0 in one transaction, written to the log and then
        committed or aborted (sluice_test_broker --txn-produce: kcat cannot abort a
        transaction after sending its records)."""
        cp = subprocess.run(
            [TEST_BROKER, "--txn-produce", self.bootstrap, topic, "0",
             "abort" if abort else "commit"],
            input=("\n".join(values) + "\n").encode(), capture_output=True, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stderr.decode(errors="replace"))

    def test_read_committed_skips_aborted_records(self):
        topic = self.unique("txn")
        committed = [f"c{i}" for i in range(10)]
        aborted = [f"x{i}" for i in range(10)]
        committed2 = [f"c{i}" for i in range(10, 20)]
        self.transactional_produce(topic, committed, abort=False)
        self.transactional_produce(topic, aborted, abort=True)
        self.transactional_produce(topic, committed2, abort=False)
        # The aborted records did reach the log: a read_uncommitted reader sees them
        # (librdkafka's, and so kcat's, default is read_committed).
        raw = [r["value"] for r in self.consume(topic, "-X", "isolation.level=read_uncommitted")]
        self.assertTrue(set(aborted) <= set(raw),
                        "the aborted records are not in the log: the test proves nothing")

        out = self.path("out.txt")
        cfg = self.write("rc.toml", f"""\
name = "read-committed"

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = [{toml_str(topic)}]
value_format = "string"
stop_at_end = true
config = {{ "isolation.level" = "read_committed" }}

[sinks.out]
type = "sink_to_textfile"
inputs = ["in"]
path = {toml_str(out)}
format = "text"
""")
        result = self.sluiced("run", cfg, timeout=120)
        self.assertEqual(result.returncode, EXIT_OK, result.describe())
        self.assertEqual(self.read(out).splitlines(), committed + committed2, result.describe())


if __name__ == "__main__":
    unittest.main()
