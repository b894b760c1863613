#!/usr/bin/python3
"""Benchmark 7 (issue 14), the streamz side: keyed event-time windows in Python streamz.

streamz 0.6.4 has no event-time windows (its `timed_window` is processing time, unkeyed;
`partition(n, key=...)` is a keyed COUNT window). So the pipeline compared with sluice's
`event_time -> window` is what a streamz user writes instead:

    source.accumulate(step, returns_state=True, start=None).flatten().sink(...)

where `step` is the same event-time windowing as sluice's and as window_bench's
hand-written C++ loop, written in plain Python (dicts and a heap): the watermark is the min
over the partitions seen of their largest event time, minus max_out_of_orderness_ms; a
window [start, end) fires when the watermark reaches `end`, as one dict
{key, start, end, value} (the count); at the end of input every open window fires. Each
event is a tuple (key, event time in ms, partition), fed with Stream.emit one at a time
(streamz's model). For reference, one built-in keyed window as well: `partition(10,
key=...)` -> map(len), the count window of streamz closest to a per-key tumbling window
(10 events per key and window, the tumbling run's average; no event time, so it is not the
same result; it gets fewer events, --partition-n, as it is much slower).

The events are window_bench.cc's, from the same generator (splitmix64), so results are
comparable: --n events (the first n of the same stream when n is smaller), --keys keys,
1 % of them moved back in time by up to 500 ms (never late: max_out_of_orderness_ms is
500). Prints one JSON object: {pipeline: {"elements", "seconds", "rate", "windows", "sum"}},
rates per CPU second (time.process_time, as window_bench's CPU time).
"""
import argparse
import heapq
import json
import sys
import time

try:
    from streamz import Stream
except ImportError:  # the benchmark needs the Debian package python3-streamz
    print("streamz_window_bench: python3-streamz is not installed (scripts/setup.sh installs it)",
          file=sys.stderr)
    sys.exit(77)

MASK = (1 << 64) - 1
T0_MS = 1_700_000_000_000
PER_MS = 10            # events per millisecond of event time
MAX_DELAY_MS = 500     # how far back an out-of-order event is moved (1..500 ms)
OUT_OF_ORDERNESS_MS = 500
PARTITIONS = 8
TUMBLING_MS = 10_000
HOP_SIZE_MS, HOP_SLIDE_MS = 10_000, 1_000
SESSION_GAP_MS = 2_000


def events(n, keys):
    """window_bench.cc's make_events: (key, event time ms, partition) per event."""
    s = 0
    out = []
    names = [f"user{k}" for k in range(keys)]
    for i in range(n):
        s = (s + 0x9E3779B97F4A7C15) & MASK
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        r1 = z ^ (z >> 31)
        s = (s + 0x9E3779B97F4A7C15) & MASK
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        r2 = z ^ (z >> 31)
        k = r1 % keys
        ts = T0_MS + i // PER_MS
        if r2 % 100 == 0:
            ts -= 1 + (r2 >> 32) % MAX_DELAY_MS
        out.append((names[k], ts, k % PARTITIONS))
    return out


class Watermark:
    """min over the partitions seen of their largest event time, minus the bound."""

    def __init__(self):
        self.max_by_partition = {}
        self.value = float("-inf")

    def observe(self, ts, partition):
        m = self.max_by_partition
        if ts > m.get(partition, float("-inf")):
            m[partition] = ts
            w = min(m.values()) - OUT_OF_ORDERNESS_MS
            if w > self.value:
                self.value = w
        return self.value


def sliding_step(size, slide):
    """Tumbling (slide == size) and hopping windows, counted per key."""
    counts = {}   # (key, start) -> count
    ends = []     # heap of (end, key, start), one entry per open window
    wm = Watermark()

    def step(_state, ev):
        key, ts, partition = ev
        w = wm.observe(ts, partition)
        start = ts - ts % slide
        while start > ts - size:
            if start + size > w:  # not closed (never false here: nothing is late)
                k = (key, start)
                c = counts.get(k)
                if c is None:
                    counts[k] = 1
                    heapq.heappush(ends, (start + size, key, start))
                else:
                    counts[k] = c + 1
            start -= slide
        out = []
        while ends and ends[0][0] <= w:
            end, k, start = heapq.heappop(ends)
            out.append({"key": k, "start": start, "end": end, "value": counts.pop((k, start))})
        return None, out

    def flush():
        out = []
        while ends:
            end, k, start = heapq.heappop(ends)
            out.append({"key": k, "start": start, "end": end, "value": counts.pop((k, start))})
        return out
    return step, flush


def session_step(gap):
    """Session windows per key: [first, last + gap), merged when an event bridges two."""
    sessions = {}  # key -> list of [start, end, count], disjoint
    ends = []      # heap of (end, key); stale entries (merged or extended) are skipped
    wm = Watermark()

    def step(_state, ev):
        key, ts, partition = ev
        w = wm.observe(ts, partition)
        start, end, count = ts, ts + gap, 1
        mine = sessions.get(key)
        if mine is None:
            mine = sessions[key] = []
        keep = []
        for s in mine:
            if s[0] <= end and start <= s[1]:  # overlaps or touches [ts, ts + gap): merge
                start, end, count = min(start, s[0]), max(end, s[1]), count + s[2]
            else:
                keep.append(s)
        keep.append([start, end, count])
        sessions[key] = keep
        heapq.heappush(ends, (end, key))
        out = []
        while ends and ends[0][0] <= w:
            e, k = heapq.heappop(ends)
            ss = sessions.get(k, ())
            for s in ss:
                if s[1] == e:
                    out.append({"key": k, "start": s[0], "end": s[1], "value": s[2]})
                    ss.remove(s)
                    break
        return None, out

    def flush():
        out = []
        for k, ss in sessions.items():
            for s in ss:
                out.append({"key": k, "start": s[0], "end": s[1], "value": s[2]})
        sessions.clear()
        return out
    return step, flush


def result(n, t0, c0, totals):
    """The rate is per CPU second (as window_bench's, Google Benchmark's CPU time): on a
    shared machine wall time would charge streamz for the other processes' load."""
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return {"elements": n, "seconds": cpu, "wall_seconds": wall, "rate": n / cpu,
            "windows": totals[0], "sum": totals[1]}


def run(make, evs):
    step, flush = make()
    source = Stream()
    totals = [0, 0]  # windows, sum of their counts

    def sink(w):
        totals[0] += 1
        totals[1] += w["value"]
    source.accumulate(step, returns_state=True, start=None).flatten().sink(sink)
    emit = source.emit
    t0, c0 = time.perf_counter(), time.process_time()
    for ev in evs:
        emit(ev)
    for w in flush():  # end of input: every open window fires
        sink(w)
    return result(len(evs), t0, c0, totals)


def run_partition(evs):
    source = Stream()
    totals = [0, 0]

    def sink(n):
        totals[0] += 1
        totals[1] += n
    source.partition(10, key=lambda ev: ev[0]).map(len).sink(sink)
    emit = source.emit
    t0, c0 = time.perf_counter(), time.process_time()
    for ev in evs:
        emit(ev)
    return result(len(evs), t0, c0, totals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000, help="events per pipeline")
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--partition-n", type=int, default=20_000,
                    help="events for partition(10, key=...), which is much slower")
    args = ap.parse_args()
    evs = events(args.n, args.keys)
    out = {
        "tumbling": run(lambda: sliding_step(TUMBLING_MS, TUMBLING_MS), evs),
        "hopping": run(lambda: sliding_step(HOP_SIZE_MS, HOP_SLIDE_MS), evs),
        "session": run(lambda: session_step(SESSION_GAP_MS), evs),
        "partition10_by_key": run_partition(evs[:args.partition_n]),
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
