"""The exactly-once SIGKILL torture test against a real Kafka cluster (SLUICE_KAFKA_BROKERS;
skipped loudly otherwise): the pipeline of test_checkpoint_torture.py with to_kafka
exactly_once = true; after SLUICE_TORTURE_KILLS kills and a final SIGTERM, kcat with
isolation.level=read_committed must see every running total exactly once, the last equal
to the true counts. Fresh topics and group per run (the cluster must auto-create topics, or
create sluice-torture-in-*/out-* by policy)."""

import collections
import unittest
import uuid

from kafka_it import KafkaTestCase, real_cluster_only
from test_checkpoint_torture import KILLS, SEED, TortureMixin


@real_cluster_only("exactly-once needs read_committed and transaction markers, which the "
                   "mock broker lacks")
class ExactlyOnceRealClusterTortureTest(TortureMixin, KafkaTestCase):
    """Against SLUICE_KAFKA_BROKERS: a read_committed reader sees every total exactly once.
    Uses fresh topics (auto-created or pre-created by the cluster's policy) per run."""

    REAL_CLUSTER = True
    EXACTLY_ONCE = True
    PARTITIONS = 2

    def setUp(self):
        super().setUp()
        run = uuid.uuid4().hex[:8]
        self.name = f"torture-eos-{run}"
        self.group = f"sluice-torture-eos-{run}"
        self.in_topic, self.out_topic = f"sluice-torture-in-{run}", f"sluice-torture-out-{run}"

    def test_sigkill_exactly_once_read_committed(self):
        # Create the output topic (auto-creation on first produce) so that kcat can read it
        # from the start; its first record is this empty table.
        self.produce(self.out_topic, ["{}"])
        expected, total, err, _ = self.run_torture(KILLS)
        outs = self.outputs("-X", "isolation.level=read_committed")
        self.assertEqual(outs[:1], [{}])
        outs = outs[1:]
        self.check_at_least_once(outs, expected, total, err)
        totals = [sum(o.values()) for o in outs]
        dupes = [t for t, n in collections.Counter(totals).items() if n > 1]
        self.assertEqual(dupes, [], f"[seed {SEED}] results seen more than once by a "
                                    f"read_committed consumer")
        self.assertEqual(len(totals), total)


if __name__ == "__main__":
    unittest.main()
