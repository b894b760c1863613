"""`sluiced run` with the network sources of the net plugin, on the loopback only:
from_tcp (several concurrent clients, partial messages, back-pressure reaching the client
through TCP flow control, limits) and from_http_server (bodies, status codes, keep-alive,
pipelining, 100-continue, 503 under back-pressure). Each pipeline writes what the source
emitted with sink_to_textfile; the test reads the file after a SIGTERM."""

import http.client
import os
import re
import signal
import socket
import threading
import time
import unittest

from sluice_it import EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, SluiceTestCase, toml_str, wait_for

LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


def pipeline(source_toml, out_path, middle="", feed="src", fmt="text"):
    return f"""\
{source_toml}
{middle}
[sinks.out]
type = "sink_to_textfile"
inputs = ["{feed}"]
format = "{fmt}"
path = {toml_str(out_path)}
"""


# A downstream that holds the source back: one element through per interval, and
# back-pressure as soon as one waits.
SLOW = """\
[operators.slow]
type = "rate_limit"
inputs = ["src"]
interval_ms = {interval}
max_queued = 1
"""


class NetCase(SluiceTestCase):
    def start(self, cfg_text):
        """Runs the pipeline in the background; returns (proc, port, stderr path)."""
        cfg = self.write("net.toml", cfg_text)
        proc, _, err_path = self.spawn("run", cfg)

        def port():
            m = LISTENING.search(self.read(err_path))
            return int(m.group(1)) if m else None

        got = wait_for(lambda: port() or proc.poll() is not None, 20)
        self.assertTrue(got and port(), "no 'listening on' line:\n" + self.read(err_path))
        return proc, port(), err_path

    def stop(self, proc, err_path):
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - report a hang as a failure with the log
            proc.kill()
            self.fail("sluiced did not stop after SIGTERM:\n" + self.read(err_path))
        self.assertEqual(proc.returncode, EXIT_OK, self.read(err_path))
        return self.read(err_path)

    def lines_of(self, path):
        # Split at "\n" only: messages may hold a "\r".
        if not os.path.exists(path):
            return []
        with open(path, "rb") as f:  # binary: text mode would turn "\r" into "\n"
            text = f.read().decode("utf-8")
        return text.split("\n")[:-1]

    def wait_lines(self, path, n, timeout=60):
        return wait_for(lambda: len(self.lines_of(path)) >= n, timeout)


class FromTcpTest(NetCase):
    def tcp(self, out, middle="", feed="src", fmt="text", **keys):
        extra = "".join(f"{k} = {v if isinstance(v, int) else toml_str(v)}\n"
                        for k, v in keys.items())
        return pipeline(f'[sources.src]\ntype = "from_tcp"\nport = 0\n{extra}', out, middle,
                        feed, fmt)

    def test_every_message_of_concurrent_clients_arrives(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.tcp(out))
        clients, per_client = 3, 10000
        errors = []

        def client(k):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                    data = "".join(f"client{k}-{i}\n" for i in range(per_client)).encode()
                    # Uneven pieces, so messages straddle reads.
                    for at in range(0, len(data), 7919):
                        s.sendall(data[at:at + 7919])
            except OSError as e:
                errors.append(e)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.wait_lines(out, clients * per_client)
        self.stop(proc, err)
        lines = self.lines_of(out)
        self.assertEqual(len(lines), clients * per_client)
        for k in range(clients):
            mine = [line for line in lines if line.startswith(f"client{k}-")]
            # Every message, once, in the order its client sent it.
            self.assertEqual(mine, [f"client{k}-{i}" for i in range(per_client)])

    def test_partial_last_message_and_a_two_byte_delimiter(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.tcp(out, delimiter="\r\n"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            for piece in [b"one\r", b"\ntw", b"o\r\nthree\rstill three\r", b"\nlast"]:
                s.sendall(piece)
                time.sleep(0.05)
            s.shutdown(socket.SHUT_WR)  # clean end: "last" has no delimiter but counts
            s.recv(1)
        self.wait_lines(out, 4, timeout=10)
        self.stop(proc, err)
        self.assertEqual(self.lines_of(out), ["one", "two", "three\rstill three", "last"])

    def test_invalid_utf8_is_dropped_as_text_and_kept_as_bytes(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.tcp(out))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"good\n\xff\xfe\nalso good \xc3\xa9\n")
        self.wait_lines(out, 2, timeout=10)
        stderr = self.stop(proc, err)
        self.assertEqual(self.read(out), "good\nalso good \u00e9\n")
        self.assertIn("not valid UTF-8", stderr)

        out2 = self.path("out2.txt")
        proc, port, err = self.start(self.tcp(out2, fmt="json", format="bytes"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"\xff\xfe\n")
        self.wait_lines(out2, 1, timeout=10)
        self.stop(proc, err)
        self.assertEqual(self.read(out2), '"//4="\n')  # bytes are written as base64

    def test_a_message_longer_than_max_line_bytes_closes_only_its_connection(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.tcp(out, max_line_bytes=10))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"short\n" + b"x" * 100 + b"\nnever\n")
            self.assertEqual(s.recv(10), b"", "the server closes the connection")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"next\n")
        self.wait_lines(out, 2, timeout=10)
        stderr = self.stop(proc, err)
        self.assertEqual(self.lines_of(out), ["short", "next"])
        self.assertIn("longer than max_line_bytes (10)", stderr)

    def test_max_connections_holds_further_clients_in_the_backlog(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.tcp(out, max_connections=1))
        a = socket.create_connection(("127.0.0.1", port), timeout=10)
        a.sendall(b"a1\n")
        self.wait_lines(out, 1, timeout=10)
        b = socket.create_connection(("127.0.0.1", port), timeout=10)  # backlog accepts it
        b.sendall(b"b1\n")
        time.sleep(0.5)
        self.assertEqual(self.lines_of(out), ["a1"], "b is not served while a is connected")
        a.close()
        self.wait_lines(out, 2, timeout=10)
        b.close()
        self.stop(proc, err)
        self.assertEqual(self.lines_of(out), ["a1", "b1"])

    def test_back_pressure_reaches_the_client(self):
        # Downstream lets 10 elements a second through: the source must stop reading, so
        # the client's sends block once the kernel buffers are full, instead of sluiced
        # reading 64 MiB into memory.
        out = self.path("out.txt")
        proc, port, err = self.start(self.tcp(out, middle=SLOW.format(interval=100), feed="slow",
                                              max_buffered_bytes=65536))
        total = 64 * 1024 * 1024
        line = b"y" * 99 + b"\n"
        sent = 0
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.settimeout(3)
        try:
            block = line * 1000
            while sent < total:
                sent += s.send(block)
        except socket.timeout:
            pass
        rss_kib = 0
        with open(f"/proc/{proc.pid}/status", encoding="ascii") as f:
            for row in f:
                if row.startswith("VmRSS:"):
                    rss_kib = int(row.split()[1])
        s.close()
        self.stop(proc, err)
        self.assertLess(sent, total // 2, "the client could send (almost) everything: "
                                          "the source kept reading under back-pressure")
        self.assertLess(rss_kib, 48 * 1024, "sluiced buffered what the client sent")

    def test_a_taken_port_fails_the_run_naming_the_address(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            out = self.path("out.txt")
            cfg = self.write("net.toml", self.tcp(out).replace("port = 0", f"port = {port}"))
            r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("cannot listen on 127.0.0.1", r)

    def test_bad_values_fail_validate_naming_the_key(self):
        # Refused by `sluiced validate` (constraints and the node type's validate callback),
        # with the key's position: a config that validates never fails at create.
        out = self.path("out.txt")
        for key, value, needle in [("address", "localhost", "numeric IPv4 or IPv6"),
                                   ("delimiter", "", "must not be empty"),
                                   ("max_connections", 0, "at least 1"),
                                   ("format", "utf16", 'must be one of "text", "bytes"'),
                                   ("port", 70000, "must be 0..65535")]:
            text = self.tcp(out, **{key: value})
            if key == "port":
                text = text.replace("port = 0\n", "")
            r = self.sluiced("validate", self.write("bad.toml", text))
            self.assertExit(r, EXIT_INVALID)
            self.assertRegex(r.stderr, rf"bad\.toml:\d+:\d+: error: node 'src': key '{key}': ")
            self.assertInStderr(needle, r)


class FromHttpServerTest(NetCase):
    def server(self, out, middle="", feed="src", fmt="text", **keys):
        extra = "".join(f"{k} = {v if isinstance(v, int) else toml_str(v)}\n"
                        for k, v in keys.items())
        return pipeline(f'[sources.src]\ntype = "from_http_server"\nport = 0\n{extra}', out,
                        middle, feed, fmt)

    def test_bodies_become_elements_over_keep_alive(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.server(out, path="/ingest"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        statuses = []
        for i in range(20):
            conn.request("POST" if i % 2 else "PUT", f"/ingest?n={i}",
                         body=f"body {i} \u00e9".encode())
            r = conn.getresponse()
            r.read()
            statuses.append(r.status)
        conn.close()
        self.stop(proc, err)
        self.assertEqual(statuses, [200] * 20)
        self.assertEqual(self.lines_of(out), [f"body {i} \u00e9" for i in range(20)])

    def test_json_bodies(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.server(out, fmt="json", format="json"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/", body='{"a": [1, 2.5, null]}')
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 200)
        conn.request("POST", "/", body="{not json")
        r = conn.getresponse()
        self.assertEqual(r.status, 400)
        self.assertIn(b"not valid JSON", r.read())
        conn.close()
        self.stop(proc, err)
        self.assertEqual(self.read(out), '{"a":[1,2.5,null]}\n')

    def test_wrong_path_method_and_size_are_refused(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.server(out, path="/in", max_body_bytes=10))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/other", body="x")
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 404)
        conn.request("GET", "/in")  # the same connection: errors keep it alive
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 405)
        self.assertEqual(r.getheader("Allow"), "POST, PUT")
        conn.request("POST", "/in", body="ten bytes!")  # exactly the limit
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 200)
        conn.request("POST", "/in", body=b"\xff\xfe")
        r = conn.getresponse()
        self.assertEqual(r.status, 400)
        self.assertIn(b"not valid UTF-8", r.read())
        conn.request("POST", "/in", body="eleven byte")
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 413)
        self.assertEqual(r.getheader("Connection"), "close")
        conn.close()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 400 "))
        self.stop(proc, err)
        self.assertEqual(self.lines_of(out), ["ten bytes!"])

    def test_pipelined_requests_and_100_continue(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.server(out))
        req = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {n}\r\n\r\n{b}"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall("".join(req.format(n=len(b), b=b) for b in ["p1", "p2", "p3"]).encode())
            got = b""
            while got.count(b"HTTP/1.1 200 OK") < 3:
                chunk = s.recv(4096)
                self.assertTrue(chunk, f"connection closed early; got {got!r}")
                got += chunk
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      b"Content-Length: 4\r\n\r\n")
            self.assertEqual(s.recv(100), b"HTTP/1.1 100 Continue\r\n\r\n")
            s.sendall(b"cont")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200 OK"))
        self.stop(proc, err)
        self.assertEqual(self.lines_of(out), ["p1", "p2", "p3", "cont"])

    def test_503_while_the_pipeline_applies_back_pressure(self):
        out = self.path("out.txt")
        proc, port, err = self.start(self.server(out, middle=SLOW.format(interval=400),
                                                 feed="slow", max_pending=2))
        results = {}

        def client(i):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("POST", "/", body=f"req{i}")
                r = conn.getresponse()
                r.read()
                results[i] = (r.status, r.getheader("Retry-After"))
            except (OSError, http.client.HTTPException) as e:
                results[i] = (repr(e), None)
            finally:
                conn.close()

        # A first wave fills the pipeline; the second finds it busy.
        threads = []
        for i in range(12):
            t = threading.Thread(target=client, args=(i,))
            t.start()
            threads.append(t)
            time.sleep(0.02)
        for t in threads:
            t.join(60)
        accepted = sorted(f"req{i}" for i, (status, _) in results.items() if status == 200)
        busy = [i for i, (status, _) in results.items() if status == 503]
        self.assertEqual(len(results), 12)
        self.assertEqual(len(accepted) + len(busy), 12, results)
        self.assertTrue(busy, f"nobody got 503: {results}")
        self.assertTrue(all(results[i][1] == "1" for i in busy), results)
        # At most: one through, one queued in rate_limit (plus one batch), max_pending waiting.
        self.assertGreaterEqual(len(accepted), 1)
        self.wait_lines(out, len(accepted), timeout=30)
        self.stop(proc, err)
        # Exactly the bodies answered 200, each once.
        self.assertEqual(sorted(self.lines_of(out)), accepted)


if __name__ == "__main__":
    unittest.main()
