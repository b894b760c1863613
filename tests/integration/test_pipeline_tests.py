"""`sluiced test`: the restart check, expect_error and dead-letter outputs, through the
real binary (the rest of the format is covered by examples/ and tests/ops/)."""

import unittest

from sluice_it import PLUGIN_DIR, SluiceTestCase, broken

COUNTER_PIPELINE = """
[sources.src]
type = "from_iterable"
values = []
[operators.count]
type = "{type}"
inputs = ["src"]
[sinks.out]
type = "print"
inputs = ["count"]
"""

COUNTER_CASES = """
[[tests]]
name = "counts three"
{extra}
steps = [{{ source = "src", value = "a" }}, {{ source = "src", value = "b" }},
         {{ source = "src", value = "c" }}]
[tests.expect]
count = [1, 2, 3]
"""

PARSE_PIPELINE = """
[sources.src]
type = "from_iterable"
values = []
[operators.parse]
type = "map"
function = "json_parse"
inputs = ["src"]
{policy}
[sinks.out]
type = "print"
inputs = ["parse"]
{dead_letter_sink}
"""


class PipelineTestsTest(SluiceTestCase):
    def run_cases(self, pipeline, cases):
        self.write("p.toml", pipeline)
        self.write("p.tests.toml", cases)
        return self.sluiced("test", "p.toml", "p.tests.toml",
                            "--plugin-dir", PLUGIN_DIR, "--plugin-dir", broken("counters"))

    def test_restart_check_passes_a_node_that_restores_its_state(self):
        r = self.run_cases(COUNTER_PIPELINE.format(type="faithful_count"),
                           COUNTER_CASES.format(extra=""))
        self.assertExit(r, 0)
        self.assertInStdout("1 passed, 0 failed", r)

    def test_restart_check_catches_a_restore_that_drops_state(self):
        r = self.run_cases(COUNTER_PIPELINE.format(type="forgetful_count"),
                           COUNTER_CASES.format(extra=""))
        self.assertExit(r, 3)
        self.assertInStdout("restart check", r)
        # After each step the count restarts from zero: 1, 1, 1 instead of 1, 2, 3.
        self.assertInStdout("+ #1   1", r)

    def test_restart_check_can_be_turned_off_per_case(self):
        r = self.run_cases(COUNTER_PIPELINE.format(type="forgetful_count"),
                           COUNTER_CASES.format(extra="restart_check = false"))
        self.assertExit(r, 0)

    def test_expect_error_passes_when_the_run_fails_with_that_text(self):
        cases = """
[[tests]]
name = "bad json fails the node"
steps = [{ source = "src", json = '"{not json"' }]
expect_error = "node 'parse' (map): process failed"
"""
        r = self.run_cases(PARSE_PIPELINE.format(policy="", dead_letter_sink=""), cases)
        self.assertExit(r, 0)

    def test_expect_error_fails_when_the_run_succeeds(self):
        cases = """
[[tests]]
name = "good json does not fail"
steps = [{ source = "src", value = "[1]" }]
expect_error = "process failed"
"""
        r = self.run_cases(PARSE_PIPELINE.format(policy="", dead_letter_sink=""), cases)
        self.assertExit(r, 3)
        self.assertInStdout("but the run succeeded", r)

    def test_on_error_skip_drops_only_the_bad_message(self):
        cases = """
[[tests]]
name = "skip"
steps = [{ source = "src", value = "1" }, { source = "src", value = "{oops" },
         { source = "src", value = "[2]" }]
[tests.expect]
parse = [1, [2]]
"""
        r = self.run_cases(PARSE_PIPELINE.format(policy='on_error = "skip"', dead_letter_sink=""),
                           cases)
        self.assertExit(r, 0)

    def test_on_error_dead_letter_routes_the_bad_message(self):
        cases = """
[[tests]]
name = "dead letter"
steps = [{ source = "src", value = "1" }, { source = "src", value = "{oops" },
         { source = "src", value = "2" }]
[tests.expect]
parse = [1, 2]
"parse.dead_letter" = ["{oops"]
"""
        sink = '[sinks.dlq]\ntype = "print"\ninputs = ["parse.dead_letter"]'
        r = self.run_cases(
            PARSE_PIPELINE.format(policy='on_error = "dead_letter"', dead_letter_sink=sink), cases)
        self.assertExit(r, 0)

    def test_dead_letter_output_nobody_reads_is_refused(self):
        self.write("p.toml", PARSE_PIPELINE.format(policy='on_error = "dead_letter"',
                                                   dead_letter_sink=""))
        r = self.sluiced("validate", "p.toml", "--plugin-dir", PLUGIN_DIR)
        self.assertExit(r, 2)
        self.assertInStderr("node 'parse': key 'on_error'", r)
        self.assertInStderr("no node reads it", r)

    def test_reading_dead_letters_of_a_node_without_the_policy_is_refused(self):
        sink = '[sinks.dlq]\ntype = "print"\ninputs = ["parse.dead_letter"]'
        self.write("p.toml", PARSE_PIPELINE.format(policy="", dead_letter_sink=sink))
        r = self.sluiced("validate", "p.toml", "--plugin-dir", PLUGIN_DIR)
        self.assertExit(r, 2)
        self.assertInStderr("'parse' has no dead-letter output", r)

    def test_a_step_time_ms_that_is_not_an_integer_is_refused_at_its_position(self):
        r = self.run_cases(PARSE_PIPELINE.format(policy="", dead_letter_sink=""), """
[[tests]]
name = "bad time"
steps = [{ source = "src", json = "1", time_ms = "noon" }]
[tests.expect]
parse = [1]
""")
        self.assertExit(r, 2)
        self.assertInStderr("p.tests.toml:4:", r)
        self.assertInStderr("`time_ms` must be an integer", r)

    def test_steps_with_time_ms_and_partition_deliver_like_the_plain_ones(self):
        # The event time and partition ride on the message (event_time and window read
        # them: tests/ops/window_*.toml); a map passes the values on as without them.
        r = self.run_cases(PARSE_PIPELINE.format(policy="", dead_letter_sink=""), """
[[tests]]
name = "stamped"
steps = [{ source = "src", value = "1", time_ms = 1000, partition = 2 },
         { source = "src", values = ["[2]", "3"], time_ms = 2000 }]
[tests.expect]
parse = [1, [2], 3]
""")
        self.assertExit(r, 0)
        self.assertInStdout("1 passed, 0 failed", r)


if __name__ == "__main__":
    unittest.main()
