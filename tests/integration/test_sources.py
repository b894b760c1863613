"""`sluiced run` with the sources that watch the outside world: from_process (a real child
process), filenames (a real directory) and from_periodic (the real clock). Each pipeline
writes what the source emitted with sink_to_textfile, and the test reads the file."""

import os
import signal
import subprocess
import time
import unittest

from sluice_it import EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, SluiceTestCase, toml_str, wait_for


def to_file(source_toml, out_path, middle="", feed="src"):
    return f"""\
{source_toml}
{middle}
[sinks.out]
type = "sink_to_textfile"
inputs = ["{feed}"]
format = "text"
path = {toml_str(out_path)}
"""


def process_source(command, **keys):
    extra = "".join(f"{k} = {'true' if v else 'false'}\n" for k, v in keys.items())
    argv = ", ".join(toml_str(a) for a in command)
    return f"""\
[sources.src]
type = "from_process"
command = [{argv}]
{extra}"""


class FromProcessTest(SluiceTestCase):
    def run_process(self, command, middle="", feed="src", **keys):
        out = self.path("out.txt")
        cfg = self.write("p.toml", to_file(process_source(command, **keys), out, middle, feed))
        return self.sluiced("run", cfg), out

    def test_every_line_of_a_large_output_arrives(self):
        # seq exits as soon as it has written: the lines still in the pipe must all arrive.
        r, out = self.run_process(["seq", "1", "100000"])
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "".join(f"{i}\n" for i in range(1, 100001)), r)

    def test_large_output_through_a_small_buffer(self):
        # buffer n = 10 pauses the source again and again: nothing lost, order kept.
        r, out = self.run_process(["seq", "1", "100000"], feed="buf", middle="""\
[operators.buf]
type = "buffer"
inputs = ["src"]
n = 10
""")
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "".join(f"{i}\n" for i in range(1, 100001)), r)

    def test_no_shell_is_involved(self):
        # A shell would expand $HOME and *, and split at ';'.
        r, out = self.run_process(["echo", "$HOME", "a;b", "*", "'q'"])
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "$HOME a;b * 'q'\n", r)

    def test_last_line_without_newline(self):
        r, out = self.run_process(["printf", "a\\nb"])
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "a\nb\n", r)
        r, out = self.run_process(["printf", "a\\nb"], with_end=False)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "a\n", r)

    def test_failing_child_fails_the_node_with_status_and_stderr(self):
        r, out = self.run_process(
            ["sh", "-c", "echo out1; echo out2; echo first problem >&2; echo 'it broke' >&2; "
                         "exit 3"])
        self.assertExit(r, EXIT_RUNTIME)
        line = self.stderr_line_with(r, "node 'src' (from_process)", "exited with status 3")
        self.assertIn("command 'sh'", line, r.describe())
        self.assertIn("it broke", r.stderr, r.describe())
        self.assertIn("first problem", r.stderr, r.describe())
        # The lines written before the failure were emitted.
        self.assertEqual(self.read(out), "out1\nout2\n", r.describe())

    def test_child_killed_by_a_signal(self):
        # `$$` in a config string is one `$` (docs/CONFIG.md, "Environment variables").
        r, _ = self.run_process(["sh", "-c", "kill -KILL $$$$"])
        self.assertExit(r, EXIT_RUNTIME)
        self.stderr_line_with(r, "from_process", "killed by signal 9 (SIGKILL)")

    def test_missing_program(self):
        # run checks the machine before it starts anything, as validate does.
        r, _ = self.run_process(["/nonexistent/sluice-no-such-program"])
        self.assertExit(r, EXIT_INVALID)
        self.stderr_line_with(r, "cannot run '/nonexistent/sluice-no-such-program'",
                              "not an executable file")

    def test_with_stderr_merges_stderr_into_the_lines(self):
        r, out = self.run_process(["sh", "-c", "echo a; echo b >&2; echo c"], with_stderr=True)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "a\nb\nc\n", r)

    def test_sigterm_ends_the_child(self):
        out = self.path("out.txt")
        cfg = self.write("p.toml", to_file(
            process_source(["sh", "-c", "echo $$$$; exec sleep 300"]), out))
        proc, _, err_path = self.spawn("run", cfg)
        got_pid = wait_for(lambda: os.path.exists(out) and self.read(out).endswith("\n"), 10)
        self.assertTrue(got_pid, f"the child's pid never arrived\n{self.read(err_path)}")
        child = int(self.read(out).strip())
        self.assertIsNone(proc.poll(), self.read(err_path))
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail(f"sluiced did not stop\n{self.read(err_path)}")
        self.assertEqual(rc, EXIT_OK, self.read(err_path))
        with self.assertRaises(ProcessLookupError, msg="the child still runs"):
            os.kill(child, 0)


class FilenamesTest(SluiceTestCase):
    def source(self, path, **keys):
        extra = "".join(f"{k} = {v}\n" for k, v in keys.items())
        return f"""\
[sources.src]
type = "filenames"
path = {toml_str(path)}
{extra}"""

    def test_directory_once_sorted(self):
        d = self.mkdir("in")
        for name in ["b.txt", "a.txt", ".hidden", "c.csv"]:
            self.write(os.path.join("in", name), "x")
        self.mkdir("in/sub")
        out = self.path("out.txt")
        cfg = self.write("f.toml", to_file(self.source(d, watch="false"), out))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        expected = [os.path.join(d, n) for n in ["a.txt", "b.txt", "c.csv", "sub"]]
        self.assertEqual(self.read(out).splitlines(), expected, r.describe())

    def test_glob_pattern(self):
        d = self.mkdir("in")
        for name in ["x.csv", "y.txt", "z.csv"]:
            self.write(os.path.join("in", name), "x")
        out = self.path("out.txt")
        cfg = self.write("f.toml", to_file(self.source(os.path.join(d, "*.csv"), watch="false"),
                                           out))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertEqual(self.read(out).splitlines(),
                         [os.path.join(d, "x.csv"), os.path.join(d, "z.csv")], r.describe())

    def test_new_files_are_emitted_once_each(self):
        d = self.mkdir("in")
        self.write("in/first.txt", "x")
        out = self.path("out.txt")
        cfg = self.write("f.toml", to_file(self.source(d, poll_interval_ms=20), out))
        proc, _, err_path = self.spawn("run", cfg)
        first = os.path.join(d, "first.txt")
        seen = wait_for(lambda: os.path.exists(out) and self.read(out) == first + "\n", 10)
        self.assertTrue(seen, self.read(err_path))
        self.write("in/second.txt", "x")
        second = os.path.join(d, "second.txt")
        seen = wait_for(lambda: self.read(out) == f"{first}\n{second}\n", 10)
        self.assertTrue(seen, f"{self.read(out)!r}\n{self.read(err_path)}")
        time.sleep(0.2)  # ten more scans: nothing is emitted twice
        os.utime(first)
        time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=20), EXIT_OK, self.read(err_path))
        self.assertEqual(self.read(out), f"{first}\n{second}\n")

    def test_missing_directory_is_not_an_error(self):
        # As streamz: a path that matches nothing emits nothing.
        out = self.path("out.txt")
        cfg = self.write("f.toml", to_file(self.source(self.path("nope"), watch="false"), out))
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "", r)


class FromPeriodicTest(SluiceTestCase):
    def test_limit_on_the_real_clock(self):
        out = self.path("out.txt")
        cfg = self.write("t.toml", f"""\
[sources.src]
type = "from_periodic"
interval_ms = 50
limit = 5

[operators.text]
type = "map"
inputs = ["src"]
function = "json_dump"

[sinks.out]
type = "sink_to_textfile"
inputs = ["text"]
format = "text"
path = {toml_str(out)}
""")
        r = self.sluiced("run", cfg)
        self.assertExit(r, EXIT_OK)
        self.assertFileContent(out, "0\n1\n2\n3\n4\n", r)
        self.assertGreaterEqual(r.elapsed, 0.2, "five ticks 50 ms apart take at least 200 ms")


if __name__ == "__main__":
    unittest.main()
