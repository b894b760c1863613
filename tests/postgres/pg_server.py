"""A throwaway PostgreSQL server for the to_postgres tests: the Debian package's binaries
(postgresql-15, scripts/setup.sh installs it), `initdb` into a temporary directory and
`pg_ctl` on a free loopback port, no Unix socket outside that directory.

initdb and postgres refuse to run as root, and CI runs as root: then every server command
runs as the `postgres` user the package creates (runuser), in a directory that user owns.
As any other user they run as that user.

psql (the client the tests check the table with) connects over TCP as the superuser
`postgres` with trust authentication: the server listens on 127.0.0.1 only.
"""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time


def _bin_dir():
    hits = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not hits:
        raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql "
                           "(scripts/setup.sh installs the postgresql package)")
    return os.path.dirname(hits[-1])


BIN = _bin_dir()
PSQL = shutil.which("psql") or os.path.join(BIN, "psql")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One server. `settings` are extra `-c name=value` options (max_prepared_transactions
    is 20 unless given)."""

    def __init__(self, settings=None):
        self.settings = {"max_prepared_transactions": "20", "fsync": "off",
                         "synchronous_commit": "off", "full_page_writes": "off"}
        # fsync off: the tests kill sluiced, never the server; the server's own durability
        # is not what they check, and the shared CI machine is spared the I/O.
        self.settings.update(settings or {})
        self.port = free_port()
        self.root = tempfile.mkdtemp(prefix="sluice-pg-")
        self.data = os.path.join(self.root, "data")
        self.log = os.path.join(self.root, "server.log")
        self.as_root = os.geteuid() == 0
        if self.as_root:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o755)

    def _run(self, *argv, check=True, timeout=120):
        cmd = list(argv)
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, check=check, cwd=self.root)

    def start(self):
        if not os.path.isdir(self.data):
            self._run(os.path.join(BIN, "initdb"), "-D", self.data, "-U", "postgres",
                      "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
        opts = [f"-p {self.port}", "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.root}"]
        opts += [f"-c {k}={v}" for k, v in self.settings.items()]
        self._run(os.path.join(BIN, "pg_ctl"), "-D", self.data, "-l", self.log, "-w",
                  "-t", "60", "-o", " ".join(opts), "start")
        return self

    def stop(self, mode="fast"):
        self._run(os.path.join(BIN, "pg_ctl"), "-D", self.data, "-m", mode, "-w", "stop",
                  check=False)

    def destroy(self):
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def conninfo(self, dbname="postgres"):
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user=postgres"

    def psql(self, sql, dbname="postgres", check=True):
        """Runs `sql`; returns its rows as lists of strings (unaligned, tab-separated)."""
        cp = subprocess.run([PSQL, "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                             "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                             "-d", dbname, "-c", sql],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                            check=False, env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
        if check and cp.returncode != 0:
            raise AssertionError(f"psql failed ({cp.returncode}): {sql}\n"
                                 f"{cp.stderr.decode(errors='replace')}")
        out = cp.stdout.decode("utf-8", errors="replace")
        return [line.split("\t") for line in out.splitlines() if line != ""]

    def server_log(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def wait_until(predicate, timeout, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class PsqlSession:
    """One psql process on one connection, for queries in a tight loop (a new psql per
    query costs ~10 ms; here a query is well under one)."""

    def __init__(self, server, dbname="postgres"):
        self.proc = subprocess.Popen(
            [PSQL, "-X", "-q", "-A", "-t", "-F", "\t", "-h", "127.0.0.1", "-p",
             str(server.port), "-U", "postgres", "-d", dbname],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1)

    def query(self, sql):
        self.proc.stdin.write(sql.rstrip(";") + ";\n\\echo __end__\n")
        self.proc.stdin.flush()
        rows = []
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line == "__end__":
                return rows
            if line:
                rows.append(line.split("\t"))
        raise AssertionError("psql ended: " + repr(rows))

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(10)
        self.proc.stdout.close()
