"""The daemon with secrets and a config directory: /graph and /graph.dot never show a
secret (even under an innocent key), the daemon's log neither; SIGHUP re-reads the config
directory, so a file added to it joins the pipeline (docs/OPERATIONS.md, "Configure")."""

import json
import os
import signal
import unittest

from service_it import NotifySocket, admin_url, http, read_text
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for

SECRET = "hunter2-svc-7731"


def lines(path):
    return read_text(path).splitlines() if os.path.exists(path) else []


class ConfigLayoutServiceTest(SluiceTestCase):
    def test_graph_endpoints_and_log_never_show_a_secret(self):
        self.write("value.pass", SECRET + "\n")
        out = self.path("out.txt")
        d = self.mkdir("conf.d")
        self.write("conf.d/10-main.toml", f"""
name = "secretive"
[admin]
port = 0
[sources.ticks]
type = "from_periodic"
interval_ms = 20
value = {{ secret_file = {toml_str(self.path("value.pass"))} }}
""")
        self.write("conf.d/20-sink.toml", f"""
[sinks.out]
type = "sink_to_textfile"
inputs = ["ticks"]
path = {toml_str(out)}
""")
        proc, _, err = self.spawn("run", "--config-dir", d, "--log-level", "debug")
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20),
                        read_text(err))
        # The pipeline itself gets the secret.
        self.assertTrue(wait_for(lambda: len(lines(out)) >= 2, 10), read_text(err))
        self.assertEqual(lines(out)[0], json.dumps(SECRET))

        status, _, graph = http("GET", base + "/graph")
        self.assertEqual(status, 200, graph)
        self.assertNotIn(SECRET, graph)
        nodes = {n["id"]: n for n in json.loads(graph)["nodes"]}
        self.assertEqual(nodes["ticks"]["config"]["value"], "<redacted>")
        status, _, dot = http("GET", base + "/graph.dot")
        self.assertEqual(status, 200, dot)
        self.assertNotIn(SECRET, dot)

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))
        self.assertNotIn(SECRET, read_text(err))

    def test_reload_picks_up_a_new_file_in_the_config_dir(self):
        out_a, out_b = self.path("a.txt"), self.path("b.txt")
        d = self.mkdir("conf.d")
        self.write("conf.d/10-a.toml", f"""
name = "growing"
[sources.a]
type = "from_periodic"
interval_ms = 20
value = "a"
[sinks.out_a]
type = "sink_to_textfile"
inputs = ["a"]
path = {toml_str(out_a)}
""")
        sock = NotifySocket(self.path("notify.sock"))
        self.addCleanup(sock.close)
        proc, _, err = self.spawn("run", "--config-dir", d,
                                  env=self.env(NOTIFY_SOCKET=sock.path))
        sock.wait("READY", "1")
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= 2, 10), read_text(err))
        self.assertFalse(os.path.exists(out_b))

        # A new file in the directory, with a node that reads a secret from the environment.
        self.write("conf.d/20-b.toml", f"""
[sources.b]
type = "from_periodic"
interval_ms = 20
value = "${{SLUICE_IT_B_VALUE:-b}}"
[sinks.out_b]
type = "sink_to_textfile"
inputs = ["b"]
path = {toml_str(out_b)}
""")
        proc.send_signal(signal.SIGHUP)
        sock.wait("READY", "1", count=2)
        self.assertTrue(wait_for(lambda: len(lines(out_b)) >= 2, 10), read_text(err))
        self.assertEqual(set(lines(out_b)), {'"b"'})
        self.assertIsNone(proc.poll(), read_text(err))

        # A duplicate id in a newer file is rejected with both places; the graph keeps running.
        self.write("conf.d/30-dup.toml", "[sources.a]\ntype = \"from_periodic\"\n")
        proc.send_signal(signal.SIGHUP)
        sock.wait("READY", "1", count=3)
        self.assertTrue(wait_for(lambda: "node id 'a' is also given at" in read_text(err), 10),
                        read_text(err))
        self.assertIn(os.path.join(d, "10-a.toml") + ":3:10", read_text(err))
        self.assertIsNone(proc.poll(), read_text(err))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


if __name__ == "__main__":
    unittest.main()
