"""key_by with repartition_topic: from_kafka -> key_by (repartition_topic) -> aggregate count
-> to_kafka, on input keyed at random. kcat writes 3000 records with random keys (so every
word is spread over the 3 partitions of "in"); key_by takes the word from the value, and the
host's expansion writes the records to "by-word" (4 partitions) keyed by word and reads them
back, so that each word lands in one partition and one key group. kcat reads everything
back: on "by-word" each word is in one partition, keyed by the word, its value the JSON text
of the original string, with the sluice.origin header naming where it was read; on "out"
each word's counts run 1, 2, 3, ... to its true count.

The second test SIGKILLs sluiced twice while records flow, with checkpoints on: the
upstream replays what it read since the last checkpoint and writes it to "by-word" again,
and the reader skips the replayed records by their origin (dedup_origin), so the last count
per word is still its true count."""

import collections
import random
import signal
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for


class RepartitionTest(KafkaTestCase):
    TOPICS = {"in": 3, "by-word": 4, "out": 1}
    WORDS = [f"w{i:02d}" for i in range(30)]
    N = 3000

    def pipeline(self, checkpoint=False):
        # Rare checkpoints: a SIGKILL soon after records came through then nearly always
        # falls before the checkpoint that would cover them, so the upstream replays them.
        cp = f"""
[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = 10000
""" if checkpoint else ""
        return f"""\
name = "repartition"
{cp}
[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "rp"
value_format = "string"
config = {self.consumer_config()}

[operators.keyed]
type = "key_by"
inputs = ["in"]
lua = "x:sub(1, 3)"     # the word: the value is "<word> <n>"
repartition_topic = "by-word"

[operators.counts]
type = "aggregate"
inputs = ["keyed"]
function = "count"
start = 0

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def produce_words(self, seed, n):
        rng = random.Random(seed)
        words = rng.choices(self.WORDS, weights=range(1, len(self.WORDS) + 1), k=n)
        # Random keys: a word's records are spread over the partitions of "in".
        self.produce("in", [(f"r{rng.randrange(10**9)}", f"{w} {seed}-{i}")
                            for i, w in enumerate(words)])
        return collections.Counter(words)

    def assert_spread(self):
        partitions = collections.defaultdict(set)
        for r in self.consume("in"):
            partitions[r["value"][:3]].add(r["partition"])
        # The premise: without the repartition, most words would have a state per partition.
        self.assertGreater(sum(len(p) > 1 for p in partitions.values()), 20, dict(partitions))

    def start(self, checkpoint=False):
        proc, err = self.start_sluiced(self.pipeline(checkpoint), name="repartition.toml")
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        return proc, err

    def last_counts(self):
        last = {}
        for r in self.consume("out"):
            last[r["key"]] = int(r["value"])
        return last

    def test_every_word_is_counted_exactly_once_through_the_repartition_topic(self):
        truth = self.produce_words(seed=1, n=self.N)
        self.assert_spread()
        proc, err = self.start()
        got = self.wait_for_count("out", self.N, timeout=90, procs=[proc])
        self.assertRunning(proc, err, f"with {got} of {self.N} records out")
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])

        # The repartition topic: each word in one partition, keyed by the word; the value is
        # the JSON text of the string key_by saw; the origin header names the input record.
        inputs = {(r["partition"], r["offset"]): r["value"] for r in self.consume("in")}
        rep = self.consume("by-word")
        self.assertEqual(len(rep), self.N)
        owner = {}
        for r in rep:
            self.assertIn(r["key"], truth, r)
            self.assertEqual(owner.setdefault(r["key"], r["partition"]), r["partition"],
                             f"word {r['key']} in two partitions of by-word")
            origin = dict(r["headers"]).get("sluice.origin")
            self.assertIsNotNone(origin, f"no sluice.origin header: {r}")
            topic, partition, offset = origin.split("/")
            self.assertEqual(topic, "in")
            value = inputs[(int(partition), int(offset))]
            self.assertEqual(r["value"], '"' + value + '"', r)
            self.assertEqual(r["key"], value[:3])
        self.assertGreater(len(set(owner.values())), 1, "words spread over by-word's partitions")

        # The changelog: one record per input, each word counting 1, 2, 3, ... in order.
        out = self.consume("out")
        self.assertEqual(len(out), self.N)
        seen = collections.Counter()
        for r in out:
            seen[r["key"]] += 1
            self.assertEqual(int(r["value"]), seen[r["key"]], f"count of {r['key']}: {r}")
        self.assertEqual(self.last_counts(), dict(truth))

    def test_replays_after_sigkill_are_not_counted_twice(self):
        truth = collections.Counter()
        rounds = 3
        per_round = self.N // rounds
        for k in range(rounds):
            truth += self.produce_words(seed=10 + k, n=per_round)
            proc, err = self.start(checkpoint=True)
            if k < rounds - 1:
                # Killed while the round's records flow: what was read after the last
                # checkpoint is read and written to by-word again after the restart.
                want = self.count("out") + per_round // 4
                self.wait_for_count("out", want, timeout=90, procs=[proc])
                self.assertRunning(proc, err, "before the SIGKILL")
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                continue
            # The last run: until every word has its count (or nothing moves any more).
            def settled():
                return proc.poll() is not None or self.last_counts() == dict(truth)
            try:
                wait_for(settled, 120, interval=0.5)
            except AssertionError:
                pass
            self.assertRunning(proc, err, "in the last run")
            self.wait_until_stable("out", quiet_s=2.0)
            rc, _ = self.stop_sluiced(proc, err)
            self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])
        # The kills did make the upstream write records again: the reader had duplicates to
        # skip. (A kill right after a checkpoint may replay nothing; with a checkpoint every
        # 10 s and two kills, it is very unlikely that neither replayed anything.)
        self.assertGreater(self.count("by-word"), self.N, "no record was replayed")
        last = self.last_counts()
        wrong = {w: (last.get(w), n) for w, n in truth.items() if last.get(w) != n}
        self.assertEqual(wrong, {}, "(got, true) counts of the words that are wrong")

    def test_values_come_back_as_they_went_in(self):
        # Through the repartition topic and out again as JSON text: each value's text is
        # the one it went in with (strings, ints, floats, booleans, null, arrays, objects).
        # Bytes are the exception (docs/SCALING.md): none here.
        values = ['"plain"', '"with \\"quotes\\" and \\\\"', '"\u00e9t\u00e9 \u2603"', '""',
                  "42", "-7", "1.5", "1e+300", "true", "false", "null", "[]", "{}",
                  '[1,"two",[3.5,null]]', '{"a":1,"b":{"c":[true,"x"]}}']
        self.broker.create_topic("vals-by-key", 2)
        text = f"""\
name = "roundtrip"
[sources.vals]
type = "from_iterable"
json = [{", ".join(toml_str(v) for v in values)}]

[operators.keyed]
type = "key_by"
inputs = ["vals"]
lua = "'k'"               # one key: one partition, so the order is kept
repartition_topic = "vals-by-key"
brokers = {toml_str(self.bootstrap)}
repartition_config = {self.consumer_config()}

[sinks.back]
type = "to_kafka"
inputs = ["keyed"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
value_format = "json"
config = {self.producer_config()}
"""
        proc, err = self.start_sluiced(text, name="roundtrip.toml")
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        got = self.wait_for_count("out", len(values), timeout=60, procs=[proc])
        self.assertRunning(proc, err, f"with {got} of {len(values)} values out")
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])
        self.assertEqual([r["value"] for r in self.consume("out")], values)
        self.assertEqual([r["value"] for r in self.consume("vals-by-key")], values)


if __name__ == "__main__":
    unittest.main()
