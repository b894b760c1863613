"""SIGHUP reload: the new config is validated first. Invalid: logged, STATUS= says so, the
old graph keeps running. Valid: RELOADING=1, the old graph drains (its sink is flushed),
the new graph starts, READY=1 again. State is not carried over (no checkpoints yet)."""

import os
import signal
import time
import unittest

from service_it import NotifySocket, admin_url, http, parse_prometheus, read_text, sample
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for


def config(value, out_path, extra=""):
    return f"""
name = "reloadable"
[admin]
port = 0
[sources.ticks]
type = "from_periodic"
interval_ms = 20
value = {toml_str(value)}
[sinks.out]
type = "sink_to_textfile"
inputs = ["ticks"]
path = {toml_str(out_path)}
{extra}
"""


def lines(path):
    return read_text(path).splitlines() if os.path.exists(path) else []


class ReloadTest(SluiceTestCase):
    def start(self, text):
        sock = NotifySocket(self.path("notify.sock"))
        self.addCleanup(sock.close)
        cfg = self.write("p.toml", text)
        proc, _, err = self.spawn("run", cfg, env=self.env(NOTIFY_SOCKET=sock.path))
        sock.wait("READY", "1")
        return proc, err, sock, cfg

    def test_valid_reload_swaps_the_graph(self):
        out_a, out_b = self.path("a.txt"), self.path("b.txt")
        proc, err, sock, cfg = self.start(config("a", out_a))
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= 5, 10), read_text(err))

        self.write("p.toml", config("b", out_b))
        proc.send_signal(signal.SIGHUP)
        sock.wait("RELOADING", "1")
        ready = sock.wait("READY", "1", count=2)
        self.assertIn("reloaded at", ready[1][1].get("STATUS", ""))
        self.assertTrue(wait_for(lambda: len(lines(out_b)) >= 5, 10), read_text(err))
        self.assertIsNone(proc.poll(), "sluiced exited during the reload")

        # The old graph was drained: its file is complete (flushed, whole lines) and no
        # longer grows; the new graph writes the new value.
        text_a = read_text(out_a)
        self.assertTrue(text_a.endswith("\n"))
        self.assertEqual(set(text_a.splitlines()), {'"a"'})
        time.sleep(0.3)
        self.assertEqual(read_text(out_a), text_a)
        self.assertEqual(set(lines(out_b)), {'"b"'})

        status, _, body = http("GET", base + "/metrics")
        self.assertEqual(status, 200)
        m = parse_prometheus(body)
        self.assertEqual(sample(m, "sluice_graph_generation"), 2)
        self.assertEqual(sample(m, "sluice_reloads_total", result="applied"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 0)
        self.assertIn("reload: old graph drained", read_text(err))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_invalid_reload_keeps_the_old_graph(self):
        out_a = self.path("a.txt")
        proc, err, sock, cfg = self.start(config("a", out_a))
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= 5, 10), read_text(err))

        # A typo in a key: validation fails with file:line:col.
        self.write("p.toml", config("a", self.path("other.txt")).replace("interval_ms",
                                                                         "interval_msec"))
        proc.send_signal(signal.SIGHUP)
        sock.wait("RELOADING", "1")
        ready = sock.wait("READY", "1", count=2)
        status_line = ready[1][1].get("STATUS", "")
        self.assertIn("running 'reloadable'", status_line)
        self.assertIn("reload rejected", status_line)
        log = read_text(err)
        self.assertIn("p.toml:", log)
        self.assertIn("interval_msec", log)
        self.assertIn("reload rejected", log)

        # The old graph still runs and writes to the old file.
        before = len(lines(out_a))
        self.assertTrue(wait_for(lambda: len(lines(out_a)) >= before + 5, 10), read_text(err))
        self.assertFalse(os.path.exists(self.path("other.txt")))
        m = parse_prometheus(http("GET", base + "/metrics")[2])
        self.assertEqual(sample(m, "sluice_graph_generation"), 1)
        self.assertEqual(sample(m, "sluice_reloads_total", result="rejected"), 1)
        self.assertEqual(http("GET", base + "/readyz")[0], 200)

        # A missing file is rejected the same way.
        os.unlink(cfg)
        proc.send_signal(signal.SIGHUP)
        sock.wait("READY", "1", count=3)
        self.assertTrue(wait_for(lambda: "does not exist" in read_text(err), 5), read_text(err))
        self.assertIsNone(proc.poll())

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


if __name__ == "__main__":
    unittest.main()
