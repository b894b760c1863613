"""The admin endpoint ([admin]): health, readiness, Prometheus metrics that move while data
flows, the graph as JSON and DOT (the same as `sluiced graph`), pause/resume of a source,
the bearer token, the cross-origin guard and redacted secrets (tests/integration/
test_hostile_http.py has the attacks on the endpoint: Host check, limits, EMFILE)."""

import json
import os
import signal
import time
import unittest

from service_it import admin_url, http, parse_prometheus, read_text, sample
from sluice_it import EXIT_OK, PLUGIN_DIR, SluiceTestCase, toml_str, wait_for

PIPELINE = """
name = "admin_demo"
[admin]
port = 0
{admin_extra}
[sources.ticks]
type = "from_periodic"
interval_ms = 10
[operators.double]
type = "map"
inputs = ["ticks"]
function = {{ name = "mul", args = {{ value = 2 }} }}
[sinks.out]
type = "sink_to_textfile"
inputs = ["double"]
path = {out}
"""


class AdminTest(SluiceTestCase):
    def start(self, admin_extra=""):
        cfg = self.write("p.toml", PIPELINE.format(admin_extra=admin_extra,
                                                   out=toml_str(self.path("out.txt"))))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20),
                        read_text(err))
        return proc, err, base, cfg

    def stop(self, proc, err):
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def metrics(self, base, headers=None):
        status, hdrs, body = http("GET", base + "/metrics", headers)
        self.assertEqual(status, 200, body)
        self.assertTrue(hdrs["Content-Type"].startswith("text/plain; version=0.0.4"), hdrs)
        return parse_prometheus(body), body

    def test_health_metrics_and_graph(self):
        proc, err, base, cfg = self.start()
        self.assertEqual(http("GET", base + "/healthz")[:1], (200,))
        self.assertEqual(http("GET", base + "/readyz")[2], "ready\n")

        m1, text = self.metrics(base)
        for family in ("sluice_node_messages_in_total counter",
                       "sluice_node_batch_latency_seconds histogram",
                       "sluice_node_backpressure_seconds_total counter"):
            self.assertIn("# TYPE " + family, text)
        time.sleep(0.5)
        m2, _ = self.metrics(base)
        ids = dict(pipeline="admin_demo")
        out1 = sample(m1, "sluice_node_messages_in_total", node="out", **ids)
        out2 = sample(m2, "sluice_node_messages_in_total", node="out", **ids)
        self.assertGreater(out2, out1, "messages_in of the sink did not move while data flows")
        # Everything the source emitted went through the map to the sink (depth-first).
        self.assertEqual(sample(m2, "sluice_node_messages_out_total", node="ticks", **ids),
                         sample(m2, "sluice_node_messages_in_total", node="double", **ids))
        # The histogram counts one observation per delivered batch, cumulatively.
        count = sample(m2, "sluice_node_batch_latency_seconds_count", node="out", **ids)
        inf = sample(m2, "sluice_node_batch_latency_seconds_bucket", node="out", le="+Inf", **ids)
        one_ms = sample(m2, "sluice_node_batch_latency_seconds_bucket", node="out", le="0.001",
                        **ids)
        self.assertEqual(count, inf)
        self.assertGreater(count, 0)
        self.assertLessEqual(one_ms, inf)
        self.assertEqual(sample(m2, "sluice_source_paused", node="ticks", **ids), 0)
        self.assertEqual(sample(m2, "sluice_up"), 1)
        self.assertAlmostEqual(sample(m2, "sluice_graph_start_time_seconds"), time.time(),
                               delta=60)

        # /graph and /graph.dot are what `sluiced graph` prints for the same config.
        status, hdrs, body = http("GET", base + "/graph")
        self.assertEqual(status, 200)
        self.assertEqual(hdrs["Content-Type"], "application/json")
        self.assertEqual(json.loads(body),
                         json.loads(self.sluiced("graph", cfg, "--format", "json").stdout))
        status, _, dot = http("GET", base + "/graph.dot")
        self.assertEqual(status, 200)
        self.assertEqual(dot, self.sluiced("graph", cfg).stdout)

        # The live page is served from the binary, with no external resources.
        status, hdrs, page = http("GET", base + "/")
        self.assertEqual(status, 200)
        self.assertTrue(hdrs["Content-Type"].startswith("text/html"))
        self.assertIn("<svg", page)
        self.assertNotIn("https://", page)

        self.assertEqual(http("GET", base + "/nope")[0], 404)
        self.assertEqual(http("POST", base + "/metrics")[0], 405)
        self.stop(proc, err)

    def test_pause_and_resume_a_source(self):
        proc, err, base, _ = self.start()

        def emitted():
            stats = json.loads(http("GET", base + "/stats")[2])
            return {n["id"]: n for n in stats["nodes"]}

        self.assertTrue(wait_for(lambda: emitted()["ticks"]["out"] > 5, 10))
        status, _, body = http("POST", base + "/sources/ticks/pause")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body), {"source": "ticks", "paused": True})
        # The pause is posted to the task: once it applied, the count stops moving.
        def settled():
            a = emitted()["ticks"]["out"]
            time.sleep(0.2)
            return emitted()["ticks"]["out"] == a
        self.assertTrue(wait_for(settled, 10), "the source kept emitting after the pause")
        paused_at = emitted()
        self.assertTrue(paused_at["ticks"]["paused"])
        time.sleep(0.6)
        self.assertEqual(emitted()["ticks"]["out"], paused_at["ticks"]["out"],
                         "a paused source was still polled")
        m, _ = self.metrics(base)
        self.assertEqual(sample(m, "sluice_source_paused", node="ticks"), 1)
        self.assertEqual(http("GET", base + "/readyz")[0], 200)  # paused is still ready

        status, _, body = http("POST", base + "/sources/ticks/resume")
        self.assertEqual(status, 200, body)
        self.assertTrue(wait_for(lambda: emitted()["ticks"]["out"] > paused_at["ticks"]["out"] + 5,
                                 5), "the source did not resume")
        self.assertFalse(emitted()["ticks"]["paused"])

        self.assertEqual(http("POST", base + "/sources/nosuch/pause")[0], 404)
        self.assertEqual(http("POST", base + "/sources/double/pause")[0], 400)  # not a source
        self.assertEqual(http("GET", base + "/sources/ticks/pause")[0], 405)
        # A page on another origin cannot pause a source through the operator's browser.
        status, _, _ = http("POST", base + "/sources/ticks/pause",
                            {"Origin": "http://evil.example"})
        self.assertEqual(status, 403)
        self.assertFalse(emitted()["ticks"]["paused"])
        self.assertIn("source 'ticks' paused", read_text(err))
        self.stop(proc, err)

    def test_bearer_token(self):
        proc, err, base, _ = self.start('token = "s3cret"')
        self.assertIn("bearer token required", read_text(err))
        # Probes and the static page need no token.
        self.assertEqual(http("GET", base + "/healthz")[0], 200)
        self.assertEqual(http("GET", base + "/readyz")[0], 200)
        self.assertEqual(http("GET", base + "/")[0], 200)
        for path in ("/metrics", "/graph", "/graph.dot", "/stats"):
            status, hdrs, _ = http("GET", base + path)
            self.assertEqual(status, 401, path)
            self.assertIn("Bearer", hdrs.get("WWW-Authenticate", ""))
            self.assertEqual(http("GET", base + path, {"Authorization": "Bearer wrong"})[0], 401)
            self.assertEqual(http("GET", base + path, {"Authorization": "Bearer s3cret"})[0], 200)
        self.assertEqual(http("POST", base + "/sources/ticks/pause")[0], 401)
        self.assertEqual(http("POST", base + "/sources/ticks/pause",
                              {"Authorization": "Bearer s3cret"})[0], 200)
        self.stop(proc, err)

    @unittest.skipUnless(os.path.exists(os.path.join(PLUGIN_DIR, "libsluice_kafka.so")),
                         "the kafka plugin is not built")
    def test_secrets_are_redacted_in_graph(self):
        # The case: librdkafka settings in a `config = {...}` table. No broker is
        # needed: the producer retries in the background while the graph runs.
        cfg = self.write("k.toml", """
[admin]
port = 0
[sources.in]
type = "from_http_server"
port = 0
[sinks.k]
type = "to_kafka"
inputs = ["in"]
brokers = "127.0.0.1:1"
topic = "t"
config = { "security.protocol" = "SASL_PLAINTEXT", "sasl.mechanisms" = "PLAIN", \
"sasl.username" = "me", "sasl.password" = "hunter2" }
""")
        printed = self.sluiced("graph", "--format", "json", cfg)
        self.assertExit(printed, EXIT_OK)
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20),
                        read_text(err))
        status, _, served = http("GET", base + "/graph")
        self.assertEqual(status, 200, served)
        for text in (printed.stdout, served):
            kafka = json.loads(text)["nodes"][1]["config"]["config"]
            self.assertEqual(kafka, {"security.protocol": "SASL_PLAINTEXT",
                                     "sasl.mechanisms": "PLAIN",
                                     "sasl.username": "<redacted>",
                                     "sasl.password": "<redacted>"})
            self.assertNotIn("hunter2", text)
        self.stop(proc, err)
        self.assertNotIn("hunter2", read_text(err))

    def test_no_admin_table_no_endpoint(self):
        cfg = self.write("p.toml", """
[sources.n]
type = "from_iterable"
values = [1]
[sinks.out]
type = "print"
inputs = ["n"]
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertNotIn("admin endpoint", r.stderr)

    def test_port_in_use_is_a_startup_error(self):
        proc, err, base, _ = self.start()
        port = base.rsplit(":", 1)[1]
        cfg = self.write("q.toml", f"""
[admin]
port = {port}
[sources.n]
type = "from_iterable"
values = [1]
[sinks.out]
type = "print"
inputs = ["n"]
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, 1)
        self.assertInStderr(f"admin endpoint: cannot bind 127.0.0.1:{port}", r)
        self.stop(proc, err)


if __name__ == "__main__":
    unittest.main()
