"""The systemd notify protocol, spoken to a NOTIFY_SOCKET this test owns: READY=1 once the
graph runs, STATUS= lines, STOPPING=1 on SIGTERM, and WATCHDOG=1 pings that stop while a
task is stuck in a callback."""

import os
import signal
import time
import unittest

from service_it import SERVICE_PLUGIN_DIR, NotifySocket, read_text
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for


class NotifyTest(SluiceTestCase):
    def notify_socket(self):
        sock = NotifySocket(self.path("notify.sock"))
        self.addCleanup(sock.close)
        return sock

    def test_ready_status_and_stopping(self):
        sock = self.notify_socket()
        out = self.path("out.txt")
        cfg = self.write("p.toml", f"""
name = "notified"
[sources.ticks]
type = "from_periodic"
interval_ms = 20
[sinks.out]
type = "sink_to_textfile"
inputs = ["ticks"]
path = {toml_str(out)}
""")
        proc, _, err = self.spawn("run", cfg, env=self.env(NOTIFY_SOCKET=sock.path))
        ready = sock.wait("READY", "1")
        status = ready[0][1].get("STATUS", "")
        self.assertIn("running 'notified'", status)
        self.assertIn("2 nodes, 1 task", status)
        # The graph runs when READY=1 arrives: data reaches the sink.
        self.assertTrue(wait_for(lambda: os.path.exists(out) and read_text(out).count("\n") >= 3,
                                 10), read_text(err))
        # Before READY=1 the status said what was starting.
        first_status = sock.statuses()[0]
        self.assertIn("starting pipeline 'notified'", first_status)

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))
        stopping = sock.wait("STOPPING", "1")
        self.assertIn("stopping 'notified'", stopping[0][1].get("STATUS", ""))
        ready_t, stop_t = ready[0][0], stopping[0][0]
        self.assertLess(ready_t, stop_t)
        # No watchdog was asked for (no WATCHDOG_USEC): no pings.
        self.assertEqual(sock.with_key("WATCHDOG"), [])

    def test_no_notify_socket_runs_normally(self):
        cfg = self.write("p.toml", """
[sources.n]
type = "from_iterable"
values = [1, 2, 3]
[sinks.out]
type = "print"
inputs = ["n"]
""")
        env = self.env()
        env.pop("NOTIFY_SOCKET", None)
        r = self.sluiced("run", cfg, env=env)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout, "1\n2\n3\n")

    def test_watchdog_pings_stop_while_a_task_is_stuck(self):
        if not os.path.isdir(SERVICE_PLUGIN_DIR):
            self.fail(f"{SERVICE_PLUGIN_DIR} missing: build the tree (service_stall)")
        sock = self.notify_socket()
        # The stall operator blocks the task thread for 2 s on the 25th element (~0.5 s in).
        cfg = self.write("p.toml", f"""
plugin_dirs = [{toml_str(SERVICE_PLUGIN_DIR)}]
[sources.ticks]
type = "from_periodic"
interval_ms = 20
[operators.stuck]
type = "stall"
inputs = ["ticks"]
after = 25
stall_ms = 2000
[sinks.out]
type = "sink_to_textfile"
inputs = ["stuck"]
path = {toml_str(self.path("out.txt"))}
""")
        # WATCHDOG_USEC = 300 ms: sluiced pings every 150 ms while every task answers.
        env = self.env(NOTIFY_SOCKET=sock.path, WATCHDOG_USEC="300000")
        env.pop("WATCHDOG_PID", None)  # unset: the watchdog is for whoever reads it
        proc, _, err = self.spawn("run", cfg, env=env)
        sock.wait("READY", "1")
        self.assertTrue(wait_for(lambda: "stall: blocking" in read_text(err), 20), read_text(err))
        self.assertTrue(wait_for(lambda: "withholding the systemd watchdog ping" in read_text(err),
                                 5), read_text(err))
        # The report names the task and the node it is stuck in.
        self.assertIn("task 0 in node 'stuck' has not answered", read_text(err))
        time.sleep(3.0)  # the stall ends (2 s) and pings come back
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

        pings = [t for t, _ in sock.with_key("WATCHDOG", "1")]
        self.assertGreater(len(pings), 10, f"too few pings: {len(pings)}")
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        # One gap covers the stall: no ping for well over the 300 ms watchdog interval...
        self.assertGreater(max(gaps), 1.5, f"no gap in the pings while the task was stuck: {gaps}")
        # ...while otherwise pings come every ~150 ms (generous bound for a loaded machine).
        ordinary = sorted(gaps)[: len(gaps) // 2]
        self.assertLess(max(ordinary), 0.3, f"pings are not regular: {gaps}")
        # And they came back after the stall.
        biggest = gaps.index(max(gaps))
        self.assertGreater(len(gaps) - biggest, 3, f"pings did not resume after the stall: {gaps}")


if __name__ == "__main__":
    unittest.main()
