"""Shared helpers of the to_files tests: what a reader of the output directory sees."""

import gzip
import json
import os

PART_SUFFIX = ".inprogress"


def published_files(root):
    """Every published (non-hidden) file under `root`, as paths relative to it, sorted."""
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            if not n.startswith("."):
                out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def in_progress_files(root):
    """Hidden in-progress part files left under `root`."""
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, _, names in os.walk(root) for n in names
                  if n.startswith(".") and n.endswith(PART_SUFFIX))


def read_lines(path):
    """The lines of a published file: a .gz must be one complete gzip stream (gzip raises
    EOFError on a truncated one), every line must end with a newline."""
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            data = f.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    text = data.decode("utf-8")
    if text and not text.endswith("\n"):
        raise AssertionError(f"{path} ends in a line without its newline: {text[-80:]!r}")
    return text.splitlines()


def read_json_lines(path):
    """read_lines, each line parsed as JSON (json raises on a half-written line)."""
    return [json.loads(line) for line in read_lines(path)]


def part_number(name):
    """N of NAME.PREFIX-TASK-RUN-N.EXT: files of one run in the order they were opened."""
    base = os.path.basename(name)
    for ext in (".gz", ".jsonl", ".txt"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    return int(base.rsplit("-", 1)[1])
