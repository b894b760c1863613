"""to_postgres against a real PostgreSQL 15: rows and their types, upserts of aggregate's
changelog, errors found by `sluiced validate` and at start, exactly-once at the end of the
input, the server stopped under a running sluiced, the conformance kit's crash checks,
max_prepared_transactions = 0, passwords from secrets never printed."""

import json
import os
import signal
import time

from pg_it import PgTestCase, unittest
from pg_server import PSQL, wait_until
from sluice_it import (EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, PLUGIN_DIR, line_col, plugin_file,
                       toml_str)


def iterable(items, node="in"):
    return (f'[sources.{node}]\ntype = "from_iterable"\n'
            f"json = {json.dumps([json.dumps(x) for x in items])}\n")


class RowsTest(PgTestCase):

    def test_fields_become_columns_of_their_types(self):
        table = self.new_table("id bigint, name text, score double precision, ok boolean, "
                               "doc jsonb, tags jsonb, nested text, missing text")
        items = [
            {"id": 1, "name": "a'b\"c", "score": 0.1, "ok": True, "tags": ["x", 1],
             "sub": {"v": "deep"}},
            {"id": 2, "name": "ünï 💧", "score": -2.5e-300, "ok": False, "tags": {"k": None},
             "sub": {}},
            {"id": 3, "name": None, "score": 1e300, "ok": None},
            # Control characters and backslashes (bound parameters need no escaping).
            {"id": 4, "name": "tab\there\nnew\\back\rcr \\N", "sub": {"v": "\\N"}},
        ]
        cfg = self.write("p.toml", iterable(items) + self.sink_toml(
            table, {"id": "id", "name": "name", "score": "score", "ok": "ok", "doc": "@json",
                    "tags": "tags", "nested": ["sub", "v"], "missing": "nope"}))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(self.rows(f"SELECT count(*) FROM {table}"), [["4"]])
        got = self.rows(f"SELECT id, name, score, ok, doc, tags, nested, missing FROM {table} "
                        "WHERE id < 4 ORDER BY id")
        self.assertEqual(len(got), 3, got)
        hexed = self.rows(f"SELECT encode(convert_to(name, 'UTF8'), 'hex'), nested IS NULL, "
                          f"length(nested) FROM {table} WHERE id = 4")
        self.assertEqual(hexed, [[items[3]["name"].encode().hex(), "f", "2"]])
        self.assertEqual(got[0][:4], ["1", "a'b\"c", "0.1", "t"])
        self.assertEqual(json.loads(got[0][4]), items[0])
        self.assertEqual(json.loads(got[0][5]), ["x", 1])
        self.assertEqual(got[0][6:], ["deep", ""])
        self.assertEqual(got[1][:4], ["2", "ünï 💧", "-2.5e-300", "f"])
        self.assertEqual(json.loads(got[1][5]), {"k": None})
        # Missing fields and nulls are SQL NULL (psql prints NULL as an empty field).
        nulls = self.rows(f"SELECT name IS NULL, ok IS NULL, tags IS NULL, nested IS NULL "
                          f"FROM {table} WHERE id = 3")
        self.assertEqual(nulls, [["t", "t", "t", "t"]])

    def test_many_rows_in_batches(self):
        table = self.new_table("id bigint, word text")
        n = 2345
        items = [{"id": i, "word": f"w{i % 7}"} for i in range(n)]
        cfg = self.write("p.toml", iterable(items) + self.sink_toml(
            table, {"id": "id", "word": "word"}, batch_rows=100))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        self.assertEqual(self.rows(f"SELECT count(*), count(DISTINCT id), min(id), max(id) "
                                   f"FROM {table}"), [[str(n), str(n), "0", str(n - 1)]])

    def test_schema_qualified_table_and_quoted_names(self):
        self.server.psql('CREATE SCHEMA IF NOT EXISTS "Shop"; CREATE TABLE "Shop"."Orders" '
                         '("Order Id" int, "select" text)')
        cfg = self.write("p.toml", iterable([{"o": 7, "s": "x"}]) + self.sink_toml(
            "Shop.Orders", {"Order Id": "o", "select": "s"}))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        self.assertEqual(self.rows('SELECT "Order Id", "select" FROM "Shop"."Orders"'),
                         [["7", "x"]])


class UpsertTest(PgTestCase):

    def aggregate_pipeline(self, table, words, **sink):
        return (f'[sources.in]\ntype = "from_iterable"\nvalues = {json.dumps(words)}\n'
                '[operators.keyed]\ntype = "key_by"\ninputs = ["in"]\nlua = "x"\n'
                '[operators.counts]\ntype = "aggregate"\ninputs = ["keyed"]\n'
                'function = "count"\nstart = 0\n'
                + self.sink_toml(table, {"word": "@key", "n": "@value"}, input="counts",
                                 key_columns=["word"], **sink))

    def test_aggregate_changelog_upserts_the_latest_count(self):
        table = self.new_table("word text PRIMARY KEY, n bigint NOT NULL")
        words = [w for i in range(40) for w in ("a", "b", "a", "c", "a")[: 1 + i % 5]]
        expected = {}
        for w in words:
            expected[w] = expected.get(w, 0) + 1
        # batch_rows 7: the same key repeats inside one statement (the last row wins) and
        # across statements (ON CONFLICT updates).
        cfg = self.write("p.toml", self.aggregate_pipeline(table, words, batch_rows=7))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        got = {w: int(n) for w, n in self.rows(f"SELECT word, n FROM {table}")}
        self.assertEqual(got, expected)

    def test_upsert_updates_existing_rows_and_keeps_others(self):
        table = self.new_table("id int, part text, v text, PRIMARY KEY (id, part)")
        self.server.psql(f"INSERT INTO {table} VALUES (1, 'x', 'old'), (9, 'x', 'untouched')")
        items = [{"id": 1, "p": "x", "v": "new"}, {"id": 1, "p": "y", "v": "other"}]
        cfg = self.write("p.toml", iterable(items) + self.sink_toml(
            table, {"id": "id", "part": "p", "v": "v"}, key_columns=["id", "part"]))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        self.assertEqual(self.rows(f"SELECT id, part, v FROM {table} ORDER BY id, part"),
                         [["1", "x", "new"], ["1", "y", "other"], ["9", "x", "untouched"]])

    def test_key_columns_without_unique_constraint_fail_at_start(self):
        table = self.new_table("word text, n bigint")
        cfg = self.write("p.toml", self.aggregate_pipeline(table, ["a"]))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("key_columns must match a unique index or constraint", r)
        self.assertEqual(self.rows(f"SELECT count(*) FROM {table}"), [["0"]])

    def test_null_key_is_an_error_of_the_element(self):
        table = self.new_table("id int PRIMARY KEY, v text")
        cfg = self.write("p.toml", iterable([{"id": 1, "v": "a"}, {"v": "no id"}]) +
                         self.sink_toml(table, {"id": "id", "v": "v"}, key_columns=["id"]))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr('key column "id" would be NULL for the element {"v":"no id"}', r)


class ErrorsTest(PgTestCase):

    def bad(self, **sink):
        columns = sink.pop("columns", {"id": "id"})
        return iterable([{"id": 1}]) + self.sink_toml(sink.pop("table", "t"), columns, **sink)

    def assertValidateError(self, text, key, message):
        path = self.write("bad.toml", text)
        r = self.sluiced("validate", path)
        self.assertExit(r, EXIT_INVALID)
        line, _ = line_col(text, f"\n{key} =")
        self.assertRegex(r.stderr, rf"bad\.toml:{line + 1}:\d+: error: node 'db': key '{key}'",
                         r.describe())
        self.assertInStderr(message, r)

    def test_validate_catches_config_errors(self):
        cases = [
            (self.bad(columns={"id": "id"}, key_columns=["idd"]), "key_columns",
             'names "idd", which is not a key of `columns` ("id")'),
            (self.bad(columns={"id": "@nope"}), "columns",
             "entry 'id' names no special source \"@nope\""),
            (self.bad(columns={"id": [0, -1]}), "columns",
             "has a path step that is neither a field name nor an index >= 0: -1"),
            (self.bad(columns={"x" * 64: "id"}), "columns", "is longer than PostgreSQL's 63 bytes"),
            (self.bad(table="a.b.c"), "table", 'must be "name" or "schema.name"'),
            (self.bad(columns={f"c{i}": "id" for i in range(200)}, batch_rows=500),
             "batch_rows", "must be at most 327 with 200 columns"),
            (self.bad(conninfo="host=127.0.0.1 bogus_option=1"), "conninfo",
             'is not a libpq connection string: invalid connection option "bogus_option"'),
            (self.bad(transaction_prefix="a:b"), "transaction_prefix",
             "may hold only letters, digits"),
            (self.bad(batch_rows=0), "batch_rows", ""),
        ]
        for text, key, message in cases:
            with self.subTest(key=key, message=message):
                self.assertValidateError(text, key, message)

    def test_unknown_key_is_refused_with_a_suggestion(self):
        text = self.bad(batch_row=10)
        r = self.sluiced("validate", self.write("bad.toml", text))
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("batch_row", r)
        self.assertInStderr("batch_rows", r)

    def test_missing_table_and_column_fail_at_start_naming_them(self):
        table = self.new_table("id int")
        r = self.sluiced("run", self.write("p.toml", self.bad(table=table,
                                                              columns={"id": "id", "nope": "x"})))
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr(f'column "nope" of relation "{table}" does not exist', r)
        r = self.sluiced("run", self.write("p2.toml", self.bad(table="no_such_table")))
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr('relation "no_such_table" does not exist', r)

    def test_a_row_the_server_refuses_fails_the_node_with_its_message(self):
        table = self.new_table("id int")
        r = self.sluiced("run", self.write("p.toml", iterable([{"id": "not a number"}]) +
                                           self.sink_toml(table, {"id": "id"})))
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr('invalid input syntax for type integer: "not a number"', r)


class ExactlyOnceEndOfInputTest(PgTestCase):

    def test_checkpointed_run_commits_every_row_once_and_leaves_nothing_prepared(self):
        table = self.new_table("id bigint")
        items = [{"id": i} for i in range(1000)]
        cfg = self.write("p.toml", 'name = "eoi"\n[checkpoint]\ninterval_ms = 20\ndir = "ck"\n'
                         + iterable(items) + self.sink_toml(table, {"id": "id"}, batch_rows=64))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(self.rows(f"SELECT count(*), count(DISTINCT id) FROM {table}"),
                         [["1000", "1000"]])
        self.assertEqual(self.prepared_xacts(), [])
        # A rerun restores the end position: nothing is written again.
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        self.assertEqual(self.rows(f"SELECT count(*) FROM {table}"), [["1000"]])


class FollowingPipeline(PgTestCase):
    """Helpers for a sluiced that follows a growing input file (no tests of its own)."""

    def following(self, table, extra):
        return (f'name = "loss"\n{extra}\n[sources.lines]\ntype = "from_textfile"\n'
                'path = "in.txt"\nfollow = true\npoll_interval_ms = 5\n'
                '[operators.in]\ntype = "map"\ninputs = ["lines"]\nfunction = "json_parse"\n'
                + self.sink_toml(table, {"id": "id"}, batch_timeout_ms=10,
                                 reconnect_backoff_max_ms=300))

    def append(self, ids):
        with open(self.path("in.txt"), "a", encoding="utf-8") as f:
            f.write("".join(json.dumps({"id": i}) + "\n" for i in ids))

    def count(self, table):
        return int(self.rows(f"SELECT count(*) FROM {table}")[0][0])


class ConnectionLossTest(FollowingPipeline):
    """The server is stopped and started again under a running sluiced."""

    def test_at_least_once_waits_for_the_server_and_loses_nothing(self):
        table = self.new_table("id bigint PRIMARY KEY")
        cfg = self.write("p.toml", self.following(table, "").replace(
            "batch_timeout_ms", 'key_columns = ["id"]\nbatch_timeout_ms'))
        open(self.path("in.txt"), "w").close()
        proc, _, err = self.spawn("run", cfg)
        self.append(range(0, 500))
        self.assertTrue(wait_until(lambda: self.count(table) == 500, 30), self.read(err))
        self.server.stop()
        self.append(range(500, 1000))
        self.assertTrue(wait_until(lambda: "retrying with backoff" in self.read(err), 30),
                        self.read(err))
        time.sleep(1)
        self.assertIsNone(proc.poll(), self.read(err))
        self.server.start()
        self.assertTrue(wait_until(lambda: self.count(table) == 1000, 30), self.read(err))
        self.assertIn("to_postgres: reconnected after", self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))

    def test_exactly_once_fails_rather_than_write_twice_then_the_restart_writes_once(self):
        table = self.new_table("id bigint")
        cfg = self.write("p.toml", self.following(
            table, '[checkpoint]\ninterval_ms = 600000\ndir = "ck"'))
        open(self.path("in.txt"), "w").close()
        proc, _, err = self.spawn("run", cfg)
        self.append(range(0, 300))
        # The rows are in the epoch's open transaction (the checkpoint is far away).
        idle_in_txn = ("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice' "
                       "AND state = 'idle in transaction'")
        self.assertTrue(wait_until(lambda: self.rows(idle_in_txn) == [["1"]], 30),
                        self.read(err))
        self.assertEqual(self.count(table), 0)
        self.server.stop()
        self.server.start()
        self.append(range(300, 400))
        self.assertEqual(proc.wait(30), 1, self.read(err))
        self.assertIn("the connection was lost while the epoch's transaction held", self.read(err))
        self.assertEqual(self.count(table), 0)
        # The restart (no checkpoint was stored: from the start) writes every row once.
        proc, _, err = self.spawn("run", cfg)
        self.assertTrue(wait_until(lambda: "running" in self.read(err), 30), self.read(err))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))
        self.assertEqual(self.rows(f"SELECT count(*), count(DISTINCT id) FROM {table}"),
                         [["400", "400"]])


class PluginCheckTest(PgTestCase):
    """The conformance kit (`sluiced plugin-check`, docs/PLUGIN_GUIDE.md) over the plugin,
    with its crash checks against this server: a child running the sink is SIGKILLed
    mid-epoch, after prepare, after the store and after commit, recovered as a restart
    would, and the table read back must hold records 1..20 once each."""

    def test_conformance_kit_with_crash_checks_claiming_exactly_once(self):
        table = self.new_table("n bigint")
        psql = (f"{PSQL} -X -q -A -t -h 127.0.0.1 -p {self.server.port} -U postgres "
                f"-d postgres")
        # The read-back empties the table after printing it: each crash exercise starts
        # from an empty table (the exercises share this one).
        readback = f"{psql} -c 'SELECT n FROM {table} ORDER BY n' && {psql} -c 'TRUNCATE {table}'"
        check = self.write("check.toml", f"""
[to_postgres]
conninfo = {json.dumps(self.server.conninfo())}
table = {json.dumps(table)}
columns = {{ n = "n" }}
[check.to_postgres]
readback = {json.dumps(readback)}
exactly_once = true
""")
        plugin = plugin_file(PLUGIN_DIR, "postgres")
        r = self.sluiced("plugin-check", plugin, "--config", check, timeout=600)
        self.assertExit(r, EXIT_OK)
        self.assertInStdout("crash: killed after prepare, before the checkpoint was stored", r)
        self.assertInStdout("crash: killed after the checkpoint was stored, before commit", r)
        self.assertInStdout("7 passed, 0 failed, 0 not exercised", r)


class MetricsTest(FollowingPipeline):

    def test_counters_on_metrics(self):
        from service_it import admin_url, http, parse_prometheus, sample  # tests/service
        table = self.new_table("id bigint")
        cfg = self.write("p.toml", self.following(
            table, '[admin]\nport = 0\n[checkpoint]\ninterval_ms = 50\ndir = "ck"').replace(
                "batch_timeout_ms", "batch_rows = 100\nbatch_timeout_ms"))
        open(self.path("in.txt"), "w").close()
        proc, _, err = self.spawn("run", cfg)
        base = admin_url(err)
        self.append(range(1000))
        self.assertTrue(wait_until(lambda: self.count(table) == 1000, 30), self.read(err))

        def value(name):
            status, _, body = http("GET", base + "/metrics")
            self.assertEqual(status, 200, body)
            return sample(parse_prometheus(body), "sluice_node_" + name, node="db")

        self.assertTrue(wait_until(lambda: value("postgres_prepared_transactions") == 0, 10))
        self.assertEqual(value("postgres_rows_total"), 1000)
        self.assertGreaterEqual(value("postgres_statements_total"), 10)  # 100 rows at most each
        self.assertGreaterEqual(value("postgres_transactions_total"), 1)
        self.assertEqual(value("postgres_errors_total"), 0)
        self.assertEqual(value("postgres_connected"), 1)
        self.assertGreater(value("postgres_statement_latency_seconds"), 0)
        _, _, body = http("GET", base + "/metrics")
        self.assertIn("# TYPE sluice_node_postgres_rows_total counter", body)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, self.read(err))


class NoPreparedTransactionsTest(PgTestCase):
    server_settings = {"max_prepared_transactions": "0"}

    def test_exactly_once_refuses_to_start_with_a_clear_error(self):
        table = self.new_table("id bigint")
        text = ('[checkpoint]\ndir = "ck"\n' + iterable([{"id": 1}]) +
                self.sink_toml(table, {"id": "id"}))
        r = self.sluiced("run", self.write("p.toml", text))
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("exactly_once needs prepared transactions, and the server has "
                            "max_prepared_transactions = 0", r)
        self.assertEqual(self.rows(f"SELECT count(*) FROM {table}"), [["0"]])
        # At-least-once needs no prepared transactions.
        text2 = text.replace('columns =', 'exactly_once = false\ncolumns =')
        self.assertExit(self.sluiced("run", self.write("p2.toml", text2)), EXIT_OK)
        self.assertEqual(self.rows(f"SELECT count(*) FROM {table}"), [["1"]])


class PasswordTest(PgTestCase):
    PASSWORD = "pw-S3cret-4711"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        s = cls.server
        s.psql(f"CREATE ROLE writer LOGIN PASSWORD '{cls.PASSWORD}'")
        hba = os.path.join(s.data, "pg_hba.conf")
        with open(hba, encoding="utf-8") as f:
            rest = f.read()
        with open(hba, "w", encoding="utf-8") as f:
            f.write("host all writer 127.0.0.1/32 scram-sha-256\n" + rest)
        s.psql("SELECT pg_reload_conf()")

    def pipeline(self, table, password_file):
        conninfo = f"host=127.0.0.1 port={self.server.port} dbname=postgres user=writer"
        return (iterable([{"id": 5}]) + self.sink_toml(
            table, {"id": "id"}, conninfo=conninfo,
            password="{ secret_file = " + toml_str(password_file) + " }"))

    def test_password_from_a_secret_file_works_and_is_never_printed(self):
        table = self.new_table("id int")
        self.server.psql(f"GRANT INSERT ON {table} TO writer")
        self.write("good.pass", self.PASSWORD + "\n")
        cfg = self.write("p.toml", self.pipeline(table, "good.pass"))
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        self.assertEqual(self.rows(f"SELECT id FROM {table}"), [["5"]])
        g = self.sluiced("graph", "--format", "json", cfg)
        self.assertExit(g, EXIT_OK)
        self.assertNotIn(self.PASSWORD, g.stdout + g.stderr)
        self.assertIn("<redacted>", g.stdout)

    def test_a_wrong_password_fails_without_printing_it(self):
        table = self.new_table("id int")
        wrong = "wrong-Pa55word-0815"
        self.write("bad.pass", wrong)
        cfg = self.write("p.toml", self.pipeline(table, "bad.pass").replace(
            'table =', 'reconnect_timeout_ms = 500\ntable ='))
        r = self.sluiced("run", cfg, timeout=60)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr('password authentication failed for user "writer"', r)
        self.assertNotIn(wrong, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
