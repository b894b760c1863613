"""Environment variables, secrets and config layout (docs/OPERATIONS.md, "Configure"):
`${VAR}` / `${VAR:-default}` interpolation, `{ secret_file | secret_env | secret_credential
= ... }`, several config files and --config-dir, and redaction of secrets in every output
of the CLI (graph json and dot, validate, errors, sluiced test, the daemon's log)."""

import json
import os
import unittest

from sluice_it import (EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, EXIT_TESTS_FAILED, SluiceTestCase,
                       line_col, toml_str)

SECRET = "hunter2-zq81"


class InterpolationTest(SluiceTestCase):
    def test_variables_defaults_and_escape(self):
        cfg = self.write("p.toml", """
[sources.s]
type = "from_iterable"
values = ["${WORD}", "${MISSING:-fallback}", "$${WORD} costs $$5", "^end$"]
[sinks.out]
type = "print"
inputs = ["s"]
prefix = "${PREFIX}: "
""")
        r = self.sluiced("run", cfg, env=self.env(WORD="hello", PREFIX="got"))
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), [
            "got: hello", "got: fallback", "got: ${WORD} costs $5", "got: ^end$"])

    def test_unset_variable_is_an_error_at_its_line_and_column(self):
        text = """
[sources.s]
type = "from_iterable"
values = [1]
[sinks.out]
type = "print"
inputs = ["s"]
prefix = "${SLUICE_IT_NOT_SET}"
"""
        cfg = self.write("p.toml", text)
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(text, '"${SLUICE_IT_NOT_SET}"')
        self.assertInStderr(
            f"{cfg}:{line}:{col}: error: node 'out': key 'prefix': environment variable "
            "'SLUICE_IT_NOT_SET' is not set", r)

    def test_lua_code_is_not_interpolated(self):
        cfg = self.write("p.toml", """
[sources.s]
type = "from_iterable"
values = ["a"]
[operators.m]
type = "map"
inputs = ["s"]
lua = 'x .. "${WORD}"'
[sinks.out]
type = "print"
inputs = ["m"]
""")
        r = self.sluiced("run", cfg, env=self.env(WORD="hello"))
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["a${WORD}"])

    def test_numbers_from_variables(self):
        text = """
[sources.s]
type = "from_periodic"
interval_ms = "${TICK_MS}"
limit = "${LIMIT}"
value = "x"
[sinks.out]
type = "print"
inputs = ["s"]
"""
        cfg = self.write("p.toml", text)
        r = self.sluiced("run", cfg, env=self.env(TICK_MS="1", LIMIT="3"))
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["x"] * 3)
        r = self.sluiced("validate", cfg, env=self.env(TICK_MS="1", LIMIT="three"))
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(text, '"${LIMIT}"')
        self.assertInStderr(f"{cfg}:{line}:{col}: error: node 's': key 'limit': expected int",
                            r)


class SecretsTest(SluiceTestCase):
    def config(self, value_table):
        return f"""
name = "secretive"
[sources.s]
type = "from_iterable"
values = ["public", {value_table}]
[sinks.out]
type = "print"
inputs = ["s"]
"""

    def test_secret_file_reaches_the_pipeline_and_is_redacted_in_graph_output(self):
        self.write("kafka.pass", SECRET + "\n")
        cfg = self.write("p.toml", self.config('{ secret_file = "kafka.pass" }'))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        # The pipeline gets the secret (trailing newline stripped); it prints data, not config.
        self.assertEqual(r.stdout.splitlines(), ["public", SECRET])

        r = self.sluiced("graph", cfg, "--format", "json")
        self.assertExit(r, EXIT_OK)
        self.assertNotIn(SECRET, r.stdout + r.stderr)
        nodes = {n["id"]: n for n in json.loads(r.stdout)["nodes"]}
        self.assertEqual(nodes["s"]["config"]["values"], ["public", "<redacted>"])

        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertNotIn(SECRET, r.stdout + r.stderr)

    def test_secret_in_a_node_id_is_redacted_in_dot(self):
        # A dot graph shows ids and types only; still no secret, wherever it is.
        self.write("id.pass", "hunter2id")
        cfg = self.write("p.toml", """
name = { secret_file = "id.pass" }
[sources.s]
type = "from_iterable"
values = [1]
[sinks.out]
type = "print"
inputs = ["s"]
""")
        r = self.sluiced("graph", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertNotIn("hunter2id", r.stdout)
        self.assertIn("<redacted>", r.stdout)

    def test_missing_secret_file_is_an_error_at_the_table(self):
        text = self.config('{ secret_file = "nope.pass" }')
        cfg = self.write("p.toml", text)
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(text, "{ secret_file")
        self.assertInStderr(f"{cfg}:{line}:{col}: error: node 's': key 'values.1': secret_file: "
                            f"cannot read secret file {self.path('nope.pass')}: No such file", r)

    def test_oversized_secret_file_is_refused_without_its_content(self):
        self.write("big.pass", "Q" * (64 * 1024 + 1))
        cfg = self.write("p.toml", self.config('{ secret_file = "big.pass" }'))
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("65537 bytes, more than the 65536 a secret may have", r)
        self.assertNotIn("QQQQ", r.stderr)

    def test_secret_env(self):
        cfg = self.write("p.toml", self.config('{ secret_env = "SLUICE_IT_PASS" }'))
        r = self.sluiced("run", cfg, env=self.env(SLUICE_IT_PASS=SECRET))
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["public", SECRET])
        r = self.sluiced("graph", cfg, "--format", "json", env=self.env(SLUICE_IT_PASS=SECRET))
        self.assertNotIn(SECRET, r.stdout)
        self.assertIn("<redacted>", r.stdout)

    def test_load_credential_style(self):
        creds = self.mkdir("creds", 0o700)
        self.write("creds/kafka.pass", SECRET)
        cfg = self.write("p.toml", self.config('{ secret_credential = "kafka.pass" }'))
        r = self.sluiced("run", cfg, env=self.env(CREDENTIALS_DIRECTORY=creds))
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["public", SECRET])
        # Without the directory, and with a name that leaves it: refused.
        env = self.env()
        env.pop("CREDENTIALS_DIRECTORY", None)
        r = self.sluiced("validate", cfg, env=env)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("$CREDENTIALS_DIRECTORY is not set", r)
        cfg = self.write("p.toml", self.config('{ secret_credential = "../creds/kafka.pass" }'))
        r = self.sluiced("validate", cfg, env=self.env(CREDENTIALS_DIRECTORY=creds))
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("a credential name has no '/' and no '..'", r)
        self.assertNotIn(SECRET, r.stderr)

    def test_plugin_error_quoting_the_secret_is_redacted_in_the_log(self):
        # The file sink's write fails at run time (a file named after the secret that is
        # /dev/full: validate's checks of the machine pass) and its message quotes the path.
        if not os.path.exists("/dev/full"):
            self.skipTest("/dev/full does not exist on this system")
        secret_path = self.path(f"{SECRET}.txt")
        os.symlink("/dev/full", secret_path)
        self.write("path.pass", secret_path + "\n")
        cfg = self.write("p.toml", """
[sources.s]
type = "from_iterable"
values = [1]
[sinks.out]
type = "sink_to_textfile"
inputs = ["s"]
path = { secret_file = "path.pass" }
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("'<redacted>'", r)
        self.assertInStderr("No space left on device", r)
        self.assertNotIn(SECRET, r.stdout + r.stderr)

    def test_config_error_quoting_the_secret_is_redacted(self):
        # The value is checked against the param's choices and quoted in the finding.
        self.write("fmt.pass", SECRET)
        cfg = self.write("p.toml", """
[sources.s]
type = "from_iterable"
values = [1]
[sinks.out]
type = "sink_to_textfile"
inputs = ["s"]
path = "out.txt"
format = { secret_file = "fmt.pass" }
""")
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("<redacted>", r)
        self.assertNotIn(SECRET, r.stderr)

    def test_sluiced_test_output_is_redacted(self):
        self.write("v.pass", SECRET)
        cfg = self.write("p.toml", """
[sources.s]
type = "from_iterable"
values = [{}]
[operators.m]
type = "map"
inputs = ["s"]
function = { name = "get", args = { path = "nope", default = { secret_file = "v.pass" } } }
[sinks.out]
type = "print"
inputs = ["m"]

[[tests]]
name = "mismatch"
steps = [{ source = "s", value = {} }]
[tests.expect]
m = ["something else"]
""")
        r = self.sluiced("test", cfg)
        self.assertExit(r, EXIT_TESTS_FAILED)
        self.assertIn("<redacted>", r.stdout)
        self.assertNotIn(SECRET, r.stdout + r.stderr)


class ConfigLayoutTest(SluiceTestCase):
    SOURCES = """
name = "layered"
[sources.s]
type = "from_iterable"
values = ["a", "b"]
"""
    SINKS = """
[sinks.out]
type = "print"
inputs = ["s"]
prefix = "out: "
"""

    def test_config_dir_merges_every_toml_by_name(self):
        d = self.mkdir("conf.d")
        self.write("conf.d/10-sources.toml", self.SOURCES)
        self.write("conf.d/20-sinks.toml", self.SINKS)
        self.write("conf.d/README", "not a config")
        self.write("conf.d/sub/30-more.toml", "this is not read")
        r = self.sluiced("run", "--config-dir", d)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["out: a", "out: b"])
        r = self.sluiced("graph", "--config-dir", d, "--format", "json")
        self.assertExit(r, EXIT_OK)
        self.assertEqual([n["id"] for n in json.loads(r.stdout)["nodes"]], ["s", "out"])
        r = self.sluiced("validate", "--config-dir", d)
        self.assertExit(r, EXIT_OK)

    def test_several_files(self):
        a = self.write("a.toml", self.SOURCES)
        b = self.write("b.toml", self.SINKS)
        r = self.sluiced("run", a, b)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["out: a", "out: b"])

    def test_each_finding_points_into_its_own_file(self):
        a = self.write("a.toml", self.SOURCES)
        text = self.SINKS.replace('inputs = ["s"]', 'inputs = ["nope"]')
        b = self.write("b.toml", text)
        r = self.sluiced("validate", a, b)
        self.assertExit(r, EXIT_INVALID)
        line, _ = line_col(text, '"nope"')
        self.assertInStderr(f"{b}:{line}:", r)

    def test_duplicate_id_and_top_level_table_name_both_places(self):
        a = self.write("a.toml", self.SOURCES + "[runtime]\ntasks = 1\n")
        b_text = self.SINKS + "[sources.s]\ntype = \"from_iterable\"\nvalues = [1]\n" + \
            "[runtime]\ntasks = 2\n"
        b = self.write("b.toml", b_text)
        r = self.sluiced("validate", a, b)
        self.assertExit(r, EXIT_INVALID)
        a_text = self.read(a)
        line_a, col_a = line_col(a_text, "sources.s")
        line_b, col_b = line_col(b_text, "sources.s")
        self.assertInStderr(f"{b}:{line_b}:{col_b + len('sources.')}: error: node 's': node id 's' "
                            f"is also given at {a}:{line_a}:{col_a + len('sources.')}", r)
        line_a, col_a = line_col(a_text, "[runtime]")
        line_b, col_b = line_col(b_text, "[runtime]")
        self.assertInStderr(f"{b}:{line_b}:{col_b}: error: key 'runtime': 'runtime' is also "
                            f"given at {a}:{line_a}:{col_a}", r)

    def test_empty_config_dir_and_no_config(self):
        d = self.mkdir("empty.d")
        r = self.sluiced("validate", "--config-dir", d)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("config directory has no *.toml file", r)
        r = self.sluiced("validate")
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("no config given", r)


if __name__ == "__main__":
    unittest.main()
