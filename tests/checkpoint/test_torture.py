"""SIGKILL torture tests of checkpointing (label "torture"; docs/CHECKPOINTING.md).

A real `sluiced run` on a file pipeline

    from_textfile (follow, a growing input) -> map lower -> filter ne "skip"
      -> accumulate count_by -> sink_to_textfile

is killed with SIGKILL at random points while a writer thread appends the input,
restarted after every kill, and finally stopped with SIGTERM (a final checkpoint) once
all input is reflected. Then the output is checked against the exact sequence of count
tables the input implies (accumulate emits the whole table after each word):

  - at-least-once (default sink): every expected table appears, no other table does (a
    lost state would produce smaller counts), and the last line equals the true counts;
  - exactly-once (exactly_once = true): the output IS the expected sequence, line for line.

SLUICE_TORTURE_KILLS (default 25) sets the number of kills; SLUICE_TORTURE_SEED the
random seed (printed on failure).
"""

import json
import os
import random
import signal
import time
import unittest

from sluice_it import SluiceTestCase, checkpointed_head, followed_lines_source, wait_for

KILLS = int(os.environ.get("SLUICE_TORTURE_KILLS", "25"))
SEED = int(os.environ.get("SLUICE_TORTURE_SEED", str(int(time.time()))))
WORDS = ["Alpha", "beta", "GAMMA", "delta", "skip", "Eps", "zeta", "SKIP", "eta"]
CHUNK = 40            # lines per append
CHUNK_PERIOD = 0.004  # seconds between appends: about 10k lines/s


class TortureBase(SluiceTestCase):
    exactly_once = False

    def config(self):
        return f"""
{checkpointed_head("torture", batch_size=8)}
{followed_lines_source()}
[operators.low]
type = "map"
inputs = ["lines"]
function = "lower"
[operators.keep]
type = "filter"
inputs = ["low"]
function = {{ name = "ne", args = {{ value = "skip" }} }}
[operators.counts]
type = "accumulate"
inputs = ["keep"]
function = "count_by"
start = {{}}
[sinks.out]
type = "sink_to_textfile"
inputs = ["counts"]
path = "out.jsonl"
exactly_once = {"true" if self.exactly_once else "false"}
"""

    def run_torture(self):
        rng = random.Random(SEED)
        total_lines = max(KILLS, 1) * 800
        lines = [rng.choice(WORDS) for _ in range(total_lines)]
        expected, table = [], {}
        for w in lines:
            w = w.lower()
            if w == "skip":
                continue
            table[w] = table.get(w, 0) + 1
            expected.append(dict(table))
        cfg = self.write("p.toml", self.config())
        done = self.append_in_background(lines, CHUNK, CHUNK_PERIOD)

        # Three kills in four land after the checkpoint coordinator has decided between a
        # restore and a fresh start (a random point in the replay, processing or a
        # checkpoint); the fourth at a random point of the start-up itself. Kill times are
        # measured from that decision, not from the spawn: a loaded machine may take longer
        # than the whole window only to start.
        restores, first_restore = 0, None
        for k in range(KILLS):
            proc, _, err = self.spawn("run", cfg)
            in_startup = rng.random() < 0.25
            if in_startup:
                time.sleep(rng.uniform(0.0, 0.05))
            else:
                decided = wait_for(lambda: proc.poll() is not None or any(
                    s in self.read(err) for s in ("restoring checkpoint epoch", "starting fresh")), 30)
                self.assertTrue(decided, f"no restore and no fresh start within 30 s "
                                         f"(seed {SEED}):\n{self.read(err)}")
                time.sleep(rng.uniform(0.02, 0.15))
            if proc.poll() is not None:
                self.fail(f"sluiced exited by itself (code {proc.returncode}) before kill {k} "
                          f"(seed {SEED}):\n{self.read(err)}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            log = self.read(err)
            if "restoring checkpoint epoch" in log:
                restores += 1
                first_restore = k if first_restore is None else first_restore
            elif first_restore is not None and not in_startup:
                # A checkpoint, once restored, survives every later SIGKILL.
                self.fail(f"start {k} found no checkpoint after start {first_restore} had "
                          f"restored one (seed {SEED}):\n{log}")
        self.assertTrue(done.wait(120), "the input writer did not finish")
        self.assertGreater(restores, 0, f"no start ever restored a checkpoint (seed {SEED})")

        final, _, err = self.spawn("run", cfg)
        # Signals are handled once the daemon runs (before that SIGTERM kills it).
        self.assertTrue(wait_for(lambda: "running" in self.read(err), 30), self.read(err))

        def complete():
            try:
                with open(self.path("out.jsonl"), "rb") as f:
                    f.seek(0, os.SEEK_END)
                    size = f.tell()
                    f.seek(max(0, size - 4096))
                    tail = f.read().decode("utf-8", "replace").rstrip("\n").split("\n")[-1]
                return json.loads(tail) == expected[-1]
            except (OSError, ValueError):
                return False

        self.assertTrue(wait_for(complete, 120),
                        f"the output never reached the final counts (seed {SEED}):\n"
                        f"{self.read(err)[-3000:]}")
        final.send_signal(signal.SIGTERM)
        self.assertEqual(final.wait(60), 0, self.read(err)[-3000:])
        log = self.read(err)
        self.assertIn("final checkpoint written", log)
        self.assertIn("restoring checkpoint epoch", log)

        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.endswith("\n"), "the output ends with a partial line")
        got = [json.loads(line) for line in text.splitlines()]
        return expected, got


class AtLeastOnceTorture(TortureBase):
    exactly_once = False

    def test_sigkill_at_least_once(self):
        expected, got = self.run_torture()
        canon = lambda d: json.dumps(d, sort_keys=True)
        valid = {canon(d) for d in expected}
        wrong = [d for d in got if canon(d) not in valid]
        self.assertEqual(wrong[:5], [], f"tables no prefix of the input produces (lost or "
                                        f"recomputed state; seed {SEED})")
        seen = {canon(d) for d in got}
        missing = [i for i, d in enumerate(expected) if canon(d) not in seen]
        self.assertEqual(missing[:5], [], f"inputs not reflected in the output (seed {SEED})")
        self.assertEqual(got[-1], expected[-1])
        self.assertGreaterEqual(len(got), len(expected))


class ExactlyOnceTorture(TortureBase):
    exactly_once = True

    def test_sigkill_exactly_once(self):
        expected, got = self.run_torture()
        self.assertEqual(len(got), len(expected), f"seed {SEED}")
        for i, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                self.fail(f"line {i + 1}: got {g}, expected {e} (seed {SEED})")
        self.assertEqual(got[-1], expected[-1])


if __name__ == "__main__":
    unittest.main()
