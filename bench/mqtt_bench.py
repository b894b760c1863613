#!/usr/bin/python3
"""from_mqtt / to_mqtt against mosquitto_pub / mosquitto_sub moving the same messages
through the same broker (issue 17).

    /usr/bin/python3 bench/mqtt_bench.py --build-dir DIR [--quick | --smoke] [--json F]

Starts a throwaway mosquitto (tests/mqtt/mqtt_broker.py: a loopback port, persistence in a
temporary directory, unlimited in-flight and queued messages) and moves the same N messages
of about 100 bytes at QoS 1, three times each, timing from the first publish until the last
message is where it goes:

  in:     broker -> file. Baseline: mosquitto_sub -C N > file; sluiced: from_mqtt ->
          sink_to_textfile, no checkpoints (acknowledged after each poll), and again with
          [checkpoint] every second (in+ckpt: acknowledged at each checkpoint). The
          messages come from one mosquitto_pub -l, started once the consumer subscribed.
  out:    file -> broker. Baseline: mosquitto_pub -l < file; sluiced: from_textfile ->
          to_mqtt. A mosquitto_sub -C N (persistent session, subscribed first) receives.
  relay:  broker -> broker. Baseline: mosquitto_sub -t A | mosquitto_pub -l -t B; sluiced:
          from_mqtt (A) -> to_mqtt (B). mosquitto_pub feeds A, mosquitto_sub -C N reads B.

Figures: messages/s (median of 3) and sluiced's ratio to the baseline of the same direction
measured in the same run (1.0 = as fast as the mosquitto clients), so the noise of a shared
machine cancels out. Every run checks that all N messages arrived.
bench/bench.py calls mqtt_bench(build, mode, tmp); run alone, this file does the same.
"""
import itertools
import shlex
import os
import signal
import statistics
import subprocess
import sys
import time

from bench_support import Skip, log, run  # beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mqtt"))

SIZES = {"full": 100_000, "quick": 20_000, "smoke": 1_000}
REPEAT = {"full": 3, "quick": 3, "smoke": 1}
_ids = itertools.count(1)


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out: {what}")
        time.sleep(0.005)


def mqtt_bench(build, mode, tmp):
    from mqtt_broker import PUB, PUB_LINES_MAX, SUB, Broker, have_broker  # tests/mqtt
    if not have_broker():
        raise Skip("mosquitto, mosquitto_pub or mosquitto_sub is missing")
    sluiced = os.path.join(build, "host", "sluiced")
    plugins = os.path.join(build, "plugins-out")
    if not os.path.exists(sluiced) or not any("mqtt" in f for f in os.listdir(plugins)):
        raise Skip(f"{sluiced} or the mqtt plugin is not built")
    n, repeat = SIZES[mode], REPEAT[mode]
    messages = os.path.join(tmp, "messages.txt")
    lines = [f'{{"id": {i}, "name": "name-{i}", "pad": "{"x" * 60}"}}\n' for i in range(n)]
    with open(messages, "w") as f:
        f.writelines(lines)
    # mosquitto_pub 2.0.11 -l stops at the PUBACK of its last line's message id, and ids
    # wrap at 65535: the baseline publishes in parts of PUB_LINES_MAX lines, one after another.
    parts = []
    for i in range(0, n, PUB_LINES_MAX):
        parts.append(os.path.join(tmp, f"part{len(parts)}.txt"))
        with open(parts[-1], "w") as f:
            f.writelines(lines[i:i + PUB_LINES_MAX])
    broker = Broker().start()
    env = dict(os.environ, SLUICE_PLUGIN_PATH="")
    addr = ["-h", "127.0.0.1", "-p", str(broker.port), "-q", "1"]

    def publish(topic, stdin=None):
        """mosquitto_pub -l of every message (part after part), or of `stdin` (one pipe)."""
        if stdin is not None:
            return subprocess.Popen([PUB, *addr, "-t", topic, "-l"], stdin=stdin)
        cmd = " && ".join(f"{shlex.join([PUB, *addr, '-t', topic, '-l'])} < {shlex.quote(p)}"
                          for p in parts)
        return subprocess.Popen(["/bin/sh", "-c", cmd])

    def subscriber(topic, out_path=None):
        """A persistent-session mosquitto_sub, subscribed when this returns."""
        cid = f"bsub{next(_ids)}"
        base = [SUB, *addr, "-t", topic, "-i", cid, "-c"]
        subprocess.run(base + ["-E"], check=True, timeout=30)
        out = open(out_path or os.devnull, "wb")
        proc = subprocess.Popen(base + ["-C", str(n)], stdout=out)
        out.close()
        return proc

    def sluice(text, name):
        cfg = os.path.join(tmp, f"{name}.toml")
        with open(cfg, "w") as f:
            f.write(text)
        err = open(os.path.join(tmp, f"{name}.stderr"), "w")
        proc = subprocess.Popen([sluiced, "run", cfg, "--plugin-dir", plugins], env=env,
                                stderr=err, stdout=subprocess.DEVNULL)
        err.close()
        return proc, os.path.join(tmp, f"{name}.stderr")

    def source(topic, run_id):
        return (f'[sources.in]\ntype = "from_mqtt"\nport = {broker.port}\n'
                f'topics = ["{topic}"]\nqos = 1\nclient_id = "bench-in-{run_id}"\n')

    def sink(topic, inputs, run_id):
        return (f'[sinks.out]\ntype = "to_mqtt"\ninputs = ["{inputs}"]\nport = {broker.port}\n'
                f'topic = "{topic}"\nqos = 1\nclient_id = "bench-out-{run_id}"\n')

    def subscribed(err_path):
        def check():
            with open(err_path) as f:
                return "subscribed to" in f.read()
        return check

    def stop(proc):
        proc.send_signal(signal.SIGTERM)
        if proc.wait(60) != 0:
            raise RuntimeError(f"sluiced exited {proc.returncode}")

    def run_in(kind):
        k = next(_ids)
        topic, out = f"in{k}", os.path.join(tmp, f"in{k}.out")
        if kind == "baseline":
            consumer = subscriber(topic, out)
            t0 = time.monotonic()
            pub = publish(topic)
            consumer.wait(600)
        else:
            ck = (f'[checkpoint]\ninterval_ms = 1000\ndir = "{tmp}/ck{k}"\n'
                  if kind == "ckpt" else "")
            proc, err = sluice(f'name = "in{k}"\n{ck}' + source(topic, k) +
                               f'[sinks.file]\ntype = "sink_to_textfile"\ninputs = ["in"]\n'
                               f'path = "{out}"\nformat = "text"\n', f"in{k}")
            wait(subscribed(err), 30, "from_mqtt subscribed")
            t0 = time.monotonic()
            pub = publish(topic)
            wait(lambda: count_lines(out) >= n, 600, f"{n} lines in {out}")
        elapsed = time.monotonic() - t0
        pub.wait(60)
        if kind != "baseline":
            stop(proc)
        if count_lines(out) < n:
            raise RuntimeError(f"in/{kind}: {count_lines(out)} of {n} messages arrived")
        return elapsed

    def run_out(kind):
        k = next(_ids)
        topic = f"out{k}"
        consumer = subscriber(topic)
        t0 = time.monotonic()
        if kind == "baseline":
            producer = publish(topic)
        else:
            producer, _ = sluice(f'name = "out{k}"\n[sources.lines]\ntype = "from_textfile"\n'
                                 f'path = "{messages}"\n' + sink(topic, "lines", k), f"out{k}")
        if consumer.wait(600) != 0:
            raise RuntimeError(f"out/{kind}: the subscriber did not get {n} messages")
        elapsed = time.monotonic() - t0
        if producer.wait(60) != 0:
            raise RuntimeError(f"out/{kind}: the producer exited {producer.returncode}")
        return elapsed

    def run_relay(kind):
        k = next(_ids)
        a, b = f"ra{k}", f"rb{k}"
        consumer = subscriber(b)
        if kind == "baseline":
            cid = f"brelay{k}"
            relay_in = [SUB, *addr, "-t", a, "-i", cid, "-c"]
            subprocess.run(relay_in + ["-E"], check=True, timeout=30)
            sub = subprocess.Popen(relay_in + ["-C", str(n)], stdout=subprocess.PIPE)
            relay = publish(b, stdin=sub.stdout)
            sub.stdout.close()
        else:
            relay, err = sluice(f'name = "relay{k}"\n' + source(a, k) + sink(b, "in", k),
                                f"relay{k}")
            wait(subscribed(err), 30, "from_mqtt subscribed")
        t0 = time.monotonic()
        pub = publish(a)
        if consumer.wait(600) != 0:
            raise RuntimeError(f"relay/{kind}: the subscriber did not get {n} messages")
        elapsed = time.monotonic() - t0
        pub.wait(60)
        if kind == "baseline":
            relay.wait(60)
            sub.wait(60)
        else:
            stop(relay)
        return elapsed

    variants = {
        ("in", "baseline"): lambda: run_in("baseline"),
        ("in", "sluiced"): lambda: run_in("plain"),
        ("in", "sluiced+ckpt"): lambda: run_in("ckpt"),
        ("out", "baseline"): lambda: run_out("baseline"),
        ("out", "sluiced"): lambda: run_out("sluiced"),
        ("relay", "baseline"): lambda: run_relay("baseline"),
        ("relay", "sluiced"): lambda: run_relay("sluiced"),
    }
    times = {k: [] for k in variants}
    try:
        for _ in range(repeat):
            for key, fn in variants.items():
                times[key].append(fn())
    finally:
        broker.destroy()
    out = {"messages": n}
    log(f"\nMQTT at QoS 1, {n} messages of ~100 bytes, median of {repeat}; ratio = the "
        f"mosquitto clients' time / sluiced's time in the same direction (1.0 = as fast)")
    for (direction, who), ts in times.items():
        med = statistics.median(ts)
        base = statistics.median(times[(direction, "baseline")])
        out[f"{direction}/{who}"] = {"seconds": med, "messages_per_s": n / med,
                                     "ratio_to_clients": base / med}
        log(f"  {direction:5s} {who:13s} {n / med:10,.0f} msg/s  {med:7.3f} s  "
            f"ratio {base / med:5.2f}")
    return out


if __name__ == "__main__":
    run(__doc__, "mqtt", mqtt_bench)
