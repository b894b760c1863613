"""Smoke tests of the kafka plugin against its embedded (in-process mock) cluster.

No broker process and no kcat: each test runs `sluiced run` on a pipeline whose Kafka nodes
say `brokers = "embedded"`, so these run anywhere the plugin builds. The broker-backed
integration tests (kcat, consumer groups, broker restarts) live beside them in
tests/kafka/test_*.py.

Environment: SLUICED (the daemon) and SLUICE_PLUGIN_PATH (a directory, or a ':'-separated
list, holding libsluice_kafka.so, libsluice_core_ops.so and libsluice_sinks.so).
Run: SLUICED=... SLUICE_PLUGIN_PATH=... /usr/bin/python3 -m unittest -v test_smoke_embedded
"""
import base64
import json
import os
import pathlib
import subprocess
import tempfile
import textwrap
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SLUICED = os.environ.get("SLUICED")
EXAMPLE = ROOT / "examples" / "kafka_embedded.toml"


def run(config_path, timeout=60):
    if not SLUICED:
        raise RuntimeError("set SLUICED to the sluiced binary (and SLUICE_PLUGIN_PATH)")
    return subprocess.run([SLUICED, "run", str(config_path)], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


class EmbeddedKafka(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="sluice-kafka-smoke-")
        self.tmp = pathlib.Path(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, text):
        path = self.tmp / "pipeline.toml"
        path.write_text(textwrap.dedent(text))
        return path

    def test_example_goes_around_twice_and_ends_by_itself(self):
        proc = run(EXAMPLE)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines(),
                         ["shout: KAFKA", "shout: WITHOUT", "shout: A", "shout: CLUSTER"])

    def test_keys_headers_and_json_round_trip(self):
        out = self.tmp / "out.jsonl"
        path = self.write(f"""
            [sources.people]
            type = "from_iterable"
            json = ['{{"id": 7, "name": "ada"}}', '{{"id": 8, "name": "bob"}}']

            [sinks.produce]
            type = "to_kafka"
            inputs = ["people"]
            brokers = "embedded"
            topic = "people"
            key = "id"

            [sources.consume]
            type = "from_kafka"
            brokers = "embedded"
            topics = ["people"]
            group_id = "smoke"
            keys = true
            value_format = "json"
            stop_at_end = true
            end_grace_ms = 1000
            config = {{ "session.timeout.ms" = 6000 }}

            [sinks.file]
            type = "sink_to_textfile"
            inputs = ["consume"]
            path = "{out}"
        """)
        proc = run(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        self.assertEqual([r["value"] for r in rows],
                         [{"id": 7, "name": "ada"}, {"id": 8, "name": "bob"}])
        # Keys are bytes (written by the JSON sink as base64): the `id` field as JSON text.
        self.assertEqual([base64.b64decode(r["key"]) for r in rows], [b"7", b"8"])
        self.assertEqual([r["topic"] for r in rows], ["people", "people"])
        self.assertEqual([r["offset"] for r in rows], [0, 1])
        self.assertTrue(all(isinstance(r["timestamp"], int) for r in rows), rows)
        self.assertIn("committed offset 2 for people [0]", proc.stderr)

    def test_poison_json_goes_to_the_dead_letter_topic(self):
        out = self.tmp / "dlq.jsonl"
        path = self.write(f"""
            [sources.raw]
            type = "from_iterable"
            values = ['{{"ok": 1}}', 'not json', '{{"ok": 2}}']

            [sinks.produce]
            type = "to_kafka"
            inputs = ["raw"]
            brokers = "embedded"
            topic = "raw"

            [sources.parse]
            type = "from_kafka"
            brokers = "embedded"
            topics = ["raw"]
            value_format = "json"
            on_error = "dead_letter"
            dead_letter_topic = "dlq"
            stop_at_end = true
            end_grace_ms = 1000

            [sinks.good]
            type = "print"
            inputs = ["parse"]

            [sources.dead]
            type = "from_kafka"
            brokers = "embedded"
            topics = ["dlq"]
            keys = true
            value_format = "string"
            stop_at_end = true
            end_grace_ms = 2000

            [sinks.file]
            type = "sink_to_textfile"
            inputs = ["dead"]
            path = "{out}"
        """)
        proc = run(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines(), ['{"ok":1}', '{"ok":2}'])
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        self.assertEqual([r["value"] for r in rows], ["not json"])
        error = base64.b64decode(rows[0]["headers"]["sluice.error"]).decode()
        self.assertIn("not valid JSON", error)
        self.assertIn("raw [0] offset 1", error)
        self.assertEqual(base64.b64decode(rows[0]["headers"]["sluice.error.node"]), b"parse")

    def test_config_keys_that_load_code_are_refused(self):
        for key, value in [("plugin.library.paths", "/tmp/evil.so"),
                           ("ssl.engine.location", "/tmp/engine.so"),
                           ("sasl.kerberos.kinit.cmd", "touch /tmp/pwned")]:
            with self.subTest(key=key):
                path = self.write(f"""
                    [sources.src]
                    type = "from_kafka"
                    brokers = "embedded"
                    topics = ["t"]
                    config = {{ "{key}" = "{value}" }}

                    [sinks.out]
                    type = "print"
                    inputs = ["src"]
                """)
                proc = run(path)
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn(f"entry '{key}' is refused", proc.stderr)

    def test_auto_commit_is_refused(self):
        path = self.write("""
            [sources.src]
            type = "from_iterable"
            values = ["x"]

            [sinks.out]
            type = "to_kafka"
            inputs = ["src"]
            brokers = "embedded"
            topic = "t"
            config = { "enable.auto.commit" = true }
        """)
        proc = run(path)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("'enable.auto.commit' must stay false", proc.stderr)


if __name__ == "__main__":
    unittest.main()
