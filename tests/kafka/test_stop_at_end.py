"""from_kafka `stop_at_end = true` ends the stream, and `sluiced run` exits by itself, with
thousands of messages over several partitions (regression: with 20,000 messages over 8
partitions it never ended).

The cause: a partition's end (librdkafka's PARTITION_EOF event) often arrives in the same
poll as that partition's last messages; the source saw the event, then marked the messages
processed after emitting them, and marking a message processed cleared the partition's "at
end" flag. No second EOF comes for a partition that gets no new data, so the source waited
for ever. Now only a message at or past the offset the EOF reported clears it.

Each test checks what a user would: the process exits 0 within a bound, and the output
topic holds every input value exactly once."""

import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str

COUNT = 20_000
PARTITIONS = 8
EXIT_TIMEOUT = 90  # far more than the pipeline needs (a few seconds), even under load


class StopAtEndTest(KafkaTestCase):
    TOPICS = {"in": PARTITIONS, "out": 1}

    def pipeline(self, group=None):
        group_line = f"group_id = {toml_str(group)}\n" if group else ""
        return self.passthrough_pipeline("stop-at-end", source_lines=group_line)

    def run_to_the_end(self, group=None):
        values = [f"v{i}" for i in range(COUNT)]
        # Keyed, so the records spread over all partitions.
        self.produce("in", [(f"k{i}", v) for i, v in enumerate(values)], from_file=True)
        self.assertEqual(self.count("in"), COUNT)
        self.assertEqual(len(self.broker.watermarks("in")), PARTITIONS)
        proc, err = self.start_sluiced(self.pipeline(group))
        try:
            rc = proc.wait(timeout=EXIT_TIMEOUT)
        except Exception:  # subprocess.TimeoutExpired: the bug
            proc.kill()
            proc.wait()
            self.fail(f"sluiced did not exit within {EXIT_TIMEOUT} s with stop_at_end = true "
                      f"({self.count('out')} of {COUNT} records were in 'out')\n"
                      f"{self.read(err)[-3000:]}")
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])
        out = [r["value"] for r in self.consume("out")]
        self.assertEqual(len(out), COUNT)
        self.assertEqual(sorted(out), sorted(values))

    def test_without_group_ends_after_every_message(self):
        self.run_to_the_end()

    def test_with_group_ends_after_every_message(self):
        self.run_to_the_end(group="stop-at-end")


if __name__ == "__main__":
    unittest.main()
