"""Hostile HTTP clients against both of sluiced's HTTP servers, the admin endpoint ([admin])
and the from_http_server source, on the loopback only (issue 18, items 1 to 5).

Each attack runs against a real daemon: a chunked request with a trailer field over 64 KiB
(it used to abort the daemon), an endless chunk extension and endless trailer fields (they
used to be buffered whole: the test sends up to 128 MB and reads the daemon's VmRSS),
obs-fold and a missing Host, idle and slow connections (slowloris), too many connections,
descriptor exhaustion (EMFILE: sluiced runs under a low RLIMIT_NOFILE and its CPU time is
read from /proc), the Host check against DNS rebinding, and the token required beyond the
loopback. After each attack the daemon must still answer."""

import http.client
import json
import os
import re
import resource
import signal
import socket
import subprocess
import time
import unittest

from sluice_it import EXIT_INVALID, EXIT_OK, SLUICED, SluiceTestCase, line_col, toml_str, wait_for

LISTENING = re.compile(r"from_http_server: listening on 127\.0\.0\.1:(\d+)")
ADMIN = re.compile(r"admin endpoint listening on http://127\.0\.0\.1:(\d+)/")
CLK_TCK = os.sysconf("SC_CLK_TCK")

FLOOD_LIMIT = 128 * 1024 * 1024  # bytes an endless-request attack may send at most
RSS_SLACK_KIB = 8 * 1024  # growth of the daemon's VmRSS allowed during one attack


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def status_of(response):
    """The status code of a raw HTTP response, or None."""
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", response)
    return int(m.group(1)) if m else None


def closed_by_server(sock, timeout=10):
    """True once the server closed `sock` (end of input or a reset)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(10) == b""
    except ConnectionResetError:
        return True


def exchange(port, data, timeout=10):
    """Sends `data` on a new connection and reads until the server closes; returns the
    bytes read."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
        return got


def flood(port, head, filler, limit=FLOOD_LIMIT):
    """Sends `head`, then `filler` again and again until the server stops reading (the send
    fails or blocks for 5 s) or `limit` bytes went out. Returns the bytes sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            s.sendall(head)
            sent += len(head)
            while sent < limit:
                s.sendall(filler)
                sent += len(filler)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
    return sent


CHUNKED = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
           b"Content-Type: text/plain\r\n\r\n")


class HostileMixin:
    """The attacks both servers must survive. A subclass provides start() -> (proc, port,
    stderr path) and assert_serves(port)."""

    def listening(self, proc, err, pattern):
        """Waits for the log line `pattern` (group 1: the port); stops the daemon at cleanup
        and checks it exits 0. Returns (proc, port, err)."""

        def port():
            m = pattern.search(self.read(err))
            return int(m.group(1)) if m else None

        self.assertTrue(wait_for(lambda: port() or proc.poll() is not None, 20), self.read(err))
        self.assertIsNotNone(port(), self.read(err))
        self.addCleanup(self.stop, proc, err)
        return proc, port(), err

    def stop(self, proc, err):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        self.assertEqual(proc.returncode, EXIT_OK, self.read(err))

    def test_trailer_field_over_64_kib_is_refused_and_the_daemon_lives(self):
        proc, port, err = self.start()
        request = CHUNKED + b"1\r\na\r\n0\r\nX-Big: " + b"v" * (70 * 1024) + b"\r\n\r\n"
        answer = exchange(port, request)
        self.assertIn(status_of(answer), (400, 431), answer[:200])
        self.assertIsNone(proc.poll(), self.read(err))
        self.assert_serves(port)

    def assert_flood_is_bounded(self, prefix, filler, what):
        """Sends `prefix` then `filler` over and over: the server must stop reading, stay up
        with VmRSS within RSS_SLACK_KIB, and go on serving."""
        proc, port, err = self.start()
        before = rss_kib(proc.pid)
        sent = flood(port, prefix, filler)
        self.assertIsNone(proc.poll(), self.read(err))
        grown = rss_kib(proc.pid) - before
        self.assertLess(sent, FLOOD_LIMIT, f"the server read {what}")
        self.assertLess(grown, RSS_SLACK_KIB, f"VmRSS grew by {grown} KiB ({sent} bytes sent)")
        self.assert_serves(port)

    def test_endless_chunk_extension_is_bounded(self):
        self.assert_flood_is_bounded(CHUNKED + b"5;ext=", b"e" * 65536,
                                     "the whole endless chunk extension")

    def test_endless_trailer_fields_are_bounded(self):
        self.assert_flood_is_bounded(CHUNKED + b"1\r\na\r\n0\r\n", b"X-Trailer: value\r\n" * 4096,
                                     "endless trailer fields")

    def test_small_trailers_and_extensions_still_work(self):
        _, port, _ = self.start()
        request = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n2;name=value\r\nab\r\n0\r\nX-Sum: 1\r\n\r\n")
        # from_http_server takes the body (200); the admin endpoint has no POST / (405).
        self.assertIn(status_of(exchange(port, request)), (200, 405))

    def test_obs_fold_and_a_missing_host_get_400(self):
        _, port, _ = self.start()
        folded = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n"
        self.assertEqual(status_of(exchange(port, folded)), 400)
        no_host = b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
        self.assertEqual(status_of(exchange(port, no_host)), 400)
        two_hosts = b"POST / HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n"
        self.assertEqual(status_of(exchange(port, two_hosts)), 400)
        self.assert_serves(port)

    def test_a_header_over_16_kib_gets_431(self):
        _, port, _ = self.start()
        big = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"h" * (20 * 1024) + b"\r\n\r\n"
        self.assertEqual(status_of(exchange(port, big)), 431)
        self.assert_serves(port)


class HttpSourceTest(HostileMixin, SluiceTestCase):
    """from_http_server."""

    def start(self, **keys):
        extra = "".join(f"{k} = {v}\n" for k, v in keys.items())
        cfg = self.write("src.toml", f"""
[sources.src]
type = "from_http_server"
port = 0
{extra}
[sinks.out]
type = "sink_to_textfile"
inputs = ["src"]
path = {toml_str(self.path("out.txt"))}
""")
        proc, _, err = self.spawn("run", cfg)
        return self.listening(proc, err, LISTENING)

    def post(self, port, body, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("POST", "/", body=body)
            r = conn.getresponse()
            r.read()
            return r.status
        finally:
            conn.close()

    def assert_serves(self, port):
        self.assertEqual(self.post(port, b"still here"), 200)

    def test_idle_connections_make_room_for_a_real_client(self):
        # The slowloris of the issue: max_connections clients that never send a byte.
        _, port, err = self.start(max_connections=8)
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
        try:
            time.sleep(0.3)  # let the source accept them all
            self.assertEqual(self.post(port, b"through", timeout=10), 200, self.read(err))
            # The connection idle the longest was closed to admit it.
            self.assertTrue(closed_by_server(idle[0]))
        finally:
            for s in idle:
                s.close()

    def test_slow_headers_are_closed_after_header_timeout_ms(self):
        _, port, err = self.start(max_connections=4, header_timeout_ms=500)
        slow = []
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the rest never comes
            slow.append(s)
        try:
            # Busy (a request in progress), so nobody is evicted: the new client waits in the
            # backlog until the slow ones time out.
            self.assertEqual(self.post(port, b"after the timeout", timeout=20), 200)
            for s in slow:
                self.assertTrue(closed_by_server(s))
            self.assertIn("header_timeout_ms", self.read(err))
        finally:
            for s in slow:
                s.close()

    def test_idle_keep_alive_connections_are_closed_after_idle_timeout_ms(self):
        _, port, _ = self.start(idle_timeout_ms=300)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/", body=b"one")
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 200)
        self.assertTrue(closed_by_server(conn.sock))  # closed by the server once idle
        conn.close()

    def test_bad_timeouts_are_validate_errors(self):
        cfg = self.write("bad.toml", """
[sources.src]
type = "from_http_server"
port = 0
header_timeout_ms = 0
[sinks.out]
type = "print"
inputs = ["src"]
""")
        r = self.sluiced("validate", cfg)
        self.assertEqual(r.returncode, EXIT_INVALID, r.stderr)
        self.assertInStderr("bad.toml:5:21: error: node 'src': key 'header_timeout_ms': must be at least 1", r)


PIPELINE = """
[admin]
port = 0
{admin}
[sources.ticks]
type = "from_periodic"
interval_ms = 50
[sinks.out]
type = "sink_to_textfile"
inputs = ["ticks"]
path = {out}
"""


class AdminTest(HostileMixin, SluiceTestCase):
    """The admin endpoint."""

    def config(self, admin=""):
        return self.write("admin.toml", PIPELINE.format(admin=admin,
                                                        out=toml_str(self.path("out.txt"))))

    def start(self, admin="", nofile=None):
        cfg = self.config(admin)
        if nofile is None:
            proc, _, err = self.spawn("run", cfg)
        else:
            # spawn() with a descriptor limit: the EMFILE test.
            err = self.path("limited.stderr")
            with open(err, "wb") as e:
                proc = subprocess.Popen(
                    [SLUICED, "run", cfg], env=self.env(), cwd=self.tmp, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=e,
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
            self._procs.append(proc)
        return self.listening(proc, err, ADMIN)

    def get(self, port, path, headers=None, method="GET", timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request(method, path, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read().decode()
        finally:
            conn.close()

    def assert_serves(self, port):
        self.assertEqual(self.get(port, "/healthz"), (200, "ok\n"))

    def test_host_header_is_checked_on_the_loopback(self):
        _, port, _ = self.start()
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "LOCALHOST",
                     f"[::1]:{port}", "127.0.0.1"):
            self.assertEqual(self.get(port, "/graph", {"Host": host})[0], 200, host)
        # A DNS-rebinding page: its name resolves to 127.0.0.1, its Host header stays its own.
        for host in (f"evil.example:{port}", "evil.example", "127.0.0.1.evil.example",
                     f"localhost.evil:{port}", "127.0.0.1:x", "[::1"):
            self.assertEqual(self.get(port, "/graph", {"Host": host})[0], 421, host)
        status, _ = self.get(port, "/sources/ticks/pause", method="POST",
                             headers={"Host": f"evil.example:{port}",
                                      "Origin": f"http://evil.example:{port}"})
        self.assertEqual(status, 421)
        nodes = {n["id"]: n for n in json.loads(self.get(port, "/stats")[1])["nodes"]}
        self.assertFalse(nodes["ticks"]["paused"])
        # HTTP/1.0 may omit Host; the endpoint still wants it.
        answer = exchange(port, b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertEqual(status_of(answer), 400, answer)

    def test_connections_are_capped_and_idle_ones_make_room(self):
        proc, port, _ = self.start()
        self.assert_serves(port)
        base = open_fds(proc.pid)
        idle = []
        try:
            for _ in range(200):
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            time.sleep(0.5)
            self.assertLessEqual(open_fds(proc.pid), base + 64 + 2)
            self.assert_serves(port)
        finally:
            for s in idle:
                s.close()

    def test_busy_connections_at_the_cap_get_503(self):
        proc, port, _ = self.start()
        self.assert_serves(port)
        busy = []
        try:
            for _ in range(64):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(b"GET /healthz HTTP/1.1\r\n")  # a request begun, never finished
                busy.append(s)
            time.sleep(0.5)
            answer = exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertEqual(status_of(answer), 503, answer)
        finally:
            for s in busy:
                s.close()
        self.assertTrue(wait_for(lambda: self.get(port, "/healthz")[0] == 200, 10))

    def test_descriptor_exhaustion_does_not_spin(self):
        # sluiced with few descriptors; clients take the rest until accept fails with EMFILE.
        probe, probe_port, _ = self.start()
        needed = open_fds(probe.pid)
        probe.send_signal(signal.SIGTERM)
        probe.wait(30)
        proc, port, err = self.start(nofile=needed + 12)  # a margin for start-up
        clients = []
        try:
            for _ in range(60):
                clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            self.assertTrue(wait_for(lambda: "Too many open files" in self.read(err), 10),
                            self.read(err))
            cpu_before = cpu_seconds(proc.pid)
            time.sleep(3)
            spent = cpu_seconds(proc.pid) - cpu_before
            self.assertLess(spent, 1.0, f"{spent:.2f} s of CPU in 3 s while out of descriptors")
            self.assertIsNone(proc.poll(), self.read(err))
            # Logged once per period, not once per try.
            self.assertEqual(self.read(err).count("accept failed"), 1, self.read(err))
        finally:
            for s in clients:
                s.close()
        self.assertTrue(wait_for(lambda: self.get(port, "/healthz")[0] == 200, 10),
                        self.read(err))

    def test_non_loopback_address_needs_a_token(self):
        cfg = self.config('address = "0.0.0.0"')
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(self.read(cfg), '"0.0.0.0"')
        self.assertInStderr(f"admin.toml:{line}:{col}: error: key 'admin.address': '0.0.0.0' is "
                            "not a loopback address: set admin.token", r)
        self.assertExit(self.sluiced("validate", self.config('address = "0.0.0.0"\n'
                                                              'token = "t0ken"')), EXIT_OK)
        self.assertExit(self.sluiced("validate", self.config('address = "::1"')), EXIT_OK)


if __name__ == "__main__":
    unittest.main()
