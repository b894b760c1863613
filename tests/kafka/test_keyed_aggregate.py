"""from_kafka -> aggregate (count per key) -> to_kafka: a keyed word count. kcat writes 3000
records keyed by word (30 words, uneven frequencies) to a 3-partition topic, so each word
lives in one partition and from_kafka tags its records with that partition's key group;
sluiced counts them per key and writes a changelog (one record per input, the key's new
count, keyed by the word). kcat reads it back: the last count per word is its true count,
every output record is keyed by its word, and each word's counts rise 1, 2, 3, ... in
order (one owner per key, nothing lost or doubled). A second run reads the same topic
through key_by (the key computed from the value) instead of the record key; a third
stops half way and restarts from its checkpoint: the counts go on where they were."""

import collections
import random
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str


class KeyedAggregateTest(KafkaTestCase):
    TOPICS = {"in": 3, "out": 1}
    WORDS = [f"w{i:02d}" for i in range(30)]
    N = 3000

    def pipeline(self, keyed_by, out_topic, checkpoint=False):
        key_by = ""
        agg_input = "in"
        if keyed_by == "key_by":
            key_by = """
[operators.keyed]
type = "key_by"
inputs = ["in"]
lua = "x:sub(1, 3)"     # the word: the value is "<word> <n>"
"""
            agg_input = "keyed"
        cp = f"""
[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = 100
""" if checkpoint else ""
        group = 'group_id = "keyed-count"\n' if checkpoint else ""
        return f"""\
name = "keyed-count"
{cp}
[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
{group}value_format = "string"
stop_at_end = {"false" if checkpoint else "true"}
config = {self.consumer_config()}
{key_by}
[operators.counts]
type = "aggregate"
inputs = [{toml_str(agg_input)}]
function = "count"
start = 0

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = {toml_str(out_topic)}
config = {self.producer_config()}
"""

    def produce_words(self, seed=13, n=N):
        rng = random.Random(seed)
        # Uneven: word i is drawn with weight i + 1, so counts differ between words.
        words = rng.choices(self.WORDS, weights=range(1, len(self.WORDS) + 1), k=n)
        self.produce("in", [(w, f"{w} {i}") for i, w in enumerate(words)])
        by_partition = collections.defaultdict(set)
        for r in self.consume("in"):
            by_partition[r["partition"]].add(r["key"])
        # The premise: the input is keyed by word over all 3 partitions.
        self.assertEqual(len(by_partition), 3, dict(by_partition))
        return collections.Counter(words)

    def check_changelog(self, topic, truth):
        got = self.consume(topic)
        self.assertEqual(len(got), self.N, "one output record per input record")
        last = {}
        seen = collections.Counter()
        for r in got:
            self.assertIn(r["key"], truth, f"output record keyed by a word: {r}")
            seen[r["key"]] += 1
            # One partition in, one out: each word's changelog counts 1, 2, 3, ...
            self.assertEqual(int(r["value"]), seen[r["key"]], f"count of {r['key']}: {r}")
            last[r["key"]] = int(r["value"])
        self.assertEqual(last, dict(truth))

    def run_pipeline(self, keyed_by, out_topic, checkpoint=False):
        proc, err = self.start_sluiced(self.pipeline(keyed_by, out_topic, checkpoint),
                                       name=f"{keyed_by}.toml")
        rc = proc.wait(timeout=120)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])

    def test_count_per_record_key(self):
        truth = self.produce_words()
        self.run_pipeline("record_key", "out")
        self.check_changelog("out", truth)

    def test_count_per_key_from_key_by(self):
        truth = self.produce_words()
        self.broker.create_topic("out2", 1)
        self.run_pipeline("key_by", "out2")
        got = self.consume("out2")
        # key_by's key is a string (from Lua), written as the record key all the same.
        self.assertEqual({r["key"] for r in got}, set(truth))
        self.check_changelog("out2", truth)

    def run_until(self, n):
        """Runs the checkpointed pipeline until "out" holds `n` records, then SIGTERM (its
        final checkpoint: the positions and aggregate's per-key-group state)."""
        proc, err = self.start_sluiced(self.pipeline("record_key", "out", checkpoint=True),
                                       name="checkpointed.toml")
        got = self.wait_for_count("out", n, procs=[proc])
        self.assertRunning(proc, err, f"with {got} of {n} records out")
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])

    def test_counts_continue_after_a_restart_from_the_checkpoint(self):
        # Run 1 counts half the records; run 2 restores and counts the rest. The restored
        # keys are Kafka's bytes keys: they must still match the new records' keys.
        first = self.produce_words(seed=1, n=self.N // 2)
        self.run_until(self.N // 2)
        second = self.produce_words(seed=2, n=self.N // 2)
        self.run_until(self.N)
        self.check_changelog("out", first + second)


if __name__ == "__main__":
    unittest.main()
