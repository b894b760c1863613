"""The native fast path of Lua expressions (issue 20, docs/LUA.md "The fast path"), through
the real `sluiced run`: the same pipeline run with the fast path and with
SLUICE_LUA_FAST_PATH=0 (every call in Lua) writes the same files, and fails on the same
elements with the same errors (on_error = "skip" logs each one), over 64-bit edge values,
-0.0, inf, NaN, non-ASCII strings, booleans, objects with and without the field, and arrays.
The debug log says which path each function takes.
"""

import re
import unittest

from sluice_it import EXIT_OK, SluiceTestCase, toml_str

VALUES = """[0, 1, -1, 7, 50, 51, 9223372036854775807, -9223372036854775808, 2.5, -0.0, 1e308,
inf, -inf, nan, "abc", "", "日本", "10", true, false,
{ amount = 60, user = "ann" }, { amount = 50.5, user = "élève" }, { user = "bob" },
{ amount = "60" }, [1, 2, 3], []]"""

# node id -> (operator type, Lua expression)
EXPRESSIONS = {
    "arith": ("map", "x * 3 + 1"),
    "even": ("filter", "x % 2 == 0"),
    "idiv": ("map", "x // 2"),
    "zdiv": ("map", "x // 0"),
    "fdiv": ("map", "x / 0"),
    "pow": ("map", "x ^ 2"),
    "field": ("map", "x.amount > 50 and x.user or sluice.null"),
    "missing": ("map", "x.amount == nil"),
    "concat": ("map", 'x .. "!"'),
    "neg": ("map", "-x"),
    "self_eq": ("map", "x == x"),
    "length": ("map", "#x"),
    "logic": ("filter", "not x or x == 7"),
    "compare": ("map", "x < 9007199254740993"),
}


def pipeline(tmp):
    parts = [f"""
[runtime]
on_error = "skip"

[sources.n]
type = "from_iterable"
values = {VALUES}
"""]
    for node, (kind, code) in EXPRESSIONS.items():
        parts.append(f"""
[operators.{node}]
type = "{kind}"
inputs = ["n"]
lua = {toml_str(code)}

[sinks.out_{node}]
type = "sink_to_textfile"
inputs = ["{node}"]
path = {toml_str(f"{tmp}/{node}.jsonl")}
""")
    return "".join(parts)


SKIPPED = re.compile(r"node '(\w+)' \(\w+\): skipped a message it failed on \(\d+ skipped so far\): "
                     r"(.*)$", re.M)


class LuaFastPathTest(SluiceTestCase):

    def run_once(self, name, fast_path):
        # The same files in both runs (error messages name the config); the sinks
        # truncate their files at start.
        out_dir = self.mkdir("run")
        cfg = self.write("run/pipe.toml", pipeline(out_dir))
        extra = {} if fast_path else {"SLUICE_LUA_FAST_PATH": "0"}
        r = self.sluiced("run", "--log-level", "debug", cfg, env=self.env(**extra))
        self.assertExit(r, EXIT_OK)
        outputs = {node: self.read(f"{out_dir}/{node}.jsonl") for node in EXPRESSIONS}
        # Skips are logged at the 1st, 2nd, 4th, ... of a node: compare what is logged.
        skipped = sorted(SKIPPED.findall(r.stderr))
        return r, outputs, skipped

    def test_outputs_and_errors_equal_with_and_without_the_fast_path(self):
        fast, fast_out, fast_skipped = self.run_once("fast", True)
        lua, lua_out, lua_skipped = self.run_once("lua", False)
        for node in EXPRESSIONS:
            with self.subTest(node=node):
                self.assertEqual(fast_out[node], lua_out[node])
                self.assertIn(f"node '{node}': Lua function at", fast.stderr)
        self.assertEqual(fast_skipped, lua_skipped)
        # The pipeline does meet errors (Lua's messages, with the config's line).
        reasons = "\n".join(reason for _, reason in fast_skipped)
        self.assertIn("attempt to mul a 'string' with a 'number'", reasons)
        self.assertIn("attempt to perform arithmetic on a boolean value (local 'x')", reasons)
        self.assertIn("attempt to divide by zero", reasons)
        self.assertIn("attempt to get length of a number value", reasons)
        # Spot checks of exact 64-bit results (wrapping, as Lua).
        self.assertIn("\n9223372036854775806\n", fast_out["arith"])  # INT64_MAX * 3 + 1 wraps
        self.assertEqual(fast_out["even"].split("\n")[:2], ["0", "50"])
        # Which path each function took.
        native = re.findall(r"node '(\w+)': Lua function at \S+ runs natively \(fast path\)",
                            fast.stderr)
        self.assertEqual(sorted(native), sorted(EXPRESSIONS))
        in_lua = re.findall(r"node '(\w+)': Lua function at \S+ runs in Lua \(not on the fast "
                            r"path: SLUICE_LUA_FAST_PATH=0\)", lua.stderr)
        self.assertEqual(sorted(in_lua), sorted(EXPRESSIONS))

    def test_code_off_the_fast_path_says_why(self):
        out_dir = self.mkdir("why")
        cfg = self.write("why.toml", f"""
[sources.n]
type = "from_iterable"
values = ["a", "b"]

[operators.up]
type = "map"
inputs = ["n"]
lua = "x:upper()"

[sinks.out]
type = "sink_to_textfile"
inputs = ["up"]
path = {toml_str(f"{out_dir}/up.jsonl")}
""")
        r = self.sluiced("run", "--log-level", "debug", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertIn("runs in Lua (not on the fast path: a function call)", r.stderr)
        self.assertEqual(self.read(f"{out_dir}/up.jsonl"), '"A"\n"B"\n')


if __name__ == "__main__":
    unittest.main()
