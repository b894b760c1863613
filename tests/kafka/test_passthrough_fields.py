"""from_kafka -> map(identity) -> to_kafka keeps every field of a bytes record: the value, the
key (a null key stays null), the headers and the timestamp. These are the per-element fast
paths of both nodes (from_kafka's bare bytes values, to_kafka's copied small payloads); a
tombstone takes the general path and arrives as the text `null` (docs/KAFKA.md: to_kafka
writes non-string values as JSON). kcat writes the input and reads both topics."""

import json
import unittest

from kafka_it import EXIT_OK, KafkaTestCase


class PassthroughFieldsTest(KafkaTestCase):
    TOPICS = {"in": 1, "out": 1}

    def records(self, topic):
        """Every record of `topic` as (key, value, headers, timestamp), in offset order
        (key and value None for Kafka nulls)."""
        cp = self.kcat("-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q",
                       "-X", "fetch.wait.max.ms=10")
        out = []
        for line in cp.stdout.decode().splitlines():
            if line.strip():
                env = json.loads(line)
                hdrs = env.get("headers") or []
                out.append((env["offset"], env.get("key"), env.get("payload"),
                            list(zip(hdrs[0::2], hdrs[1::2])), env.get("ts")))
        return [r[1:] for r in sorted(out)]

    def test_keys_nulls_headers_and_timestamps_pass_unchanged(self):
        self.produce("in", [(f"k{i}", f"value {i}") for i in range(20)],
                     headers={"trace": "t-1", "hop": "2"})
        # -Z: an empty key or value is sent as a Kafka null (no key / a tombstone).
        self.kcat("-P", "-t", "in", "-K", "\t", "-Z",
                  input_bytes=b"\tno key\nk-tomb\t\n\t\nk-last\tlast\n")
        sent = self.records("in")
        self.assertEqual(len(sent), 24)
        self.assertEqual([(k, v) for k, v, _, _ in sent[20:]],
                         [(None, "no key"), ("k-tomb", None), (None, None), ("k-last", "last")])
        # The output gets later timestamps unless the input's are forwarded.
        self.assertTrue(all(ts and ts > 0 for _, _, _, ts in sent), sent)

        proc, err = self.start_sluiced(self.passthrough_pipeline("fields"))
        rc = proc.wait(timeout=120)
        self.assertEqual(rc, EXIT_OK, self.read(err)[-3000:])
        got = self.records("out")
        self.assertEqual(len(got), len(sent), got)
        for want, have in zip(sent, got):
            self.assertEqual(have[0], want[0], f"key of {want}")
            self.assertEqual(have[1], "null" if want[1] is None else want[1], f"value of {want}")
            self.assertEqual(sorted(have[2]), sorted(want[2]), f"headers of {want}")
            self.assertEqual(have[3], want[3], f"timestamp of {want}")
        self.assertEqual(sorted(got[0][2]), [("hop", "2"), ("trace", "t-1")])


if __name__ == "__main__":
    unittest.main()
