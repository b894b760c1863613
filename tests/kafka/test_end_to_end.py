"""End-to-end data equality: kcat produces keyed records with headers to `in`; sluiced runs
from_kafka -> map(json_parse) -> map(...) -> to_kafka `out`; kcat reads `out` and the test
compares exactly: count, content, key, headers, and the order of each key's records."""

import json
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str

KEYS = [f"user-{i}" for i in range(7)]


def keyed_records(n):
    """(key, JSON text) pairs; the value says its own key and its sequence number within
    that key, so that order per key can be checked from the output alone."""
    seq = {k: 0 for k in KEYS}
    out = []
    for i in range(n):
        k = KEYS[(i * 5 + i // 3) % len(KEYS)]
        out.append((k, json.dumps({"key": k, "seq": seq[k], "i": i,
                                   "text": f"r\u00e9cord {i} \u2713", "tags": [i % 3, None]}, ensure_ascii=False)))
        seq[k] += 1
    return out


class EndToEndTest(KafkaTestCase):
    TOPICS = {"in": 3, "out": 1}

    def pipeline(self, second_map, group="e2e"):
        return f"""\
name = "e2e"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "{group}"
start = "earliest"
config = {self.consumer_config()}

[operators.parse]
type = "map"
inputs = ["in"]
function = "json_parse"

[operators.second]
type = "map"
inputs = ["parse"]
{second_map}

[sinks.out]
type = "to_kafka"
inputs = ["second"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def run_pipeline(self, toml_text, expected_count):
        proc, err = self.start_sluiced(toml_text)
        got = self.wait_for_count("out", expected_count, procs=[proc])
        self.assertRunning(proc, err, f"with {got} of {expected_count} records in 'out'")
        self.assertEqual(got, expected_count, f"'out' holds {got} records, expected "
                         f"{expected_count}\n{self.read(err)}")
        # Nothing more may trickle in (no duplicates from a healthy run).
        self.assertEqual(self.wait_until_stable("out", quiet_s=1.5), expected_count)
        rc, elapsed = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, f"exit code after SIGTERM\n{self.read(err)}")
        return self.consume("out")

    def check_keys_headers_order(self, sent, got, expected_values):
        """`got` (records of the single-partition `out`) holds `expected_values` (list
        parallel to `sent`), each with its input key and headers, in input order per key."""
        self.assertEqual(len(got), len(sent))
        # Content and count: the same multiset of (key, value).
        self.assertCountEqual([(r["key"], r["value"]) for r in got],
                              [(k, v) for (k, _), v in zip(sent, expected_values)])
        # Headers travel with each record.
        for r in got:
            self.assertEqual(sorted(r["headers"]), [("batch", "one"), ("source", "kcat")], r)
        # Order per key: the output of each key is that key's input, in order.
        for key in KEYS:
            want = [v for (k, _), v in zip(sent, expected_values) if k == key]
            have = [r["value"] for r in got if r["key"] == key]
            self.assertEqual(have, want, f"order of key {key}")

    def test_objects_round_trip_exactly(self):
        sent = keyed_records(500)
        self.produce("in", sent, headers={"source": "kcat", "batch": "one"}, from_file=True)
        self.assertEqual(self.broker.count("in"), len(sent))
        got = self.run_pipeline(self.pipeline('function = "identity"'), len(sent))
        # to_kafka writes a non-string value as compact JSON: compare as parsed JSON, and
        # check that the text is compact (no spaces after separators) and UTF-8 as sent.
        for r in got:
            self.assertNotIn(": ", r["value"])
        parsed = [(r["key"], json.loads(r["value"])) for r in got]
        self.assertCountEqual(
            [json.dumps(p, sort_keys=True) for p in parsed],
            [json.dumps((k, json.loads(v)), sort_keys=True) for k, v in sent])
        for key in KEYS:
            seqs = [v["seq"] for k, v in parsed if k == key]
            self.assertEqual(seqs, list(range(len(seqs))), f"order of key {key}")
        for r in got:
            self.assertEqual(sorted(r["headers"]), [("batch", "one"), ("source", "kcat")], r)

    def test_numbers_are_transformed(self):
        # Integers as JSON text -> json_parse -> mul 3 -> to_kafka writes JSON text "3n".
        sent = [(KEYS[i % len(KEYS)], str(i * 7 - 100)) for i in range(300)]
        self.produce("in", sent, headers={"source": "kcat", "batch": "one"})
        got = self.run_pipeline(self.pipeline('function = "mul"\nargs = { value = 3 }'),
                                len(sent))
        self.check_keys_headers_order(sent, got, [str(int(v) * 3) for _, v in sent])


if __name__ == "__main__":
    unittest.main()
