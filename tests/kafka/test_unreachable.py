"""Broker unreachable at start (a closed port): sluiced logs a clear error naming the
address, keeps running and retrying instead of exiting, and stops promptly on SIGTERM."""

import socket
import time
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for


def closed_port():
    """A loopback port that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UnreachableBrokerTest(KafkaTestCase):
    TOPICS = {}

    def check_keeps_retrying(self, group_line):
        address = f"127.0.0.1:{closed_port()}"
        proc, err = self.start_sluiced(f"""\
name = "unreachable"

[runtime]
shutdown_timeout_ms = 3000

[sources.in]
type = "from_kafka"
brokers = {toml_str(address)}
topics = ["in"]
{group_line}
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(address)}
topic = "out"
""")
        # A clear error: names the address and says it cannot connect.
        def logged():
            text = self.read(err)
            return address in text and ("refused" in text.lower() or "down" in text.lower())
        self.assertTrue(wait_for(lambda: logged() or proc.poll() is not None, 15),
                        f"no error naming {address} within 15 s\n{self.read(err)}")
        self.assertRunning(proc, err, "with the broker unreachable: it must keep retrying")
        first_len = len(self.read(err))
        time.sleep(5)
        self.assertRunning(proc, err, "5 s later")
        # Still retrying (librdkafka reconnects with backoff), but not flooding the log.
        text = self.read(err)
        self.assertLess(len(text.splitlines()), 400, f"log flood:\n{text[-3000:]}")
        self.assertGreaterEqual(len(text), first_len)
        rc, elapsed = self.stop_sluiced(proc, err, timeout=20)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertLess(elapsed, 4.0, f"stopping took {elapsed:.1f} s\n{self.read(err)}")

    def test_assigned_partitions(self):
        self.check_keeps_retrying("")

    def test_consumer_group(self):
        self.check_keeps_retrying('group_id = "nobody-home"')


if __name__ == "__main__":
    unittest.main()
