"""A real mosquitto broker for the tests: /usr/sbin/mosquitto with a generated config
(a listener on a free loopback port, persistence in a temporary directory, unlimited
in-flight and queued messages as docs/CONNECTORS.md asks of a broker for from_mqtt), and
the Debian mosquitto_pub / mosquitto_sub as the independent client."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

MOSQUITTO = "/usr/sbin/mosquitto"
PUB = shutil.which("mosquitto_pub") or "/usr/bin/mosquitto_pub"
SUB = shutil.which("mosquitto_sub") or "/usr/bin/mosquitto_sub"
PASSWD = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
# Lines one mosquitto_pub -l may publish (see Broker.publish).
PUB_LINES_MAX = 50_000


def have_broker():
    return os.access(MOSQUITTO, os.X_OK) and os.access(PUB, os.X_OK) and os.access(SUB, os.X_OK)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class Broker:
    """One mosquitto process; stop() and start() again keep port and persistence (a restart)."""

    def __init__(self, users=None, tls=False):
        self.dir = tempfile.mkdtemp(prefix="sluice-mqtt-")
        self.port = free_port()
        # With `tls`: a second listener that requires client certificates (make_certs).
        self.tls_port = free_port() if tls else None
        self.users = users or {}
        self.proc = None
        self.log_path = os.path.join(self.dir, "mosquitto.log")

    def config(self):
        lines = [
            f"listener {self.port} 127.0.0.1",
            "persistence true",
            f"persistence_location {self.dir}/",
            "autosave_interval 1",
            "max_inflight_messages 0",
            "max_queued_messages 0",
            "log_type error",
            "log_type warning",
            "log_type notice",
        ]
        if self.tls_port:
            self.make_certs()
            lines += [f"listener {self.tls_port} 127.0.0.1", f"cafile {self.cert('ca.crt')}",
                      f"certfile {self.cert('server.crt')}",
                      f"keyfile {self.cert('server.key')}", "require_certificate true"]
        if os.geteuid() == 0:
            # Else mosquitto drops to the `mosquitto` user, which cannot write the temp dir.
            lines.append("user root")
        if self.users:
            pw = os.path.join(self.dir, "passwd")
            open(pw, "w").close()
            for user, password in self.users.items():
                subprocess.run([PASSWD, "-b", pw, user, password], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            os.chmod(pw, 0o600)
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        path = os.path.join(self.dir, "mosquitto.conf")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def cert(self, name):
        return os.path.join(self.dir, "certs", name)

    def make_certs(self):
        """A throwaway CA, a server certificate for localhost / 127.0.0.1 and a client
        certificate, all signed by the CA (openssl)."""
        if os.path.exists(self.cert("client.crt")):
            return
        os.makedirs(os.path.join(self.dir, "certs"), exist_ok=True)

        def ssl(*args):
            subprocess.run(["openssl", *args], check=True, cwd=os.path.join(self.dir, "certs"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.crt", "-days", "2", "-subj", "/CN=sluice-test-ca")
        with open(self.cert("san.ext"), "w", encoding="ascii") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for name, cn in (("server", "localhost"), ("client", "sluice-client")):
            ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                f"{name}.csr", "-subj", f"/CN={cn}")
            ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", "san.ext")

    def start(self):
        conf = self.config()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([MOSQUITTO, "-c", conf], stdout=log, stderr=log)
        log.close()
        if not wait_until(self._accepts, 10):
            raise RuntimeError("mosquitto did not start:\n" + self.log())
        return self

    def _accepts(self):
        if self.proc.poll() is not None:
            raise RuntimeError("mosquitto exited:\n" + self.log())
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stop(self):
        """SIGTERM: mosquitto writes its persistence file and exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        self.proc = None

    def destroy(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def auth(self, user=None, password=None):
        return ["-u", user, "-P", password] if user else []

    def publish(self, topic, messages, qos=1, auth=(), retain=False):
        """Publishes each of `messages` (strings without newlines) to `topic` with one
        mosquitto_pub process (-l: a message per stdin line)."""
        args = [PUB, "-h", "127.0.0.1", "-p", str(self.port), "-q", str(qos), "-t", topic, "-l"]
        if retain:
            args.append("-r")
        # One process per 50,000 lines: mosquitto_pub 2.0.11 -l disconnects when the PUBACK of
        # the last line's message id arrives, and ids wrap at 65535.
        for i in range(0, len(messages), PUB_LINES_MAX):
            data = "".join(m + "\n" for m in messages[i:i + PUB_LINES_MAX]).encode()
            subprocess.run(args + list(auth), input=data, check=True, timeout=120)

    def subscribe(self, topic, count, client_id, qos=1, timeout=60, auth=(), new=True):
        """A mosquitto_sub with a persistent session (`client_id`) that exits after `count`
        messages or `timeout` seconds; returns the Popen (stdout: "topic payload" lines).
        With `new`, the session and its subscription exist when this returns (a first
        mosquitto_sub -E made them), so nothing published afterwards can be missed; without,
        the session exists already (an -E run would take its queued messages)."""
        base = [SUB, "-h", "127.0.0.1", "-p", str(self.port), "-q", str(qos), "-t", topic,
                "-i", client_id, "-c"] + list(auth)
        if new:
            subprocess.run(base + ["-E"], check=True, timeout=30)
        return subprocess.Popen(base + ["-v", "-C", str(count), "-W", str(timeout)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
