"""Shared base of the MQTT tests: one real mosquitto broker per test module
(mqtt_broker.Broker), sluiced as a real process (tests/integration/sluice_it.py), and
mosquitto_pub / mosquitto_sub as the independent client."""

import json
import unittest

from mqtt_broker import Broker, have_broker, wait_until
from sluice_it import SluiceTestCase


class MqttTestCase(SluiceTestCase):
    users = None  # {user: password}: the module's broker checks passwords
    tls = False  # the broker also has a TLS listener that requires client certificates
    broker = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not have_broker():
            raise unittest.SkipTest("mosquitto, mosquitto_pub or mosquitto_sub is missing "
                                    "(Debian: mosquitto, mosquitto-clients)")
        cls.broker = Broker(cls.users, cls.tls).start()

    @classmethod
    def tearDownClass(cls):
        if cls.broker is not None:
            cls.broker.destroy()
        super().tearDownClass()

    def source_toml(self, topics, node="in", **keys):
        text = (f"[sources.{node}]\ntype = \"from_mqtt\"\n"
                f"port = {keys.pop('port', self.broker.port)}\ntopics = {json.dumps(topics)}\n")
        return text + self.keys(keys)

    def sink_toml(self, node="out", inputs=("in",), **keys):
        text = (f"[sinks.{node}]\ntype = \"to_mqtt\"\ninputs = {json.dumps(list(inputs))}\n"
                f"port = {keys.pop('port', self.broker.port)}\n")
        return text + self.keys(keys)

    @staticmethod
    def keys(keys):
        text = ""
        for k, v in keys.items():
            text += f"{k} = {v if isinstance(v, str) and v.startswith('{') else json.dumps(v)}\n"
        return text

    def file_sink(self, path="out.jsonl", inputs=("in",)):
        return (f"[sinks.file]\ntype = \"sink_to_textfile\"\ninputs = {json.dumps(list(inputs))}\n"
                f"path = {json.dumps(path)}\n")

    def lines(self, name="out.jsonl"):
        """The complete JSON lines of an output file (a line cut by a kill is skipped)."""
        try:
            text = self.read(name)
        except FileNotFoundError:
            return []
        out = []
        for line in text.split("\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


__all__ = ["MqttTestCase", "unittest", "wait_until"]
