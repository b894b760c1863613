"""Lua code that tries to outrun the sandbox's limits or to change what another function
sees (issue 18, items 6 and 7), through the real `sluiced validate` and `sluiced run`.

Before the fix each escape case hung (validate on a chunk that left a looping __gc object,
run on a pcall loop): every command here runs with a deadline (TIMEOUT), so a regression
fails instead of hanging the suite.
"""

import re
import unittest

from sluice_it import EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, SluiceTestCase

# Generous for a loaded machine: a limited call takes well under a second.
TIMEOUT = 60

LIMIT = "instruction limit exceeded (10 million per call); an endless loop?"


def pipeline(lua, on_error="", values="[1, 2, 3]"):
    return f"""
[sources.n]
type = "from_iterable"
values = {values}

[operators.f]
type = "map"
inputs = ["n"]
{on_error}
lua = '''
{lua}
'''

[sinks.out]
type = "print"
inputs = ["f"]
"""


class LuaEscapesTest(SluiceTestCase):

    def run_pipeline(self, lua, **kw):
        cfg = self.write("p.toml", pipeline(lua, **kw))
        return self.sluiced("run", cfg, timeout=TIMEOUT)

    def validate(self, lua):
        cfg = self.write("v.toml", pipeline(lua))
        return self.sluiced("validate", cfg, timeout=TIMEOUT)

    def test_pcall_loops_end_at_the_instruction_limit(self):
        for code in [
                "function(x) while true do pcall(function() while true do end end) end end",
                "function(x) while true do xpcall(function() while true do end end, "
                "function(e) return e end) end end",
                "function(x) return xpcall(error, function() while true do end end) end",
                "function(x) local c <close> = setmetatable({}, {__close = function() "
                "while true do pcall(function() while true do end end) end end}) end",
        ]:
            with self.subTest(code=code):
                r = self.run_pipeline(code)
                self.assertExit(r, EXIT_RUNTIME)
                # The time limit (2 s) may come first on a slow or loaded machine.
                self.assertRegex(r.stderr, "p.toml:11: (" + re.escape(LIMIT) + "|time limit "
                                 r"exceeded \(2000 ms per call\))")
                self.assertInStderr("node 'f'", r)

    def test_the_memory_limit_cannot_be_caught(self):
        r = self.run_pipeline(
            "function(x) while true do pcall(string.rep, 'x', 1 << 30) end end")
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("memory limit exceeded (64 MiB per task)", r)

    def test_a_failed_call_does_not_take_the_task_down(self):
        r = self.run_pipeline(
            "function(x)\n"
            "  if x == 2 then while true do pcall(function() while true do end end) end end\n"
            "  return x\n"
            "end", on_error='on_error = "skip"')
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout, "1\n3\n")

    def test_validate_refuses_a_looping_finalizer_instead_of_hanging(self):
        code = ("local keep = setmetatable({}, {__gc = function() while true do end end})\n"
                "return function(x) return x end")
        r = self.validate(code)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("v.toml:11:", r)
        self.assertInStderr("__gc metamethods are not allowed in the sandbox", r)
        # run validates first: the same error, no hang at the start.
        r = self.run_pipeline(code)
        self.assertExit(r, EXIT_INVALID)
        self.assertInStderr("__gc metamethods are not allowed", r)

    def test_validate_bounds_chunks_that_loop_at_the_top_level(self):
        for code in ["while true do pcall(function() while true do end end) end",
                     "while true do end",
                     "local t = {} for i = 1, 1e12 do t[i] = i end return function(x) end"]:
            with self.subTest(code=code):
                r = self.validate(code)
                self.assertExit(r, EXIT_INVALID)
                self.assertInStderr("v.toml:11:", r)
                self.assertRegex(r.stderr, "(instruction|time|memory) limit exceeded")

    def test_a_function_cannot_change_what_another_sees(self):
        cfg = self.write("p.toml", """
[sources.n]
type = "from_iterable"
values = ["a"]

[operators.attack]
type = "map"
inputs = ["n"]
lua = '''
function(x)
  pcall(function() string.upper = function() return 'pwned' end end)
  pcall(function() getmetatable('').__index.upper = function() return 'pwned' end end)
  pcall(rawset, string, 'upper', function() return 'pwned' end)
  pcall(function() sluice.null = 'pwned' end)
  _G.math = {floor = function() return 'pwned' end}
  return x
end
'''

[operators.probe]
type = "map"
inputs = ["attack"]
lua = "x:upper() .. string.upper(x) .. math.floor(2.5) .. tostring(sluice.null)"

[sinks.out]
type = "print"
inputs = ["probe"]
""")
        r = self.sluiced("run", cfg, timeout=TIMEOUT)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(r.stdout, "AA2null\n")


if __name__ == "__main__":
    unittest.main()
