"""Runs one unittest module and exits 77 (ctest "Not Run") when every test in it was
skipped, so a missing tool shows as not run instead of passed; 0/1 otherwise."""
import sys
import unittest

module = sys.argv[1]
suite = unittest.defaultTestLoader.loadTestsFromName(module)
result = unittest.TextTestRunner(verbosity=2).run(suite)
if not result.wasSuccessful():
    sys.exit(1)
if result.testsRun > 0 and len(result.skipped) == result.testsRun:
    print(f"{module}: every test was skipped: {result.skipped[0][1]}", file=sys.stderr)
    sys.exit(77)
sys.exit(0)
