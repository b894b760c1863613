"""Helpers for sluice's integration tests: run sluiced as a real process.

Standard library only. The tests run through ctest (tests/integration/CMakeLists.txt),
which sets:

  SLUICED              the sluiced binary
  SLUICE_IT_PLUGIN_DIR the build tree's plugin directory (core_ops, sinks, ...)
  SLUICE_PLUGIN_PATH   the same, as sluiced reads it
  BROKEN_DIR           tests/integration/broken: one directory per broken-plugin case

By hand, from a build dir `B`:

  cd tests/integration && SLUICED=B/host/sluiced SLUICE_IT_PLUGIN_DIR=B/plugins-out \\
    BROKEN_DIR=B/tests/integration/broken /usr/bin/python3 -m unittest -v test_cli

Set SLUICE_IT_KEEP=1 to keep each test's temporary directory (its path is printed).
"""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

# Plugins and their directories must not be group/other-writable: sluiced refuses them.
os.umask(0o022)


def _required_env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through ctest "
                           f"(ctest -L integration) or see {__file__}")
    return value


SLUICED = _required_env("SLUICED")
PLUGIN_DIR = os.environ.get("SLUICE_IT_PLUGIN_DIR") or _required_env("SLUICE_PLUGIN_PATH")
BROKEN_DIR = _required_env("BROKEN_DIR")

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_INVALID = 2
EXIT_TESTS_FAILED = 3

# How long a command may take before the test calls it hung.
DEFAULT_TIMEOUT = 60


def broken(case):
    """Directory of one broken-plugin case, e.g. broken("abi_major")."""
    path = os.path.join(BROKEN_DIR, case)
    if not os.path.isdir(path):
        raise AssertionError(f"{path} does not exist: build the tree first (ninja -C BUILD)")
    return path


def plugin_file(directory, stem):
    """The one plugin file in `directory` whose name contains `stem` (e.g. "core_ops")."""
    hits = sorted(f for f in os.listdir(directory)
                  if stem in f and f.endswith((".so", ".dylib", ".dll")))
    if len(hits) != 1:
        raise AssertionError(f"expected one plugin file matching '{stem}' in {directory}, "
                             f"found {hits}")
    return os.path.join(directory, hits[0])


def toml_str(s):
    """A TOML basic string (for paths in generated configs)."""
    return json.dumps(str(s))


def _ensure_not_group_writable(root):
    """CMake creates the build tree with the builder's umask; sluiced refuses plugin
    files and directories that group or others can write. Fix our own build output
    rather than fail for a reason that has nothing to do with the code under test."""
    for dirpath, dirnames, filenames in os.walk(root):
        for p in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
            try:
                mode = os.stat(p).st_mode
                if mode & 0o022:
                    os.chmod(p, mode & ~0o022)
            except OSError:
                pass


for _d in (PLUGIN_DIR, BROKEN_DIR):
    if os.path.isdir(_d):
        _ensure_not_group_writable(_d)


class Result:
    """What a finished sluiced process did."""

    def __init__(self, args, returncode, stdout, stderr, elapsed):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed

    def describe(self):
        return (f"\n$ {' '.join(self.args)}\nexit code: {self.returncode}"
                f"\n--- stdout ---\n{self.stdout}--- stderr ---\n{self.stderr}--- end ---")


class SluiceTestCase(unittest.TestCase):
    """A test with its own temporary directory and helpers to run sluiced in it."""

    maxDiff = None

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="sluice-it-")
        os.chmod(self.tmp, 0o755)
        if os.environ.get("SLUICE_IT_KEEP"):
            print(f"\n[{self.id()}] temp dir: {self.tmp}")
        else:
            self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self._procs = []
        self.addCleanup(self._kill_leftovers)

    # -- files ------------------------------------------------------------

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write(self, name, text):
        """Writes `text` to a file in the temp dir (creating parent dirs); returns its path."""
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p

    def read(self, name_or_path):
        p = name_or_path if os.path.isabs(name_or_path) else self.path(name_or_path)
        with open(p, "r", encoding="utf-8") as f:
            return f.read()

    def mkdir(self, name, mode=0o755):
        p = self.path(name)
        os.makedirs(p, exist_ok=True)
        os.chmod(p, mode)
        return p

    # -- running sluiced -----------------------------------------------------

    def env(self, plugin_path=None, **extra):
        """The environment for sluiced. `plugin_path` is SLUICE_PLUGIN_PATH (default: the
        build tree's plugin directory; "" for none)."""
        env = dict(os.environ)
        env["SLUICE_PLUGIN_PATH"] = PLUGIN_DIR if plugin_path is None else plugin_path
        env.update(extra)
        return env

    def sluiced(self, *args, env=None, timeout=DEFAULT_TIMEOUT, cwd=None, stdin=None):
        """Runs sluiced to completion; returns a Result."""
        argv = [SLUICED, *[str(a) for a in args]]
        start = time.monotonic()
        try:
            cp = subprocess.run(argv, env=env or self.env(), cwd=cwd or self.tmp,
                                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            self.fail(f"$ {' '.join(argv)} did not finish within {timeout} s"
                      f"\n--- stdout ---\n{_text(e.stdout)}--- stderr ---\n{_text(e.stderr)}")
        return Result(argv, cp.returncode, _text(cp.stdout), _text(cp.stderr),
                      time.monotonic() - start)

    def spawn(self, *args, env=None, cwd=None):
        """Starts sluiced in the background; stdout/stderr go to files in the temp dir.
        Returns (Popen, stdout_path, stderr_path)."""
        n = len(self._procs)
        out_path, err_path = self.path(f"sluiced-{n}.stdout"), self.path(f"sluiced-{n}.stderr")
        argv = [SLUICED, *[str(a) for a in args]]
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, env=env or self.env(), cwd=cwd or self.tmp,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        self._procs.append(proc)
        return proc, out_path, err_path

    def append_in_background(self, lines, chunk, period, name="in.txt"):
        """Creates the file `name` (empty) and starts a thread that appends `lines` (strings,
        without their newline) to it, `chunk` lines every `period` seconds, as a program
        writing its log does; returns an Event set once every line is written."""
        path = self.path(name)
        open(path, "w").close()
        done = threading.Event()

        def writer():
            with open(path, "a", encoding="utf-8") as f:
                for i in range(0, len(lines), chunk):
                    f.write("".join(line + "\n" for line in lines[i:i + chunk]))
                    f.flush()
                    time.sleep(period)
            done.set()

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        self.addCleanup(t.join)
        return done

    def wait_log(self, err_path, needle, timeout=30):
        """Waits until the file `err_path` (a spawned sluiced's stderr) holds `needle`."""
        return wait_for(lambda: needle in self.read(err_path), timeout)

    def _kill_leftovers(self):
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    # -- assertions ----------------------------------------------------------

    def assertExit(self, result, code):
        if result.returncode != code:
            self.fail(f"expected exit code {code}, got {result.returncode}{result.describe()}")

    def assertInStderr(self, needle, result):
        if needle not in result.stderr:
            self.fail(f"expected {needle!r} in stderr{result.describe()}")

    def assertInStdout(self, needle, result):
        if needle not in result.stdout:
            self.fail(f"expected {needle!r} in stdout{result.describe()}")

    def assertNotInStderr(self, needle, result):
        if needle in result.stderr:
            self.fail(f"did not expect {needle!r} in stderr{result.describe()}")

    def assertFileContent(self, path, expected, result=None):
        if not os.path.exists(path):
            self.fail(f"{path} was not written" + (result.describe() if result else ""))
        got = self.read(path)
        if got != expected:
            self.fail(f"{path}: content differs\nexpected: {expected!r}\ngot:      {got!r}"
                      + (result.describe() if result else ""))

    def stderr_line_with(self, result, *needles):
        """The first stderr line containing every needle (fails when none does)."""
        for line in result.stderr.splitlines():
            if all(n in line for n in needles):
                return line
        self.fail(f"no stderr line contains all of {needles!r}{result.describe()}")


def _text(b):
    if b is None:
        return ""
    return b.decode("utf-8", errors="replace") if isinstance(b, bytes) else b


def line_col(text, needle, occurrence=1):
    """1-based (line, column) of the `occurrence`-th `needle` in `text`."""
    idx = -1
    for _ in range(occurrence):
        idx = text.index(needle, idx + 1)
    line = text.count("\n", 0, idx) + 1
    col = idx - (text.rfind("\n", 0, idx) + 1) + 1
    return line, col


def checkpointed_head(name, batch_size=16):
    """The head of the SIGKILL loops' pipelines (TOML): `name`, `batch_size` and a checkpoint
    every 30 ms into ck/, 3 kept."""
    return (f'name = "{name}"\n[runtime]\nbatch_size = {batch_size}\n'
            '[checkpoint]\ninterval_ms = 30\nkeep = 3\ndir = "ck"\n')


def followed_lines_source():
    """Source `lines` (TOML): from_textfile following in.txt while a writer appends to it."""
    return ('[sources.lines]\ntype = "from_textfile"\npath = "in.txt"\nfollow = true\n'
            'poll_interval_ms = 5\n')


def wait_for(predicate, timeout, interval=0.05):
    """Polls `predicate` until it is true or `timeout` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


__all__ = [
    "BROKEN_DIR", "DEFAULT_TIMEOUT", "EXIT_INVALID", "EXIT_OK", "EXIT_RUNTIME",
    "EXIT_TESTS_FAILED", "PLUGIN_DIR", "SLUICED", "Result", "SluiceTestCase", "broken",
    "checkpointed_head", "followed_lines_source", "line_col", "plugin_file", "toml_str",
    "wait_for",
]
