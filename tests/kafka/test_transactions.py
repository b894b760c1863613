"""to_kafka exactly_once = true against the test broker (librdkafka's mock): one transaction
per checkpoint epoch carrying the input offsets, and its error paths, injected with
`error APIKEY ERR` (rd_kafka_mock_push_request_errors) on InitProducerId (22),
AddPartitionsToTxn (24) and EndTxn (26).

The mock accepts the transactional calls but has no read_committed, no markers and no
fencing of its own, so what is checked here is what a user sees of the sequence: the
offsets reach the group only through committed transactions, failures fail the pipeline
with a clear message, and the restart recovers without losing or double-counting input.
What only a real cluster shows (a read_committed consumer sees every result once) is in
test_checkpoint_torture.py (ExactlyOnceRealClusterTortureTest, SLUICE_KAFKA_BROKERS).
"""

import json
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str, wait_for

API_INIT_PRODUCER_ID = 22
API_ADD_PARTITIONS_TO_TXN = 24
API_END_TXN = 26


class TransactionsTest(KafkaTestCase):
    TOPICS = {"in": 1, "out": 1}
    GROUP = "txn-group"

    def pipeline(self, name="txn", extra_sink="", second_sink=False, interval_ms=200):
        second = ""
        if second_sink:
            second = f"""
[sinks.copy]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = "copy"
exactly_once = true
"""
        return f"""\
name = {toml_str(name)}

[checkpoint]
store = "fs"
dir = {toml_str(self.path("checkpoints"))}
interval_ms = {interval_ms}

[sources.in]
type = "from_kafka"
brokers = {toml_str(self.bootstrap)}
topics = ["in"]
group_id = {toml_str(self.GROUP)}
value_format = "string"
config = {self.consumer_config()}

[operators.counts]
type = "accumulate"
inputs = ["in"]
function = "count_by"
start = {{}}

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = {toml_str(self.bootstrap)}
topic = "out"
exactly_once = true
flush_timeout_ms = 5000
{extra_sink}config = {self.producer_config()}
{second}"""

    def run_until(self, cfg, total, timeout=40):
        """Starts sluiced; waits until a checkpoint committed the offsets of all `total`
        input records (then their outputs are in committed transactions)."""
        proc, _out, err = self.spawn("run", cfg)
        wait_for(lambda: proc.poll() is not None or self.committed_in() == {0: total},
                 timeout, interval=0.3)
        return proc, err

    def outputs(self):
        return [json.loads(r["value"]) for r in self.consume("out")]

    def committed_in(self):
        return self.broker.committed(self.GROUP, "in")

    def test_one_transaction_per_epoch_commits_output_and_offsets(self):
        words = [f"w{i % 5}" for i in range(60)]
        self.produce("in", words)
        cfg = self.write("p.toml", self.pipeline())
        proc, err = self.run_until(cfg, len(words))
        self.assertRunning(proc, err, "while processing")
        self.assertEqual(self.committed_in(), {0: len(words)}, self.read(err))
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        log = self.read(err)
        self.assertIn("transactions on (transactional.id 'sluice-txn-out-0')", log)
        outs = self.outputs()
        self.assertEqual(outs[-1], {f"w{i}": 12 for i in range(5)})
        self.assertEqual(len(outs), len(words))

    def test_transient_init_producer_id_errors_are_retried(self):
        self.broker.command(f"error {API_INIT_PRODUCER_ID} COORDINATOR_NOT_AVAILABLE 3")
        self.produce("in", ["a", "b", "a"])
        cfg = self.write("p.toml", self.pipeline())
        proc, err = self.run_until(cfg, 3)
        self.assertRunning(proc, err, "after transient InitProducerId errors")
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertEqual(self.outputs()[-1], {"a": 2, "b": 1})

    def test_init_producer_id_refused_fails_at_start(self):
        self.broker.command(f"error {API_INIT_PRODUCER_ID} TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        cfg = self.write("p.toml", self.pipeline())
        result = self.sluiced("run", cfg, timeout=60)
        self.assertNotEqual(result.returncode, EXIT_OK, result.describe())
        self.assertInStderr("initialising transactions failed (transactional.id "
                            "'sluice-txn-out-0')", result)
        self.assertInStderr("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", result)

    def test_add_partitions_error_aborts_and_restart_recovers(self):
        words = [f"w{i % 3}" for i in range(30)]
        self.produce("in", words)
        # Every AddPartitionsToTxn fails (non-retriable, abortable): the first epoch fails.
        self.broker.command(f"error {API_ADD_PARTITIONS_TO_TXN} TOPIC_AUTHORIZATION_FAILED 50")
        cfg = self.write("p.toml", self.pipeline())
        result = self.sluiced("run", cfg, timeout=60)
        self.assertNotEqual(result.returncode, EXIT_OK, result.describe())
        self.assertInStderr("transactional.id 'sluice-txn-out-0'", result)
        self.assertInStderr("TOPIC_AUTHORIZATION_FAILED", result)
        self.assertEqual(self.committed_in(), {0: -1001}, "offsets committed by a failed txn")
        # Without the errors the restart does everything once more.
        self.broker.command(f"clear {API_ADD_PARTITIONS_TO_TXN}")
        proc, err = self.run_until(cfg, len(words))
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertEqual(self.outputs()[-1], {"w0": 10, "w1": 10, "w2": 10})
        self.assertEqual(self.committed_in(), {0: len(words)})

    def test_fenced_at_end_txn_fails_clearly_and_restart_recovers(self):
        words = [f"w{i % 4}" for i in range(40)]
        self.produce("in", words)
        cfg = self.write("p.toml", self.pipeline())
        proc, err = self.run_until(cfg, len(words))
        self.assertRunning(proc, err, "before the injected fencing")
        # The next EndTxn answers PRODUCER_FENCED (as when another producer took the
        # transactional.id): the node fails, naming the fencing. More input makes sure a
        # transaction is open at the next checkpoint.
        self.broker.command(f"error {API_END_TXN} PRODUCER_FENCED 5")
        more = [f"w{i % 4}" for i in range(20)]
        self.produce("in", more)
        try:
            rc = proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - report the log
            self.fail("sluiced did not fail after EndTxn was fenced\n" + self.read(err))
        self.assertNotEqual(rc, EXIT_OK)
        self.assertIn("was FENCED", self.read(err))
        self.broker.command(f"clear {API_END_TXN}")
        total = len(words) + len(more)
        proc, err2 = self.run_until(cfg, total)
        rc, _ = self.stop_sluiced(proc, err2)
        self.assertEqual(rc, EXIT_OK, self.read(err2))
        self.assertEqual(self.outputs()[-1], {f"w{i}": 15 for i in range(4)})
        self.assertEqual(self.committed_in(), {0: total})

    def test_two_exactly_once_sinks_are_refused(self):
        cfg = self.write("p.toml", self.pipeline(second_sink=True))
        result = self.sluiced("run", cfg, timeout=60)
        self.assertNotEqual(result.returncode, EXIT_OK, result.describe())
        self.assertInStderr("another to_kafka with exactly_once = true is in this pipeline",
                            result)

    def test_transactional_id_setting(self):
        words = ["x", "y"]
        self.produce("in", words)
        cfg = self.write("p.toml", self.pipeline(extra_sink='transactional_id = "billing-out"\n'))
        proc, err = self.run_until(cfg, 2)
        rc, _ = self.stop_sluiced(proc, err)
        self.assertEqual(rc, EXIT_OK, self.read(err))
        self.assertIn("transactional.id 'billing-out-0'", self.read(err))


if __name__ == "__main__":
    unittest.main()
