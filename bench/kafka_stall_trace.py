#!/usr/bin/python3
"""Where Kafka passthrough time goes: the output's progress over time, and its stalls.

    /usr/bin/python3 bench/kafka_stall_trace.py --build-dir DIR [--messages N] [--reps R]
        [--variant NAME=CONSUMER_KEY=VALUE ...] [--sides raw,raw_payload,sluice]

A diagnostic beside benchmark 3 (bench.py's kafka_bench, same broker, same preloaded
64-partition topic, same client settings): runs the raw librdkafka loop and sluiced in
turns, samples the output topic's high watermarks every 20 ms, and prints each run's rate
and every stall (an interval of 100 ms or more in which the output did not grow) as
(start s, length s, messages out by then). A --variant adds a run of both with one extra
consumer setting (raw: -X, sluiced: from_kafka's `config`), to test a hypothesis about the
fetcher, e.g. --variant q16=queued.max.messages.kbytes=16384. --sides picks the runs:
raw (the baseline: key, payload, headers and timestamp forwarded, as sluiced does), raw_payload
(kafka_raw_loop --payload-only: key and payload only), sluice.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the broker wrapper and the pipeline config of benchmark 3)


def stalls_of(trace, n, min_s=0.1):
    """[(start s, length s, output count)] of the intervals where the count stood still,
    from the first output on (start-up is not a stall)."""
    out, still_since = [], None
    for (t0, m0), (t1, m1) in zip(trace, trace[1:]):
        if m1 == m0 and 0 < m1 < n:
            still_since = t0 if still_since is None else still_since
            continue
        if still_since is not None and t0 - still_since >= min_s:
            out.append((round(still_since, 2), round(t0 - still_since, 2), m0))
        still_since = None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", default=os.environ.get("SLUICE_BUILD_DIR", "build"))
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=KEY=VALUE: also run both sides with consumer setting KEY=VALUE")
    ap.add_argument("--sides", default="raw,sluice",
                    help="comma-separated: raw, raw_payload (--payload-only), sluice")
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    raw = os.path.join(build, "bench", "kafka_raw_loop")
    sluiced = os.path.join(build, "host", "sluiced")
    env = dict(os.environ, SLUICE_PLUGIN_PATH=os.path.join(build, "plugins-out"))
    extra = {"": None}
    for v in args.variant:
        name, key, value = v.split("=", 2)
        extra[name] = (key, value)
    sides = args.sides.split(",")
    if not sides or any(s not in ("raw", "raw_payload", "sluice") for s in sides):
        ap.error("--sides takes raw, raw_payload and sluice")
    runs = [(side, name) for name in extra for side in sides]
    broker = bench.Broker(os.path.join(build, "tests", "kafka", "sluice_test_broker"),
                          [("in", 64)] + [(f"out-{s}{n}", 64) for s, n in runs])
    n = args.messages
    try:
        b = broker.bootstrap
        bench.run_json([raw, "produce", "--brokers", b, "--topic", "in", "--count", str(n)], 600)
        with tempfile.TemporaryDirectory(prefix="sluice-kafka-trace-") as tmp:
            for rep in range(args.reps):
                for side, name in runs:
                    out = f"out-{side}{name}"
                    setting = extra[name]
                    if side.startswith("raw"):
                        cmd = [raw, "loop", "--brokers", b, "--in", "in", "--out", out,
                               "--stop-at-end"]
                        if side == "raw_payload":
                            cmd.append("--payload-only")
                        if setting:
                            cmd += ["-X", f"{setting[0]}={setting[1]}"]
                    else:
                        cfg = bench.sluice_kafka_config(b, "in", out, None, True)
                        if setting:
                            value = setting[1] if setting[1].isdigit() else f'"{setting[1]}"'
                            cfg = cfg.replace('"fetch.wait.max.ms" = 10 }',
                                              f'"fetch.wait.max.ms" = 10, "{setting[0]}" = '
                                              f'{value} }}')
                        path = os.path.join(tmp, f"{side}{name}-{rep}.toml")
                        with open(path, "w") as f:
                            f.write(cfg)
                        cmd = [sluiced, "run", path]
                    before = broker.high_watermark_total(out)
                    start = time.monotonic()
                    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
                    trace = []
                    while True:
                        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                        if pid == proc.pid:
                            break
                        trace.append((time.monotonic() - start,
                                      broker.high_watermark_total(out) - before))
                        time.sleep(0.02)
                    end = time.monotonic() - start
                    cpu_us = (usage.ru_utime + usage.ru_stime) / n * 1e6
                    moved = broker.high_watermark_total(out) - before
                    first = next((t for t, m in trace if m > 0), 0.0)
                    label = side + (f"+{name}" if name else "")
                    print(f"{label:16} exit {os.waitstatus_to_exitcode(status)} out {moved} rate "
                          f"{n / max(end - first, 1e-9):,.0f}/s cpu {cpu_us:.2f} us/msg stalls "
                          f"(start s, length s, out): {stalls_of(trace, n)}", flush=True)
    finally:
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
