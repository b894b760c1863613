#!/usr/bin/python3
"""Benchmark 2 of issue 7: the four pipelines of operator_bench in Python streamz.

Each pipeline is built with streamz's own operators and fed with Stream.emit, one element
at a time (streamz's model), into a sink that keeps the last value. The inputs are the same
as operator_bench's: ints 0..n-1, and lines of 10 words from a 1,000-word vocabulary. The
word-count reducer is the idiomatic streamz one: it updates the dict in place.

Prints one JSON object: {pipeline: {"elements": N, "seconds": S, "rate": N/S, "result": R}}.
streamz is roughly 1,000x slower than the C++ engine, so it gets fewer elements (--n,
--lines); the figures compared are rates (elements per second).
"""
import argparse
import json
import random
import sys
import time

try:
    from streamz import Stream
except ImportError:  # the benchmark needs the Debian package python3-streamz
    print("streamz_bench: python3-streamz is not installed (scripts/setup.sh installs it)",
          file=sys.stderr)
    sys.exit(77)


def make_lines(count, words_per_line=10, vocabulary=1000):
    rng = random.Random(7)
    vocab = []
    for i in range(vocabulary):
        n = 3 + rng.randrange(6)
        vocab.append("".join(chr(ord("a") + rng.randrange(26)) for _ in range(n)) + str(i))
    return [" ".join(vocab[rng.randrange(vocabulary)] for _ in range(words_per_line))
            for _ in range(count)]


def run(build, inputs, elements):
    source = Stream()
    last = []
    build(source).sink(lambda x: last.__setitem__(slice(None), [x]))
    emit = source.emit
    start = time.perf_counter()
    for x in inputs:
        emit(x)
    seconds = time.perf_counter() - start
    return {"elements": elements, "seconds": seconds, "rate": elements / seconds,
            "result": last[0] if last else None}


def count_by(acc, word):
    acc[word] = acc.get(word, 0) + 1
    return acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000, help="ints per pipeline")
    ap.add_argument("--lines", type=int, default=20_000, help="lines for word count")
    args = ap.parse_args()

    def add1(x):
        return x + 1

    def gt1000(x):
        return x > 1000

    def plus(a, b):
        return a + b

    def chain3(s):
        return s.map(add1).filter(gt1000).accumulate(plus, start=0)

    def map10(s):
        for _ in range(10):
            s = s.map(add1)
        return s

    def window(s):
        return s.sliding_window(10).map(sum)

    def wordcount(s):
        return s.map(str.split).flatten().accumulate(count_by, start={})

    out = {}
    ints = range(args.n)
    out["chain3"] = run(chain3, ints, args.n)
    out["map10"] = run(map10, ints, args.n)
    out["window10_sum"] = run(window, ints, args.n)
    lines = make_lines(args.lines)
    wc = run(wordcount, lines, args.lines * 10)
    wc["result"] = len(wc["result"])
    out["wordcount"] = wc
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
