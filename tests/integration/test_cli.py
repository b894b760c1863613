"""sluiced's commands as a user runs them: run, validate, graph, plugins, test; and where
plugins are found (plugin_dirs relative to the config, SLUICE_PLUGIN_PATH)."""

import json
import os
import re
import shutil
import subprocess
import unittest

from sluice_it import (EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, EXIT_TESTS_FAILED, PLUGIN_DIR,
                       SLUICED, SluiceTestCase, broken, line_col, plugin_file, toml_str)

CORE_FUNCTIONS = {
    "identity": "map", "add": "map", "sub": "map", "mul": "map", "upper": "map",
    "lower": "map", "json_parse": "map", "json_dump": "map",
    "gt": "predicate", "lt": "predicate", "eq": "predicate", "not_null": "predicate",
}
CORE_NODE_TYPES = {"from_iterable": "source", "from_textfile": "source", "map": "operator",
                   "filter": "operator"}
SINK_NODE_TYPES = {"print": "sink", "sink_to_textfile": "sink"}


def numbers_pipeline(out_path, values="[1, 2, 3, 4, 5, 6]", plugin_dirs=None):
    """from_iterable -> map(add 10) -> filter(gt 13) -> sink_to_textfile."""
    head = f"plugin_dirs = {json.dumps(plugin_dirs)}\n" if plugin_dirs is not None else ""
    return head + f"""\
name = "numbers"

[sources.numbers]
type = "from_iterable"
values = {values}

[operators.plus_ten]
type = "map"
inputs = ["numbers"]
function = "add"
args = {{ value = 10 }}

[operators.big]
type = "filter"
inputs = ["plus_ten"]
function = {{ name = "gt", args = {{ value = 13 }} }}

[sinks.out]
type = "sink_to_textfile"
inputs = ["big"]
path = {toml_str(out_path)}
"""


class RunTest(SluiceTestCase):
    def test_iterable_map_filter_to_textfile(self):
        out = self.path("out.txt")
        cfg = self.write("numbers.toml", numbers_pipeline(out))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "14\n15\n16\n", r)
        self.assertEqual(r.stdout, "", "a pipeline without a print sink writes nothing to stdout")

    def test_textfile_last_line_without_newline_is_emitted(self):
        src = self.write("in.txt", "alpha\nbeta\n\ngamma")  # no newline after gamma
        out = self.path("out.txt")
        cfg = self.write("upper.toml", f"""\
[sources.lines]
type = "from_textfile"
path = {toml_str(src)}

[operators.shout]
type = "map"
inputs = ["lines"]
function = "upper"

[sinks.out]
type = "sink_to_textfile"
inputs = ["shout"]
format = "text"
path = {toml_str(out)}
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "ALPHA\nBETA\n\nGAMMA\n", r)

    def test_json_lines_parse_filter_dump(self):
        src = self.write("in.jsonl", '{"a": 1}\nnull\n{"a": [2, "x"]}\n')
        out = self.path("out.jsonl")
        cfg = self.write("json.toml", f"""\
[sources.lines]
type = "from_textfile"
path = {toml_str(src)}

[operators.parsed]
type = "map"
inputs = ["lines"]
function = "json_parse"

[operators.present]
type = "filter"
inputs = ["parsed"]
function = "not_null"

[operators.dumped]
type = "map"
inputs = ["present"]
function = "json_dump"

[sinks.out]
type = "sink_to_textfile"
inputs = ["dumped"]
format = "text"
path = {toml_str(out)}
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, '{"a":1}\n{"a":[2,"x"]}\n', r)

    def test_textfile_sink_default_format_is_json(self):
        out = self.path("out.jsonl")
        cfg = self.write("mixed.toml", f"""\
[sources.things]
type = "from_iterable"
values = ["a", 1, 2.5, true, [1, "b"], {{ x = 1 }}]

[sinks.out]
type = "sink_to_textfile"
inputs = ["things"]
path = {toml_str(out)}
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, '"a"\n1\n2.5\ntrue\n[1,"b"]\n{"x":1}\n', r)

    def test_print_sink_writes_to_stdout(self):
        cfg = self.write("print.toml", """\
[sources.words]
type = "from_iterable"
values = ["hello", "world", 42]

[sinks.show]
type = "print"
inputs = ["words"]
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["hello", "world", "42"], r.describe())

    def test_print_prefix(self):
        cfg = self.write("print.toml", """\
[sources.words]
type = "from_iterable"
values = ["a", { k = [1, 2] }]

[sinks.show]
type = "print"
inputs = ["words"]
prefix = "> "
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout.splitlines(), ["> a", '> {"k":[1,2]}'], r.describe())

    def test_print_to_a_closed_stdout_fails_naming_the_node(self):
        cfg = self.write("print.toml", """\
[sources.words]
type = "from_iterable"
values = ["a", "b"]

[sinks.show]
type = "print"
inputs = ["words"]
""")
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            r = subprocess.run([SLUICED, "run", cfg], stdout=write_end, stderr=subprocess.PIPE,
                               env=self.env(), timeout=60, check=False)
        finally:
            os.close(write_end)
        stderr = r.stderr.decode()
        self.assertEqual(r.returncode, EXIT_RUNTIME, stderr)
        self.assertTrue(any("'show'" in l and "Broken pipe" in l for l in stderr.splitlines()),
                        stderr)

    def test_textfile_custom_delimiter(self):
        src = self.write("in.txt", "a;b;;c")
        cfg = self.write("delim.toml", f"""\
[sources.parts]
type = "from_textfile"
path = {toml_str(src)}
delimiter = ";"

[sinks.show]
type = "print"
inputs = ["parts"]
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout, "a\nb\n\nc\n", r.describe())

    def test_fan_out_to_two_sinks(self):
        out = self.path("out.txt")
        cfg = self.write("fan.toml", f"""\
[sources.numbers]
type = "from_iterable"
values = [1, 2, 3]

[operators.times_two]
type = "map"
inputs = ["numbers"]
function = "mul"
args = {{ value = 2 }}

[sinks.file]
type = "sink_to_textfile"
inputs = ["times_two"]
path = {toml_str(out)}

[sinks.screen]
type = "print"
inputs = ["numbers"]
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "2\n4\n6\n", r)
        self.assertEqual(r.stdout.splitlines(), ["1", "2", "3"], r.describe())

    def test_usage_errors_exit_2(self):
        for argv in (["bogus"], [], ["graph", "x.toml", "--format", "svg"], ["run"],
                     ["--log-level", "loud", "plugins"]):
            with self.subTest(argv=argv):
                r = self.sluiced(*argv)
                self.assertExit(r, EXIT_INVALID)

    def test_version_and_help_exit_0(self):
        r = self.sluiced("--version")
        self.assertExit(r, EXIT_OK)
        self.assertRegex(r.stdout + r.stderr, r"sluiced \S+ \(ABI 1\.\d+\)")
        r = self.sluiced("--help")
        self.assertExit(r, EXIT_OK)
        for command in ["run", "validate", "graph", "plugins", "test"]:
            self.assertIn(command, r.stdout)

    def test_missing_config_file(self):
        # A config that cannot be read is an invalid config: exit 2 (as `validate` does),
        # naming the file.
        for command in ["run", "validate", "graph", "test"]:
            with self.subTest(command=command):
                r = self.sluiced(command, self.path("nope.toml"))
                self.assertExit(r, EXIT_INVALID)
                self.assertInStderr("nope.toml", r)


class ValidateTest(SluiceTestCase):
    def test_good_config(self):
        cfg = self.write("numbers.toml", numbers_pipeline(self.path("out.txt")))
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertInStdout("OK (4 nodes)", r)
        self.assertFalse(os.path.exists(self.path("out.txt")), "validate must not run the pipeline")

    def test_warning_only_still_valid(self):
        text = """\
[sources.numbers]
type = "from_iterable"
values = [1]

[operators.unused]
type = "map"
inputs = ["numbers"]
function = "identity"

[sinks.out]
type = "print"
inputs = ["numbers"]
"""
        self.write("warn.toml", text)
        r = self.sluiced("validate", "warn.toml")
        self.assertExit(r, EXIT_OK)
        line, col = line_col(text, "[operators.unused]")
        self.stderr_line_with(r, f"warn.toml:{line}:{col}: warning:", "node 'unused'")

    def grouped_pipeline(self, group_line):
        """A keyed source (the test plugin's grouped_numbers: SL_NODE_KEYED_STATE, as a
        grouped from_kafka) -> accumulate count_by (state not keyed) -> sink."""
        return f"""\
plugin_dirs = [{toml_str(broken("counters"))}]

[sources.numbers]
type = "grouped_numbers"
{group_line}

[operators.counts]
type = "accumulate"
inputs = ["numbers"]
function = "count_by"
start = {{}}

[sinks.out]
type = "sink_to_textfile"
inputs = ["counts"]
path = {toml_str(self.path("out.txt"))}
"""

    def test_non_keyed_state_after_grouped_source_warns(self):
        # Issue 13: its state is per member; validate says so, names key_by -> aggregate,
        # and still succeeds. run prints the same warning and runs.
        text = self.grouped_pipeline('group_id = "g"')
        self.write("grouped.toml", text)
        line, col = line_col(text, "[operators.counts]")
        for command in ("validate", "run"):
            r = self.sluiced(command, "grouped.toml")
            self.assertExit(r, EXIT_OK)
            self.stderr_line_with(r, f"grouped.toml:{line}:{col}: warning:", "node 'counts'",
                                  "(accumulate) is per member", "grouped source 'numbers'",
                                  "key_by -> aggregate")
        self.assertFileContent(self.path("out.txt"),
                               '{"1":1}\n{"1":1,"2":1}\n{"1":1,"2":1,"3":1}\n')

    def test_no_warning_without_group(self):
        # Without group_id the source's partitions do not move: no warning at all.
        self.write("alone.toml", self.grouped_pipeline(""))
        r = self.sluiced("validate", "alone.toml")
        self.assertExit(r, EXIT_OK)
        self.assertNotInStderr("warning", r)

    def test_grouped_from_kafka_warns_about_count_by_not_about_aggregate(self):
        # The real from_kafka (keyed: SL_NODE_KEYED_STATE) with group_id; no broker needed to
        # validate. count_by's state is per member; aggregate's is keyed and moves.
        if not any("sluice_kafka" in f for f in os.listdir(PLUGIN_DIR)):
            self.skipTest("the kafka plugin is not built")
        text = """\
[sources.in]
type = "from_kafka"
brokers = "127.0.0.1:9"
topics = ["words"]
group_id = "wc"

[operators.counts]
type = "accumulate"
inputs = ["in"]
function = "count_by"
start = {}

[operators.per_word]
type = "aggregate"
inputs = ["in"]
function = "count"
start = 0

[sinks.out]
type = "print"
inputs = ["counts"]

[sinks.out2]
type = "print"
inputs = ["per_word"]
"""
        self.write("kafka.toml", text)
        r = self.sluiced("validate", "kafka.toml")
        self.assertExit(r, EXIT_OK)
        line, col = line_col(text, "[operators.counts]")
        self.stderr_line_with(r, f"kafka.toml:{line}:{col}: warning:", "node 'counts'",
                              "grouped source 'in'", "key_by -> aggregate")
        self.assertNotIn("node 'per_word'", r.stderr)
        self.write("alone.toml", text.replace('group_id = "wc"\n', ""))
        r = self.sluiced("validate", "alone.toml")
        self.assertExit(r, EXIT_OK)
        self.assertNotInStderr("warning", r)
        # Through a repartition topic: the grouped source is the one the host generated.
        text = """\
[sources.in]
type = "from_kafka"
brokers = "127.0.0.1:9"
topics = ["lines"]
group_id = "wc"

[operators.keyed]
type = "key_by"
inputs = ["in"]
function = "identity"
repartition_topic = "by-word"

[operators.counts]
type = "accumulate"
inputs = ["keyed"]
function = "count_by"
start = {}

[sinks.out]
type = "print"
inputs = ["counts"]
"""
        self.write("repartition.toml", text)
        r = self.sluiced("validate", "repartition.toml")
        self.assertExit(r, EXIT_OK)
        line, col = line_col(text, "[operators.counts]")
        self.stderr_line_with(r, f"repartition.toml:{line}:{col}: warning:", "node 'counts'",
                              "grouped source 'keyed.repartitioned' (the repartition topic of "
                              "'keyed')")

    def check_error_at(self, text, needle, *message_parts, occurrence=1, name="bad.toml"):
        """Validates `text` (as given relative to the temp dir) and checks that an error
        points at `needle`'s file:line:col and says every message part."""
        self.write(name, text)
        r = self.sluiced("validate", name)  # relative: diagnostics name the file as given
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(text, needle, occurrence)
        where = f"{name}:{line}:{col}: error:"
        self.stderr_line_with(r, where, *message_parts)
        return r

    def test_unknown_type(self):
        text = """\
[sources.numbers]
type = "from_iterable"
values = [1]

[operators.scaled]
type = "mapp"
inputs = ["numbers"]
function = "mul"
args = { value = 2 }

[sinks.out]
type = "print"
inputs = ["scaled"]
"""
        self.check_error_at(text, '"mapp"', "node 'scaled'", "key 'type'", "'mapp'",
                            "did you mean 'map'")

    def test_unknown_input(self):
        text = """\
[sources.numbers]
type = "from_iterable"
values = [1]

[sinks.out]
type = "print"
inputs = ["numbrs"]
"""
        self.check_error_at(text, '"numbrs"', "node 'out'", "'numbrs'")

    def test_cycle(self):
        text = """\
[sources.numbers]
type = "from_iterable"
values = [1]

[operators.a]
type = "map"
inputs = ["b"]
function = "identity"

[operators.b]
type = "map"
inputs = ["a"]
function = "identity"

[sinks.out]
type = "print"
inputs = ["b"]
"""
        self.write("bad.toml", text)
        r = self.sluiced("validate", "bad.toml")
        self.assertExit(r, EXIT_INVALID)
        # The error points at the edge that closes the loop: one of the two inputs.
        candidates = [line_col(text, '"b"', 1), line_col(text, '"a"', 1)]
        lines = [l for l in r.stderr.splitlines() if "cycle" in l]
        self.assertTrue(lines, r.describe())
        m = re.match(r"bad\.toml:(\d+):(\d+): error: ", lines[0])
        self.assertIsNotNone(m, f"no file:line:col in {lines[0]!r}")
        self.assertIn((int(m.group(1)), int(m.group(2))), candidates, r.describe())
        self.assertTrue("a -> b -> a" in lines[0] or "b -> a -> b" in lines[0], r.describe())

    def test_several_errors_reported_at_once(self):
        text = """\
[sources.numbers]
type = "from_iterabel"
values = [1]

[operators.scaled]
type = "map"
inputs = ["numbers"]
function = "mull"

[sinks.out]
type = "sink_to_textfile"
inputs = ["scaled"]
pth = "x.txt"
"""
        self.write("bad.toml", text)
        r = self.sluiced("validate", "bad.toml")
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(text, '"from_iterabel"')
        self.stderr_line_with(r, f"bad.toml:{line}:{col}: error:", "node 'numbers'", "from_iterabel")
        line, col = line_col(text, '"mull"')
        self.stderr_line_with(r, f"bad.toml:{line}:{col}: error:", "node 'scaled'", "mull")
        self.stderr_line_with(r, "bad.toml:", "node 'out'", "pth")

    def test_toml_syntax_error(self):
        text = '[sources.numbers]\ntype = "from_iterable"\nvalues = [1, 2\n'
        self.write("bad.toml", text)
        r = self.sluiced("validate", "bad.toml")
        self.assertExit(r, EXIT_INVALID)
        self.assertRegex(r.stderr, r"bad\.toml:\d+:\d+: error: ")


class EnvironmentCheckTest(SluiceTestCase):
    """What start would refuse is a validate error with file:line:col: a file to read that
    is missing, a directory to write in that does not exist. `run` checks it before it
    starts anything; `validate --no-environment` and `graph` check the config alone."""

    def config(self, source_path, sink_path):
        return f"""name = "env"
[sources.lines]
type = "from_textfile"
path = {toml_str(source_path)}
[sinks.out]
type = "sink_to_textfile"
inputs = ["lines"]
path = {toml_str(sink_path)}
"""

    def test_a_missing_input_file(self):
        missing = self.path("no-such-input.txt")
        text = self.config(missing, self.path("out.txt"))
        cfg = self.write("p.toml", text)
        line, col = line_col(text, "path", 1)
        for command in (["validate", cfg], ["run", cfg]):
            r = self.sluiced(*command)
            self.assertExit(r, EXIT_INVALID)
            self.assertIn(f"p.toml:{line}:{col}: error: node 'lines': key 'path': cannot read "
                          f"'{missing}': No such file or directory", r.stderr)
        self.assertFalse(os.path.exists(self.path("out.txt")), "run started the sink")
        self.assertExit(self.sluiced("validate", "--no-environment", cfg), EXIT_OK)
        self.assertExit(self.sluiced("graph", cfg), EXIT_OK)

        self.write("no-such-input.txt", "a\nb\n")
        self.assertExit(self.sluiced("validate", cfg), EXIT_OK)
        self.assertExit(self.sluiced("run", cfg), EXIT_OK)
        self.assertEqual(self.read("out.txt"), '"a"\n"b"\n')

    def test_a_sink_in_a_missing_directory(self):
        self.write("in.txt", "a\n")
        out = self.path("no-such-dir", "out.txt")
        text = self.config(self.path("in.txt"), out)
        cfg = self.write("p.toml", text)
        line, col = line_col(text, "path", 2)
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertIn(f"p.toml:{line}:{col}: error: node 'out': key 'path': the directory "
                      f"'{self.path('no-such-dir')}' does not exist", r.stderr)
        self.assertExit(self.sluiced("validate", "--no-environment", cfg), EXIT_OK)
        os.mkdir(self.path("no-such-dir"))
        self.assertExit(self.sluiced("validate", cfg), EXIT_OK)
        # A directory where the file should be.
        os.mkdir(out)
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertIn(f"'{out}' exists and is a directory", r.stderr)


    def test_validate_json(self):
        # One JSON object on stdout: the result and each finding with its place.
        missing = self.path("no-such-input.txt")
        text = self.config(missing, self.path("out.txt"))
        cfg = self.write("p.toml", text)
        r = self.sluiced("validate", "--json", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertEqual(r.stderr, "")
        doc = json.loads(r.stdout)
        self.assertFalse(doc["valid"])
        self.assertEqual(len(doc["diagnostics"]), 1, doc)
        d = doc["diagnostics"][0]
        line, col = line_col(text, "path", 1)
        self.assertEqual((d["severity"], d["line"], d["column"], d["node"], d["key"]),
                         ("error", line, col, "lines", "path"))
        self.assertEqual(os.path.basename(d["file"]), "p.toml")
        self.assertIn(f"cannot read '{missing}'", d["message"])

        self.write("no-such-input.txt", "a\n")
        r = self.sluiced("validate", "--json", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(json.loads(r.stdout),
                         {"valid": True, "config": [cfg], "nodes": 2, "tests": 0,
                          "created": False, "diagnostics": []})

    def test_a_program_that_cannot_run(self):
        text = """name = "env"
[sources.lines]
type = "from_process"
command = ["no-such-program-sluice", "--flag"]
[sinks.out]
type = "print"
inputs = ["lines"]
"""
        cfg = self.write("p.toml", text)
        line, col = line_col(text, "command", 1)
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertIn(f"p.toml:{line}:{col}: error: node 'lines': key 'command': cannot run "
                      "'no-such-program-sluice': not found on PATH", r.stderr)
        self.assertExit(self.sluiced("validate", "--no-environment", cfg), EXIT_OK)
        # A path: the file must be executable.
        script = self.write("tool.sh", "#!/bin/sh\necho hi\n")
        text = text.replace('"no-such-program-sluice"', toml_str(script))
        cfg = self.write("p.toml", text)
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertIn(f"cannot run '{script}': not an executable file", r.stderr)
        os.chmod(script, 0o755)
        self.assertExit(self.sluiced("validate", cfg), EXIT_OK)
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout, "hi\n")

    def test_a_checkpoint_directory_that_cannot_be_made(self):
        self.write("in.txt", "a\n")
        blocker = self.write("blocker", "a file, not a directory")
        text = self.config(self.path("in.txt"), self.path("out.txt")) + f"""
[checkpoint]
store = "fs"
dir = {toml_str(os.path.join(blocker, "cp"))}
"""
        cfg = self.write("p.toml", text)
        line, col = line_col(text, toml_str(os.path.join(blocker, "cp")))
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertIn(f"p.toml:{line}:{col}: error: key 'checkpoint.dir': cannot create "
                      f"'{os.path.join(blocker, 'cp')}': '{blocker}' is not a directory",
                      r.stderr)
        self.assertExit(self.sluiced("validate", "--no-environment", cfg), EXIT_OK)
        cfg = self.write("p.toml", text.replace(os.path.join(blocker, "cp"), self.path("cp", "x")))
        self.assertExit(self.sluiced("validate", cfg), EXIT_OK)


class GraphTest(SluiceTestCase):
    def setUp(self):
        super().setUp()
        self.cfg = self.write("numbers.toml", numbers_pipeline(self.path("out.txt")))

    def test_dot(self):
        r = self.sluiced("graph", self.cfg, "--format", "dot")
        self.assertExit(r, EXIT_OK)
        self.assertTrue(r.stdout.lstrip().startswith("digraph"), r.describe())
        self.assertTrue(r.stdout.rstrip().endswith("}"), r.describe())
        for src, dst in [("numbers", "plus_ten"), ("plus_ten", "big"), ("big", "out")]:
            self.assertRegex(r.stdout, rf'"{src}"\s*->\s*"{dst}"')
        for node_type in ["from_iterable", "map", "filter", "sink_to_textfile"]:
            self.assertIn(node_type, r.stdout)

    def test_json(self):
        r = self.sluiced("graph", self.cfg, "--format", "json")
        self.assertExit(r, EXIT_OK)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["name"], "numbers")
        nodes = {n["id"]: n for n in doc["nodes"]}
        self.assertEqual(set(nodes), {"numbers", "plus_ten", "big", "out"})
        self.assertEqual(nodes["numbers"]["type"], "from_iterable")
        self.assertEqual(nodes["numbers"]["role"], "source")
        self.assertEqual(nodes["plus_ten"]["type"], "map")
        self.assertEqual(nodes["plus_ten"]["inputs"], ["numbers"])
        self.assertEqual(nodes["out"]["role"], "sink")
        self.assertEqual(nodes["out"]["plugin"], "sinks")
        self.assertEqual(nodes["out"]["config"]["path"], self.path("out.txt"))
        self.assertEqual(nodes["plus_ten"]["config"]["function"]["name"], "add")
        self.assertEqual(nodes["plus_ten"]["config"]["function"]["args"]["value"], 10)
        edges = {(e["from"], e["to"]) for e in doc["edges"]}
        self.assertEqual(edges, {("numbers", "plus_ten"), ("plus_ten", "big"), ("big", "out")})

    def test_graph_of_invalid_config(self):
        self.write("bad.toml", '[sources.x]\ntype = "nope"\n')
        r = self.sluiced("graph", "bad.toml", "--format", "json")
        self.assertExit(r, EXIT_INVALID)
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr, r"bad\.toml:2:8: error: ")


class PluginsTest(SluiceTestCase):
    def test_text(self):
        r = self.sluiced("plugins")
        self.assertExit(r, EXIT_OK)
        for plugin in ["core_ops", "sinks"]:
            self.assertRegex(r.stdout, rf"(?m)^{plugin} ")
        for name, role in {**CORE_NODE_TYPES, **SINK_NODE_TYPES}.items():
            self.assertRegex(r.stdout, rf"(?m)^\s+{role} {name} ")
        for name, kind in CORE_FUNCTIONS.items():
            self.assertRegex(r.stdout, rf"(?m)^\s+function {name} \({kind}\)")
        # Parameters with their types and docs.
        self.assertRegex(r.stdout, r"(?m)^\s+path\s+string\s+required\s+\S")

    def test_json(self):
        r = self.sluiced("plugins", "--json")
        self.assertExit(r, EXIT_OK)
        doc = json.loads(r.stdout)
        plugins = {p["name"]: p for p in doc["plugins"]}
        self.assertIn("core_ops", plugins)
        self.assertIn("sinks", plugins)
        for p in plugins.values():
            self.assertTrue(os.path.isabs(p["file"]) or os.path.exists(p["file"]), p)
            self.assertRegex(p["abi"], r"^1\.\d+$")
            self.assertTrue(p["version"])

        core_types = {t["name"]: t for t in plugins["core_ops"]["node_types"]}
        for name, role in CORE_NODE_TYPES.items():
            self.assertIn(name, core_types)
            self.assertEqual(core_types[name]["role"], role)
            self.assertTrue(core_types[name]["doc"], f"{name} has no doc")
        sink_types = {t["name"]: t for t in plugins["sinks"]["node_types"]}
        for name, role in SINK_NODE_TYPES.items():
            self.assertIn(name, sink_types)
            self.assertEqual(sink_types[name]["role"], role)
            self.assertTrue(sink_types[name]["doc"], f"{name} has no doc")

        def params(t):
            return {p["name"]: p for p in t["params"]}

        path = params(sink_types["sink_to_textfile"])["path"]
        self.assertEqual((path["type"], path["required"]), ("string", True))
        self.assertTrue(path["doc"])
        textfile = params(core_types["from_textfile"])
        self.assertEqual(textfile["path"]["required"], True)
        self.assertEqual(textfile["follow"]["type"], "bool")
        self.assertEqual(textfile["follow"]["default"], False)
        self.assertEqual(params(core_types["map"])["function"]["type"], "function")
        self.assertEqual(core_types["map"]["min_inputs"], 1)
        for t in core_types.values():
            for p in t["params"]:
                self.assertTrue(p["doc"], f"{t['name']}.{p['name']} has no doc")

        functions = {f["name"]: f for f in plugins["core_ops"]["functions"]}
        for name, kind in CORE_FUNCTIONS.items():
            self.assertIn(name, functions)
            self.assertEqual(functions[name]["kind"], kind, name)
            self.assertTrue(functions[name]["doc"], f"function {name} has no doc")
        for name in ["add", "gt"]:
            self.assertIn("value", params(functions[name]), f"{name} takes `value`")

    def test_with_config_plugin_dirs(self):
        # `plugins --config` also searches the pipeline's plugin_dirs.
        extra = self.mkdir("conf/extra")
        shutil.copy2(plugin_file(PLUGIN_DIR, "sinks"), extra)
        cfg = self.write("conf/p.toml", 'plugin_dirs = ["extra"]\n')
        r = self.sluiced("plugins", "--json", "--config", cfg,
                         env=self.env(plugin_path=self.only_core_ops_dir()))
        self.assertExit(r, EXIT_OK)
        names = {p["name"]: p["file"] for p in json.loads(r.stdout)["plugins"]}
        self.assertIn("core_ops", names)
        self.assertTrue(names.get("sinks", "").startswith(extra), r.describe())

    def test_with_config_plugin_dirs_from_a_variable(self):
        # plugin_dirs interpolated as run reads them; an unset variable is an error.
        extra = self.mkdir("conf/extra")
        shutil.copy2(plugin_file(PLUGIN_DIR, "sinks"), extra)
        text = 'plugin_dirs = ["${EXTRA_PLUGINS}"]\n'
        cfg = self.write("conf/p.toml", text)
        r = self.sluiced("plugins", "--json", "--config", cfg,
                         env=self.env(plugin_path=self.only_core_ops_dir(), EXTRA_PLUGINS=extra))
        self.assertExit(r, EXIT_OK)
        names = {p["name"]: p["file"] for p in json.loads(r.stdout)["plugins"]}
        self.assertTrue(names.get("sinks", "").startswith(extra), r.describe())
        r = self.sluiced("plugins", "--config", cfg, env=self.env(plugin_path=self.only_core_ops_dir()))
        self.assertExit(r, EXIT_INVALID)
        line, col = line_col(text, '"${EXTRA_PLUGINS}"')
        self.assertIn(f"p.toml:{line}:{col}: error:", r.stderr)
        self.assertIn("environment variable 'EXTRA_PLUGINS' is not set", r.stderr)

    def only_core_ops_dir(self):
        d = self.mkdir("core-only")
        shutil.copy2(plugin_file(PLUGIN_DIR, "core_ops"), d)
        return d


PIPELINE_UNDER_TEST = """\
name = "tested"

[sources.numbers]
type = "from_iterable"
values = [0]

[operators.doubled]
type = "map"
inputs = ["numbers"]
function = "mul"
args = { value = 2 }

[operators.small]
type = "filter"
inputs = ["doubled"]
function = "lt"
args = { value = 10 }

[sinks.out]
type = "print"
inputs = ["small"]

[sources.words]
type = "from_iterable"
values = ["ignored"]

[operators.lowered]
type = "map"
inputs = ["words"]
function = "lower"

[operators.only_abc]
type = "filter"
inputs = ["lowered"]
function = "eq"
args = { value = "abc" }

[sinks.words_out]
type = "print"
inputs = ["only_abc"]
"""


class PipelineTestCommandTest(SluiceTestCase):
    def test_passing_tests_in_the_pipeline_file(self):
        cfg = self.write("tested.toml", PIPELINE_UNDER_TEST + """
[[tests]]
name = "doubles and keeps the small ones"
inject = ["words"]
steps = [
  { source = "numbers", value = 1 },
  { source = "numbers", value = 4 },
  { source = "numbers", value = 7 },
  { source = "numbers", value = 3 },
]

[tests.expect]
doubled = [2, 8, 14, 6]
small = [2, 8, 6]

[[tests]]
name = "lower-cases and keeps abc"
inject = ["numbers"]
steps = [
  { source = "words", value = "ABC" },
  { source = "words", value = "Def" },
  { source = "words", value = "aBc" },
]

[tests.expect_json]
lowered = ['"abc"', '"def"', '"abc"']
only_abc = ['"abc"', '"abc"']
""")
        r = self.sluiced("test", cfg)
        self.assertExit(r, EXIT_OK)
        # Sinks do not run under `sluiced test` (docs/TESTING.md): the print sinks print
        # nothing, so stdout is the report alone.
        # No stateful node: the report says the restart check had nothing to check.
        self.assertEqual(r.stdout.splitlines(), [
            "ok     doubles and keeps the small ones  (no restart check: no stateful node)",
            "ok     lower-cases and keeps abc  (no restart check: no stateful node)",
            "restart check: ran for 0 of 2 cases; not run for 2 (2 no stateful node)",
            "2 passed, 0 failed"], r.describe())

    def test_file_sinks_do_not_run_under_test(self):
        out = self.path("out.txt")
        cfg = self.write("tested.toml", numbers_pipeline(out) + """
[[tests]]
name = "filters"
steps = [{ source = "numbers", value = 5 }]
[tests.expect]
big = [15]
""")
        r = self.sluiced("test", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFalse(os.path.exists(out), "sluiced test must not write the sink's file")

    def test_failing_test_in_a_separate_file_shows_a_diff(self):
        cfg = self.write("tested.toml", PIPELINE_UNDER_TEST)
        tests_text = """\
[[tests]]
name = "passes"
inject = ["words"]
steps = [{ source = "numbers", value = 1 }]
[tests.expect]
small = [2]

[[tests]]
name = "wrong expectation"
inject = ["words"]
steps = [
  { source = "numbers", value = 1 },
  { source = "numbers", value = 4 },
  { source = "numbers", value = 30 },
]
[tests.expect]
small = [2, 9, 60]
"""
        tests = self.write("tested.tests.toml", tests_text)
        r = self.sluiced("test", cfg, tests)
        self.assertExit(r, EXIT_TESTS_FAILED)
        out = r.stdout
        self.assertIn("ok     passes", out)
        failed_line = line_col(tests_text, '[[tests]]', 2)[0]
        self.assertRegex(out, rf"FAILED wrong expectation \(.*tested\.tests\.toml:{failed_line}\)")
        self.assertIn("node 'small': expected 3 outputs, got 2", out)
        # Readable: the matching element as context, then expected (-) vs got (+).
        self.assertRegex(out, r"(?m)^\s+#0\s+2$")
        self.assertRegex(out, r"(?m)^\s+- #1\s+9$")
        self.assertRegex(out, r"(?m)^\s+\+ #1\s+8$")
        self.assertRegex(out, r"(?m)^\s+- #2\s+60$")
        self.assertEqual(out.splitlines()[-1], "1 passed, 1 failed", r.describe())

    def test_invalid_test_file(self):
        cfg = self.write("tested.toml", PIPELINE_UNDER_TEST)
        tests = self.write("bad.tests.toml", """\
[[tests]]
name = "typo"
steps = [{ source = "numbers", vale = 1 }]
[tests.expect]
small = [2]
""")
        r = self.sluiced("test", cfg, tests)
        self.assertExit(r, EXIT_INVALID)
        self.assertRegex(r.stderr, r"bad\.tests\.toml:3:\d+: error: .*vale")

    def test_expectation_or_step_naming_no_such_node_is_an_invalid_test_file(self):
        # A typo in a node id is found without running anything, like a typo in the
        # config: exit 2, pointing at the line (docs/TESTING.md).
        cfg = self.write("tested.toml", PIPELINE_UNDER_TEST)
        for what, text, needle in [
            ("expect", """\
[[tests]]
name = "typo in expect"
inject = ["words"]
steps = [{ source = "numbers", value = 1 }]
[tests.expect]
smal = [2]
""", "smal"),
            ("step", """\
[[tests]]
name = "typo in step"
inject = ["words"]
steps = [{ source = "numbrs", value = 1 }]
[tests.expect]
small = [2]
""", '{ source = "numbrs"'),
        ]:
            with self.subTest(what=what):
                tests = self.write(f"{what}.tests.toml", text)
                r = self.sluiced("test", cfg, tests)
                self.assertExit(r, EXIT_INVALID)
                line = line_col(text, needle)[0]
                self.assertRegex(r.stderr, rf"{what}\.tests\.toml:{line}:\d+: error: ")


class PluginSearchPathTest(SluiceTestCase):
    def test_plugin_dirs_relative_to_the_config_file(self):
        # The config lives in conf/, its plugins in ../plugins; sluiced runs from elsewhere
        # with no SLUICE_PLUGIN_PATH: only the config's plugin_dirs can find them.
        plugins = self.mkdir("plugins")
        for stem in ["core_ops", "sinks"]:
            shutil.copy2(plugin_file(PLUGIN_DIR, stem), plugins)
        out = self.path("out.txt")
        cfg = self.write("conf/numbers.toml", numbers_pipeline(out, plugin_dirs=["../plugins"]))
        elsewhere = self.mkdir("elsewhere")
        env = self.env(plugin_path="")
        r = self.sluiced("validate", cfg, env=env, cwd=elsewhere)
        self.assertExit(r, EXIT_OK)
        r = self.sluiced("run", os.path.relpath(cfg, elsewhere), env=env, cwd=elsewhere)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "14\n15\n16\n", r)

    def test_without_plugins_the_types_are_unknown(self):
        # Control for the test above: the same config without plugin_dirs finds nothing.
        self.mkdir("empty")
        cfg = self.write("conf/numbers.toml",
                         numbers_pipeline(self.path("out.txt"), plugin_dirs=["../empty"]))
        r = self.sluiced("validate", cfg, env=self.env(plugin_path=""))
        self.assertExit(r, EXIT_INVALID)
        self.assertIn("from_iterable", r.stderr)
        # The error says where plugins were looked for and how to add a directory.
        self.assertIn("no source types are registered; plugins were searched in "
                      f"{self.path('empty')}", r.stderr)
        for hint in ["SLUICE_PLUGIN_PATH", "--plugin-dir", "plugin_dirs"]:
            self.assertIn(hint, r.stderr)

    def test_unknown_type_names_the_directories_searched(self):
        cfg = self.write("conf/numbers.toml", numbers_pipeline(self.path("out.txt")).replace(
            'type = "from_iterable"', 'type = "from_iterabel"'))
        extra = self.mkdir("extra")
        r = self.sluiced("validate", cfg, "--plugin-dir", extra)
        self.assertExit(r, EXIT_INVALID)
        line = self.stderr_line_with(r, "unknown source type 'from_iterabel'")
        self.assertIn("did you mean 'from_iterable'?", line)
        self.assertIn(f"plugins were searched in {extra}, {PLUGIN_DIR}", line)
        self.assertIn("SLUICE_PLUGIN_PATH", line)

    def test_missing_plugin_dir_in_config(self):
        cfg = self.write("conf/numbers.toml",
                         numbers_pipeline(self.path("out.txt"), plugin_dirs=["no-such-dir"]))
        r = self.sluiced("validate", cfg)
        self.assertExit(r, EXIT_INVALID)
        self.assertIn("no-such-dir", r.stderr)

    def test_sluice_plugin_path_with_two_directories(self):
        core = self.mkdir("dir-a")
        sinks = self.mkdir("dir-b")
        shutil.copy2(plugin_file(PLUGIN_DIR, "core_ops"), core)
        shutil.copy2(plugin_file(PLUGIN_DIR, "sinks"), sinks)
        env = self.env(plugin_path=f"{core}:{sinks}")
        out = self.path("out.txt")
        cfg = self.write("numbers.toml", numbers_pipeline(out))
        r = self.sluiced("run", cfg, env=env)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "14\n15\n16\n", r)
        r = self.sluiced("plugins", "--json", env=env)
        self.assertExit(r, EXIT_OK)
        files = {p["name"]: p["file"] for p in json.loads(r.stdout)["plugins"]}
        self.assertTrue(files["core_ops"].startswith(core), files)
        self.assertTrue(files["sinks"].startswith(sinks), files)

    def test_plugin_dir_option(self):
        extra = self.mkdir("extra")
        shutil.copy2(plugin_file(PLUGIN_DIR, "sinks"), extra)
        core = self.mkdir("core")
        shutil.copy2(plugin_file(PLUGIN_DIR, "core_ops"), core)
        out = self.path("out.txt")
        cfg = self.write("numbers.toml", numbers_pipeline(out))
        r = self.sluiced("run", cfg, "--plugin-dir", extra, env=self.env(plugin_path=core))
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "14\n15\n16\n", r)


if __name__ == "__main__":
    unittest.main()
