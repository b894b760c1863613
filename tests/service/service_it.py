"""Helpers for the service tests: a NOTIFY_SOCKET the test owns, the admin endpoint's
port from sluiced's log, small HTTP calls (urllib), Prometheus text parsing."""

import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request

from sluice_it import wait_for

SERVICE_PLUGIN_DIR = os.environ.get("SLUICE_SERVICE_PLUGIN_DIR", "")


class NotifySocket:
    """An AF_UNIX datagram socket standing in for systemd's notify socket. Every datagram
    is recorded as (monotonic time, {KEY: VALUE}) in `messages`."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.1)
        self.messages = []
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._receive, daemon=True)
        self._thread.start()

    def _receive(self):
        while not self._stop:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            fields = {}
            for line in data.decode("utf-8", "replace").split("\n"):
                if "=" in line:
                    k, v = line.split("=", 1)
                    fields[k] = v
            with self._lock:
                self.messages.append((time.monotonic(), fields))

    def close(self):
        self._stop = True
        self._thread.join()
        self.sock.close()

    def snapshot(self):
        with self._lock:
            return list(self.messages)

    def with_key(self, key, value=None):
        return [(t, m) for t, m in self.snapshot() if key in m and (value is None or m[key] == value)]

    def wait(self, key, value=None, count=1, timeout=30):
        """Waits until `count` messages set `key` (to `value`); returns them."""
        got = wait_for(lambda: len(self.with_key(key, value)) >= count, timeout)
        if not got:
            raise AssertionError(f"no {count}x {key}={value or '*'} within {timeout} s; "
                                 f"got {[m for _, m in self.snapshot()]}")
        return self.with_key(key, value)

    def statuses(self):
        return [m["STATUS"] for _, m in self.snapshot() if "STATUS" in m]


def read_text(path):
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        return f.read()


def admin_url(stderr_path, timeout=30):
    """The admin endpoint's base URL, from the "admin endpoint listening on" log line."""
    pattern = re.compile(r"admin endpoint listening on (http://[^/\s]+)/")

    def find():
        m = pattern.search(read_text(stderr_path)) if os.path.exists(stderr_path) else None
        return m.group(1) if m else None

    url = wait_for(find, timeout)
    if not url:
        raise AssertionError(f"sluiced did not log its admin endpoint:\n{read_text(stderr_path)}")
    return url


def http(method, url, headers=None, data=None, timeout=10):
    """Returns (status, headers, body text); HTTP errors are answers, not exceptions."""
    req = urllib.request.Request(url, method=method, headers=headers or {},
                                 data=data if data is not None else (b"" if method == "POST" else None))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode("utf-8")


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')


def parse_prometheus(text):
    """{(name, frozenset(labels.items())): float} for every sample line."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise AssertionError(f"not a Prometheus sample line: {line!r}")
        labels = {}
        if m.group(2):
            for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)):
                labels[k] = v
        samples[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
    return samples


def sample(samples, name, **labels):
    want = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    if len(found) != 1:
        raise AssertionError(f"expected one sample {name}{labels}, found {len(found)}")
    return found[0]
