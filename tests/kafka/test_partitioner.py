"""to_kafka's `partitioner`: a keyed record lands in the partition a Java client (the Java
producer, Kafka Streams, ksqlDB) would choose for the same key bytes, so sluice output is
co-partitioned with Java-written topics.

The expected partition is computed here, independently of librdkafka, with Kafka's own rule
(BuiltInPartitioner.partitionForKey, also used by Kafka Streams' DefaultStreamPartitioner):
  toPositive(murmur2(keyBytes)) % numPartitions,  toPositive(n) = n & 0x7fffffff
murmur2 is written below from org.apache.kafka.common.utils.Utils.murmur2 and pinned to the
hash values that Kafka's own UtilsTest.testMurmur2 and librdkafka's unittest_murmur2
(java_murmur2_results) publish for the Java implementation.

sluiced writes through the test broker process; kcat (the independent client) reads the
records back with their partitions.
"""

import json
import subprocess
import unittest

from kafka_it import EXIT_OK, KafkaTestCase, toml_str

EXIT_INVALID = 2
PARTITIONS = 6

_M32 = 0xFFFFFFFF


def java_murmur2(data):
    """Kafka's Utils.murmur2(byte[]) as a signed 32-bit int: seed 0x9747b28c, m 0x5bd1e995,
    r 24, little-endian 4-byte blocks, the tail bytes, then the final mix (Java's `>>>` is
    an unsigned shift: here every intermediate is kept unsigned, masked to 32 bits)."""
    length = len(data)
    m = 0x5BD1E995
    h = (0x9747B28C ^ length) & _M32
    for i in range(0, length - length % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & _M32
        k ^= k >> 24
        k = (k * m) & _M32
        h = ((h * m) & _M32) ^ k
    tail, rest = length & ~3, length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key_bytes, partitions):
    """BuiltInPartitioner.partitionForKey: Utils.toPositive(Utils.murmur2(key)) % n."""
    return (java_murmur2(key_bytes) & 0x7FFFFFFF) % partitions


class JavaMurmur2Test(unittest.TestCase):
    """The reference implementation above against values published for Java's murmur2."""

    def test_kafka_utils_test_vectors(self):
        # org.apache.kafka.common.utils.UtilsTest.testMurmur2
        cases = {
            b"21": -973932308,
            b"foobar": -790332482,
            b"a-little-bit-long-string": -985981536,
            b"a-little-bit-longer-string": -1486304829,
            b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
            b"abc": 479470107,
        }
        for key, want in cases.items():
            self.assertEqual(java_murmur2(key), want, key)

    def test_librdkafka_java_results(self):
        # librdkafka src/rdmurmur2.c, unittest_murmur2: java_murmur2_results (as uint32).
        unaligned = b"PreAmbleWillBeRemoved,ThePrePartThatIs"
        cases = [(b"kafka", 0xD067CF64), (b"giberish123456789", 0x8F552B0C),
                 (b"1234", 0x9FC97B14), (b"234", 0xE7C009CA), (b"34", 0x873930DA),
                 (b"4", 0x5A4B5CA1), (unaligned, 0x78424F1C), (unaligned[1:], 0x4A62B377),
                 (unaligned[2:], 0xE0E4E09E), (unaligned[3:], 0x62B8B43F), (b"", 0x106E08D9)]
        for key, want in cases:
            self.assertEqual(java_murmur2(key) & _M32, want, key)

    def test_to_positive_masks_the_sign_bit(self):
        # toPositive is n & 0x7fffffff, not abs(): -973932308 ("21") -> 1173551340.
        self.assertEqual(java_murmur2(b"21") & 0x7FFFFFFF, 1173551340)
        self.assertEqual(java_partition(b"21", 6), 1173551340 % 6)


def toml_value(v):
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def key_bytes(k):
    """What to_kafka writes as the record key: strings as their UTF-8 bytes, other values as
    compact JSON text."""
    return k.encode() if isinstance(k, str) else str(k).encode()


class PartitionerTest(KafkaTestCase):
    TOPICS = {"keyed": PARTITIONS, "unkeyed": PARTITIONS, "in": 1, "out": PARTITIONS}

    # 200 distinct keys: ASCII words of every length class mod 4, non-ASCII UTF-8, the empty
    # string (a key of zero bytes, not "no key") and integers (written as JSON text).
    KEYS = ([f"word-{i}" for i in range(150)] + [f"w{i}" for i in range(20)]
            + ["\u00fcber", "\u0434\u0430", "\u6f22\u5b57", "caf\u00e9", "a", "ab", "abc",
               "kafka", ""]
            + list(range(1000, 1021)))

    def run_to_end(self, text, name="pipeline.toml", timeout=90):
        proc, err = self.start_sluiced(text, name)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"sluiced did not finish within {timeout} s\n{self.read(err)}")
        self.assertEqual(rc, EXIT_OK, self.read(err))

    def iterable_to_kafka(self, values, topic, sink_lines=""):
        return f"""\
name = "partitioner"

[sources.src]
type = "from_iterable"
values = [{", ".join(toml_value(v) for v in values)}]

[sinks.out]
type = "to_kafka"
inputs = ["src"]
brokers = {toml_str(self.bootstrap)}
topic = {toml_str(topic)}
config = {self.producer_config()}
{sink_lines}"""

    def read_back(self, topic, n):
        self.assertEqual(self.wait_for_count(topic, n), n)
        return self.consume(topic)

    def assert_java_partitions(self, records, partitions=PARTITIONS):
        """Every record is in the partition Java chooses for its key (kcat's partition)."""
        placed = [(r["key"], r["partition"], java_partition(r["key"].encode(), partitions))
                  for r in records]
        wrong = [p for p in placed if p[1] != p[2]]
        self.assertEqual(wrong, [], f"{len(wrong)} of {len(placed)} records misplaced "
                                    "(key, partition written, partition Java chooses)")

    def test_keyed_records_land_where_java_puts_them(self):
        # Every key twice: once in the first half, once in the second.
        values = [{"k": k, "n": i} for i, k in enumerate(self.KEYS * 2)]
        self.assertEqual(len(set(map(repr, self.KEYS))), 200)
        self.run_to_end(self.iterable_to_kafka(values, "keyed", 'key = "k"\n'))
        records = self.read_back("keyed", len(values))
        self.assertEqual(len(records), len(values))
        # The key is the field's bytes (strings as is, ints as JSON text), the value JSON.
        self.assertEqual(sorted(r["key"] for r in records),
                         sorted(key_bytes(v["k"]).decode() for v in values))
        for r in records:
            self.assertRegex(r["value"], r'^\{"k":.*,"n":\d+\}$')
        self.assert_java_partitions(records)
        # The same key always went to one partition.
        where = {}
        for r in records:
            where.setdefault(r["key"], set()).add(r["partition"])
        self.assertEqual({k: p for k, p in where.items() if len(p) != 1}, {})
        # Not vacuous: the keys spread over (nearly) every partition.
        self.assertGreaterEqual(len({r["partition"] for r in records}), PARTITIONS - 1)

    def test_message_key_from_upstream_lands_where_java_puts_it(self):
        # The record key is the message's own key (here the one from_kafka read): the
        # produce path that copies small string payloads.
        words = [f"key-{i}" for i in range(100)]
        self.produce("in", [(w, f"value of {w}") for w in words])
        self.run_to_end(self.passthrough_pipeline("passthrough"))
        records = self.read_back("out", len(words))
        self.assertEqual(sorted(r["key"] for r in records), sorted(words))
        self.assertEqual({r["value"] for r in records}, {f"value of {w}" for w in words})
        self.assert_java_partitions(records)

    def test_a_record_without_key_still_arrives(self):
        values = [f"unkeyed-{i}" for i in range(20)]
        self.run_to_end(self.iterable_to_kafka(values, "unkeyed"))
        records = self.read_back("unkeyed", len(values))
        self.assertEqual(sorted(r["value"] for r in records), sorted(values))
        self.assertEqual({r["key"] for r in records}, {None})
        self.assertTrue(all(0 <= r["partition"] < PARTITIONS for r in records))

    def test_null_key_field_is_no_key(self):
        # A null key field is no key, as a null message key is (not the 4 bytes "null"):
        # the record is partitioned like any unkeyed one. Objects and floats are JSON text.
        values = [{"k": None, "n": 1}, {"k": {"a": 1}, "n": 2}, {"k": 2.5, "n": 3},
                  {"k": "s", "n": 4}]
        text = self.iterable_to_kafka([], "keyed", 'key = "k"\n').replace(
            "values = []", "json = [" + ", ".join(
                toml_str(json.dumps(v, separators=(",", ":"))) for v in values) + "]")
        self.run_to_end(text)
        records = self.read_back("keyed", len(values))
        by_n = {json.loads(r["value"])["n"]: r["key"] for r in records}
        self.assertEqual(by_n, {1: None, 2: '{"a":1}', 3: "2.5", 4: "s"})
        self.assert_java_partitions([r for r in records if r["key"] is not None])

    def test_librdkafkas_own_default_is_not_java_compatible(self):
        # consistent_random (librdkafka's default: CRC32 of the key) puts most keys
        # elsewhere: what the partitioner key changes, and why murmur2_random is the default.
        values = [{"k": f"word-{i}"} for i in range(60)]
        self.run_to_end(self.iterable_to_kafka(values, "keyed",
                                               'key = "k"\npartitioner = "consistent_random"\n'))
        records = self.read_back("keyed", len(values))
        misplaced = [r for r in records
                     if r["partition"] != java_partition(r["key"].encode(), PARTITIONS)]
        self.assertGreater(len(misplaced), len(values) // 3)

    def test_bad_partitioner_fails_validate_at_its_position(self):
        text = self.iterable_to_kafka(["x"], "keyed", 'partitioner = "murmur3"\n')
        r = self.sluiced("validate", self.write("bad.toml", text))
        self.assertExit(r, EXIT_INVALID)
        line = text[:text.index("partitioner =")].count("\n") + 1
        self.assertRegex(r.stderr, rf"bad\.toml:{line}:\d+: error: node 'out': key "
                                   r"'partitioner': must be one of ")
        self.assertInStderr('"murmur2_random"', r)
        self.assertInStderr('(got "murmur3")', r)

    def test_partitioner_in_config_table_is_refused(self):
        # Two places for one setting: refused rather than one silently winning.
        text = self.iterable_to_kafka(["x"], "keyed").replace(
            '"linger.ms" = "5"', '"linger.ms" = "5", "partitioner" = "random"')
        self.assertIn('"partitioner" = "random"', text)
        r = self.sluiced("validate", self.write("conflict.toml", text))
        self.assertExit(r, EXIT_INVALID)
        self.assertRegex(r.stderr, r"conflict\.toml:\d+:\d+: error: node 'out': key 'config': ")
        self.assertInStderr("set `partitioner` instead", r)


if __name__ == "__main__":
    unittest.main()
