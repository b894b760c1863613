"""The example plugins of examples/third_party_plugin/, as built in the tree: each loads and
runs, and the two complete examples of docs/PLUGIN_GUIDE.md do what they promise:

- batch_every (C): arrays of `size`, a partial array after `max_wait_ms` (a timer), the
  values it holds saved in checkpoints, and its timer armed again in start after a restore;
- committed_lines (C++): publishes on checkpoint commit, so that with batch_every upstream
  every input line reaches the file exactly once across SIGKILLs.
"""

import json
import os
import signal
import time
import unittest

from sluice_it import EXIT_OK, PLUGIN_DIR, SluiceTestCase, toml_str, wait_for

EXAMPLES = os.environ.get("SLUICE_EXAMPLES_PLUGIN_DIR", "")


@unittest.skipUnless(EXAMPLES and os.path.isdir(EXAMPLES),
                     "SLUICE_EXAMPLES_PLUGIN_DIR (the examples' build dir) is not set")
class ExamplePluginsTest(SluiceTestCase):
    def env(self, plugin_path=None, **extra):
        # The in-tree plugins (from_textfile, ...) and the examples.
        return super().env(plugin_path=f"{PLUGIN_DIR}:{EXAMPLES}" if plugin_path is None
                           else plugin_path, **extra)

    def lines(self, name):
        p = self.path(name)
        if not os.path.exists(p):
            return []
        with open(p, encoding="utf-8") as f:
            return [json.loads(line) for line in f.read().splitlines()]

    def test_every_example_loads(self):
        r = self.sluiced("plugins")
        self.assertExit(r, EXIT_OK)
        for what in ["operator uppercase", "operator scale", "function scale_by",
                     "operator batch_every", "sink committed_lines", "sink durable_lines"]:
            self.assertIn(what, r.stdout)

    def test_batches_without_checkpoints(self):
        # No [checkpoint]: arrays of `size`, the rest at the end of input; the sink
        # publishes in finish.
        cfg = self.write("p.toml", f"""
[sources.numbers]
type = "from_iterable"
values = {list(range(1, 26))}
[operators.batches]
type = "batch_every"
inputs = ["numbers"]
size = 10
max_wait_ms = 600000
[sinks.out]
type = "committed_lines"
inputs = ["batches"]
path = {toml_str(self.path("out.jsonl"))}
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(self.lines("out.jsonl"),
                         [list(range(1, 11)), list(range(11, 21)), list(range(21, 26))])
        self.assertFalse(os.path.exists(self.path("out.jsonl.pending")) and
                         os.path.getsize(self.path("out.jsonl.pending")) > 0)

    def test_bad_size_is_a_validate_error(self):
        cfg = self.write("p.toml", """
[sources.numbers]
type = "from_iterable"
values = [1]
[operators.batches]
type = "batch_every"
inputs = ["numbers"]
size = 0
[sinks.out]
type = "print"
inputs = ["batches"]
""")
        r = self.sluiced("validate", cfg)
        self.assertNotEqual(r.returncode, EXIT_OK)
        self.assertRegex(r.stderr, r"p\.toml:8:8: error: node 'batches': key 'size'")

    def pipeline(self, size, max_wait_ms):
        return self.write("p.toml", f"""
name = "examples"
[runtime]
batch_size = 4
[checkpoint]
interval_ms = 20
dir = "ck"
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = true
poll_interval_ms = 5
[operators.batches]
type = "batch_every"
inputs = ["lines"]
size = {size}
max_wait_ms = {max_wait_ms}
[sinks.out]
type = "committed_lines"
inputs = ["batches"]
path = "out.jsonl"
""")

    def test_timer_is_armed_again_after_a_restore(self):
        # Three lines, arrays of 100, a partial array after 5 s. Stopped (final checkpoint)
        # before the timer fires: the three values are in batch_every's saved state, not in
        # the output. Restarted with no new input, only the timer armed in start can emit
        # them.
        cfg = self.pipeline(size=100, max_wait_ms=5000)
        self.write("in.txt", "a\nb\nc\n")
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(self.wait_log(err, "checkpoint epoch"), self.read(err))
        time.sleep(0.5)  # the source has long read the three lines (it polls every 5 ms)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        self.assertEqual(self.lines("out.jsonl"), [], "the timer fired before the stop: "
                         "the machine is too slow for this test's 5 s margin")

        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_for(lambda: self.lines("out.jsonl") == [["a", "b", "c"]], 30),
                        f"{self.lines('out.jsonl')}\n{self.read(err)}")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        self.assertIn("restoring checkpoint epoch", self.read(err))
        self.assertEqual(self.lines("out.jsonl"), [["a", "b", "c"]])

    def test_exactly_once_across_sigkill(self):
        n = 3000
        lines = [f"{i}\n" for i in range(n)]
        cfg = self.pipeline(size=7, max_wait_ms=15)
        self.write("in.txt", "")
        written, restores = 0, 0
        for _ in range(5):
            with open(self.path("in.txt"), "a", encoding="utf-8") as f:
                f.write("".join(lines[written:written + n // 6]))
            written += n // 6
            proc, _, err = self.spawn("run", cfg)
            self.assertTrue(self.wait_log(err, "checkpoint epoch"), self.read(err))
            time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            restores += "restoring checkpoint epoch" in self.read(err)
        self.assertGreaterEqual(restores, 4)
        with open(self.path("in.txt"), "a", encoding="utf-8") as f:
            f.write("".join(lines[written:]))
        want = [str(i) for i in range(n)]

        def flat():
            return [x for batch in self.lines("out.jsonl") for x in batch]

        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_for(lambda: flat()[-1:] == want[-1:], 60), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, self.read(err))
        got = flat()
        self.assertEqual(len(got), n)
        self.assertEqual(got, want)
        self.assertTrue(all(1 <= len(b) <= 7 for b in self.lines("out.jsonl")))
        leftovers = [f for f in os.listdir(self.tmp) if f.startswith("out.jsonl.prepared-")]
        self.assertEqual(leftovers, [])


if __name__ == "__main__":
    unittest.main()
