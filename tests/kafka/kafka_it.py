"""Helpers for sluice's Kafka integration tests: a test broker process (librdkafka's mock
cluster, sluice_test_broker), kcat as the independent client, and sluiced as a real
process (through tests/integration/sluice_it.py).

Standard library only. ctest (tests/kafka/CMakeLists.txt) sets, besides sluice_it's
variables (SLUICED, SLUICE_IT_PLUGIN_DIR, BROKEN_DIR):

  SLUICE_TEST_BROKER   the sluice_test_broker binary
  KCAT                 kcat (default: `kcat` on PATH)
  SLUICE_KAFKA_BROKERS optional: a real cluster's bootstrap address, for the tests that
                       the mock cannot run (test_real_cluster.py); unset -> they skip

Timing on the mock: consumers see new data only after fetch.wait.max.ms (default 500 ms),
so every consumer here sets it to 10 ms; a group rebalance takes session.timeout.ms - 1 s,
so tests that rebalance use 6000 ms (KafkaTestCase.CONSUMER_CONFIG).
"""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from sluice_it import (  # noqa: E402  (after the path set-up above)
    EXIT_OK, PLUGIN_DIR, SluiceTestCase, plugin_file, toml_str, wait_for)

TEST_BROKER = os.environ.get("SLUICE_TEST_BROKER", "")
KCAT = os.environ.get("KCAT") or shutil.which("kcat") or "kcat"
REAL_BROKERS = os.environ.get("SLUICE_KAFKA_BROKERS", "").strip()

# How long a test waits for records to show up before it calls them lost.
ARRIVAL_TIMEOUT = 30


class BrokerError(Exception):
    """The test broker answered "error ..."."""


class TestBroker:
    """One sluice_test_broker process: `brokers` mock brokers (ids 1..brokers) and the
    topics given as {name: partitions}. Its stderr (librdkafka's log) goes to `log_path`."""

    def __init__(self, log_path, brokers=1, topics=None, start_timeout=10):
        if not TEST_BROKER or not os.path.exists(TEST_BROKER):
            raise AssertionError(f"SLUICE_TEST_BROKER={TEST_BROKER!r} does not exist: build "
                                 "the target sluice_test_broker and run through ctest")
        argv = [TEST_BROKER, "--brokers", str(brokers)]
        for name, partitions in (topics or {}).items():
            argv += ["--topic", f"{name}:{partitions}"]
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log)
        self._buf = b""
        line = self._readline(start_timeout)
        if not line or ":" not in line:
            self.stop()
            raise AssertionError(f"the test broker printed no bootstrap address "
                                 f"(got {line!r})\n{self.log()}")
        self.bootstrap = line

    def _readline(self, timeout):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the test broker did not answer within {timeout} s"
                                     f"\n{self.log()}")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f"the test broker exited (code {self.proc.poll()})"
                                     f"\n{self.log()}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode("utf-8", errors="replace")

    def log(self):
        try:
            with open(self.log_path, "r", encoding="utf-8", errors="replace") as f:
                return "--- test broker log ---\n" + f.read()[-4000:] + "--- end ---"
        except OSError:
            return ""

    def command(self, line, timeout=20):
        """Sends one command; returns the data after "ok" ("" when none); raises
        BrokerError on "error ..."."""
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        answer = self._readline(timeout)
        if answer == "ok":
            return ""
        if answer.startswith("ok "):
            return answer[3:]
        if answer.startswith("error "):
            raise BrokerError(f"{line}: {answer[6:]}")
        raise AssertionError(f"unexpected answer to {line!r}: {answer!r}")

    def down(self, broker_id):
        self.command(f"down {broker_id}")

    def up(self, broker_id):
        self.command(f"up {broker_id}")

    def create_topic(self, name, partitions, replication=0):
        self.command(f"topic {name} {partitions} {replication}")

    def set_leader(self, topic, partition, broker_id):
        self.command(f"leader {topic} {partition} {broker_id}")

    def set_coordinator(self, group, broker_id):
        self.command(f"coordinator group {group} {broker_id}")

    def partitions(self, topic):
        return int(self.command(f"partitions {topic}"))

    def watermarks(self, topic):
        """{partition: (low, high)}; {} when the topic does not exist (yet)."""
        try:
            data = self.command(f"watermarks {topic}")
        except BrokerError as e:
            if "unknown topic" in str(e):
                return {}
            raise
        out = {}
        for item in data.split():
            p, lo_hi = item.split("=")
            lo, hi = lo_hi.split(":")
            out[int(p)] = (int(lo), int(hi))
        return out

    def count(self, topic):
        """How many records the topic holds (sum of high - low watermarks)."""
        return sum(hi - lo for lo, hi in self.watermarks(topic).values())

    def committed(self, group, topic):
        """{partition: committed offset} of `group` (-1001 = nothing committed)."""
        data = self.command(f"offsets {group} {topic}")
        return {int(p): int(o) for p, o in (item.split("=") for item in data.split())}

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stdin):
            try:
                f.close()
            except (OSError, ValueError):
                pass
        self._log.close()


def toml_table(d):
    """A TOML inline table of strings (librdkafka properties: dotted keys quoted)."""
    return "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(str(v))}" for k, v in d.items()) + " }"


def toml_array(items):
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


class KafkaTestCase(SluiceTestCase):
    """A test with its own temp dir, its own test broker (started in setUp with
    BROKERS brokers and TOPICS {name: partitions}) and kcat helpers."""

    BROKERS = 1
    TOPICS = {}
    # librdkafka properties for every sluice consumer in these tests (see the module doc).
    # (Metadata refresh is the source's own `refresh_ms`, not a config key.)
    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "500",
    }
    PRODUCER_CONFIG = {"linger.ms": "5"}

    # True: run against the real cluster of SLUICE_KAFKA_BROKERS (no test broker, so no
    # broker commands); the class should then be decorated with real_cluster_only.
    REAL_CLUSTER = False

    def setUp(self):
        super().setUp()
        self.kafka_plugin()  # fail early, with a clear message, when it is not built
        if self.REAL_CLUSTER:
            self.broker = None
            self.bootstrap = REAL_BROKERS
        else:
            self.broker = self.start_broker(self.BROKERS, self.TOPICS)
            self.bootstrap = self.broker.bootstrap

    def start_broker(self, brokers, topics):
        n = getattr(self, "_broker_count", 0)
        self._broker_count = n + 1
        broker = TestBroker(self.path(f"broker-{n}.log"), brokers=brokers, topics=topics)
        self.addCleanup(broker.stop)
        return broker

    @staticmethod
    def kafka_plugin():
        if not os.path.isdir(PLUGIN_DIR):
            raise AssertionError(f"{PLUGIN_DIR} does not exist: build the tree first")
        return plugin_file(PLUGIN_DIR, "kafka")

    # -- kcat -------------------------------------------------------------------

    def kcat(self, *args, input_bytes=None, timeout=60, check=True):
        argv = [KCAT, "-b", self.bootstrap, *[str(a) for a in args]]
        try:
            cp = subprocess.run(argv, input=input_bytes, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, timeout=timeout, check=False)
        except FileNotFoundError:
            self.fail(f"kcat ({KCAT}) is not installed: scripts/setup.sh installs it")
        except subprocess.TimeoutExpired as e:
            self.fail(f"$ {' '.join(argv)} did not finish within {timeout} s\n{e.stderr!r}")
        if check and cp.returncode != 0:
            self.fail(f"$ {' '.join(argv)} failed ({cp.returncode}):\n"
                      f"{cp.stderr.decode(errors='replace')}")
        return cp

    def produce(self, topic, records, partition=None, headers=None, from_file=False):
        """Produces `records` with kcat, in order: each a value (str) or a (key, value)
        pair (no newline anywhere; no tab in a key, nor in an unkeyed value). `headers` ({name: value}) go on
        every record of this call. `from_file`: kcat reads the lines from a file (-l)
        instead of its stdin. Returns when kcat has every delivery report."""
        if not records:
            return
        keyed = isinstance(records[0], tuple)
        lines = []
        for r in records:
            text = f"{r[0]}\t{r[1]}" if keyed else str(r)
            if "\n" in text or "\t" in (str(r[0]) if keyed else text):
                raise ValueError(f"record {r!r} has a delimiter in it")
            lines.append(text)
        args = ["-P", "-t", topic, "-X", "linger.ms=5"]
        if keyed:
            args += ["-K", "\t"]
        if partition is not None:
            args += ["-p", partition]
        for name, value in (headers or {}).items():
            args += ["-H", f"{name}={value}"]
        data = ("\n".join(lines) + "\n").encode()
        if from_file:
            n = getattr(self, "_produce_files", 0)
            self._produce_files = n + 1
            path = self.path(f"produce-{n}.txt")
            with open(path, "wb") as f:
                f.write(data)
            self.kcat(*args, "-l", path)
        else:
            self.kcat(*args, input_bytes=data)

    def produce_timestamped(self, topic, records):
        """Produces `records`, each (partition, timestamp_ms, key, value) (key None: no key;
        no newline anywhere, no tab but in the value), in order, with explicit record
        timestamps, which kcat cannot set: through `sluice_test_broker --produce` (an
        idempotent librdkafka producer). Returns when every record is delivered."""
        lines = []
        for partition, ts, key, value in records:
            key = "" if key is None else str(key)
            if "\n" in key + value or "\t" in key:
                raise ValueError(f"record {(partition, ts, key, value)!r} has a delimiter in it")
            lines.append(f"{int(partition)}\t{int(ts)}\t{key}\t{value}")
        if not lines:
            return
        try:
            cp = subprocess.run([TEST_BROKER, "--produce", self.bootstrap, topic],
                                input=("\n".join(lines) + "\n").encode(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, timeout=60, check=False)
        except subprocess.TimeoutExpired as e:
            self.fail(f"sluice_test_broker --produce did not finish within 60 s\n{e.stderr!r}")
        if cp.returncode != 0:
            self.fail(f"sluice_test_broker --produce failed ({cp.returncode}):\n"
                      f"{cp.stderr.decode(errors='replace')}")

    def consume(self, topic, *kcat_args):
        """Every record of `topic` now, as dicts {partition, offset, key, value, headers,
        timestamp} (headers: a list of (name, value) pairs; timestamp: the record's, in ms,
        or None), in partition then offset order.
        `kcat_args` are added to kcat's command line."""
        if self.broker is not None and not self.broker.watermarks(topic):
            return []  # reading a topic that does not exist would make the mock create it
        cp = self.kcat("-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q",
                       "-X", "fetch.wait.max.ms=10", *kcat_args)
        out = []
        for line in cp.stdout.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            env = json.loads(line)
            hdrs = env.get("headers") or []
            out.append({
                "partition": env["partition"],
                "offset": env["offset"],
                "key": env.get("key"),
                "value": env.get("payload"),
                "headers": list(zip(hdrs[0::2], hdrs[1::2])),
                "timestamp": env.get("ts"),
            })
        out.sort(key=lambda r: (r["partition"], r["offset"]))
        return out

    def metadata(self):
        """kcat -L -J: the cluster's brokers and topics."""
        return json.loads(self.kcat("-L", "-J").stdout)

    def count(self, topic):
        """How many records `topic` holds (via the test broker, else by reading it)."""
        if self.broker is not None:
            return self.broker.count(topic)
        return len(self.consume(topic))

    def wait_for_count(self, topic, n, timeout=ARRIVAL_TIMEOUT, procs=()):
        """Waits until `topic` holds at least `n` records; returns the count. Stops early
        when one of `procs` (sluiced Popens) exits."""
        def done():
            if any(p.poll() is not None for p in procs):
                return True
            return self.count(topic) >= n
        wait_for(done, timeout, interval=0.2)
        return self.count(topic)

    def wait_until_stable(self, topic, quiet_s=2.0, timeout=ARRIVAL_TIMEOUT):
        """Waits until `topic`'s record count stops changing for `quiet_s`; returns it."""
        deadline = time.monotonic() + timeout
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            c = self.count(topic)
            if c != last:
                last, since = c, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                break
            time.sleep(0.2)
        return last

    # -- sluiced ----------------------------------------------------------------

    def consumer_config(self, **extra):
        cfg = dict(self.CONSUMER_CONFIG)
        cfg.update({k.replace("_", "."): v for k, v in extra.items()})
        return toml_table(cfg)

    def producer_config(self, extra=None):
        """PRODUCER_CONFIG plus `extra` (librdkafka keys as written, e.g. "linger.ms")."""
        return toml_table(dict(self.PRODUCER_CONFIG, **(extra or {})))

    def passthrough_pipeline(self, name, source_lines="", producer_config=None):
        """from_kafka "in" (stop_at_end) -> map(identity) -> to_kafka "out"; `source_lines`
        adds keys to the source's table (e.g. a group_id line)."""
        return f"""\
name = {toml_str(name)}

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
{source_lines}stop_at_end = true
config = {self.consumer_config()}

[operators.same]
type = "map"
inputs = ["in"]
function = "identity"

[sinks.out]
type = "to_kafka"
inputs = ["same"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {producer_config or self.producer_config()}
"""

    def start_sluiced(self, toml_text, name="pipeline.toml"):
        """Writes the config and starts `sluiced run` on it; returns (proc, err_path)."""
        cfg = self.write(name, toml_text)
        proc, _out, err = self.spawn("run", cfg)
        return proc, err

    def stop_sluiced(self, proc, err_path, signo=signal.SIGTERM, timeout=30):
        """Signals sluiced and waits; returns (exit code, seconds it took)."""
        t0 = time.monotonic()
        proc.send_signal(signo)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"sluiced did not stop within {timeout} s of "
                      f"{signal.Signals(signo).name}\n{self.read(err_path)}")
        return rc, time.monotonic() - t0

    def assertRunning(self, proc, err_path, what=""):
        if proc.poll() is not None:
            self.fail(f"sluiced exited ({proc.returncode}) {what}\n{self.read(err_path)}")


def real_cluster_only(reason):
    """Skips a test (loudly, with `reason`) unless SLUICE_KAFKA_BROKERS is set."""
    return unittest.skipUnless(
        REAL_BROKERS,
        f"NEEDS A REAL KAFKA CLUSTER ({reason}): set SLUICE_KAFKA_BROKERS=host:port to run it")


__all__ = [
    "ARRIVAL_TIMEOUT", "BrokerError", "EXIT_OK", "KCAT", "KafkaTestCase", "REAL_BROKERS",
    "TEST_BROKER", "TestBroker", "real_cluster_only", "toml_array", "toml_str", "toml_table", "wait_for",
]
