"""Back-pressure is per branch (docs/ARCHITECTURE.md, "Back-pressure"): a rate_limit that
lets one element through per second holds its own source (from_periodic), while an
unrelated from_http_server in the same task keeps answering at its own pace. /metrics and
/stats say who holds whom. And the metrics of issue 15 move: bytes in/out per node (none
that cannot apply), the HTTP source's responses by status, the process_* families, and the
checkpoint metrics, labelled by pipeline, with the time of the last success."""

import json
import re
import signal
import time
import unittest
import urllib.request

from service_it import admin_url, http, parse_prometheus, read_text, sample
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for

LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")

PIPELINE = """
name = "branches"
[admin]
port = 0
[sources.ticks]
type = "from_periodic"
interval_ms = 1
[operators.slow]
type = "rate_limit"
inputs = ["ticks"]
interval_ms = 1000
max_queued = 1
[sinks.slow_out]
type = "sink_to_textfile"
inputs = ["slow"]
path = {slow_out}
[sources.web]
type = "from_http_server"
address = "127.0.0.1"
port = 0
path = "/in"
[sinks.web_out]
type = "sink_to_textfile"
inputs = ["web"]
path = {web_out}
"""

REQUESTS = 60


class BranchBackPressureTest(SluiceTestCase):
    def metrics(self, base):
        status, _, body = http("GET", base + "/metrics")
        self.assertEqual(status, 200, body)
        return parse_prometheus(body), body

    def test_an_unrelated_source_keeps_its_rate(self):
        cfg = self.write("p.toml", PIPELINE.format(slow_out=toml_str(self.path("slow.txt")),
                                                   web_out=toml_str(self.path("web.txt"))))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20),
                        read_text(err))
        started = time.monotonic()
        port = wait_for(lambda: (LISTENING.search(read_text(err)) or [None, None])[1], 20)
        self.assertTrue(port, read_text(err))

        # The slow branch holds its source: rate_limit's queue is full almost all the time.
        def ticks_held():
            return sample(self.metrics(base)[0], "sluice_source_backpressured",
                          node="ticks") == 1
        self.assertTrue(wait_for(ticks_held, 20), self.metrics(base)[1])

        # The web source answers request after request meanwhile. Before back-pressure was
        # per branch it was polled only when rate_limit let one element out: about one
        # answer a second, so 60 sequential requests took a minute. The bound here is
        # generous (30 s), not a speed.
        deadline = time.monotonic() + 30
        answered = 0
        while answered < REQUESTS and time.monotonic() < deadline:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/in", method="POST",
                                         data=f"request {answered}".encode())
            with urllib.request.urlopen(req, timeout=30) as r:
                self.assertEqual(r.status, 200)
            answered += 1
        self.assertEqual(answered, REQUESTS, "the web source was held with the slow branch")
        self.assertTrue(wait_for(lambda: read_text(self.path("web.txt")).count("\n") >= REQUESTS,
                                 10))

        samples, text = self.metrics(base)
        self.assertEqual(sample(samples, "sluice_source_backpressured", node="web"), 0, text)
        # The HTTP source's answers by status: a counter the plugin keeps.
        self.assertIn("# TYPE sluice_node_http_responses_total counter", text)
        self.assertGreaterEqual(sample(samples, "sluice_node_http_responses_total", node="web",
                                       code="200"), REQUESTS)
        # Bytes: "request N" bodies as text, on both sides of the edge.
        sent = sum(len(f"request {i}") for i in range(REQUESTS))
        self.assertEqual(sample(samples, "sluice_node_bytes_out_total", node="web"), sent)
        self.assertEqual(sample(samples, "sluice_node_bytes_in_total", node="web_out"), sent)
        # No series that cannot apply: sources take nothing in, sinks emit nothing.
        for family in ("sluice_node_messages_in_total", "sluice_node_bytes_in_total"):
            self.assertNotIn(f'{family}{{pipeline="branches",node="web"', text)
            self.assertNotIn(f'{family}{{pipeline="branches",node="ticks"', text)
        for family in ("sluice_node_messages_out_total", "sluice_node_bytes_out_total"):
            self.assertNotIn(f'{family}{{pipeline="branches",node="web_out"', text)
        for family in ("sluice_node_skipped_total", "sluice_node_dead_letters_total"):
            self.assertNotIn(f"{family}{{", text)  # no node has that on_error policy
        # process_*, as the Prometheus client libraries define them.
        self.assertGreater(sample(samples, "process_resident_memory_bytes"), 1e6)
        self.assertGreater(sample(samples, "process_virtual_memory_bytes"),
                           sample(samples, "process_resident_memory_bytes"))
        self.assertGreater(sample(samples, "process_open_fds"), 3)
        self.assertGreaterEqual(sample(samples, "process_max_fds"),
                                sample(samples, "process_open_fds"))
        self.assertGreaterEqual(sample(samples, "process_cpu_seconds_total"), 0)
        start = sample(samples, "process_start_time_seconds")
        self.assertLess(abs(start - time.time()), 600, "start time is not Unix time")
        self.assertIn("# TYPE process_cpu_seconds_total counter", text)

        # /stats (what the live page shows): rate_limit holds ticks, nothing holds web.
        def slow_holds_ticks():
            stats = json.loads(http("GET", base + "/stats")[2])
            nodes = {n["id"]: n for n in stats["nodes"]}
            return (nodes["slow"]["backpressured"] and nodes["slow"]["holding"] == ["ticks"]
                    and nodes["ticks"]["held"] and not nodes["web"]["held"]) or None
        self.assertTrue(wait_for(slow_holds_ticks, 10), http("GET", base + "/stats")[2])
        # The slow branch itself got one element a second at most (rate_limit's promise).
        self.assertLessEqual(read_text(self.path("slow.txt")).count("\n"),
                             time.monotonic() - started + 3)

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


CHECKPOINTED = """
name = "ckm"
[admin]
port = 0
[checkpoint]
interval_ms = 50
dir = {dir}
[sources.lines]
type = "from_textfile"
path = {input}
follow = true
poll_interval_ms = 10
[sinks.out]
type = "sink_to_textfile"
inputs = ["lines"]
path = {out}
"""


class CheckpointMetricsTest(SluiceTestCase):
    def test_checkpoint_metrics_carry_the_pipeline_and_the_last_success(self):
        self.write("in.txt", "a\nb\n")
        cfg = self.write("p.toml", CHECKPOINTED.format(dir=toml_str(self.path("ck")),
                                                       input=toml_str(self.path("in.txt")),
                                                       out=toml_str(self.path("out.txt"))))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)

        def checkpoints():
            samples = parse_prometheus(http("GET", base + "/metrics")[2])
            try:
                return sample(samples, "sluice_checkpoints_total", pipeline="ckm") >= 2 or None
            except AssertionError:
                return None
        self.assertTrue(wait_for(checkpoints, 30), http("GET", base + "/metrics")[2])
        samples = parse_prometheus(http("GET", base + "/metrics")[2])
        for family in ("sluice_checkpoint_failures_total", "sluice_checkpoint_last_duration_seconds",
                       "sluice_checkpoint_last_bytes", "sluice_checkpoint_last_epoch"):
            sample(samples, family, pipeline="ckm")  # present, with the label
        last = sample(samples, "sluice_checkpoint_last_success_timestamp_seconds", pipeline="ckm")
        self.assertLess(abs(time.time() - last), 60, "not the Unix time of a recent success")

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


if __name__ == "__main__":
    unittest.main()
