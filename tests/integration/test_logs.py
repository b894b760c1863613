"""sluiced's log formats (docs/OPERATIONS.md, "Logs"): `--log-format json` and
SLUICE_LOG_FORMAT=json give one JSON object per stderr line (time with its UTC offset,
level, message, pipeline, node), for any bytes in a message; SLUICE_LOG filters by level;
a flag wins over its variable; text lines carry the UTC offset; `sluiced run` logs config
errors as records with a level."""

import json
import os
import re
import subprocess

from sluice_it import (EXIT_INVALID, EXIT_OK, SLUICED, SluiceTestCase, DEFAULT_TIMEOUT)

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d "
                       r"(trace|debug|info|warning|error|critical) ")

# One bad record among good ones: `parse` skips it (a warning naming the node), the rest
# reach the file.
SKIPPING = """\
name = "logged"

[sources.lines]
type = "from_iterable"
values = ['{"a": 1}', 'not json', '{"a": 2}']

[operators.parse]
type = "map"
inputs = ["lines"]
function = "json_parse"
on_error = "skip"

[sinks.out]
type = "sink_to_textfile"
inputs = ["parse"]
path = "out.jsonl"
"""


class LogFormatTest(SluiceTestCase):
    def run_raw(self, *args, env=None, cwd=None):
        """Runs sluiced; returns (exit code, stdout bytes, stderr bytes): stderr is checked
        as bytes, since a JSON line must be valid UTF-8 whatever the message held."""
        cp = subprocess.run([SLUICED, *args], env=env or self.env(), cwd=cwd or self.tmp,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=DEFAULT_TIMEOUT, check=False)
        return cp.returncode, cp.stdout, cp.stderr

    def json_lines(self, stderr):
        """Every stderr line parsed strictly (UTF-8, one JSON object each)."""
        text = stderr.decode("utf-8")  # raises on any invalid byte
        records = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except ValueError as e:
                self.fail(f"not a JSON line: {line!r} ({e})\n--- stderr ---\n{text}")
            self.assertIsInstance(record, dict, line)
            self.assertRegex(record["time"], RFC3339, line)
            self.assertIn(record["level"], ("trace", "debug", "info", "warn", "error",
                                            "critical"), line)
            self.assertIsInstance(record["message"], str, line)
            records.append(record)
        self.assertTrue(records, "no log line at all")
        return records

    def test_json_flag_run_with_a_skipped_record(self):
        cfg = self.write("p.toml", SKIPPING)
        code, _, err = self.run_raw("--log-format", "json", "run", cfg)
        self.assertEqual(code, EXIT_OK, err)
        records = self.json_lines(err)
        skipped = [r for r in records if "skipped a message" in r["message"]]
        self.assertEqual(len(skipped), 1, records)
        self.assertEqual(skipped[0]["level"], "warn")
        self.assertEqual(skipped[0]["node"], "parse")
        self.assertEqual(skipped[0]["type"], "map")
        # Every record after the config was read names the pipeline.
        self.assertEqual(skipped[0]["pipeline"], "logged")
        self.assertTrue(any(r["level"] == "info" for r in records), records)
        self.assertEqual(self.read("out.jsonl"), '{"a":1}\n{"a":2}\n')

    def test_env_format_and_level(self):
        cfg = self.write("p.toml", SKIPPING)
        env = self.env(SLUICE_LOG_FORMAT="json", SLUICE_LOG="warn")
        code, _, err = self.run_raw("run", cfg, env=env)
        self.assertEqual(code, EXIT_OK, err)
        records = self.json_lines(err)
        # SLUICE_LOG=warn: the info lines (start, end) are gone, the warning stays.
        self.assertEqual([r["level"] for r in records], ["warn"], records)
        self.assertEqual(records[0]["node"], "parse")

        # Flags win over the variables.
        code, _, err = self.run_raw("run", cfg, "--log-format", "text", "--log-level", "info",
                                    env=env)
        self.assertEqual(code, EXIT_OK, err)
        lines = err.decode("utf-8").splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, TEXT_LINE)
        self.assertTrue(any(" info " in line for line in lines), lines)

    def test_text_lines_carry_the_utc_offset(self):
        cfg = self.write("p.toml", SKIPPING)
        env = self.env(TZ="Asia/Kolkata")  # +05:30: the offset is the zone's, not Z
        env.pop("SLUICE_LOG_FORMAT", None)
        env.pop("SLUICE_LOG", None)
        code, _, err = self.run_raw("run", cfg, env=env)
        self.assertEqual(code, EXIT_OK, err)
        lines = err.decode("utf-8").splitlines()
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, TEXT_LINE)
        if os.path.exists("/usr/share/zoneinfo/Asia/Kolkata"):
            self.assertIn("+05:30 ", lines[0])

    def test_bad_variables_are_usage_errors(self):
        cfg = self.write("p.toml", SKIPPING)
        code, _, err = self.run_raw("run", cfg, env=self.env(SLUICE_LOG="verbose"))
        self.assertEqual(code, EXIT_INVALID, err)
        self.assertIn(b"SLUICE_LOG=verbose", err)
        code, _, err = self.run_raw("run", cfg, env=self.env(SLUICE_LOG_FORMAT="xml"))
        self.assertEqual(code, EXIT_INVALID, err)
        self.assertIn(b"SLUICE_LOG_FORMAT=xml", err)

    def test_config_errors_of_run_are_records_and_any_bytes_stay_json(self):
        # The file name holds a quote, a backslash, a newline, a control character and a
        # byte that is not UTF-8: each finding names the file, so each must be escaped.
        name = b'we"ird\\\n\x01\xff.toml'
        path = os.path.join(self.tmp.encode(), name)
        with open(path, "wb") as f:
            f.write(b'[sources.src]\ntype = "no_such_type"\n')
        code, _, err = self.run_raw("--log-format", "json", "run", path)
        self.assertEqual(code, EXIT_INVALID, err)
        records = self.json_lines(err)
        errors = [r for r in records if r["level"] == "error"]
        self.assertTrue(errors, records)
        first = errors[0]
        self.assertIn("no_such_type", first["message"])
        self.assertEqual(first["node"], "src")
        # The message round-trips: quote, backslash, newline, control character kept, the
        # bad byte as U+FFFD.
        self.assertIn('we"ird\\\n\x01\ufffd.toml:2:8: error: ', first["message"])

        # In text form `run` writes the same finding as a log line with its level.
        code, _, err = self.run_raw("run", path)
        self.assertEqual(code, EXIT_INVALID, err)
        self.assertRegex(err.decode("utf-8", errors="replace").splitlines()[0], TEXT_LINE)
        self.assertIn(b" error ", err)


if __name__ == "__main__":
    import unittest
    unittest.main()
