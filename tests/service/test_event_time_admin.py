"""Event time on the admin endpoint (docs/EVENT_TIME.md, "Observing it"): a running daemon
with event_time -> window shows each node's watermark in /metrics and /stats, rising while
data flows, and counts the late elements it routes to "w.late" (which a sink writes)."""

import json
import signal
import unittest

from service_it import admin_url, http, parse_prometheus, read_text, sample
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for

# Tick n has event time n seconds after the epoch; every 4th tick is 10 s behind, later
# than every window it belongs to (1 s windows, no lateness allowed): it goes to w.late.
PIPELINE = """
name = "event_time_admin"
[admin]
port = 0
[sources.ticks]
type = "from_periodic"
interval_ms = 5
[operators.et]
type = "event_time"
inputs = ["ticks"]
lua = "x * 1000 - (x % 4 == 3 and 10000 or 0)"
[operators.w]
type = "window"
inputs = ["et"]
kind = "tumbling"
size_ms = 1000
function = "count"
start = 0
[sinks.out]
type = "sink_to_textfile"
inputs = ["w"]
path = {out}
[sinks.late]
type = "sink_to_textfile"
inputs = ["w.late"]
path = {late}
"""


class EventTimeAdminTest(SluiceTestCase):
    def test_watermarks_and_late_elements_show_in_metrics_and_stats(self):
        cfg = self.write("p.toml", PIPELINE.format(out=toml_str(self.path("out.txt")),
                                                   late=toml_str(self.path("late.txt"))))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)

        def metrics():
            status, _, body = http("GET", base + "/metrics")
            self.assertEqual(status, 200, body)
            return parse_prometheus(body)

        def watermark(m, node):
            return sample(m, "sluice_node_watermark_seconds", node=node)

        def absent(m, name, node):
            return not [v for (n, ls), v in m.items() if n == name and ("node", node) in ls]

        def window_watermark():
            m = metrics()
            return 0 if absent(m, "sluice_node_watermark_seconds", "w") else watermark(m, "w")
        self.assertTrue(wait_for(lambda: window_watermark() >= 20, 30), read_text(err))
        m1 = metrics()
        # The window forwards what it got; the sink shows its input's. Tick n is at n s, so the
        # event_time's watermark is the newest tick's time, the window's at most that.
        for node in ("et", "w", "out"):
            self.assertIsNotNone(watermark(m1, node), node)
        self.assertLessEqual(watermark(m1, "w"), watermark(m1, "et"))
        # 1970: the lag is the age of those times, decades.
        self.assertGreater(sample(m1, "sluice_node_watermark_lag_seconds", node="w"), 1e9)
        late1 = sample(m1, "sluice_node_late_total", node="w")
        self.assertGreater(late1, 0)
        self.assertEqual(late1, sample(m1, "sluice_node_side_output_messages_total", node="w",
                                       output="late"))
        self.assertTrue(absent(m1, "sluice_node_late_total", "ticks"))  # it has no late output
        self.assertTrue(absent(m1, "sluice_node_watermark_seconds", "ticks"))  # nor event time

        self.assertTrue(wait_for(lambda: watermark(metrics(), "w") > watermark(m1, "w"), 30))
        status, _, body = http("GET", base + "/stats")
        self.assertEqual(status, 200, body)
        stats = {n["id"]: n for n in json.loads(body)["nodes"]}
        self.assertIsInstance(stats["w"]["watermark_ms"], int)
        self.assertGreater(stats["w"]["watermark_ms"], watermark(m1, "w") * 1000)
        self.assertGreaterEqual(stats["w"]["late"], late1)
        self.assertIsNone(stats["ticks"]["watermark_ms"])  # no event time upstream of it

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))
        # Every late element the counter saw is in the file the late sink wrote.
        late_lines = read_text(self.path("late.txt")).splitlines()
        self.assertGreaterEqual(len(late_lines), late1)
        self.assertTrue(all(int(v) % 4 == 3 for v in late_lines), late_lines[:10])
        windows = [json.loads(line) for line in read_text(self.path("out.txt")).splitlines()]
        self.assertTrue(windows)
        # Each 1 s window holds its one tick (tick n at n s); a late tick is in no window, so
        # the windows of ticks 3, 7, 11... never open.
        for win in windows:
            self.assertEqual(win["end"] - win["start"], 1000, win)
            self.assertEqual(win["value"], 1, win)
            self.assertNotEqual((win["start"] // 1000) % 4, 3, win)


if __name__ == "__main__":
    unittest.main()
