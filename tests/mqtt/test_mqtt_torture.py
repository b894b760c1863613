"""SIGKILL torture of from_mqtt's at-least-once (labels integration and torture).

A real `sluiced run` of

    from_mqtt (QoS 1, persistent session) -> sink_to_textfile (checkpoints every 30 ms)

(the file sink with flush = "finish": lines wait in its 64 KiB buffer inside sluiced until a
checkpoint writes and fsyncs them, so a SIGKILL loses what no checkpoint covers, as a
machine crash would lose unsynced writes)

is killed with SIGKILL again and again while mosquitto_pub publishes numbered messages at
QoS 1, and restarted after every kill. A message is acknowledged to the broker only after
the checkpoint that covers it (the file fsynced up to it) is stored, so whatever a kill
interrupts is delivered again to the same session. At the end every published number must
be in the output file (duplicates are allowed: at-least-once; their count is printed).

A second test kills

    from_textfile (follow, a growing input of numbers) -> to_mqtt (QoS 1, checkpoints every
    30 ms)

the same way, every third kill while the broker is stopped (the sink holds elements it cannot
publish, and checkpoints come due): a checkpoint is stored only once the broker acknowledged
every publish before it, so after the kills a persistent mosquitto_sub session must have
received every number.

SLUICE_TORTURE_KILLS (default 15) sets the number of kills; SLUICE_TORTURE_SEED the seed.
"""

import os
import random
import signal
import subprocess
import threading
import time

from mqtt_broker import PUB
from mqtt_it import MqttTestCase, unittest, wait_until
from sluice_it import checkpointed_head, followed_lines_source

KILLS = int(os.environ.get("SLUICE_TORTURE_KILLS", "15"))
SEED = int(os.environ.get("SLUICE_TORTURE_SEED", str(int(time.time()))))
TOTAL = 6000


class MqttTortureTest(MqttTestCase):

    def test_sigkill_loop_loses_no_qos1_message(self):
        rng = random.Random(SEED)
        topic = f"torture{os.getpid()}"
        cfg = self.write("p.toml", f"""
{checkpointed_head("mqtttorture")}
{self.source_toml([topic], qos=1)}
{self.file_sink()}append = true
flush = "finish"
""")
        # The first run makes the persistent session (and its subscription) before anything
        # is published.
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_until(lambda: "subscribed to" in self.read(err), 30), self.read(err))

        done = threading.Event()

        def publisher():
            args = [PUB, "-h", "127.0.0.1", "-p", str(self.broker.port), "-q", "1", "-t", topic,
                    "-l"]
            pub = subprocess.Popen(args, stdin=subprocess.PIPE)
            for i in range(TOTAL):
                pub.stdin.write(f"{i}\n".encode())
                if i % 20 == 19:
                    pub.stdin.flush()
                    time.sleep(0.004)
            pub.stdin.close()
            pub.wait(60)
            done.set()

        t = threading.Thread(target=publisher, daemon=True)
        t.start()
        self.addCleanup(t.join)
        restores = 0
        for k in range(KILLS):
            time.sleep(rng.uniform(0.05, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc, _, err = self.spawn("run", cfg)
            self.assertTrue(wait_until(lambda: "running" in self.read(err)
                                       or proc.poll() is not None, 30), self.read(err))
            self.assertIsNone(proc.poll(), f"sluiced exited by itself (seed {SEED}):\n"
                                           f"{self.read(err)[-3000:]}")
            if "restoring checkpoint epoch" in self.read(err):
                restores += 1
        self.assertTrue(done.wait(120), "the publisher did not finish")

        def seen():
            return {x for x in self.lines() if isinstance(x, str)}

        expected = {str(i) for i in range(TOTAL)}
        complete = wait_until(lambda: expected <= seen(), 60)
        missing = sorted(expected - seen(), key=int)
        self.assertTrue(complete, f"{len(missing)} messages lost, e.g. {missing[:20]} "
                                  f"(seed {SEED})\n{self.read(err)[-3000:]}")
        lines = [x for x in self.lines() if isinstance(x, str)]
        print(f"\n{KILLS} kills, {restores} restores; {len(lines)} lines for {TOTAL} messages "
              f"({len(lines) - len(set(lines))} duplicates; seed {SEED})")
        self.assertGreaterEqual(restores, KILLS // 2, f"seed {SEED}")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))

    def test_sigkill_loop_publishes_every_element(self):
        rng = random.Random(SEED + 1)
        topic = f"torture-out{os.getpid()}"
        sub_id = f"torture-sub{os.getpid()}"
        first = self.broker.subscribe(topic, 1, sub_id)  # the persistent session, subscribed
        first.kill()
        first.wait()
        first.stdout.close()
        first.stderr.close()
        cfg = self.write("p.toml", f"""
{checkpointed_head("mqtttortureout")}
{followed_lines_source()}
{self.sink_toml(inputs=("lines",), topic=topic, qos=1)}
""")
        done = self.append_in_background([str(j) for j in range(TOTAL)], 20, 0.004)
        restores = 0
        proc = err = None
        for k in range(KILLS + 1):
            proc, _, err = self.spawn("run", cfg)
            self.assertTrue(wait_until(lambda: "running" in self.read(err)
                                       or proc.poll() is not None, 30), self.read(err))
            self.assertIsNone(proc.poll(), f"sluiced exited by itself (seed {SEED}):\n"
                                           f"{self.read(err)[-3000:]}")
            if "restoring checkpoint epoch" in self.read(err):
                restores += 1
            if k == KILLS:
                break
            time.sleep(rng.uniform(0.05, 0.4))
            broker_down = k % 3 == 2
            if broker_down:
                # Elements wait in the sink while checkpoints come due: a kill then must
                # not lose them (no checkpoint may count them before the broker has them).
                self.broker.stop()
                time.sleep(rng.uniform(0.1, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if broker_down:
                self.broker.start()
        self.assertTrue(done.wait(120), "the writer did not finish")
        # The last run publishes the rest; a subscriber with the session collects it all.
        sub = self.broker.subscribe(topic, 10 * TOTAL, sub_id, timeout=15, new=False)
        out, _ = sub.communicate(timeout=60)
        got = [line.split(" ", 1)[1] for line in out.decode().splitlines()]
        missing = sorted({str(i) for i in range(TOTAL)} - set(got), key=int)
        self.assertFalse(missing, f"{len(missing)} elements never published, e.g. "
                                  f"{missing[:20]} (seed {SEED})\n{self.read(err)[-3000:]}")
        print(f"\n{KILLS} kills, {restores} restores; {len(got)} messages for {TOTAL} elements "
              f"({len(got) - len(set(got))} duplicates; seed {SEED})")
        self.assertGreaterEqual(restores, KILLS // 2, f"seed {SEED}")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


if __name__ == "__main__":
    unittest.main()
