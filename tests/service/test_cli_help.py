"""Every subcommand answers --help (exit 0) and the top-level help documents the exit
codes; --version names the ABI."""

import unittest

from sluice_it import EXIT_INVALID, EXIT_OK, SluiceTestCase

SUBCOMMANDS = ["run", "validate", "graph", "plugins", "test", "checkpoints"]


class CliHelpTest(SluiceTestCase):
    def test_help_on_each_subcommand(self):
        top = self.sluiced("--help")
        self.assertExit(top, EXIT_OK)
        for sub in SUBCOMMANDS:
            self.assertIn(sub, top.stdout)
            r = self.sluiced(sub, "--help")
            self.assertExit(r, EXIT_OK)
            self.assertIn(f"{sub} [OPTIONS]", r.stdout)
        for code in ("0 ok", "1 the pipeline failed", "2 invalid", "3 a pipeline test"):
            self.assertIn(code, " ".join(top.stdout.split()))

    def test_version_and_usage_error(self):
        r = self.sluiced("--version")
        self.assertExit(r, EXIT_OK)
        self.assertRegex(r.stdout, r"^sluiced \d+\.\d+\.\d+ \(ABI \d+\.\d+\)")
        self.assertExit(self.sluiced("run"), EXIT_INVALID)  # config missing
        self.assertExit(self.sluiced("frobnicate"), EXIT_INVALID)


if __name__ == "__main__":
    unittest.main()
