"""Poison messages (invalid JSON among good records) under each `on_error` policy of the
map(json_parse) node `parse`:

  fail         sluiced stops with a non-zero exit and an error naming the node; nothing
               after the poison message reaches the output
  skip         every good record arrives; sluiced keeps running
  dead_letter  every good record arrives in `out`; the poison ones, unchanged, in `dlq`
               (a to_kafka sink reading "parse.dead_letter") with a `sluice.error` header

and the same for the source's own decoding (value_format = "json", the source's on_error
and dead_letter_topic), and for payloads that are not UTF-8 under value_format = "string".
"""

import json
import subprocess
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str

# One partition: the position of the poison messages among the good ones is exact.
RECORDS = [
    ("k1", '{"n": 1}'),
    ("k2", '{"n": 2}'),
    ("k3", '{"n": 3'),          # poison: truncated
    ("k1", '{"n": 4}'),
    ("k2", 'not json at all'),  # poison
    ("k3", '{"n": 6}'),
    ("k1", '[1, 2, '),          # poison
    ("k2", '{"n": 8}'),
]
POISON = {2, 4, 6}  # indexes of the poison records above
GOOD = [r for i, r in enumerate(RECORDS) if i not in POISON]
BAD = [r for i, r in enumerate(RECORDS) if i in POISON]


class PoisonTest(KafkaTestCase):
    TOPICS = {"in": 1, "out": 1, "dlq": 1}

    def pipeline(self, policy, dead_letter_sink=""):
        return f"""\
name = "poison-{policy}"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "poison-{policy}"
config = {self.consumer_config()}

[operators.parse]
type = "map"
inputs = ["in"]
function = "json_parse"
on_error = "{policy}"

[sinks.out]
type = "to_kafka"
inputs = ["parse"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
{dead_letter_sink}"""

    def good_outputs(self):
        return [(r["key"], json.loads(r["value"])) for r in self.consume("out")]

    def expected_good(self):
        return [(k, json.loads(v)) for k, v in GOOD]

    def test_fail_stops_with_the_node_named(self):
        self.produce("in", RECORDS)
        proc, err = self.start_sluiced(self.pipeline("fail"))
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.fail(f"sluiced kept running after a poison message with on_error = fail\n"
                      f"{self.read(err)}")
        stderr = self.read(err)
        self.assertNotEqual(rc, EXIT_OK, stderr)
        self.assertIn("node 'parse'", stderr)
        self.assertIn("json", stderr.lower())
        # Whatever reached `out` came before the first poison message, in order.
        got = self.good_outputs()
        self.assertEqual(got, self.expected_good()[:len(got)])
        self.assertLessEqual(len(got), 2, f"records after the poison message were processed: "
                             f"{got}")

    def test_skip_delivers_every_good_record(self):
        self.produce("in", RECORDS)
        proc, err = self.start_sluiced(self.pipeline("skip"))
        n = self.wait_for_count("out", len(GOOD), procs=[proc])
        self.assertRunning(proc, err, "with on_error = skip")
        self.assertEqual(n, len(GOOD), self.read(err))
        self.assertEqual(self.wait_until_stable("out", quiet_s=1.0), len(GOOD))
        self.assertEqual(self.good_outputs(), self.expected_good())
        # More input after the poison: still flowing.
        self.produce("in", [("k9", '{"n": 9}'), ("k9", "{oops"), ("k9", '{"n": 10}')])
        self.assertEqual(self.wait_for_count("out", len(GOOD) + 2, procs=[proc]), len(GOOD) + 2)
        self.assertEqual(self.good_outputs()[-2:], [("k9", {"n": 9}), ("k9", {"n": 10})])
        self.assertIn("skipped", self.read(err))  # the host says it skipped something
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))

    def test_dead_letter_goes_to_a_topic_with_the_error(self):
        self.produce("in", RECORDS, headers={"origin": "test"})
        proc, err = self.start_sluiced(self.pipeline("dead_letter", f"""
[sinks.dlq]
type = "to_kafka"
inputs = ["parse.dead_letter"]
brokers = {toml_str(self.bootstrap)}
topic = "dlq"
config = {self.producer_config()}
"""))
        self.assertEqual(self.wait_for_count("out", len(GOOD), procs=[proc]), len(GOOD),
                         self.read(err))
        self.assertEqual(self.wait_for_count("dlq", len(BAD), procs=[proc]), len(BAD),
                         self.read(err))
        self.assertRunning(proc, err, "with on_error = dead_letter")
        self.assertEqual(self.good_outputs(), self.expected_good())
        dead = self.consume("dlq")
        # The poison records themselves, unchanged, with their keys, in order.
        self.assertEqual([(r["key"], r["value"]) for r in dead], BAD)
        for r in dead:
            headers = dict(r["headers"])
            self.assertEqual(headers.get("origin"), "test", r)  # the input's own header kept
            self.assertIn("sluice.error", headers, r)
            self.assertTrue(headers["sluice.error"].strip(), r)
            self.assertEqual(headers.get("sluice.error.node"), "parse", r)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))


class SourceDecodePoisonTest(KafkaTestCase):
    """The same poison records decoded by the source itself (value_format = "json"), under
    the source's own `on_error` (its dead letters go to `dead_letter_topic`)."""

    TOPICS = {"in": 1, "out": 1, "dlq": 1}

    def pipeline(self, policy):
        dead_letter = 'dead_letter_topic = "dlq"' if policy == "dead_letter" else ""
        return f"""\
name = "source-poison-{policy}"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "source-poison-{policy}"
value_format = "json"
on_error = "{policy}"
{dead_letter}
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def good_outputs(self):
        return [(r["key"], json.loads(r["value"])) for r in self.consume("out")]

    def expected_good(self):
        return [(k, json.loads(v)) for k, v in GOOD]

    def test_fail(self):
        self.produce("in", RECORDS)
        proc, err = self.start_sluiced(self.pipeline("fail"))
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.fail(f"sluiced kept running after a poison message with on_error = fail\n"
                      f"{self.read(err)}")
        stderr = self.read(err)
        self.assertNotEqual(rc, EXIT_OK, stderr)
        self.assertIn("node 'in'", stderr)
        got = self.good_outputs()
        self.assertEqual(got, self.expected_good()[:len(got)])
        self.assertLessEqual(len(got), 2, f"records after the poison message were processed: "
                             f"{got}")

    def test_skip(self):
        self.produce("in", RECORDS)
        proc, err = self.start_sluiced(self.pipeline("skip"))
        self.assertEqual(self.wait_for_count("out", len(GOOD), procs=[proc]), len(GOOD),
                         self.read(err))
        self.assertRunning(proc, err, "with on_error = skip")
        self.assertEqual(self.wait_until_stable("out", quiet_s=1.0), len(GOOD))
        self.assertEqual(self.good_outputs(), self.expected_good())
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))

    def test_dead_letter(self):
        self.produce("in", RECORDS, headers={"origin": "test"})
        proc, err = self.start_sluiced(self.pipeline("dead_letter"))
        self.assertEqual(self.wait_for_count("out", len(GOOD), procs=[proc]), len(GOOD),
                         self.read(err))
        self.assertEqual(self.wait_for_count("dlq", len(BAD), procs=[proc]), len(BAD),
                         self.read(err))
        self.assertRunning(proc, err, "with on_error = dead_letter")
        self.assertEqual(self.good_outputs(), self.expected_good())
        dead = self.consume("dlq")
        self.assertEqual([(r["key"], r["value"]) for r in dead], BAD)
        for r in dead:
            headers = dict(r["headers"])
            self.assertEqual(headers.get("origin"), "test", r)
            self.assertTrue(headers.get("sluice.error", "").strip(), r)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))


class SourceUtf8PoisonTest(KafkaTestCase):
    """value_format = "string": strings are valid UTF-8, so a payload that is not does not
    decode and goes to the source's on_error (it used to become an invalid string)."""

    TOPICS = {"in": 1, "out": 1}

    def test_skip_drops_only_the_invalid_payloads(self):
        self.kcat("-P", "-t", "in", "-X", "linger.ms=5",
                  input_bytes=b"good 1\nlatin-1 caf\xe9\ncaf\xc3\xa9 2\n\xff\xfe\ngood 3\n")
        proc, err = self.start_sluiced(self.passthrough_pipeline(
            "utf8-poison", source_lines='value_format = "string"\non_error = "skip"\n'))
        rc = proc.wait(timeout=120)  # stop_at_end
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertEqual([r["value"] for r in self.consume("out")],
                         ["good 1", "caf\u00e9 2", "good 3"])
        self.assertIn("value is not valid UTF-8", self.read(err))


if __name__ == "__main__":
    unittest.main()
