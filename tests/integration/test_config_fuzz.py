"""Mutated configs: `sluiced validate` never crashes or hangs, and what it passes is created.

The contract behind `ExecStartPre=sluiced validate` (issue 18 item 14, issue 16 item 4): a
config that validates must not fail when run creates its nodes. Parameter constraints
(sl_param min/max/non-empty/choices) and the plugins' validate callbacks report at validate,
with file:line:col, what their create would refuse.

The seeds are the example pipelines, the operator test pipelines and the good unit configs.
Each is mutated with a fixed random seed, type-aware on its `key = value` lines (ints to -1,
0, huge and extreme values; strings to empty, long, odd bytes and bad names; arrays emptied
or given items of the wrong kind; keys dropped, duplicated or added) and by raw byte flips.
Every mutant goes through `sluiced validate --create` (validate, then create and destroy
every node of every task, as run does before starting):

  - exit 0 (valid and created) or 2 (invalid, with a file:line:col message), never 1
    (validated, then create failed), a signal or a hang;
  - the inputs kept in tests/fuzz/configs/ (mutants that once validated and then failed at
    create) are replayed the same way.

SLUICE_FUZZ_CONFIGS=N changes the number of mutants (default 1000); SLUICE_FUZZ_SEED the
seed. A failing mutant is written to the test's temp dir (SLUICE_IT_KEEP=1 keeps it) and
its text printed, so that it can be added to tests/fuzz/configs/.
"""
import concurrent.futures
import os
import pathlib
import random
import re
import subprocess
import unittest

from sluice_it import (EXIT_OK, EXIT_RUNTIME, PLUGIN_DIR, SLUICED, SluiceTestCase, broken)

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGRESSIONS = ROOT / "tests" / "fuzz" / "configs"
# Kafka seeds run on the embedded (in-process mock) cluster: create makes clients, and a
# real broker address would make the fuzz depend on the network. Files are no concern:
# create opens nothing (start does).
REAL_BROKERS = re.compile(r'^(\s*brokers\s*=\s*)"(?!embedded")[^"]*"', re.MULTILINE)

POSITION = re.compile(r"\.toml:\d+(:\d+)?: error: ")
ASSIGNMENT = re.compile(r'^(\s*)([A-Za-z0-9_"\'.-]+)(\s*=\s*)(.+?)\s*$')

INTS = ["-1", "0", "1", "-2", "2", "-9223372036854775808", "9223372036854775807", "65536",
        "4294967296", "99999999999999", "-65536"]
FLOATS = ["0.0", "-1.0", "nan", "inf", "-inf", "1e308", "-0.0"]
STRINGS = ['""', '" "', '"x"', '"/"', '"no/such/dir/x"', '"\\u0000"', '"\\u00ff\\u00fe"',
           '"{task}"', '"bad name!"', '"^("', '"..\\\\.."', '"0.0.0.0"', '"::1"',
           '"\\ud7ff"', '"' + "y" * 5000 + '"', '"first"', '"last"', '"json"', '"text"',
           '"bytes"', '"dead_letter"', '"add"', '"count"', '"sum"', '"get"', '"split"']
ARRAYS = ["[]", "[[]]", '[""]', "[1, 2]", '["a", 1]', "[-1]", "[{}]", '["\\u0000"]',
          "[" + ", ".join(["1"] * 300) + "]", '[{ at = 0, value = 1 }]',
          '[{ at = 99, value = 1 }]', '[{ at = -1 }]', '["src", "src"]', '["nope"]', "[0]",
          "[5]", '["{"]', '["[1,"]']
TABLES = ["{}", '{ name = "add" }', '{ name = "count" }', '{ lua = "x" }', '{ value = 0 }',
          '{ path = [] }', '{ sep = "" }', '{ "enable.auto.commit" = "true" }']
ANY = INTS + FLOATS + STRINGS + ARRAYS + TABLES + ["true", "false"]


def classify(value):
    if re.fullmatch(r"[+-]?\d[\d_]*", value):
        return "int"
    if re.fullmatch(r"[+-]?(\d[\d_]*)?\.?\d*([eE][+-]?\d+)?|[+-]?(inf|nan)", value):
        return "float"
    if value in ("true", "false"):
        return "bool"
    if value.startswith(('"', "'")):
        return "string"
    if value.startswith("[") and value.endswith("]"):
        return "array"
    if value.startswith("{") and value.endswith("}"):
        return "table"
    return "other"


def mutate(text, rng):
    """One mutant of `text`: one to three changes, mostly on `key = value` lines."""
    lines = text.split("\n")
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        assignments = [i for i, line in enumerate(lines)
                       if ASSIGNMENT.match(line) and not line.lstrip().startswith("#")]
        # Node parameters are the point; `type` and `inputs` mostly just name other things.
        params = [i for i in assignments
                  if ASSIGNMENT.match(lines[i]).group(2) not in ("type", "inputs")]
        if params and rng.random() < 0.85:
            assignments = params
        roll = rng.random()
        if roll < 0.08:  # raw byte flips anywhere
            data = bytearray("\n".join(lines).encode("utf-8", "surrogateescape"))
            for _ in range(rng.randint(1, 4)):
                if data:
                    data[rng.randrange(len(data))] = rng.randrange(256)
            lines = data.decode("utf-8", "surrogateescape").split("\n")
            continue
        if not assignments:
            continue
        i = rng.choice(assignments)
        indent, key, eq, value = ASSIGNMENT.match(lines[i]).groups()
        kind = classify(value)
        if roll < 0.16:  # drop the key
            del lines[i]
        elif roll < 0.20:  # duplicate it (a TOML error)
            lines.insert(i, lines[i])
        elif roll < 0.26:  # an unknown key beside it
            lines.insert(i, f"{indent}{key}_x{eq}{value}")
        elif roll < 0.36:  # any value of any type
            lines[i] = f"{indent}{key}{eq}{rng.choice(ANY)}"
        else:  # a value of the same type, chosen to hit bounds
            pool = {"int": INTS, "float": FLOATS + INTS, "bool": ["true", "false"],
                    "string": STRINGS, "array": ARRAYS, "table": TABLES}.get(kind, ANY)
            lines[i] = f"{indent}{key}{eq}{rng.choice(pool)}"
    return "\n".join(lines)


def seeds():
    found = []
    for pattern in ("examples/*.toml", "examples/pipelines/*.toml", "examples/streamz/*.toml",
                    "tests/ops/*.toml", "tests/unit/config/good/*.toml"):
        for path in sorted(ROOT.glob(pattern)):
            if path.name.endswith(".tests.toml"):
                continue
            text = path.read_text(encoding="utf-8")
            if "plugin_dirs" in text:  # its own plugins (tests/unit/config: a test plugin)
                continue
            found.append((path, REAL_BROKERS.sub(r'\1"embedded"', text)))
    return found


class ConfigFuzzTest(SluiceTestCase):
    def check(self, name, text):
        """Validates and creates `text`; returns a problem description or None."""
        path = pathlib.Path(self.path(name))
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        argv = [SLUICED, "validate", "--create", str(path), "--plugin-dir", PLUGIN_DIR]
        env = dict(os.environ, SLUICE_PLUGIN_PATH="")
        try:
            r = subprocess.run(argv, capture_output=True, timeout=60, env=env,
                               cwd=str(self.path()))
        except subprocess.TimeoutExpired:
            return f"{name}: validate --create hung (over 60 s)"
        self.exits.append(r.returncode)
        err = r.stderr.decode("utf-8", "replace")
        if r.returncode == 1:
            return f"{name}: validated, then create failed:\n{err.strip()}"
        if r.returncode not in (0, 2):
            return f"{name}: exit {r.returncode} (a crash?):\n{err.strip()[-2000:]}"
        if r.returncode == 2 and not POSITION.search(err):
            return f"{name}: exit 2 without a file:line message:\n{err.strip()[-2000:]}"
        return None

    def run_all(self, cases):
        self.exits = []
        problems = []
        passed = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = pool.map(lambda c: (c, self.check(*c)), cases)
            for (name, text), problem in results:
                if problem:
                    problems.append(problem + "\n--- config ---\n" + text[:3000])
                else:
                    passed += 1
        print(f"\n{len(cases)} configs: {self.exits.count(0)} validated and created, "
              f"{self.exits.count(2)} refused at validate, {len(problems)} broke the contract")
        return passed, problems

    def test_validate_create_catches_a_create_that_validate_missed(self):
        # it_error_status refuses fail_on < 0 in create without declaring it: validate
        # passes, and `validate --create` is what tells (the fuzz relies on that).
        cfg = self.write("c.toml", '[sources.n]\ntype = "from_iterable"\nvalues = [1]\n\n'
                                   '[operators.f]\ntype = "failing_op"\ninputs = ["n"]\n'
                                   'fail_on = -1\n\n[sinks.out]\ntype = "print"\n'
                                   'inputs = ["f"]\n')
        r = self.sluiced("validate", cfg, "--plugin-dir", broken("error_status"))
        self.assertExit(r, EXIT_OK)
        r = self.sluiced("validate", "--create", cfg, "--plugin-dir", broken("error_status"))
        self.assertExit(r, EXIT_RUNTIME)
        self.assertInStderr("validated, but create failed", r)
        self.assertInStderr("fail_on must not be negative", r)

    def test_regression_configs_validate_or_create(self):
        cases = [(f"regression_{p.name}", p.read_bytes().decode("utf-8", "surrogateescape"))
                 for p in sorted(REGRESSIONS.glob("*.toml"))]
        self.assertTrue(cases, f"no regression configs in {REGRESSIONS}")
        _, problems = self.run_all(cases)
        self.assertEqual([], problems, "\n\n".join(problems))

    def test_mutated_configs_validate_or_create(self):
        rng = random.Random(int(os.environ.get("SLUICE_FUZZ_SEED", "18")))
        count = int(os.environ.get("SLUICE_FUZZ_CONFIGS", "1000"))
        pool = seeds()
        self.assertGreater(len(pool), 20)
        cases = []
        for n in range(count):
            path, text = rng.choice(pool)
            cases.append((f"m{n:04d}_{path.stem}.toml", mutate(text, rng)))
        passed, problems = self.run_all(cases)
        self.assertEqual([], problems,
                         f"{len(problems)} of {count} mutants broke the contract:\n\n" +
                         "\n\n".join(problems[:20]))
        self.assertEqual(passed, count)


if __name__ == "__main__":
    unittest.main()
