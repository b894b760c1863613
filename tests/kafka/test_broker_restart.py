"""A broker taken down and brought back: on a 3-broker mock, the broker leading a partition
of `in` (and of `out`) goes down for a while and comes back. The mock does not move
leadership when a broker goes down, so that partition is unreachable meanwhile: sluiced must
keep running, retry, and once the broker is back deliver every record (none lost)."""

import time
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str

PARTITIONS = 3


class BrokerRestartTest(KafkaTestCase):
    BROKERS = 3

    def setUp(self):
        super().setUp()
        # Replicated over all three brokers; broker p + 1 leads in[p]. The output topic has
        # one partition, led by broker 1: while it is down, nothing can be written there,
        # so to_kafka has to hold everything it gets and deliver it later.
        self.broker.create_topic("in", PARTITIONS, 3)
        for p in range(PARTITIONS):
            self.broker.set_leader("in", p, p + 1)
        self.broker.create_topic("out", 1, 3)
        self.broker.set_leader("out", 0, 1)

    def leaders(self, topic):
        md = self.metadata()
        for t in md["topics"]:
            if t["topic"] == topic:
                return {p["partition"]: p["leader"] for p in t["partitions"]}
        self.fail(f"no topic {topic} in metadata: {md}")

    def wave(self, tag, partitions, n=10):
        values = []
        for p in partitions:
            batch = [f"{tag}-p{p}-{i}" for i in range(n)]
            self.produce("in", batch, partition=p)
            values += batch
        return values

    def out_values(self):
        return [r["value"] for r in self.consume("out")]

    def check_leader_down_and_back(self, group):
        self.assertEqual(self.leaders("in"), {0: 1, 1: 2, 2: 3})
        self.assertEqual(self.leaders("out"), {0: 1})
        group_line = f'group_id = "{group}"' if group else ""
        proc, err = self.start_sluiced(f"""\
name = "restart"

[runtime]
shutdown_timeout_ms = 5000

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
{group_line}
start = "earliest"
config = {self.consumer_config()}

[sinks.out]
type = "to_kafka"
inputs = ["in"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
config = {self.producer_config()}
""")
        sent = self.wave("before", range(PARTITIONS))
        self.assertEqual(self.wait_for_count("out", len(sent), procs=[proc]), len(sent),
                         self.read(err))

        # Broker 1 (leader of in[0] and out[0]) goes away. kcat can still write to the
        # partitions the other brokers lead, and sluiced can read them.
        self.broker.down(1)
        during = self.wave("during", [1, 2])
        sent += during
        time.sleep(4)
        # (Nothing can count 'out' now: its only partition's leader is down.)
        self.assertRunning(proc, err, "while broker 1 is down")
        self.broker.up(1)
        after = self.wave("after", range(PARTITIONS))
        sent += after

        got = self.wait_for_count("out", len(sent), timeout=60, procs=[proc])
        self.assertRunning(proc, err, f"after broker 1 came back ({got} of {len(sent)} in out)")
        values = self.out_values()
        missing = sorted(set(sent) - set(values))
        self.assertEqual(missing, [], f"{len(missing)} records lost\n{self.read(err)}")

        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))

    def test_assigned_partitions(self):
        """Without a group: every partition assigned by the source itself."""
        self.check_leader_down_and_back(group=None)

    def test_consumer_group(self):
        """With a group whose coordinator is the broker that goes down."""
        self.broker.set_coordinator("restart", 1)
        self.check_leader_down_and_back(group="restart")


if __name__ == "__main__":
    unittest.main()
