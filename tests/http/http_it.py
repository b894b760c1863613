"""Shared base of the to_http tests: a real HTTP server process per test (http_server.py,
Python standard library), sluiced as a real process (tests/integration/sluice_it.py)."""

import json
import os
import subprocess
import sys
import unittest
import urllib.request

from sluice_it import SluiceTestCase

HERE = os.path.dirname(os.path.abspath(__file__))


class HttpServer:
    """http_server.py in its own process, recording into `record_path`."""

    def __init__(self, record_path):
        self.record_path = record_path
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "http_server.py"),
                                      record_path], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError(f"http_server.py did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def control(self, **cmd):
        req = urllib.request.Request(self.url + "/_control", data=json.dumps(cmd).encode(),
                                     method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def stats(self):
        with urllib.request.urlopen(self.url + "/_stats", timeout=10) as r:
            return json.loads(r.read())

    def received(self):
        """Every recorded request, in arrival order."""
        if not os.path.exists(self.record_path):
            return []
        with open(self.record_path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


class HttpTestCase(SluiceTestCase):

    def setUp(self):
        super().setUp()
        self.server = HttpServer(self.path("received.jsonl"))
        self.addCleanup(self.server.stop)

    def accepted(self):
        """The requests the server answered with 2xx (not those it reset or let hang: the
        tests' hangs outlast the client's timeout)."""
        return [r for r in self.server.received()
                if not r["answer"].get("reset") and "hang" not in r["answer"]
                and 200 <= r["answer"].get("status", 200) < 300]

    def accepted_elements(self):
        """The elements of every accepted NDJSON body, in arrival order."""
        return [json.loads(line) for r in self.accepted() for line in r["body"].splitlines()]

    def sink_toml(self, input_id="in", path="/ingest", **keys):
        text = (f'[sinks.out]\ntype = "to_http"\ninputs = [{json.dumps(input_id)}]\n'
                f'url = {json.dumps(self.server.url + path)}\n')
        for k, v in keys.items():
            text += f"{k} = {v if isinstance(v, str) and v.startswith('{') else json.dumps(v)}\n"
        return text


def iterable(items, node="in"):
    return (f'[sources.{node}]\ntype = "from_iterable"\n'
            f"json = {json.dumps([json.dumps(x) for x in items])}\n")


__all__ = ["HttpServer", "HttpTestCase", "iterable", "unittest"]
