"""from_kafka's repartition support (docs/SCALING.md, docs/KAFKA.md): `origin_header` gives
every message the header sluice.origin = "<topic>/<partition>/<offset>" of its record (to_kafka
keeps it), and `dedup_origin` skips a record whose origin offset was already applied in its
key group, also after a restart from the checkpoint (the maxima are in the group's state);
a record without the header, or with one that does not parse, is processed with a warning."""

import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str


class OriginHeaderTest(KafkaTestCase):
    TOPICS = {"in": 2, "out": 1}

    def test_every_message_carries_its_records_origin(self):
        self.produce("in", [f"a{i}" for i in range(4)], partition=0)
        # A record that already has a sluice.origin (from an earlier repartition): replaced.
        self.produce("in", [f"b{i}" for i in range(3)], partition=1,
                     headers={"sluice.origin": "elsewhere/7/7", "h": "kept"})
        where = {r["value"]: (r["partition"], r["offset"]) for r in self.consume("in")}
        cfg = self.write("origin.toml", f"""\
name = "origin"

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
value_format = "string"
origin_header = true
stop_at_end = true
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
""")
        proc, _out, err = self.spawn("run", cfg)
        self.assertEqual(proc.wait(timeout=120), EXIT_OK, self.read(err)[-3000:])
        got = self.consume("out")
        self.assertEqual(sorted(r["value"] for r in got), sorted(where))
        for r in got:
            p, o = where[r["value"]]
            origins = [v for n, v in r["headers"] if n == "sluice.origin"]
            self.assertEqual(origins, [f"in/{p}/{o}"], r)
            if r["value"].startswith("b"):
                self.assertIn(("h", "kept"), r["headers"], r)


class DedupOriginTest(KafkaTestCase):
    TOPICS = {"rep": 1, "out": 1}

    def pipeline(self):
        return f"""\
name = "dedup"

[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = 100

[sources.rep]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["rep"]
group_id = "dedup"
value_format = "string"
dedup_origin = true
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["rep"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def produce_with_origins(self, records):
        """`records`: (value, origin or None), produced in order to rep[0]."""
        for value, origin in records:
            self.produce("rep", [value], partition=0,
                         headers={"sluice.origin": origin} if origin is not None else None)

    def run_until(self, n):
        proc, err = self.start_sluiced(self.pipeline(), name="dedup.toml")
        got = self.wait_for_count("out", n, procs=[proc])
        self.assertRunning(proc, err, f"with {got} of {n} records out")
        self.assertEqual(self.wait_until_stable("out"), n, self.read(err)[-3000:])
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])
        return self.read(err)

    def test_replayed_origins_are_skipped_also_after_a_restart(self):
        self.produce_with_origins([
            ("v1", "in/0/5"), ("v2", "in/0/6"), ("v3", "in/1/2"),
            ("dup-of-v1", "in/0/5"), ("dup-of-v2", "in/0/6"),  # an upstream replay
            ("v4", "in/0/7"),
            ("bad", "in/zero/8"), ("none", None),  # processed, with a warning
        ])
        log = self.run_until(6)
        self.assertEqual([r["value"] for r in self.consume("out")],
                         ["v1", "v2", "v3", "v4", "bad", "none"])
        self.assertIn("dedup_origin: skipped", log)
        self.assertIn("is not <topic>/<partition>/<offset>", log)
        # The restart restores the maxima with the group's positions: replays of what was
        # applied before it are still skipped; a new origin offset is not.
        self.produce_with_origins([("dup-of-v4", "in/0/7"), ("dup-of-v3", "in/1/2"),
                                   ("v5", "in/0/8"), ("v6", "in/1/3")])
        self.run_until(8)
        self.assertEqual([r["value"] for r in self.consume("out")][6:], ["v5", "v6"])


if __name__ == "__main__":
    unittest.main()
