"""Payloads of every size class come through from_kafka -> to_kafka unchanged and in order.

from_kafka copies small payloads (<= 512 bytes) and wraps larger ones without copying;
to_kafka lets librdkafka copy small payloads and lends it larger ones until the delivery
report. With a producer queue of 10 messages, most elements also take the QUEUE_FULL path
(held in order, back-pressure, retried), which must keep every payload alive and in order."""

import unittest

from kafka_it import EXIT_OK, KafkaTestCase

SIZES = [1, 100, 511, 512, 513, 2000, 20_000, 100_000]  # 120 records: ~2 MB (the mock
# keeps at most 5 MiB per partition)


def payload(i, size):
    head = f"{i}:{size}:"
    body = "".join(chr(ord("a") + (i + k) % 26) for k in range(max(size - len(head), 0)))
    return head + body


class PayloadSizesTest(KafkaTestCase):
    TOPICS = {"in": 1, "out": 1}

    def pipeline(self, producer_extra):
        return self.passthrough_pipeline("sizes",
                                         producer_config=self.producer_config(producer_extra))

    def check_round_trip(self, producer_extra):
        records = [(f"k{i}", payload(i, SIZES[i % len(SIZES)])) for i in range(120)]
        self.produce("in", records, from_file=True)
        self.assertEqual(self.count("in"), len(records))
        proc, err = self.start_sluiced(self.pipeline(producer_extra))
        rc = proc.wait(timeout=120)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])
        out = self.consume("out")
        self.assertEqual(len(out), len(records))
        for (key, value), got in zip(records, out):
            self.assertEqual(got["key"], key)
            self.assertEqual(len(got["value"]), len(value), key)
            self.assertEqual(got["value"], value, key)

    def test_every_size_round_trips_in_order(self):
        self.check_round_trip({})

    def test_every_size_round_trips_through_a_full_producer_queue(self):
        self.check_round_trip({"queue.buffering.max.messages": "10"})


if __name__ == "__main__":
    unittest.main()
