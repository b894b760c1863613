"""from_kafka reports kafka_consumer_lag_messages per assigned partition on /metrics: records
produced before the pipeline starts, a consumer slowed by rate_limit (one message per poll,
back-pressure), so the lag is first positive and later falls to 0 once everything was
read. Each partition's series is labelled topic and partition."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))

from kafka_it import EXIT_OK, KafkaTestCase, toml_str  # noqa: E402
from service_it import admin_url, http, parse_prometheus  # noqa: E402

PER_PARTITION = 30


class LagMetricTest(KafkaTestCase):
    TOPICS = {"in": 2}

    def pipeline(self):
        return f"""\
name = "lag"

[runtime]
batch_size = 1
shutdown_timeout_ms = 5000

[admin]
port = 0

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "lag"
start = "earliest"
config = {self.consumer_config()}

[operators.slow]
type = "rate_limit"
inputs = ["in"]
interval_ms = 60
max_queued = 3

[sinks.out]
type = "sink_to_textfile"
inputs = ["slow"]
path = {toml_str(self.path("out.txt"))}
"""

    def lags(self, base):
        """{partition: lag} of the from_kafka node, from /metrics."""
        status, _, body = http("GET", base + "/metrics")
        self.assertEqual(status, 200, body)
        if "sluice_node_kafka_consumer_lag_messages{" in body:  # the unit, in name and help
            self.assertIn("# HELP sluice_node_kafka_consumer_lag_messages Reported by the "
                          "node's plugin, in messages", body)
        out = {}
        for (name, labels), value in parse_prometheus(body).items():
            labels = dict(labels)
            if name == "sluice_node_kafka_consumer_lag_messages" and labels.get("node") == "in":
                self.assertEqual(labels["topic"], "in", body)
                self.assertEqual(labels["type"], "from_kafka", body)
                out[int(labels["partition"])] = value
        return out

    def test_lag_is_positive_then_falls_to_zero(self):
        for p in range(2):
            self.produce("in", [f"p{p}-{i}" for i in range(PER_PARTITION)], partition=str(p))
        proc, err = self.start_sluiced(self.pipeline())
        base = admin_url(err)

        # Seen while the slowed consumer is behind: some partition lags.
        deadline = time.monotonic() + 30
        seen_positive = {}
        while time.monotonic() < deadline and not seen_positive:
            self.assertRunning(proc, err)
            seen_positive = {p: v for p, v in self.lags(base).items() if v > 0}
            time.sleep(0.2)
        self.assertTrue(seen_positive, f"no positive lag reported\n{self.read(err)}")
        for p, v in seen_positive.items():
            self.assertLessEqual(v, PER_PARTITION, f"partition {p}")

        # Once everything was read, every assigned partition reports 0.
        def caught_up():
            lags = self.lags(base)
            return sorted(lags) == [0, 1] and all(v == 0 for v in lags.values())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not caught_up():
            self.assertRunning(proc, err)
            time.sleep(0.3)
        self.assertTrue(caught_up(), f"lags {self.lags(base)}\n{self.read(err)}")

        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))


if __name__ == "__main__":
    unittest.main()
