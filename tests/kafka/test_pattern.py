"""A regex subscription (`topics = ["^in-.*"]`) picks up a topic created while sluiced
runs, and only topics that match."""

import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str


class PatternSubscriptionTest(KafkaTestCase):
    TOPICS = {"in-first": 2, "out": 1, "other": 1}

    def test_new_matching_topic_is_consumed(self):
        proc, err = self.start_sluiced(f"""\
name = "pattern"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["^in-.*"]
group_id = "pattern"
refresh_ms = 1000
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
""")
        first = [f"first-{i}" for i in range(20)]
        self.produce("in-first", first)
        self.produce("other", ["not-matching"])
        # Joining the group can take long on a loaded 2-core CI machine: wait generously.
        self.assertEqual(self.wait_for_count("out", len(first), timeout=90, procs=[proc]), len(first),
                         self.read(err))

        # A topic created now, after the subscription: picked up by the metadata refresh
        # (refresh_ms = 1000) and a rebalance.
        self.broker.create_topic("in-later", 3)
        later = [f"later-{i}" for i in range(30)]
        self.produce("in-later", later)
        total = len(first) + len(later)
        got = self.wait_for_count("out", total, timeout=90, procs=[proc])
        self.assertRunning(proc, err, f"with {got} of {total} records in 'out'")
        values = [r["value"] for r in self.consume("out")]
        self.assertEqual(sorted(set(later) - set(values)), [],
                         f"records of the new topic missing\n{self.read(err)}")
        self.assertEqual(sorted(set(first) - set(values)), [])
        self.assertNotIn("not-matching", values, "a topic that does not match was consumed")

        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))


if __name__ == "__main__":
    unittest.main()
