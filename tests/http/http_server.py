"""A real HTTP/1.1 server for the to_http tests (Python standard library, threaded), run as
its own process: `python3 http_server.py RECORD_FILE` prints "PORT <n>" once it listens on
127.0.0.1.

Every request to any path but /_control and /_stats is recorded as one JSON line in
RECORD_FILE ({"method", "path", "headers", "body", "answer", "t"}), appended and flushed
before the answer is sent, so a test reads what the server got even after killing it.

How it answers is set over POST /_control with a JSON object:
  {"default": ANSWER}              the answer to every request from now on
  {"script": [ANSWER, ...]}        answers for the next requests, in order, then the default
  {"reject_containing": "text"}    a body that contains the text gets 400 (before the rest)
An ANSWER is {"status": 200, "headers": {...}, "body": "..."}, or {"hang": SECONDS} (sleep,
then 200), {"delay": SECONDS} (the same, named for a slow server), or {"reset": true}
(close the connection with an RST, no answer).
GET /_stats: {"requests", "in_flight", "max_in_flight"}.
"""

import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, record_path):
        self.lock = threading.Lock()
        self.record = open(record_path, "a", encoding="utf-8")
        self.default = {"status": 200}
        self.script = []
        self.reject_containing = None
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0

    def next_answer(self, body):
        with self.lock:
            self.requests += 1
            if self.reject_containing is not None and self.reject_containing in body:
                return {"status": 400, "body": "rejected: contains " + self.reject_containing}
            if self.script:
                return self.script.pop(0)
            return self.default

    def write(self, entry):
        with self.lock:
            self.record.write(json.dumps(entry) + "\n")
            self.record.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None  # set in main

    def log_message(self, *args):
        pass

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_stats":
            s = self.state
            with s.lock:
                self.send_json(200, {"requests": s.requests, "in_flight": s.in_flight,
                                     "max_in_flight": s.max_in_flight})
            return
        self.send_json(404, {})

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n).decode("utf-8", "replace")

    def control(self):
        cmd = json.loads(self.body())
        s = self.state
        with s.lock:
            if "default" in cmd:
                s.default = cmd["default"]
            if "script" in cmd:
                s.script = list(cmd["script"])
            if "reject_containing" in cmd:
                s.reject_containing = cmd["reject_containing"]
        self.send_json(200, {"ok": True})

    def handle_data(self):
        s = self.state
        with s.lock:
            s.in_flight += 1
            s.max_in_flight = max(s.max_in_flight, s.in_flight)
        try:
            body = self.body()
            answer = s.next_answer(body)
            s.write({"method": self.command, "path": self.path,
                     "headers": {k.lower(): v for k, v in self.headers.items()},
                     "body": body, "answer": answer, "t": time.time()})
            if answer.get("reset"):
                # SO_LINGER 0: close() sends an RST instead of a FIN.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
                return
            wait = answer.get("hang", answer.get("delay", 0))
            if wait:
                time.sleep(wait)
            data = answer.get("body", "").encode()
            self.send_response(answer.get("status", 200))
            for k, v in answer.get("headers", {}).items():
                self.send_header(k, str(v))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        finally:
            with s.lock:
                s.in_flight -= 1

    def do_POST(self):
        if self.path == "/_control":
            self.control()
        else:
            self.handle_data()

    def do_PUT(self):
        self.handle_data()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client killed mid-request (the tests' SIGKILLs) is expected, not news.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main():
    Handler.state = State(sys.argv[1])
    server = Server(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
