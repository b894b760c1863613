#!/usr/bin/python3
"""Writes the seed corpus of checkpoint_decode_fuzz (corpus/checkpoint_decode/): checkpoint
files in the format of host/src/checkpoint/format.hpp, built here independently of the C++
encoder. The first byte of each seed selects the target's mode (0: a whole file, 1: a payload
the target wraps in a valid header, 2: one value). Run it again after a format change."""
import pathlib
import struct


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def enc(v):
    """Tags of format.cc: null 0, false 1, true 2, int 3, float 4, string 5, bytes 6,
    array 7, object 8 (keys in order)."""
    if v is None:
        return b"\x00"
    if v is False:
        return b"\x01"
    if v is True:
        return b"\x02"
    if isinstance(v, int):
        return b"\x03" + struct.pack("<q", v)
    if isinstance(v, float):
        return b"\x04" + struct.pack("<d", v)
    if isinstance(v, str):
        b = v.encode("utf-8", "surrogateescape")
        return b"\x05" + varint(len(b)) + b
    if isinstance(v, bytes):
        return b"\x06" + varint(len(v)) + v
    if isinstance(v, list):
        return b"\x07" + varint(len(v)) + b"".join(enc(x) for x in v)
    if isinstance(v, dict):
        out = b"\x08" + varint(len(v))
        for k, x in v.items():
            kb = k.encode()
            out += varint(len(kb)) + kb + enc(x)
        return out
    raise TypeError(v)


def checkpoint(epoch, tasks, pipeline="fuzz"):
    return {"epoch": epoch, "time_ns": 1700000000000000000, "pipeline": pipeline,
            "tasks": [{"finished": f, "nodes": [{"id": i, "type": t, "role": r, "state": s}
                                                 for i, t, r, s in nodes]}
                      for f, nodes in tasks]}


def file_of(payload):
    return b"SLUICECK" + struct.pack("<IIQ", 1, crc32c(payload), len(payload)) + payload


STATES = {
    "empty": checkpoint(1, []),
    "counts": checkpoint(7, [(False, [
        ("numbers", "from_iterable", 1, {"offset": 4}),
        ("counts", "accumulate", 2, {"acc": {"a": 3, "b": 1, "\u00e9": 2}}),
        ("out", "sink_to_textfile", 3, {"durable_bytes": 120}),
    ])]),
    "two_tasks": checkpoint(42, [
        (True, []),
        (False, [("w", "sliding_window", 2, [1, 2.5, "x", b"\x00\xff", None, True, False])]),
    ]),
    "kafka": checkpoint(3, [(False, [
        ("in", "from_kafka", 1, {"topic": "t", "partitions": [[0, 17], [1, -1001]]}),
        ("buf", "buffer", 2, {"queue": [{"key": b"k", "value": "v", "time": -1}]}),
    ])]),
}

corpus = pathlib.Path(__file__).resolve().parent / "corpus" / "checkpoint_decode"
corpus.mkdir(parents=True, exist_ok=True)
for name, state in STATES.items():
    payload = enc(state)
    (corpus / f"file_{name}").write_bytes(b"\x00" + file_of(payload))
    (corpus / f"payload_{name}").write_bytes(b"\x01" + payload)
(corpus / "value_nested").write_bytes(b"\x02" + enc([[[[{"a": [[[]]]}]]]]))
(corpus / "value_scalars").write_bytes(
    b"\x02" + enc([0, -1, 2**63 - 1, -2**63, 0.0, -0.0, float("inf"), float("nan"), "", b""]))
(corpus / "file_truncated").write_bytes(b"\x00" + file_of(enc(STATES["counts"]))[:-5])
