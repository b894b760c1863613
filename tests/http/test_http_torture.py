"""SIGKILL torture of to_http's at-least-once (labels integration and torture).

A real `sluiced run` of

    from_textfile (follow, a growing input of {"id": N} lines) -> json_parse
      -> to_http (checkpoints every 30 ms, idempotency keys) -> http_server.py

is killed with SIGKILL at random moments while a writer appends the input, and restarted
after every kill; some runs start with the server answering 500 and resetting a connection.
At the end every input id is in a body the server accepted (nothing lost), and every
idempotency key the server saw names one body only, across retries and restarts, so a
receiver that keeps the first body of each key still has every line.

SLUICE_TORTURE_KILLS (default 20) sets the number of kills; SLUICE_TORTURE_SEED the seed.
"""

import json
import os
import random
import signal
import time

from http_it import HttpTestCase, unittest
from sluice_it import checkpointed_head, followed_lines_source, wait_for

KILLS = int(os.environ.get("SLUICE_TORTURE_KILLS", "20"))
SEED = int(os.environ.get("SLUICE_TORTURE_SEED", str(int(time.time()))))
CHUNK = 10
CHUNK_PERIOD = 0.005  # about 2000 lines/s: the input grows through the whole kill loop


class HttpTortureTest(HttpTestCase):

    def pipeline(self):
        return f"""
{checkpointed_head("httptorture")}
{followed_lines_source()}
[operators.in]
type = "map"
inputs = ["lines"]
function = "json_parse"
{self.sink_toml(batch_max_events=50, batch_timeout_ms=10, concurrency=4,
                idempotency_key_header="Idempotency-Key", retry_initial_backoff_ms=5)}
"""

    def start_writer(self, n):
        return self.append_in_background([json.dumps({"id": j}) for j in range(n)], CHUNK,
                                         CHUNK_PERIOD)

    def test_every_line_arrives_at_least_once_and_keys_are_stable_across_kills(self):
        rng = random.Random(SEED)
        n = max(KILLS, 1) * 600
        cfg = self.write("p.toml", self.pipeline())
        done = self.start_writer(n)
        self.server.control(default={"status": 200, "delay": 0.002})
        restores = 0
        for k in range(KILLS):
            if k % 3 == 1:
                self.server.control(script=[{"status": 500}, {"reset": True},
                                            {"status": 429, "headers": {"Retry-After": "1"}}])
            proc, _, err = self.spawn("run", cfg)
            self.assertTrue(wait_for(lambda: "running" in self.read(err) or
                                     proc.poll() is not None, 30), self.read(err))
            if proc.poll() is not None:
                self.fail(f"sluiced exited by itself (code {proc.returncode}) before kill {k} "
                          f"(seed {SEED}):\n{self.read(err)[-3000:]}")
            time.sleep(rng.uniform(0.05, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if "restoring checkpoint epoch" in self.read(err):
                restores += 1
        self.assertGreaterEqual(restores, KILLS // 2, f"seed {SEED}")
        self.assertTrue(done.wait(120), "the input writer did not finish")

        final, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_for(lambda: "running" in self.read(err), 30), self.read(err))

        def ids():
            return {x["id"] for x in self.accepted_elements()}

        self.assertTrue(wait_for(lambda: len(ids()) == n, 120),
                        f"missing ids (seed {SEED}): {sorted(set(range(n)) - ids())[:20]}\n"
                        f"{self.read(err)[-3000:]}")
        final.send_signal(signal.SIGTERM)
        self.assertEqual(final.wait(60), 0, self.read(err)[-3000:])
        self.assertEqual(ids(), set(range(n)))

        bodies_by_key = {}
        for r in self.server.received():
            bodies_by_key.setdefault(r["headers"]["idempotency-key"], set()).add(r["body"])
        unstable = {k: len(b) for k, b in bodies_by_key.items() if len(b) > 1}
        self.assertEqual(unstable, {}, f"keys that named different bodies (seed {SEED})")
        accepted = self.accepted()
        first_by_key = {}
        for r in accepted:
            first_by_key.setdefault(r["headers"]["idempotency-key"], r["body"])
        # A receiver that keeps the first body of each key and drops the rest loses nothing.
        kept = {json.loads(line)["id"] for b in first_by_key.values() for line in b.splitlines()}
        self.assertEqual(kept, set(range(n)), f"seed {SEED}")
        copies = len(accepted) - len(first_by_key)
        elements = sum(len(r["body"].splitlines()) for r in accepted)
        print(f"\n{restores} restores; {len(accepted)} accepted requests, {copies} of them "
              f"copies a receiver drops by key; {elements} elements accepted for {n} lines "
              f"(seed {SEED})")


if __name__ == "__main__":
    unittest.main()
