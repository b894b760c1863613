"""to_http against a real HTTP server process (http_server.py): batch shapes, headers and
secrets, retries (bounded, Retry-After, resets, hangs), refused batches and on_rejected,
back-pressure with a slow server, checkpointed runs, `sluiced validate`."""

import json
import os
import signal
import time

from http_it import HERE, HttpTestCase, iterable, unittest
from sluice_it import (EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, PLUGIN_DIR, line_col, plugin_file,
                       toml_str, wait_for)


def items(n, **extra):
    return [{"id": i, **extra} for i in range(n)]


class BatchShapeTest(HttpTestCase):

    def test_ndjson_batches_carry_every_element_once(self):
        data = items(1000, word="w")
        cfg = self.write("p.toml", iterable(data) + self.sink_toml(batch_max_events=100))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        got = self.server.received()
        self.assertTrue(all(r["method"] == "POST" and r["path"] == "/ingest" for r in got))
        self.assertTrue(all(r["headers"]["content-type"] == "application/x-ndjson" for r in got))
        for r in got:
            self.assertTrue(r["body"].endswith("\n"))
            self.assertLessEqual(len(r["body"].splitlines()), 100)
        self.assertGreaterEqual(len(got), 10)
        self.assertEqual(sorted(self.accepted_elements(), key=lambda x: x["id"]), data)

    def test_json_array_with_put(self):
        data = items(20)
        cfg = self.write("p.toml", iterable(data) + self.sink_toml(
            method="PUT", encoding="json_array", batch_max_events=7))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        got = self.server.received()
        self.assertTrue(all(r["method"] == "PUT" for r in got))
        self.assertTrue(all(r["headers"]["content-type"] == "application/json" for r in got))
        arrays = [json.loads(r["body"]) for r in got]
        self.assertTrue(all(isinstance(a, list) and 1 <= len(a) <= 7 for a in arrays), arrays)
        self.assertEqual(sorted((x for a in arrays for x in a), key=lambda x: x["id"]), data)

    def test_json_sends_one_element_per_request(self):
        data = [{"id": 1}, "two", [3], None]
        cfg = self.write("p.toml", iterable(data) + self.sink_toml(encoding="json"))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        bodies = [json.loads(r["body"]) for r in self.server.received()]
        self.assertEqual(sorted(map(json.dumps, bodies)), sorted(map(json.dumps, data)))

    def test_batch_max_bytes_bounds_each_body(self):
        data = [{"id": i, "pad": "x" * 40} for i in range(100)]
        big = {"id": 999, "pad": "y" * 500}  # larger than a batch alone: goes alone
        cfg = self.write("p.toml", iterable(data + [big]) + self.sink_toml(batch_max_bytes=200))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        for r in self.server.received():
            lines = r["body"].splitlines()
            if len(lines) > 1:
                self.assertLessEqual(len(r["body"].encode()), 200)
        self.assertEqual(sorted(self.accepted_elements(), key=lambda x: x["id"]), data + [big])


class HeadersTest(HttpTestCase):
    TOKEN = "Bearer tok-S3cret-0815"

    def test_headers_and_a_secret_one_sent_never_printed(self):
        self.write("token", self.TOKEN + "\n")
        cfg = self.write("p.toml", iterable(items(3)) + self.sink_toml(
            headers='{ Authorization = { secret_file = "token" }, X-Team = "blue", '
                    '"Content-Type" = "application/vnd.x+ndjson" }'))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        h = self.server.received()[0]["headers"]
        self.assertEqual(h["authorization"], self.TOKEN)
        self.assertEqual(h["x-team"], "blue")
        self.assertEqual(h["content-type"], "application/vnd.x+ndjson")
        self.assertNotIn("tok-S3cret", r.stdout + r.stderr)
        g = self.sluiced("graph", "--format", "json", cfg)
        self.assertExit(g, EXIT_OK)
        self.assertNotIn("tok-S3cret", g.stdout + g.stderr)
        self.assertIn("<redacted>", g.stdout)
        # A failure names the URL and the answer, never a header value.
        self.server.control(default={"status": 401, "body": "who are you"})
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr('refused a batch of 3 elements: HTTP 401 "who are you"', r)
        self.assertNotIn("tok-S3cret", r.stdout + r.stderr)


class RetryTest(HttpTestCase):

    def test_500_503_and_a_reset_are_retried_with_the_same_key(self):
        self.server.control(script=[{"status": 500}, {"status": 503}, {"reset": True}])
        data = items(5)
        cfg = self.write("p.toml", iterable(data) + self.sink_toml(
            concurrency=1, retry_initial_backoff_ms=20, idempotency_key_header="Idempotency-Key"))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        got = self.server.received()
        self.assertEqual(len(got), 4, got)  # one batch: three failures, then accepted
        self.assertEqual(len({g["body"] for g in got}), 1)
        keys = {g["headers"]["idempotency-key"] for g in got}
        self.assertEqual(len(keys), 1, keys)
        self.assertRegex(keys.pop(), r"^[0-9a-f]{32}$")
        self.assertEqual(self.accepted_elements(), data)
        self.assertInStderr("HTTP 500; retry 1 of a batch of 5 elements", r)

    def test_two_sinks_sending_the_same_body_get_different_keys(self):
        # Two senders (here two sinks; two tasks alike: the task index is part of the key)
        # send the same body in the same checkpoint segment: a receiver that dropped one as
        # a copy of the other would lose a batch.
        second = self.sink_toml(idempotency_key_header="Idempotency-Key").replace(
            "[sinks.out]", "[sinks.out2]")
        cfg = self.write("p.toml", '[checkpoint]\ndir = "ck"\n' + iterable(items(3)) +
                         self.sink_toml(idempotency_key_header="Idempotency-Key") + second)
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        got = self.accepted()
        self.assertEqual(len(got), 2)
        self.assertEqual(got[0]["body"], got[1]["body"])
        self.assertNotEqual(got[0]["headers"]["idempotency-key"],
                            got[1]["headers"]["idempotency-key"])

    def test_retry_after_is_honoured(self):
        self.server.control(script=[{"status": 429, "headers": {"Retry-After": "2"}}])
        cfg = self.write("p.toml", iterable(items(3)) + self.sink_toml(
            retry_initial_backoff_ms=10, retry_max_backoff_ms=20))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        got = self.server.received()
        self.assertEqual([g["answer"].get("status") for g in got], [429, 200])
        # The backoff alone would have retried after at most 20 ms.
        self.assertGreaterEqual(got[1]["t"] - got[0]["t"], 1.9)

    def test_retries_are_bounded_by_count(self):
        self.server.control(default={"status": 502})
        cfg = self.write("p.toml", iterable(items(3)) + self.sink_toml(
            max_retries=3, retry_initial_backoff_ms=5))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertEqual(len(self.server.received()), 4)
        self.assertInStderr("was not delivered after 3 retries (max_retries); the last "
                            "attempt: HTTP 502", r)

    def test_retries_are_bounded_by_time_and_a_long_retry_after_fails_at_once(self):
        self.server.control(default={"status": 503, "headers": {"Retry-After": "3600"}})
        cfg = self.write("p.toml", iterable(items(3)) + self.sink_toml(retry_max_elapsed_ms=2000))
        r = self.sluiced("run", cfg, timeout=30)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertLess(r.elapsed, 20)
        self.assertEqual(len(self.server.received()), 1)
        self.assertInStderr("within retry_max_elapsed_ms = 2000 ms (the server asked to wait "
                            "3600 s)", r)

    def test_a_retry_after_past_any_clock_is_capped_at_a_day(self):
        # The largest int64 curl reads: in milliseconds it once overflowed.
        self.server.control(default={"status": 429,
                                     "headers": {"Retry-After": "9223372036854775807"}})
        cfg = self.write("p.toml", iterable(items(3)) + self.sink_toml(retry_max_elapsed_ms=2000))
        r = self.sluiced("run", cfg, timeout=30)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertEqual(len(self.server.received()), 1)
        self.assertInStderr("(the server asked to wait 86400 s)", r)

    def test_a_hanging_server_times_out_and_the_batch_is_retried(self):
        self.server.control(script=[{"hang": 5}])
        data = items(4)
        cfg = self.write("p.toml", iterable(data) + self.sink_toml(
            timeout_ms=500, retry_initial_backoff_ms=10))
        r = self.sluiced("run", cfg, timeout=30)
        self.assertExit(r, EXIT_OK)
        self.assertInStderr("Operation timed out", r)
        got = self.server.received()
        self.assertEqual(len(got), 2)
        self.assertEqual(got[0]["body"], got[1]["body"])
        self.assertEqual(self.accepted_elements(), data)

    def test_no_server_at_all_fails_after_the_retries(self):
        self.server.stop()  # the port is closed now: connection refused
        cfg = self.write("p.toml", iterable(items(2)) + self.sink_toml(
            max_retries=2, retry_initial_backoff_ms=5))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("was not delivered after 2 retries", r)
        self.assertRegex(r.stderr, "Failed to connect|Connection refused|Couldn't connect")


class RejectedTest(HttpTestCase):

    def data(self):
        return [{"id": i, "ok": i % 5 != 3} for i in range(20)]

    def test_400_goes_to_the_dead_letter_output(self):
        self.server.control(reject_containing='"ok":false')
        text = (iterable(self.data()) + self.sink_toml(batch_max_events=1,
                                                       on_rejected="dead_letter") +
                '[sinks.dlq]\ntype = "sink_to_textfile"\ninputs = ["out.rejected"]\n'
                'path = "rejected.jsonl"\nformat = "json"\n')
        r = self.sluiced("run", self.write("p.toml", text))
        self.assertExit(r, EXIT_OK)
        rejected = [json.loads(line) for line in self.read("rejected.jsonl").splitlines()]
        self.assertEqual(sorted(x["id"] for x in rejected), [3, 8, 13, 18])
        self.assertTrue(all(not x["ok"] for x in rejected))
        self.assertEqual(sorted(x["id"] for x in self.accepted_elements()),
                         [i for i in range(20) if i % 5 != 3])

    def test_dead_letters_while_checkpoints_are_prepared(self):
        # Slow refusals with a checkpoint every 10 ms: many land while a prepare waits for
        # them, and are emitted to the dead-letter sink then.
        self.server.control(default={"status": 400, "delay": 0.02})
        text = ('[checkpoint]\ninterval_ms = 10\ndir = "ck"\n' + iterable(items(60)) +
                self.sink_toml(batch_max_events=1, concurrency=4, on_rejected="dead_letter") +
                '[sinks.dlq]\ntype = "sink_to_textfile"\ninputs = ["out.rejected"]\n'
                'path = "rejected.jsonl"\nformat = "json"\n')
        r = self.sluiced("run", self.write("p.toml", text))
        self.assertExit(r, EXIT_OK)
        rejected = [json.loads(line) for line in self.read("rejected.jsonl").splitlines()]
        self.assertEqual(sorted(x["id"] for x in rejected), list(range(60)))

    def test_fail_is_the_default_and_skip_goes_on(self):
        self.server.control(reject_containing='"ok":false')
        r = self.sluiced("run", self.write("p.toml", iterable(self.data()) + self.sink_toml(
            batch_max_events=1)))
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr('refused a batch of 1 elements: HTTP 400 "rejected: contains', r)
        self.assertInStderr('on_rejected = "fail"', r)
        self.server.control(reject_containing='"ok":false')
        r = self.sluiced("run", self.write("p2.toml", iterable(self.data()) + self.sink_toml(
            batch_max_events=1, on_rejected="skip")))
        self.assertExit(r, EXIT_OK)
        self.assertInStderr("skipped (1 batches skipped so far)", r)
        self.assertInStderr("skipped (4 batches skipped so far)", r)


class BackpressureTest(HttpTestCase):

    def test_a_slow_server_pauses_the_source_and_bounds_what_is_pending(self):
        from service_it import admin_url, http, parse_prometheus, sample  # tests/service
        self.server.control(default={"status": 200, "delay": 0.1})
        n, batch = 3000, 10
        lines = "".join(json.dumps({"id": i}) + "\n" for i in range(n))
        self.write("in.txt", lines)
        text = ('[admin]\nport = 0\n[runtime]\nbatch_size = 16\n'
                '[sources.lines]\ntype = "from_textfile"\npath = "in.txt"\n'
                '[operators.in]\ntype = "map"\ninputs = ["lines"]\nfunction = "json_parse"\n' +
                self.sink_toml(batch_max_events=batch, concurrency=2, max_pending_batches=3,
                               batch_timeout_ms=5))
        proc, _, err = self.spawn("run", self.write("p.toml", text))
        base = admin_url(err)

        def metrics():
            status, _, body = http("GET", base + "/metrics")
            self.assertEqual(status, 200, body)
            return parse_prometheus(body)

        # 2 requests of 10 elements per 0.1 s: about 200 elements/s against 3000 to send.
        worst = 0
        paused_seen = False
        for _ in range(15):
            time.sleep(0.2)
            m = metrics()
            delivered_in = sample(m, "sluice_node_messages_in_total", node="out")
            pending = sample(m, "sluice_node_http_pending_batches", node="out")
            sent = sample(m, "sluice_node_http_events_total", node="out")
            self.assertLessEqual(pending, 3)
            # What the sink holds: pending batches, the open one, one delivery of the
            # runtime's batch size, and what the 0.2 s old gauge has not counted yet.
            worst = max(worst, delivered_in - sent)
            paused_seen = paused_seen or sample(m, "sluice_source_backpressured",
                                                node="lines") == 1
        self.assertTrue(paused_seen, "the source was never held by back-pressure")
        self.assertLess(worst, 3 * batch + batch + 16 + 60, worst)
        self.assertLessEqual(self.server.stats()["max_in_flight"], 2)
        self.assertTrue(wait_for(lambda: proc.poll() is not None, 60), self.read(err))
        self.assertEqual(proc.returncode, 0, self.read(err))
        self.assertEqual(sorted(x["id"] for x in self.accepted_elements()), list(range(n)))


class MetricsTest(HttpTestCase):

    def test_counters_on_metrics(self):
        from service_it import admin_url, http, parse_prometheus, sample  # tests/service
        self.server.control(script=[{"status": 500}])
        self.write("in.txt", "".join(json.dumps({"id": i}) + "\n" for i in range(1000)))
        text = ('[admin]\nport = 0\n'
                '[sources.lines]\ntype = "from_textfile"\npath = "in.txt"\nfollow = true\n'
                '[operators.in]\ntype = "map"\ninputs = ["lines"]\nfunction = "json_parse"\n' +
                self.sink_toml(batch_max_events=100, retry_initial_backoff_ms=5))
        proc, _, err = self.spawn("run", self.write("p.toml", text))
        base = admin_url(err)

        def value(name):
            status, _, body = http("GET", base + "/metrics")
            self.assertEqual(status, 200, body)
            return sample(parse_prometheus(body), "sluice_node_" + name, node="out")

        self.assertTrue(wait_for(lambda: value("http_events_total") == 1000, 30), self.read(err))
        accepted = self.accepted()
        self.assertEqual(value("http_requests_total"), len(self.server.received()))
        self.assertEqual(value("http_retries_total"), 1)
        self.assertEqual(value("http_failures_total"), 1)
        self.assertEqual(value("http_rejected_batches_total"), 0)
        self.assertEqual(value("http_bytes_total"), sum(len(r["body"]) for r in accepted))
        self.assertGreater(value("http_request_seconds_total"), 0)
        self.assertGreater(value("http_request_latency_seconds"), 0)
        self.assertEqual(value("http_in_flight_requests"), 0)
        self.assertEqual(value("http_pending_batches"), 0)
        _, _, body = http("GET", base + "/metrics")
        self.assertIn("# TYPE sluice_node_http_requests_total counter", body)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


class CheckpointTest(HttpTestCase):

    def test_checkpointed_run_delivers_everything_and_answers_prepares(self):
        self.server.control(default={"status": 200, "delay": 0.01})
        data = items(2000)
        cfg = self.write("p.toml", 'name = "ck"\n[checkpoint]\ninterval_ms = 20\ndir = "ck"\n' +
                         iterable(data) + self.sink_toml(batch_max_events=50))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(sorted(x["id"] for x in self.accepted_elements()), list(range(2000)))

    def test_sigterm_without_checkpoints_delivers_what_was_read(self):
        self.server.control(default={"status": 200, "delay": 0.05})
        self.write("in.txt", "".join(json.dumps({"id": i}) + "\n" for i in range(300)))
        text = ('[sources.lines]\ntype = "from_textfile"\npath = "in.txt"\nfollow = true\n'
                '[operators.in]\ntype = "map"\ninputs = ["lines"]\nfunction = "json_parse"\n' +
                self.sink_toml(batch_max_events=10, concurrency=1, max_pending_batches=20))
        proc, _, err = self.spawn("run", self.write("p.toml", text))
        self.assertTrue(wait_for(lambda: len(self.server.received()) >= 3, 30), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(60), 0, self.read(err))
        # Everything the sink got was delivered before the exit.
        got = sorted(x["id"] for x in self.accepted_elements())
        self.assertEqual(got, list(range(len(got))))
        self.assertGreater(len(got), 30)


class ExampleTest(HttpTestCase):

    def test_the_example_pipeline_posts_every_line(self):
        root = os.path.dirname(os.path.dirname(HERE))
        with open(os.path.join(root, "examples/pipelines/lines_to_http.toml"), encoding="utf-8") as f:
            text = f.read()
        lines_path = os.path.join(root, "examples/data/lines.txt")
        text = text.replace('"examples/data/lines.txt"', toml_str(lines_path))
        r = self.sluiced("run", self.write("example.toml", text),
                         env=self.env(HTTP_URL=self.server.url + "/ingest"))
        self.assertExit(r, EXIT_OK)
        with open(lines_path, encoding="utf-8") as f:
            want = [line for line in f.read().split("\n") if line]
        got = self.accepted_elements()
        self.assertEqual([e["line"] for e in got], want)
        self.assertEqual(got[0]["words"], len(want[0].split()))
        self.assertTrue(all("idempotency-key" in r["headers"] for r in self.accepted()))


class ConformanceKitTest(HttpTestCase):

    def test_conformance_kit_with_crash_checks(self):
        readback = (f"/usr/bin/python3 {os.path.join(HERE, 'readback.py')} "
                    f"{self.server.record_path}")
        check = self.write("check.toml", f"""
[to_http]
url = {json.dumps(self.server.url + "/ingest")}
batch_timeout_ms = 5
[check.to_http]
readback = {json.dumps(readback)}
""")
        r = self.sluiced("plugin-check", plugin_file(PLUGIN_DIR, "http_sink"), "--config", check,
                         timeout=600)
        self.assertExit(r, EXIT_OK)
        self.assertInStdout("crash: killed after prepare, before the checkpoint was stored", r)
        self.assertRegex(r.stdout, r"\d+ passed, 0 failed, 0 not exercised")


class ValidateTest(HttpTestCase):

    def assertValidateError(self, text, key, message):
        r = self.sluiced("validate", self.write("bad.toml", text))
        self.assertExit(r, EXIT_INVALID)
        line, _ = line_col(text, f"\n{key} =")
        self.assertRegex(r.stderr, rf"bad\.toml:{line + 1}:\d+: error: node 'out': key '{key}'",
                         r.describe())
        self.assertInStderr(message, r)

    def test_validate_catches_config_errors(self):
        src = iterable([1])
        cases = [
            (src + '[sinks.out]\ntype = "to_http"\ninputs = ["in"]\nurl = "http://exa mple/"\n',
             "url", "is not a valid URL"),
            (src + '[sinks.out]\ntype = "to_http"\ninputs = ["in"]\nurl = "ftp://h/x"\n',
             "url", 'must be an http:// or https:// URL (got scheme "ftp")'),
            (src + self.sink_toml(method="GET"), "method", '"POST", "PUT"'),
            (src + self.sink_toml(encoding="json", batch_max_events=5), "batch_max_events",
             'must be 1 with encoding = "json"'),
            (src + self.sink_toml(concurrency=8, max_pending_batches=4), "max_pending_batches",
             "must be at least `concurrency` (8; got 4)"),
            (src + self.sink_toml(batch_max_events=0), "batch_max_events", ""),
            (src + self.sink_toml(retry_initial_backoff_ms=500, retry_max_backoff_ms=100),
             "retry_max_backoff_ms", "must be at least retry_initial_backoff_ms"),
            (src + self.sink_toml(headers='{ "Bad Name" = "x" }'), "headers",
             '"Bad Name", which is not a header name'),
            (src + self.sink_toml(idempotency_key_header="a:b"), "idempotency_key_header",
             "is not a header name"),
        ]
        for text, key, message in cases:
            with self.subTest(key=key, message=message):
                self.assertValidateError(text, key, message)

    def test_a_good_config_validates(self):
        r = self.sluiced("validate", self.write("ok.toml", iterable([1]) + self.sink_toml(
            headers='{ Authorization = "x" }', idempotency_key_header="Idempotency-Key")))
        self.assertExit(r, EXIT_OK)


if __name__ == "__main__":
    unittest.main()
