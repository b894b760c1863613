"""from_mqtt and to_mqtt against a real mosquitto broker: wildcards, QoS 0/1/2 round trips,
`sluiced validate` errors, a password from a secret (never printed), a broker restart
under a running sluiced (nothing lost at QoS 1), back-pressure (a slow pipeline stops
reading: the broker holds the messages, sluiced's memory stays flat)."""

import itertools
import json
import os
import signal
import time

from mqtt_it import MqttTestCase, unittest, wait_until
from sluice_it import EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, toml_str

_ids = itertools.count(1)


def uid(prefix):
    return f"{prefix}{os.getpid()}x{next(_ids)}"


class FollowingSource(MqttTestCase):
    """sluiced running from_mqtt -> sink_to_textfile, started and subscribed."""

    def start_source(self, topics, extra="", **keys):
        cfg = self.write("p.toml", f'name = "{uid("p")}"\n' + extra +
                         self.source_toml(topics, **keys) + self.file_sink())
        proc, _, err = self.spawn("run", cfg)
        ok = wait_until(lambda: "from_mqtt: subscribed to" in self.read(err)
                        or proc.poll() is not None, 30)
        self.assertTrue(ok and proc.poll() is None, self.read(err))
        return proc, err

    def stop(self, proc, err):
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


class SourceTest(FollowingSource):

    def test_wildcards_select_the_topics_and_the_key_is_the_topic(self):
        base = uid("w")
        proc, err = self.start_source([f"{base}/+/temp", f"{base}/logs/#"], qos=1)
        self.broker.publish(f"{base}/a/temp", ['{"t": 1}'])
        self.broker.publish(f"{base}/a/hum", ['{"h": 2}'])          # + matches one level only
        self.broker.publish(f"{base}/a/b/temp", ['{"t": 3}'])       # two levels: no match
        self.broker.publish(f"{base}/logs", ["root"])                # '#' includes the parent
        self.broker.publish(f"{base}/logs/x/y", ["deep"])
        self.broker.publish(f"{base}/b/temp", ["last"])
        self.assertTrue(wait_until(lambda: len(self.lines()) >= 4, 20), self.read(err))
        time.sleep(0.3)  # nothing else may arrive
        self.assertEqual(sorted(self.lines()), sorted(['{"t": 1}', "root", "deep", "last"]))
        self.stop(proc, err)

    def test_each_qos_delivers_every_message(self):
        for qos in (0, 1, 2):
            with self.subTest(qos=qos):
                topic = uid("q")
                proc, err = self.start_source([topic], qos=qos)
                sent = [json.dumps({"i": i, "qos": qos}) for i in range(300)]
                self.broker.publish(topic, sent, qos=qos)
                self.assertTrue(wait_until(lambda: len(self.lines()) >= 300, 30), self.read(err))
                self.assertEqual(sorted(self.lines()), sorted(sent))
                self.stop(proc, err)

    def test_payload_modes(self):
        topic = uid("j")
        proc, err = self.start_source([topic], payload="json")
        self.broker.publish(topic, ['{"a": [1, 2]}', "not json"])
        self.assertTrue(wait_until(lambda: len(self.lines()) >= 2, 20), self.read(err))
        self.assertEqual(self.lines(), [{"a": [1, 2]}, "not json"])
        self.assertIn("is not JSON: emitted as a string", self.read(err))
        self.stop(proc, err)

    def test_messages_published_while_sluiced_is_down_arrive_after_restart(self):
        topic = uid("d")
        proc, err = self.start_source([topic])
        self.broker.publish(topic, ["before"])
        self.assertTrue(wait_until(lambda: self.lines() == ["before"], 20), self.read(err))
        self.stop(proc, err)
        self.broker.publish(topic, ["while-down-1", "while-down-2"])  # persistent session
        cfg = self.path("p.toml")
        text = self.read(cfg).replace('path = "out.jsonl"', 'path = "out.jsonl"\nappend = true')
        self.write("p.toml", text)
        proc2, _, err2 = self.spawn("run", cfg)
        self.assertTrue(wait_until(lambda: len(self.lines()) >= 3, 20), self.read(err2))
        self.assertEqual(self.lines(), ["before", "while-down-1", "while-down-2"])
        self.assertIn("session resumed", self.read(err2))
        self.stop(proc2, err2)


class SinkTest(MqttTestCase):

    def test_each_qos_publishes_every_element_with_topic_from_a_field(self):
        for qos in (0, 1, 2):
            with self.subTest(qos=qos):
                base = uid("s")
                items = [{"room": f"r{i % 3}", "v": i} for i in range(200)]
                sub = self.broker.subscribe(f"{base}/#", len(items), uid("sub"), qos=2)
                text = (f'[sources.src]\ntype = "from_iterable"\n'
                        f"json = {json.dumps([json.dumps(x) for x in items])}\n"
                        "[operators.in]\ntype = \"map\"\ninputs = [\"src\"]\n"
                        f"lua = 'function(x) x.topic = \"{base}/\" .. x.room; return x end'\n"
                        + self.sink_toml(topic_field="topic", qos=qos))
                r = self.sluiced("run", self.write("p.toml", text))
                self.assertExit(r, EXIT_OK)
                out, _ = sub.communicate(timeout=60)
                got = [line.split(" ", 1) for line in out.decode().splitlines()]
                self.assertEqual(len(got), len(items), out)
                for topic, payload in got:
                    doc = json.loads(payload)
                    self.assertEqual(topic, f"{base}/{doc['room']}")
                self.assertEqual(sorted(json.loads(p)["v"] for _, p in got), list(range(200)))

    def test_strings_and_bytes_are_sent_raw_and_retain_keeps_the_last(self):
        topic = uid("r")
        text = ('[sources.in]\ntype = "from_iterable"\nvalues = ["first", "plain text"]\n'
                + self.sink_toml(topic=topic, retain=True))
        self.assertExit(self.sluiced("run", self.write("p.toml", text)), EXIT_OK)
        # A subscriber that comes later gets the retained (last) message.
        sub = self.broker.subscribe(topic, 1, uid("late"))
        out, _ = sub.communicate(timeout=30)
        self.assertEqual(out.decode(), f"{topic} plain text\n")


class ValidateTest(MqttTestCase):

    def assertValidateError(self, text, node, key, message):
        r = self.sluiced("validate", self.write("bad.toml", text))
        self.assertExit(r, EXIT_INVALID)
        self.assertRegex(r.stderr, rf"bad\.toml:\d+:\d+: error: node '{node}': key '{key}'",
                         r.describe())
        self.assertInStderr(message, r)

    def test_validate_catches_config_errors(self):
        sink_in = '[sources.in]\ntype = "from_iterable"\nvalues = [1]\n'
        cases = [
            (self.source_toml(["a/#/b"]) + self.file_sink(), "in", "topics",
             'invalid topic filter "a/#/b"'),
            (self.source_toml(["a/b+"]) + self.file_sink(), "in", "topics",
             'invalid topic filter "a/b+"'),
            (self.source_toml([""]) + self.file_sink(), "in", "topics", "invalid topic filter"),
            (self.source_toml(["a"], qos=3) + self.file_sink(), "in", "qos", ""),
            (self.source_toml(["a"], port=70000) + self.file_sink(), "in", "port", ""),
            (self.source_toml(["a"], port=0) + self.file_sink(), "in", "port", ""),
            (self.source_toml(["a"], password="x") + self.file_sink(), "in", "password",
             "needs `username`"),
            (self.source_toml(["a"], cert_file="c.pem") + self.file_sink(), "in", "cert_file",
             "needs its partner"),
            (self.source_toml(["a"], ca_file="/nonexistent/ca.pem") + self.file_sink(), "in",
             "ca_file", "cannot be read"),
            ('[runtime]\ntasks = 2\n' + self.source_toml(["a/b"]) +
             self.file_sink("out-{task}.jsonl"), "in", "topics", "shared subscription"),
            (sink_in + self.sink_toml(topic="a/+"), "out", "topic", "not a topic to publish to"),
            (sink_in + self.sink_toml(), "out", "topic", "exactly one of"),
            (sink_in + self.sink_toml(topic="a", qos=-1), "out", "qos", ""),
        ]
        for text, node, key, message in cases:
            with self.subTest(key=key, message=message):
                self.assertValidateError(text, node, key, message)

    def test_shared_subscriptions_pass_with_several_tasks(self):
        text = ('[runtime]\ntasks = 2\n' + self.source_toml(["$share/g/a/+"]) +
                self.file_sink("out-{task}.jsonl"))
        self.assertExit(self.sluiced("validate", self.write("ok.toml", text)), EXIT_OK)


class PasswordTest(FollowingSource):
    PASSWORD = "mq-S3cret-4711"
    users = {"reader": PASSWORD}

    def test_password_from_a_secret_file_works_and_is_never_printed(self):
        topic = uid("pw")
        self.write("good.pass", self.PASSWORD + "\n")
        os.chmod(self.path("good.pass"), 0o600)
        proc, err = self.start_source(
            [topic], username="reader",
            password="{ secret_file = " + toml_str(self.path("good.pass")) + " }")
        self.broker.publish(topic, ["hello"], auth=self.broker.auth("reader", self.PASSWORD))
        self.assertTrue(wait_until(lambda: self.lines() == ["hello"], 20), self.read(err))
        self.stop(proc, err)
        self.assertNotIn(self.PASSWORD, self.read(err))
        g = self.sluiced("graph", "--format", "json", self.path("p.toml"))
        self.assertExit(g, EXIT_OK)
        self.assertNotIn(self.PASSWORD, g.stdout + g.stderr)
        self.assertIn("<redacted>", g.stdout)

    def test_a_wrong_password_fails_without_printing_it(self):
        wrong = "wrong-Pa55word-0815"
        self.write("bad.pass", wrong)
        os.chmod(self.path("bad.pass"), 0o600)
        text = (self.source_toml([uid("pw")], username="reader",
                                 password="{ secret_file = " + toml_str(self.path("bad.pass")) + " }")
                + self.file_sink())
        r = self.sluiced("run", self.write("p.toml", text), timeout=60)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("refused the connection", r)
        self.assertNotIn(wrong, r.stdout + r.stderr)


class TlsTest(FollowingSource):
    tls = True

    def test_client_certificate_over_tls(self):
        topic = uid("tls")
        b = self.broker
        proc, err = self.start_source([topic], port=b.tls_port, ca_file=b.cert("ca.crt"),
                                      cert_file=b.cert("client.crt"),
                                      key_file=b.cert("client.key"))
        b.publish(topic, ["over tls"])  # on the plain listener
        self.assertTrue(wait_until(lambda: self.lines() == ["over tls"], 20), self.read(err))
        self.stop(proc, err)

    def test_without_a_client_certificate_the_broker_refuses(self):
        b = self.broker
        text = (f'name = "{uid("p")}"\n' +
                self.source_toml([uid("tls")], port=b.tls_port, ca_file=b.cert("ca.crt")) +
                self.file_sink())
        proc, _, err = self.spawn("run", self.write("p.toml", text))
        self.assertTrue(wait_until(lambda: "reconnecting with backoff" in self.read(err), 20),
                        self.read(err))
        self.assertNotIn("subscribed to", self.read(err))
        self.stop(proc, err)


class BrokerRestartTest(FollowingSource):

    def test_broker_restart_loses_nothing_at_qos_1(self):
        topic = uid("br")
        proc, err = self.start_source([topic], qos=1)
        first = [json.dumps({"i": i}) for i in range(500)]
        self.broker.publish(topic, first)
        self.broker.stop()
        time.sleep(0.5)
        self.broker.start()
        second = [json.dumps({"i": i}) for i in range(500, 1000)]
        self.broker.publish(topic, second)
        self.assertTrue(wait_until(lambda: len(set(self.lines())) >= 1000, 60), self.read(err))
        self.assertEqual(set(self.lines()), set(first + second))
        self.assertIn("reconnected after", self.read(err))
        self.stop(proc, err)

    def test_sink_keeps_elements_across_a_broker_restart(self):
        topic = uid("bs")
        sub_id = uid("bsub")
        sub = self.broker.subscribe(topic, 1, sub_id)  # makes the persistent session
        sub.kill()
        sub.wait()
        sub.stdout.close()
        sub.stderr.close()
        open(self.path("in.txt"), "w").close()
        text = (f'name = "{uid("p")}"\n[sources.lines]\ntype = "from_textfile"\npath = "in.txt"\n'
                "follow = true\npoll_interval_ms = 5\n" +
                self.sink_toml(inputs=("lines",), topic=topic, qos=1))
        proc, _, err = self.spawn("run", self.write("p.toml", text))
        self.assertTrue(wait_until(lambda: "to_mqtt: connected" in self.read(err), 30),
                        self.read(err))

        def append(lines):
            with open(self.path("in.txt"), "a", encoding="utf-8") as f:
                f.write("".join(f"{x}\n" for x in lines))

        append(range(300))
        time.sleep(0.5)
        self.broker.stop()
        append(range(300, 600))  # published while the broker is down
        time.sleep(1)
        self.broker.start()
        sub = self.broker.subscribe(topic, 600, sub_id, timeout=60, new=False)
        out, _ = sub.communicate(timeout=90)
        got = {line.split(" ", 1)[1] for line in out.decode().splitlines()}
        self.assertEqual(got, {str(i) for i in range(600)}, self.read(err))
        self.stop_proc(proc, err)

    def stop_proc(self, proc, err):
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


class BackPressureTest(FollowingSource):

    def test_a_slow_pipeline_stops_reading_and_memory_stays_flat(self):
        topic = uid("bp")
        n, size = 4000, 10_000  # 40 MB in all
        cfg_text = (f'name = "{uid("p")}"\n' + self.source_toml([topic], qos=1) +
                    '[operators.slow]\ntype = "rate_limit"\ninputs = ["in"]\n'
                    "interval_ms = 2\nmax_queued = 50\n" + self.file_sink(inputs=("slow",)))
        cfg = self.write("p.toml", cfg_text)
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_until(lambda: "from_mqtt: subscribed to" in self.read(err), 30),
                        self.read(err))
        rss_start = rss_kib(proc.pid)
        pad = "x" * size
        self.broker.publish(topic, [f"{i} {pad}" for i in range(n)])
        # Published in full, while the pipeline (1 element per 2 ms) is still far behind: the
        # messages wait in the broker, not in sluiced.
        behind = n - len(self.read("out.jsonl").splitlines())
        self.assertGreater(behind, n // 4)
        peak = rss_start
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(self.read("out.jsonl").splitlines()) < n:
            peak = max(peak, rss_kib(proc.pid))
            time.sleep(0.1)
        self.assertEqual(len(self.lines()), n, self.read(err))
        print(f"\nRSS {rss_start} KiB at start, peak {peak} KiB; {behind} messages behind "
              f"when the publisher finished")
        self.assertLess(peak - rss_start, 20 * 1024, "sluiced buffered what the broker should hold")
        self.stop(proc, err)


class MetricsTest(FollowingSource):

    def test_counters_on_metrics(self):
        from service_it import admin_url, http, parse_prometheus, sample  # tests/service
        topic, out_topic = uid("m"), uid("mo")
        sub = self.broker.subscribe(out_topic, 50, uid("msub"))
        cfg = self.write("p.toml", f'name = "{uid("p")}"\n[admin]\nport = 0\n'
                         '[checkpoint]\ninterval_ms = 50\ndir = "ck"\n' +
                         self.source_toml([topic]) + self.sink_toml(topic=out_topic))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_until(lambda: "subscribed to" in self.read(err), 30), self.read(err))
        self.broker.publish(topic, [f"m{i:03d}" for i in range(50)])  # 4 bytes each
        out, _ = sub.communicate(timeout=60)
        self.assertEqual(len(out.decode().splitlines()), 50)

        def value(name, node):
            status, _, body = http("GET", base + "/metrics")
            self.assertEqual(status, 200, body)
            return sample(parse_prometheus(body), "sluice_node_" + name, node=node)

        # Gauges are published once a second.
        self.assertTrue(wait_until(lambda: value("mqtt_messages_total", "out") == 50, 10))
        self.assertTrue(wait_until(lambda: value("mqtt_in_flight", "in") == 0, 10))
        self.assertEqual(value("mqtt_messages_total", "in"), 50)
        self.assertEqual(value("mqtt_bytes_total", "in"), 200)
        self.assertEqual(value("mqtt_bytes_total", "out"), 200)
        self.assertEqual(value("mqtt_in_flight", "out"), 0)
        self.assertEqual(value("mqtt_reconnects_total", "in"), 0)
        self.assertEqual(value("mqtt_decode_errors_total", "in"), 0)
        self.stop(proc, err)


class ExampleTest(MqttTestCase):
    """examples/pipelines/sensor_alerts_mqtt.toml, end to end against the broker."""

    def test_sensor_alerts_example(self):
        example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "pipelines",
                               "sensor_alerts_mqtt.toml")
        sub = self.broker.subscribe("alerts/#", 2, uid("alerts"))
        proc, _, err = self.spawn("run", os.path.abspath(example),
                                  env=self.env(MQTT_PORT=str(self.broker.port)))
        self.assertTrue(wait_until(lambda: "subscribed to" in self.read(err), 30), self.read(err))
        self.broker.publish("sensors/kitchen/temp", ['{"celsius": 31.5}', '{"celsius": 20}'])
        self.broker.publish("sensors/attic/temp", ["garbage", '{"celsius": 35}'])
        out, _ = sub.communicate(timeout=60)
        got = sorted(line.split(" ", 1) for line in out.decode().splitlines())
        self.assertEqual([t for t, _ in got], ["alerts/attic", "alerts/kitchen"], self.read(err))
        self.assertEqual(json.loads(got[1][1]),
                         {"sensor": "kitchen", "celsius": 31.5, "topic": "alerts/kitchen"})
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


def rss_kib(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


if __name__ == "__main__":
    unittest.main()
