"""Plugin-reported gauges on /metrics (sl_host_api.gauge_set): a rate_limit's queue fills
behind a fast source (sluice_node_queue_depth rises, bounded by max_queued plus one batch)
and drains to 0 once an operator pauses the source."""

import signal
import unittest

from service_it import admin_url, http, parse_prometheus, read_text, sample
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for

PIPELINE = """
name = "gauges_demo"
[admin]
port = 0
[sources.ticks]
type = "from_periodic"
interval_ms = 1
[operators.slow]
type = "rate_limit"
inputs = ["ticks"]
interval_ms = 100
max_queued = 10
[sinks.out]
type = "sink_to_textfile"
inputs = ["slow"]
path = {out}
"""


class GaugesTest(SluiceTestCase):
    def metrics(self, base):
        status, _, body = http("GET", base + "/metrics")
        self.assertEqual(status, 200, body)
        return parse_prometheus(body), body

    def depth(self, base):
        samples, _ = self.metrics(base)
        return sample(samples, "sluice_node_queue_depth", pipeline="gauges_demo", node="slow",
                      type="rate_limit")

    def test_rate_limit_reports_its_queue_depth(self):
        cfg = self.write("p.toml", PIPELINE.format(out=toml_str(self.path("out.txt"))))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20),
                        read_text(err))

        # The source ticks every 1 ms, the limiter lets one element out per 100 ms: its queue
        # fills up to max_queued (back-pressure then pauses the source).
        def has_queue():
            try:
                return self.depth(base) >= 5
            except AssertionError:
                return False  # not reported yet
        self.assertTrue(wait_for(has_queue, 20), self.metrics(base)[1])
        _, text = self.metrics(base)
        self.assertIn("# TYPE sluice_node_queue_depth gauge", text)
        # Bounded: max_queued (from_periodic emits one element per poll; a batch may add one).
        self.assertLessEqual(self.depth(base), 11)
        # Only the queueing node reports it.
        self.assertNotIn('sluice_node_queue_depth{pipeline="gauges_demo",node="ticks"', text)

        # Paused, the source sends nothing more: the limiter drains its queue to 0.
        status, _, body = http("POST", base + "/sources/ticks/pause")
        self.assertEqual(status, 200, body)
        self.assertTrue(wait_for(lambda: self.depth(base) == 0, 20),
                        self.metrics(base)[1])

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


if __name__ == "__main__":
    unittest.main()
