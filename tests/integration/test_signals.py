"""SIGTERM and SIGINT stop a pipeline that would otherwise never end (from_textfile with
follow = true): sluiced exits 0 within a few seconds, and everything read before the
signal is in the output (flushed), in files and on stdout."""

import os
import signal
import subprocess
import time
import unittest

from sluice_it import EXIT_OK, EXIT_RUNTIME, SluiceTestCase, broken, toml_str, wait_for

# How long sluiced may take to stop after the signal: draining these pipelines is quick,
# so "a few seconds" (well under their shutdown_timeout_ms of 4 s plus process exit).
STOP_WITHIN_S = 5.0


class GracefulStopTest(SluiceTestCase):
    def follow_pipeline(self, sink_table):
        self.src = self.write("in.log", "first\nsecond\n")
        return self.write("follow.toml", f"""\
name = "follow"

[runtime]
shutdown_timeout_ms = 4000

[sources.lines]
type = "from_textfile"
path = {toml_str(self.src)}
follow = true
poll_interval_ms = 20

[operators.shout]
type = "map"
inputs = ["lines"]
function = "upper"

{sink_table}
""")

    def append(self, text):
        with open(self.src, "a", encoding="utf-8") as f:
            f.write(text)
            f.flush()

    def start_and_feed(self, cfg, more_lines):
        proc, out_path, err_path = self.spawn("run", cfg)
        started = wait_for(lambda: "running" in self.read(err_path) or proc.poll() is not None, 10)
        self.assertIsNone(proc.poll(), f"sluiced exited early:\n{self.read(err_path)}")
        self.assertTrue(started, f"sluiced did not report that it runs:\n{self.read(err_path)}")
        time.sleep(0.3)
        self.append("".join(f"{line}\n" for line in more_lines))
        # The source re-checks the file every 20 ms: give it ample time to read the lines.
        time.sleep(1.0)
        self.assertIsNone(proc.poll(), "a followed file never ends: sluiced must still run"
                          f"\n{self.read(err_path)}")
        return proc, out_path, err_path

    def stop(self, proc, signo, err_path):
        t0 = time.monotonic()
        proc.send_signal(signo)
        try:
            rc = proc.wait(timeout=STOP_WITHIN_S + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"sluiced did not stop after {signal.Signals(signo).name}"
                      f"\n{self.read(err_path)}")
        elapsed = time.monotonic() - t0
        stderr = self.read(err_path)
        self.assertEqual(rc, EXIT_OK, f"exit code after {signal.Signals(signo).name}\n{stderr}")
        self.assertLess(elapsed, STOP_WITHIN_S, f"stopping took {elapsed:.1f} s\n{stderr}")
        return stderr

    def check_file_sink(self, signo, flush):
        out = self.path("out.txt")
        cfg = self.follow_pipeline(f"""\
[sinks.out]
type = "sink_to_textfile"
inputs = ["shout"]
format = "text"
flush = "{flush}"
path = {toml_str(out)}
""")
        more = [f"line {i}" for i in range(5000)]
        proc, _, err_path = self.start_and_feed(cfg, more)
        expected = "FIRST\nSECOND\n" + "".join(f"{line.upper()}\n" for line in more)
        if flush == "batch":
            # Handed to the OS after each batch: visible before any signal.
            seen = wait_for(lambda: os.path.exists(out) and self.read(out) == expected, 5)
            self.assertTrue(seen, f"flush = \"batch\": output not visible while running"
                                  f"\n{self.read(err_path)}")
        stderr = self.stop(proc, signo, err_path)
        self.assertTrue(os.path.exists(out), stderr)
        got = self.read(out)
        self.assertEqual(got.count("\n"), expected.count("\n"), stderr)
        self.assertEqual(got, expected, stderr)

    def test_sigterm_flushes_file_sink_and_exits_0(self):
        self.check_file_sink(signal.SIGTERM, flush="batch")

    def test_sigint_flushes_file_sink_and_exits_0(self):
        self.check_file_sink(signal.SIGINT, flush="batch")

    def test_sigterm_flushes_buffered_file_sink(self):
        # flush = "finish": the sink holds up to 64 KiB; a graceful stop must write it out.
        self.check_file_sink(signal.SIGTERM, flush="finish")

    def test_sigint_flushes_buffered_file_sink(self):
        self.check_file_sink(signal.SIGINT, flush="finish")

    def test_follow_starts_over_after_truncation(self):
        out = self.path("out.txt")
        cfg = self.follow_pipeline(f"""\
[sinks.out]
type = "sink_to_textfile"
inputs = ["shout"]
format = "text"
path = {toml_str(out)}
""")
        proc, _, err_path = self.start_and_feed(cfg, ["third"])
        with open(self.src, "w", encoding="utf-8") as f:  # truncate, then new content
            f.write("new\n")
        time.sleep(1.0)
        stderr = self.stop(proc, signal.SIGTERM, err_path)
        self.assertEqual(self.read(out), "FIRST\nSECOND\nTHIRD\nNEW\n", stderr)

    def test_sigterm_flushes_stdout_of_print_sink(self):
        cfg = self.follow_pipeline("""\
[sinks.show]
type = "print"
inputs = ["shout"]
""")
        proc, out_path, err_path = self.start_and_feed(cfg, ["third", "fourth"])
        self.stop(proc, signal.SIGTERM, err_path)
        self.assertEqual(self.read(out_path).splitlines(), ["FIRST", "SECOND", "THIRD", "FOURTH"],
                         self.read(err_path))

    def test_sigterm_while_idle_before_any_input(self):
        self.src = None
        src = self.write("empty.log", "")
        out = self.path("out.txt")
        cfg = self.write("idle.toml", f"""\
[sources.lines]
type = "from_textfile"
path = {toml_str(src)}
follow = true

[sinks.out]
type = "sink_to_textfile"
inputs = ["lines"]
format = "text"
path = {toml_str(out)}
""")
        proc, _, err_path = self.spawn("run", cfg)
        wait_for(lambda: "running" in self.read(err_path) or proc.poll() is not None, 10)
        time.sleep(0.3)
        self.assertIsNone(proc.poll(), self.read(err_path))
        self.stop(proc, signal.SIGTERM, err_path)
        self.assertEqual(self.read(out) if os.path.exists(out) else "", "")


class SlowDrainTest(SluiceTestCase):
    """A sink whose finish takes 8 s (test plugin it_slow_sink): the drain after a signal is
    cut short by `shutdown_timeout_ms` or by a second signal, with exit 1."""

    def start(self, shutdown_timeout_ms):
        src = self.write("in.log", "a\nb\n")
        cfg = self.write("slow.toml", f"""\
plugin_dirs = [{toml_str(broken("slow"))}]

[runtime]
shutdown_timeout_ms = {shutdown_timeout_ms}

[sources.lines]
type = "from_textfile"
path = {toml_str(src)}
follow = true
poll_interval_ms = 20

[sinks.slow]
type = "slow_sink"
inputs = ["lines"]
finish_ms = 8000
""")
        proc, _, err_path = self.spawn("run", cfg)
        wait_for(lambda: "running" in self.read(err_path) or proc.poll() is not None, 10)
        time.sleep(0.3)
        self.assertIsNone(proc.poll(), self.read(err_path))
        return proc, err_path

    def wait_exit(self, proc, err_path, within_s):
        t0 = time.monotonic()
        try:
            rc = proc.wait(timeout=within_s + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"sluiced did not exit\n{self.read(err_path)}")
        elapsed = time.monotonic() - t0
        stderr = self.read(err_path)
        self.assertLess(elapsed, within_s, f"exiting took {elapsed:.1f} s\n{stderr}")
        return rc, stderr

    def test_shutdown_timeout_cuts_a_slow_drain(self):
        proc, err_path = self.start(shutdown_timeout_ms=500)
        proc.send_signal(signal.SIGTERM)
        rc, stderr = self.wait_exit(proc, err_path, within_s=4.0)
        self.assertEqual(rc, EXIT_RUNTIME, stderr)
        self.assertIn("shutdown_timeout_ms", stderr)

    def test_second_signal_exits_at_once(self):
        proc, err_path = self.start(shutdown_timeout_ms=60000)
        proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "finishing slowly" in self.read(err_path), 5)
        time.sleep(0.2)
        self.assertIsNone(proc.poll(), "the drain should still be running\n" + self.read(err_path))
        proc.send_signal(signal.SIGINT)
        rc, stderr = self.wait_exit(proc, err_path, within_s=3.0)
        self.assertEqual(rc, EXIT_RUNTIME, stderr)
        self.assertIn("second signal", stderr)


if __name__ == "__main__":
    unittest.main()
