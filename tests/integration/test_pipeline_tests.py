"""`sluiced test`: the restart check, expect_error and dead-letter outputs, --case, and
tests written inline in the pipeline file, through the real binary (the rest of the format
is covered by examples/ and tests/ops/)."""

import unittest

from sluice_it import PLUGIN_DIR, SluiceTestCase, broken, line_col

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


# A stateless map and a stateful accumulate, each with a case of its own, written inline.
INLINE_PIPELINE = """
name = "inline"
[sources.src]
type = "from_iterable"
values = [1, 2]
[operators.plus]
type = "map"
function = "add"
args = { value = 1 }
inputs = ["src"]
[sinks.out]
type = "sink_to_textfile"
path = "out.txt"
format = "json"
inputs = ["plus"]
%s
[[tests]]
name = "adds one"
steps = [{ source = "src", values = [1, 2] }]
[tests.expect]
plus = [2, 3]

[[tests]]
name = "adds one to more"
steps = [{ source = "src", values = [5, 6] }]
[tests.expect]
plus = [6, 7]
"""

SUM_NODE = """
[operators.total]
type = "accumulate"
function = "sum"
inputs = ["plus"]
[sinks.total_out]
type = "print"
inputs = ["total"]
"""

SUM_CASES = """
[[tests]]
name = "sums"
steps = [{ source = "src", values = [1, 2] }]
[tests.expect]
total = [2, 5]

[[tests]]
name = "sums without the check"
restart_check = false   # to see the reason in the output
steps = [{ source = "src", values = [1] }]
[tests.expect]
total = [2]
"""


class CaseSelectionAndReportTest(SluiceTestCase):
    def test(self, *args):
        return self.sluiced("test", *args, "--plugin-dir", PLUGIN_DIR)

    def test_case_runs_only_the_named_case(self):
        self.write("p.toml", INLINE_PIPELINE % "")
        r = self.test("p.toml", "--case", "adds one to more")
        self.assertExit(r, 0)
        self.assertInStdout("ok     adds one to more", r)
        self.assertNotIn("ok     adds one  (", r.stdout)
        self.assertInStdout("1 passed, 0 failed", r)

    def test_case_takes_globs_and_repeats(self):
        self.write("p.toml", INLINE_PIPELINE % SUM_NODE + SUM_CASES)
        r = self.test("p.toml", "--case", "adds*", "--case", "sums")
        self.assertExit(r, 0)
        self.assertInStdout("3 passed, 0 failed", r)
        self.assertNotIn("sums without the check", r.stdout)

    def test_an_unknown_case_is_an_error_listing_the_cases(self):
        self.write("p.toml", INLINE_PIPELINE % "")
        r = self.test("p.toml", "--case", "adds two")
        self.assertExit(r, 2)
        self.assertInStderr("p.toml: error: --case 'adds two'", r)
        self.assertInStderr("the cases are:\n  adds one\n  adds one to more\n", r)
        self.assertEqual(r.stdout, "")

    def test_output_says_per_case_whether_the_restart_check_ran_and_sums_it_up(self):
        self.write("p.toml", INLINE_PIPELINE % SUM_NODE + SUM_CASES)
        r = self.test("p.toml")
        self.assertExit(r, 0)
        self.assertInStdout("ok     sums  (restart check ran)\n", r)
        self.assertInStdout(
            "ok     sums without the check  (no restart check: restart_check = false)\n", r)
        # The pipeline has a stateful node (total): the check runs for the other cases too.
        self.assertInStdout("ok     adds one  (restart check ran)\n", r)
        self.assertInStdout("restart check: ran for 3 of 4 cases; not run for 1 "
                            "(1 restart_check = false)\n4 passed, 0 failed\n", r)

    def test_without_a_stateful_node_the_output_says_why_the_check_did_not_run(self):
        self.write("p.toml", INLINE_PIPELINE % "")
        r = self.test("p.toml")
        self.assertExit(r, 0)
        self.assertInStdout("ok     adds one  (no restart check: no stateful node)\n", r)
        self.assertInStdout("restart check: ran for 0 of 2 cases; not run for 2 "
                            "(2 no stateful node)\n", r)

    def test_a_failed_case_says_the_restart_check_did_not_run(self):
        cases = SUM_CASES.replace("total = [2, 5]", "total = [2, 6]")
        self.write("p.toml", INLINE_PIPELINE % SUM_NODE + cases)
        r = self.test("p.toml", "--case", "sums")
        self.assertExit(r, 3)
        self.assertInStdout("(no restart check: the run failed)\n", r)
        self.assertInStdout("+ #1   5", r)


class InlineTestsTest(SluiceTestCase):
    """[[tests]] in the pipeline file (docs/TESTING.md): run, validate and graph accept them."""

    def test_run_validate_and_graph_accept_inline_tests_and_test_runs_them(self):
        self.write("p.toml", INLINE_PIPELINE % "")
        r = self.sluiced("validate", "p.toml")
        self.assertExit(r, 0)
        self.assertInStdout("p.toml: OK (3 nodes, 2 tests)", r)
        r = self.sluiced("graph", "p.toml")
        self.assertExit(r, 0)
        r = self.sluiced("run", "p.toml")
        self.assertExit(r, 0)
        self.assertFileContent(self.path("out.txt"), "2\n3\n", r)  # the source's values
        r = self.sluiced("test", "p.toml")
        self.assertExit(r, 0)
        self.assertInStdout("2 passed, 0 failed", r)

    def test_a_cases_file_replaces_the_inline_tests(self):
        self.write("p.toml", INLINE_PIPELINE % "")
        self.write("c.tests.toml", """
[[tests]]
name = "from the cases file"
steps = [{ source = "src", value = 10 }]
[tests.expect]
plus = [11]
""")
        r = self.sluiced("test", "p.toml", "c.tests.toml")
        self.assertExit(r, 0)
        self.assertInStdout("ok     from the cases file", r)
        self.assertInStdout("1 passed, 0 failed", r)

    def test_validate_checks_inline_tests_against_the_pipeline(self):
        text = (INLINE_PIPELINE % "").replace('steps = [{ source = "src", values = [5, 6] }]',
                                              'steps = [{ source = "sorc", values = [5, 6] }]')
        self.write("p.toml", text)
        r = self.sluiced("validate", "p.toml")
        self.assertExit(r, 2)
        line, _ = line_col(text, '"sorc"')
        self.assertInStderr(f"p.toml:{line}:", r)
        self.assertInStderr("'sorc' is not a source of the pipeline; sources: src", r)
        # run does not read the tests.
        self.assertExit(self.sluiced("run", "p.toml"), 0)

    def test_tests_that_are_not_an_array_of_tables_are_a_config_error(self):
        text = "tests = 3\n" + (INLINE_PIPELINE % "").split("[[tests]]")[0]
        self.write("p.toml", text)
        for command in ("validate", "run"):
            r = self.sluiced(command, "p.toml")
            self.assertExit(r, 2)
            line, col = 1, 9
            self.assertInStderr(f"p.toml:{line}:{col}: error: key 'tests': expected an array of "
                                "tables ([[tests]] sections", r)

    def test_a_pipeline_without_tests_and_no_cases_file_says_where_cases_go(self):
        self.write("p.toml", (INLINE_PIPELINE % "").split("[[tests]]")[0])
        r = self.sluiced("test", "p.toml")
        self.assertExit(r, 2)
        self.assertInStderr("p.toml: error: no [[tests]] in the file", r)
        self.assertInStderr("sluiced test p.toml CASES.tests.toml", r)


if __name__ == "__main__":
    unittest.main()
