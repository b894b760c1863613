"""Graceful stop and resume: SIGTERM while sluiced consumes (a producer is still writing)
makes it exit 0 within shutdown_timeout_ms with the processed offsets committed (the
periodic commit is pushed out of the way, so the commit seen is the one at shutdown); a
second run in the same group resumes there: together the two runs output every input
record, and the second run re-reads nothing before the committed offsets."""

import subprocess
import threading
import time
import unittest

from kafka_it import EXIT_OK, KCAT, KafkaTestCase, toml_str

SHUTDOWN_TIMEOUT_S = 5
# sluiced must be gone within the shutdown bound; process start/exit gets a little slack.
STOP_WITHIN_S = SHUTDOWN_TIMEOUT_S + 1.0
PARTITIONS = 3


class TrickleProducer:
    """kcat -P fed line by line from a thread: keyed records "KEY\\tb<i>", ~rate/s."""

    def __init__(self, bootstrap, topic, rate=200):
        self.proc = subprocess.Popen(
            [KCAT, "-b", bootstrap, "-P", "-t", topic, "-K", "\t", "-X", "linger.ms=5"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.sent = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(rate,), daemon=True)
        self._thread.start()

    def _run(self, rate):
        i = 0
        while not self._stop.is_set():
            value = f"b{i}"
            self.proc.stdin.write(f"k{i % 10}\t{value}\n".encode())
            self.proc.stdin.flush()
            self.sent.append(value)
            i += 1
            time.sleep(1.0 / rate)

    def stop(self):
        """Stops writing and waits until kcat has delivered everything; returns the values."""
        self._stop.set()
        self._thread.join()
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        if rc != 0:
            raise AssertionError(f"kcat -P failed ({rc}): {self.proc.stderr.read()!r}")
        self.proc.stderr.close()
        return self.sent


class GracefulStopTest(KafkaTestCase):
    TOPICS = {"in": PARTITIONS, "out": 1}

    def pipeline(self):
        return f"""\
name = "graceful"

[runtime]
shutdown_timeout_ms = {SHUTDOWN_TIMEOUT_S * 1000}

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = "graceful"
commit_interval_ms = 600000
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
"""

    def test_sigterm_commits_and_restart_resumes(self):
        first = [(f"k{i % 10}", f"a{i}") for i in range(300)]
        self.produce("in", first)
        self.assertEqual(self.broker.committed("graceful", "in"),
                         {p: -1001 for p in range(PARTITIONS)})

        # Run 1: reads the backlog (start = "committed": nothing yet, so the earliest),
        # then gets SIGTERM while a producer keeps writing.
        proc, err = self.start_sluiced(self.pipeline(), "run1.toml")
        self.assertEqual(self.wait_for_count("out", len(first), procs=[proc]), len(first),
                         self.read(err))
        trickle = TrickleProducer(self.bootstrap, "in")
        self.addCleanup(lambda: trickle.proc.poll() is None and trickle.proc.kill())
        time.sleep(2.0)
        self.assertRunning(proc, err, "while consuming")
        rc, elapsed = self.stop_sluiced(proc, err)
        run1_log = self.read(err)
        self.assertEqual(rc, EXIT_OK, run1_log)
        self.assertLess(elapsed, STOP_WITHIN_S, f"stopping took {elapsed:.1f} s\n{run1_log}")
        trickled = trickle.stop()
        self.assertGreater(len(trickled), 100)

        # The offsets committed at shutdown: past the backlog, and never past the output.
        committed = self.broker.committed("graceful", "in")
        inputs = self.consume("in")
        where = {r["value"]: (r["partition"], r["offset"]) for r in inputs}
        self.assertEqual(len(where), len(first) + len(trickled))
        backlog_end = {p: 0 for p in range(PARTITIONS)}
        for _, v in first:
            p, o = where[v]
            backlog_end[p] = max(backlog_end[p], o + 1)
        for p in range(PARTITIONS):
            self.assertGreaterEqual(committed[p], backlog_end[p],
                                    f"partition {p}: committed {committed}, the backlog ends "
                                    f"at {backlog_end}\n{run1_log}")
        out1 = [r["value"] for r in self.consume("out")]
        below_commit = {v for v, (p, o) in where.items() if o < committed[p]}
        self.assertEqual(sorted(below_commit - set(out1)), [],
                         "committed offsets ran ahead of the output: those records are lost")

        # Run 2: same group, more input: resumes at the committed offsets.
        third = [(f"k{i % 10}", f"c{i}") for i in range(100)]
        self.produce("in", third)
        all_values = {v for _, v in first} | set(trickled) | {v for _, v in third}
        proc2, err2 = self.start_sluiced(self.pipeline(), "run2.toml")
        self.addCleanup(lambda: proc2.poll() is None and proc2.kill())
        ok = self.wait_for_all(all_values, [proc2])
        self.assertRunning(proc2, err2, "in the second run")
        out = self.consume("out")
        union = {r["value"] for r in out}
        self.assertTrue(ok, f"{len(all_values - union)} records never reached the output, "
                        f"e.g. {sorted(all_values - union)[:5]}\n{self.read(err2)}")
        run2 = [r["value"] for r in out[len(out1):]]
        reread = sorted(set(run2) & below_commit)
        self.assertEqual(reread, [], f"the second run re-read {len(reread)} records below the "
                         f"committed offsets {committed}")
        rc, elapsed = self.stop_sluiced(proc2, err2)
        self.assertEqual(rc, EXIT_OK, self.read(err2))
        self.assertLess(elapsed, STOP_WITHIN_S)

    def wait_for_all(self, values, procs, timeout=40):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                return False
            if self.broker.count("out") >= len(values) and \
                    values <= {r["value"] for r in self.consume("out")}:
                return True
            time.sleep(0.5)
        return False


if __name__ == "__main__":
    unittest.main()
