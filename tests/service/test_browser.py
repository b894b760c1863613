"""The live graph page in headless Chromium, driven through chromedriver's W3C WebDriver
HTTP API (plain urllib): the page draws every node, the rates it shows move while data
flows, the watermark of an event_time node's stream shows, and its pause button stops a
source (and resume starts it again). A 30-node chain stays inside the window, the node
that back-pressures and the node with errors are highlighted, the back-pressuring node
names the source it holds, and each node draws its rate history (a sparkline)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from service_it import admin_url, http, read_text
from sluice_it import EXIT_OK, SluiceTestCase, toml_str, wait_for

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C element reference key

PIPELINE = """
name = "live"
[admin]
port = 0
token = "t0ken"
[sources.ticks]
type = "from_periodic"
interval_ms = 10
[operators.et]
type = "event_time"
inputs = ["ticks"]
[operators.keep]
type = "filter"
inputs = ["et"]
function = {{ name = "ge", args = {{ value = 0 }} }}
[sinks.out]
type = "sink_to_textfile"
inputs = ["keep"]
path = {out}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self, base):
        self.base = base
        self.session = None

    def call(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"WebDriver {method} {path}: {e.code} {e.read()[:2000]!r}")

    def start(self, user_data_dir):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                         "--window-size=1000,800",
                         "--disable-background-networking", "--disable-dev-shm-usage",
                         f"--user-data-dir={user_data_dir}"],
            }}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def quit(self):
        if self.session:
            try:
                self.call("DELETE", f"/session/{self.session}", timeout=20)
            except Exception:  # noqa: BLE001 (best effort at cleanup)
                pass

    def s(self, path):
        return f"/session/{self.session}{path}"

    def go(self, url):
        self.call("POST", self.s("/url"), {"url": url})

    def script(self, script, *args):
        return self.call("POST", self.s("/execute/sync"), {"script": script, "args": list(args)})

    def text(self, element_id):
        """textContent of #element_id, or None when absent."""
        return self.call("POST", self.s("/execute/sync"), {
            "script": "const e = document.getElementById(arguments[0]);"
                      "return e ? e.textContent : null;",
            "args": [element_id]})

    def click(self, element_id):
        ref = self.call("POST", self.s("/element"), {"using": "css selector",
                                                     "value": "#" + element_id})
        self.call("POST", self.s(f"/element/{ref[ELEMENT]}/click"), {})


def number(text):
    try:
        return float(text.rstrip("/s"))
    except (AttributeError, ValueError):
        return None


@unittest.skipUnless(CHROMIUM and CHROMEDRIVER,
                     "SKIPPED: chromium and chromium-driver are not installed "
                     "(scripts/setup.sh installs them)")
class LivePageTest(SluiceTestCase):
    def browser(self):
        """A WebDriver session on a headless Chromium (stopped at cleanup)."""
        port = free_port()
        log = open(self.path("chromedriver.log"), "wb")
        self.addCleanup(log.close)
        driver_proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=log,
                                       stderr=subprocess.STDOUT)

        def stop_driver():
            driver_proc.terminate()
            try:
                driver_proc.wait(10)
            except subprocess.TimeoutExpired:
                driver_proc.kill()
                driver_proc.wait()
        self.addCleanup(stop_driver)
        driver = WebDriver(f"http://127.0.0.1:{port}")

        def driver_up():
            try:
                return driver.call("GET", "/status", timeout=2).get("ready")
            except Exception:  # noqa: BLE001 (not listening yet)
                return False
        self.assertTrue(wait_for(driver_up, 30), read_text(self.path("chromedriver.log")))
        driver.start(self.mkdir("chrome-profile"))
        self.addCleanup(driver.quit)
        return driver

    def test_rates_move_and_pause_stops_a_source(self):
        cfg = self.write("p.toml", PIPELINE.format(out=toml_str(self.path("out.txt"))))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20))
        driver = self.browser()

        # The token travels in the fragment, which the page sends as a bearer header.
        driver.go(base + "/#token=t0ken")
        self.assertTrue(wait_for(lambda: driver.text("rate-out") not in (None, ""), 20),
                        f"the page did not draw the graph: state={driver.text('state')!r}")
        for node in ("ticks", "et", "keep", "out"):
            self.assertIsNotNone(driver.text("node-" + node), f"node {node} not drawn")
        self.assertEqual(driver.text("title"), "sluiced: live")

        # Rates move while data flows: ~100/s from a 10 ms source.
        self.assertTrue(wait_for(lambda: (number(driver.text("out-rate-ticks")) or 0) > 20, 10),
                        f"source rate shown: {driver.text('out-rate-ticks')!r}")
        self.assertTrue(wait_for(lambda: (number(driver.text("rate-out")) or 0) > 20, 10),
                        f"sink rate shown: {driver.text('rate-out')!r}")
        # Event time: from_periodic stamps each tick with the time it went out, event_time
        # makes the watermark of it, filter passes it on: the page shows it in UTC, a moment
        # behind the wall clock.
        self.assertTrue(wait_for(lambda: (driver.text("wm-keep") or "").startswith(
            time.strftime("%Y-", time.gmtime())), 10), f"watermark: {driver.text('wm-keep')!r}")
        self.assertLess(float(driver.text("wm-lag-keep").rstrip(" s")), 30.0)
        self.assertEqual(driver.text("wm-ticks"), "")  # no event time upstream of a source
        count1 = number(driver.text("in-out"))
        time.sleep(1.5)
        count2 = number(driver.text("in-out"))
        self.assertGreater(count2, count1, "the sink's count did not move on the page")

        # The pause button stops the source: the page shows it paused, the rate falls to 0.
        driver.click("pause-ticks")
        self.assertTrue(wait_for(lambda: driver.text("status-ticks") == "paused", 5))
        self.assertTrue(wait_for(lambda: number(driver.text("out-rate-ticks")) == 0, 5),
                        f"rate while paused: {driver.text('out-rate-ticks')!r}")
        frozen = number(driver.text("in-out"))
        time.sleep(1.5)
        self.assertEqual(number(driver.text("in-out")), frozen, "data flowed while paused")
        stats = json.loads(http("GET", base + "/stats", {"Authorization": "Bearer t0ken"})[2])
        self.assertTrue([n for n in stats["nodes"] if n["id"] == "ticks"][0]["paused"])

        driver.click("resume-ticks")
        self.assertTrue(wait_for(lambda: driver.text("status-ticks") == "", 5))
        self.assertTrue(wait_for(lambda: (number(driver.text("out-rate-ticks")) or 0) > 20, 10),
                        f"rate after resume: {driver.text('out-rate-ticks')!r}")

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))

    def test_long_chain_backpressure_errors_and_sparklines(self):
        chain = [f"c{k}" for k in range(26)]
        parts = [CHAIN_HEAD.format(bad_out=toml_str(self.path("bad.txt")))]
        previous = "slow"
        for node in chain:
            parts.append(CHAIN_LINK.format(id=node, input=previous))
            previous = node
        parts.append(CHAIN_TAIL.format(input=previous, out=toml_str(self.path("out.txt"))))
        cfg = self.write("chain.toml", "".join(parts))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.assertTrue(wait_for(lambda: http("GET", base + "/readyz")[0] == 200, 20),
                        read_text(err))
        driver = self.browser()
        driver.go(base + "/#token=t0ken")
        ids = ["ticks", "bad", "bad_out", "slow"] + chain + ["out"]
        self.assertEqual(len(ids), 31)
        self.assertTrue(wait_for(lambda: driver.text("node-out") is not None, 20),
                        f"the page did not draw the graph: state={driver.text('state')!r}")

        # Every node's box is inside the window (the layout wraps the chain).
        outside = driver.script(
            "const w = document.documentElement.clientWidth; return Array.from("
            "document.querySelectorAll('g.node')).filter(g => {"
            "const r = g.getBoundingClientRect(); return r.left < 0 || r.right > w; })"
            ".map(g => g.id + ' ' + Math.round(g.getBoundingClientRect().right) + '>' + w);")
        self.assertEqual(outside, [])
        for node in ids:
            self.assertIsNotNone(driver.text("node-" + node), f"node {node} not drawn")

        def classes(node):
            return driver.script("const g = document.getElementById(arguments[0]);"
                                 "return g ? Array.from(g.classList) : [];", "node-" + node)
        # rate_limit (one element a second, max_queued 1) back-pressures and holds ticks.
        self.assertTrue(wait_for(lambda: "backpressure" in classes("slow"), 20),
                        f"slow: {classes('slow')}, state={driver.text('state')!r}")
        self.assertTrue(wait_for(lambda: driver.text("hold-slow") == "holding: ticks", 10),
                        f"hold-slow: {driver.text('hold-slow')!r}")
        self.assertIn("holding: ticks", driver.text("status-slow"))
        self.assertTrue(wait_for(lambda: "held by: slow" == driver.text("hold-ticks"), 10),
                        f"hold-ticks: {driver.text('hold-ticks')!r}")
        self.assertNotIn("backpressure", classes("c5"))
        # `bad` fails on every element (upper of an int), skipped: highlighted as failing.
        self.assertTrue(wait_for(lambda: "errors" in classes("bad"), 10), classes("bad"))
        self.assertNotIn("errors", classes("slow"))

        # The sparkline: one point per refresh (about a second), up to 60.
        def points(node):
            return len((driver.script(
                "const e = document.getElementById(arguments[0]);"
                "return e ? e.getAttribute('points') : '';", "spark-" + node) or "").split())
        self.assertTrue(wait_for(lambda: points("bad") >= 3, 15), points("bad"))
        self.assertTrue(wait_for(lambda: points("out") >= 3, 15), points("out"))

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), EXIT_OK, read_text(err))


# 31 nodes: ticks feeds `bad` (fails on every element, on_error = "skip") and a rate_limit
# that lets one element through a second, followed by a chain of 26 filters.
CHAIN_HEAD = """
name = "chain"
[admin]
port = 0
token = "t0ken"
[sources.ticks]
type = "from_periodic"
interval_ms = 5
[operators.bad]
type = "map"
inputs = ["ticks"]
function = "upper"
on_error = "skip"
[sinks.bad_out]
type = "sink_to_textfile"
inputs = ["bad"]
path = {bad_out}
[operators.slow]
type = "rate_limit"
inputs = ["ticks"]
interval_ms = 1000
max_queued = 1
"""
CHAIN_LINK = """
[operators.{id}]
type = "filter"
inputs = ["{input}"]
function = {{ name = "ge", args = {{ value = 0 }} }}
"""
CHAIN_TAIL = """
[sinks.out]
type = "sink_to_textfile"
inputs = ["{input}"]
path = {out}
"""


if __name__ == "__main__":
    unittest.main()
