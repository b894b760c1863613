"""to_files writing real files under a real sluiced: buckets by key and by event and
processing time, rolling by size and by time, gzip read back with Python's gzip, the LRU
bound on open files, a key that tries to leave `dir`, and what `sluiced validate` refuses."""

import json
import os
import shutil
import signal
import time

from files_it import (in_progress_files, part_number, published_files, read_json_lines,
                      read_lines)
from sluice_it import EXIT_OK, PLUGIN_DIR, SluiceTestCase, unittest, wait_for


def iterable(items, node="in"):
    return (f'[sources.{node}]\ntype = "from_iterable"\n'
            f"json = {json.dumps([json.dumps(x) for x in items])}\n")


def sink(inputs="in", **keys):
    text = f'[sinks.out]\ntype = "to_files"\ninputs = ["{inputs}"]\ndir = "out"\n'
    for k, v in keys.items():
        text += f"{k} = {json.dumps(v)}\n"
    return text


class ToFilesTest(SluiceTestCase):

    def run_ok(self, toml):
        cfg = self.write("p.toml", toml)
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(in_progress_files(self.path("out")), [], r.stderr)
        return r

    def lines_by_file(self):
        root = self.path("out")
        return {f: read_json_lines(os.path.join(root, f)) for f in published_files(root)}

    def test_buckets_by_key_field_and_event_time(self):
        items = [
            {"user": "ann", "ts": "2026-12-01T10:15:00Z", "n": 0},
            {"user": "bob", "ts": "2026-12-01T10:59:59Z", "n": 1},
            {"user": "ann", "ts": "2026-12-01T11:00:00Z", "n": 2},
            {"user": "ann", "ts": "2026-12-01T10:30:00Z", "n": 3},  # out of order
            {"ts": "2026-12-01T10:00:00Z", "n": 4},  # no user field
            {"user": 7, "ts": "2026-12-31T23:00:00Z", "n": 5},
        ]
        self.run_ok(iterable(items) + """
[operators.stamped]
type = "event_time"
inputs = ["in"]
path = "ts"
""" + sink("stamped", path="{key}/%Y-%m-%d-%H.jsonl", key="user", time="event"))
        got = {}
        for f, lines in self.lines_by_file().items():
            bucket = f.split(".")[0]  # "ann/2026-12-01-10"
            self.assertTrue(f.endswith(".jsonl"), f)
            self.assertRegex(os.path.basename(f), r"^[0-9-]+\.out-0-[0-9a-f]{12}-[0-9]+\.jsonl$")
            got.setdefault(bucket, []).extend(x["n"] for x in lines)
        self.assertEqual({k: sorted(v) for k, v in got.items()}, {
            "ann/2026-12-01-10": [0, 3], "bob/2026-12-01-10": [1], "ann/2026-12-01-11": [2],
            "__null__/2026-12-01-10": [4], "7/2026-12-31-23": [5]})

    def test_message_key_and_processing_time(self):
        before = time.gmtime()
        self.run_ok(iterable([f"w{i % 3}" for i in range(30)]) + """
[operators.keyed]
type = "key_by"
inputs = ["in"]
lua = "x"
""" + sink("keyed", path="%Y/{key}-{task}.txt", format="text"))
        after = time.gmtime()
        files = published_files(self.path("out"))
        years = {f.split("/")[0] for f in files}
        self.assertTrue(years <= {str(before.tm_year), str(after.tm_year)}, files)
        words = {}
        for f in files:
            self.assertRegex(f, r"^\d{4}/w[012]-0\.out-0-[0-9a-f]{12}-\d+\.txt$")
            for line in read_lines(self.path("out", f)):
                self.assertEqual(os.path.basename(f)[:2], line)  # each key in its own file
                words[line] = words.get(line, 0) + 1
        self.assertEqual(words, {"w0": 10, "w1": 10, "w2": 10})

    def test_rolls_by_size_in_order(self):
        items = [{"i": i, "pad": "x" * 20} for i in range(200)]
        self.run_ok(iterable(items) + sink(path="all.jsonl", roll_bytes=300))
        files = sorted(self.lines_by_file().items(), key=lambda kv: part_number(kv[0]))
        self.assertGreater(len(files), 10)
        line_len = len(json.dumps(items[0], separators=(",", ":"))) + 1
        for f, lines in files:
            size = os.path.getsize(self.path("out", f))
            # Rolled once it reached roll_bytes: at most one line past it.
            self.assertLess(size, 300 + line_len + 2, f)
        self.assertEqual([x["i"] for _, lines in files for x in lines], list(range(200)))

    def test_gzip_files_read_back_complete(self):
        items = [{"i": i, "text": f"line {i} " * 5} for i in range(3000)]
        self.run_ok(iterable(items) + sink(path="{task}/data.jsonl", compression="gzip",
                                           roll_bytes=4000))
        files = published_files(self.path("out"))
        self.assertGreater(len(files), 2, files)
        seen = []
        for f in sorted(files, key=part_number):
            self.assertTrue(f.endswith(".jsonl.gz"), f)
            seen.extend(x["i"] for x in read_json_lines(self.path("out", f)))
        self.assertEqual(seen, list(range(3000)))

    def test_max_open_files_closes_the_least_recently_used(self):
        items = [{"k": "abcd"[i % 4], "i": i} for i in range(40)]
        self.run_ok(iterable(items) + sink(path="{key}.jsonl", key="k", max_open_files=2))
        per_key = {}
        files = published_files(self.path("out"))
        # Four keys in turn through two slots: every line after the first two opens a file.
        self.assertEqual(len(files), 40, files)
        for f in sorted(files, key=part_number):
            for x in read_json_lines(self.path("out", f)):
                per_key.setdefault(f[0], []).append(x["i"])
        self.assertEqual(per_key, {k: list(range(n, 40, 4)) for n, k in enumerate("abcd")})

    def test_rolls_by_time_while_running(self):
        self.write("in.txt", "")
        cfg = self.write("p.toml", """
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = true
poll_interval_ms = 10
""" + sink("lines", path="x.txt", format="text", roll_interval_ms=200))
        proc, _, err = self.spawn("run", cfg)
        with open(self.path("in.txt"), "a", encoding="utf-8") as f:
            for i in range(12):
                f.write(f"{i}\n")
                f.flush()
                time.sleep(0.1)
        # Published while the run goes on, with no stop and no checkpoint.
        self.assertTrue(wait_for(lambda: len(published_files(self.path("out"))) >= 3, 10),
                        published_files(self.path("out")))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))
        files = sorted(published_files(self.path("out")), key=part_number)
        self.assertEqual([ln for f in files for ln in read_lines(self.path("out", f))],
                         [str(i) for i in range(12)])
        self.assertEqual(in_progress_files(self.path("out")), [])

    def test_a_passed_processing_time_bucket_is_published_while_running(self):
        self.write("in.txt", "")
        cfg = self.write("p.toml", """
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = true
poll_interval_ms = 10
""" + sink("lines", path="%H%M%S.txt", format="text"))
        proc, _, err = self.spawn("run", cfg)
        with open(self.path("in.txt"), "a", encoding="utf-8") as f:
            f.write("first\n")
            f.flush()
            time.sleep(1.2)  # the next line falls in another second's bucket
            f.write("second\n")
            f.flush()
        # No roll by size or time, no checkpoint: the first second's file is published
        # because its bucket has passed.
        self.assertTrue(wait_for(lambda: len(published_files(self.path("out"))) == 1, 10),
                        self.read(err))
        first = published_files(self.path("out"))[0]
        self.assertEqual(read_lines(self.path("out", first)), ["first"])
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))
        files = published_files(self.path("out"))
        self.assertEqual(len(files), 2, files)
        self.assertEqual(read_lines(self.path("out", [f for f in files if f != first][0])),
                         ["second"])

    def test_keys_cannot_leave_dir(self):
        keys = ["../../escaped", "/abs/olute", "..", ".", ".hidden", "a/b", "a%2Fb", "", "c\\d",
                "ok"]
        items = [{"k": k, "i": i} for i, k in enumerate(keys)]
        self.run_ok(iterable(items) + sink(path="{key}/f.jsonl", key="k"))
        # Nothing was written next to `out`, everything is one directory level under it.
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         sorted(n for n in os.listdir(self.tmp) if n in (
                             "out", "p.toml") or n.startswith("sluiced-")))
        dirs = sorted(os.listdir(self.path("out")))
        self.assertEqual(dirs, sorted(["%2E.%2F..%2Fescaped", "%2Fabs%2Folute", "%2E.", "%2E",
                                       "%2Ehidden", "a%2Fb", "a%252Fb", "__empty__", "c%5Cd",
                                       "ok"]))
        by_dir = {}
        for f, lines in self.lines_by_file().items():
            by_dir[f.split("/")[0]] = [x["k"] for x in lines]
        self.assertEqual(sorted(k for ks in by_dir.values() for k in ks), sorted(keys))
        for d, ks in by_dir.items():
            self.assertEqual(len(ks), 1, (d, ks))  # distinct keys, distinct directories

    def test_validate_refuses_bad_templates_and_sizes(self):
        cases = [
            ({"path": "{user}/x.jsonl"}, "unknown placeholder {user}"),
            ({"path": "%c.jsonl"}, "strftime field %c is not allowed"),
            ({"path": "%Y/%F.jsonl"}, "strftime field %F is not allowed"),
            ({"path": "/etc/x.jsonl"}, "absolute path"),
            ({"path": "a/../../x.jsonl"}, "\"..\" is not allowed"),
            ({"path": "a//x.jsonl"}, "empty path segment"),
            ({"path": "{key.jsonl"}, "'{' without its '}'"),
            ({"path": "x.jsonl.gz"}, "compression is \"none\""),
            ({"path": "x.jsonl", "key": "user"}, "no {key}"),
            ({"path": "x.jsonl", "time": "event"}, "no strftime field"),
            ({"path": "x.jsonl", "roll_bytes": 0}, "roll_bytes"),
            ({"path": "x.jsonl", "max_open_files": 0}, "max_open_files"),
            ({"path": "x.jsonl", "part_prefix": "a-b"}, "part_prefix"),
            ({"path": "x.jsonl", "compression": "zip"}, "compression"),
        ]
        for keys, needle in cases:
            with self.subTest(keys=keys):
                cfg = self.write("bad.toml", iterable([1]) + sink(**keys))
                r = self.sluiced("validate", cfg)
                self.assertNotEqual(r.returncode, 0, r.describe())
                self.assertIn(needle, r.stderr + r.stdout)
                self.assertIn("'out'", r.stderr + r.stdout)  # names the node
        ok = self.write("ok.toml", iterable([1]) + sink(path="{key}/%Y-%m-%d-%H.jsonl"))
        self.assertExit(self.sluiced("validate", ok), EXIT_OK)

    def test_elements_without_event_time_or_with_huge_keys_are_element_errors(self):
        items = [{"k": "a", "i": 0}, {"k": "x" * 200, "i": 1}, {"k": "b", "i": 2}]
        cfg = self.write("p.toml", iterable(items) + sink(
            path="{key}/%Y.jsonl", key="k", time="event", on_error="dead_letter") + """
[sinks.dead]
type = "sink_to_textfile"
inputs = ["out.dead_letter"]
path = "dead.jsonl"
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        # from_iterable gives no event time: every element goes to the dead-letter output.
        self.assertEqual(published_files(self.path("out")), [])
        self.assertEqual([x["i"] for x in map(json.loads, self.read("dead.jsonl").splitlines())],
                         [0, 1, 2])
        # With event times, the 200-byte key alone is refused, and says why.
        cfg = self.write("p.toml", iterable(items) + """
[operators.stamped]
type = "event_time"
inputs = ["in"]
function = { name = "get", args = { path = "i" } }
""" + sink("stamped", path="{key}/%Y.jsonl", key="k", time="event", on_error="skip"))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(published_files(self.path("out"))[0].split(".")[0], "a/1970")
        self.assertEqual(sorted(f.split("/")[0] for f in published_files(self.path("out"))),
                         ["a", "b"])
        self.assertIn("the key makes a path segment of 200 bytes", r.stderr)

    def test_text_format_refuses_non_strings_as_element_errors(self):
        cfg = self.write("p.toml", iterable(["a", 1, "b"]) + sink(
            path="t.txt", format="text", on_error="skip"))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        files = published_files(self.path("out"))
        self.assertEqual([ln for f in files for ln in read_lines(self.path("out", f))], ["a", "b"])


class MetricsTest(SluiceTestCase):

    def test_counters_on_metrics(self):
        from service_it import admin_url, http, parse_prometheus, sample  # tests/service
        self.write("in.txt", "")
        cfg = self.write("p.toml", """
[admin]
port = 0
[checkpoint]
interval_ms = 50
dir = "ck"
[sources.lines]
type = "from_textfile"
path = "in.txt"
follow = true
poll_interval_ms = 5
[operators.parsed]
type = "map"
inputs = ["lines"]
function = "json_parse"
""" + sink("parsed", path="{key}.jsonl", key="k", roll_bytes=1000))
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        with open(self.path("in.txt"), "a", encoding="utf-8") as f:
            f.write("".join(json.dumps({"k": f"k{i % 3}", "i": i}) + "\n" for i in range(300)))
        root = self.path("out")

        def published_lines():
            return sum(len(read_lines(os.path.join(root, f))) for f in published_files(root))

        self.assertTrue(wait_for(lambda: published_lines() == 300, 30), self.read(err))

        def value(name):
            status, _, body = http("GET", base + "/metrics")
            self.assertEqual(status, 200, body)
            return sample(parse_prometheus(body), "sluice_node_" + name, node="out")

        files = published_files(root)
        sizes = sum(os.path.getsize(os.path.join(root, f)) for f in files)
        self.assertTrue(wait_for(lambda: value("files_committed_total") == len(files), 10))
        self.assertGreater(len(files), 3)  # 1000-byte rolls of about 9 KB
        self.assertEqual(value("files_records_total"), 300)
        self.assertEqual(value("files_committed_bytes_total"), sizes)
        self.assertEqual(value("files_bytes_written_total"), sizes)  # plain text: the same
        self.assertEqual(value("files_open"), 0)  # every checkpoint finishes the open files
        _, _, body = http("GET", base + "/metrics")
        self.assertIn("# TYPE sluice_node_files_committed_total counter", body)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


class ExampleTest(SluiceTestCase):
    """examples/pipelines/events_to_files.toml, run as its comment says (from a copy of the
    repository's layout): hourly gzip files per user, by event time."""

    def test_events_archived_by_user_and_hour_once_across_reruns(self):
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for rel in ("examples/pipelines/events_to_files.toml",
                    "examples/data/files_events.jsonl"):
            os.makedirs(os.path.dirname(self.path(rel)), exist_ok=True)
            shutil.copy(os.path.join(repo, rel), self.path(rel))
        archive = self.path("events_archive")

        def archived():
            out = {}
            for f in published_files(archive):
                self.assertTrue(f.endswith(".jsonl.gz"), f)
                bucket = f.rsplit(".", 3)[0]  # ann/2026-12-01/10
                out.setdefault(bucket, []).extend(x["action"] for x in read_json_lines(
                    os.path.join(archive, f)))
            return {k: sorted(v) for k, v in out.items()}

        want = {"ann/2026-12-01/09": ["late click", "login"], "bob/2026-12-01/09": ["login"],
                "ann/2026-12-01/10": ["view", "view"], "bob/2026-12-01/10": ["logout"],
                "%2E.%2F..%2Fetc/2026-12-01/10": ["probe"], "cy/2026-12-02/00": ["login"]}
        for attempt in range(2):  # the rerun restores the end of the input: nothing new
            r = self.sluiced("run", "examples/pipelines/events_to_files.toml")
            self.assertExit(r, EXIT_OK)
            self.assertEqual(archived(), want, f"run {attempt + 1}{r.describe()}")
            self.assertEqual(in_progress_files(archive), [])


class PluginCheckTest(SluiceTestCase):
    """The conformance kit (sluiced plugin-check) over libsluice_files.so: declarations,
    hostile elements, a refused bad config, and kills before, between and after prepare,
    store and commit, each recovered and read back (exactly once)."""

    def test_conformance_kit_passes_with_exactly_once(self):
        here = os.path.dirname(os.path.abspath(__file__))
        plugin = os.path.join(PLUGIN_DIR, "libsluice_files.so")
        r = self.sluiced("plugin-check", plugin, "--config", os.path.join(here, "plugin_check.toml"),
                         "--bad-config", os.path.join(here, "plugin_check_bad.toml"),
                         "--work-dir", self.path("work"), timeout=300)
        self.assertExit(r, EXIT_OK)
        self.assertIn("8 passed, 0 failed, 0 not exercised", r.stdout)
        self.assertEqual(r.stdout.count("0 written twice"), 4, r.stdout)


if __name__ == "__main__":
    unittest.main()
