"""Runs one Kafka test module for ctest: `run_tests.py test_end_to_end`.

Like `python3 -m unittest -v MODULE`, except that it exits 77 (ctest's SKIP_RETURN_CODE)
when every test that ran passed but some were skipped, after printing each skip's reason
in a banner: a skipped test (one that needs a real cluster, say) must not look like a pass.
"""

import sys
import unittest

SKIPPED_EXIT = 77


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} TEST_MODULE", file=sys.stderr)
        return 2
    suite = unittest.defaultTestLoader.loadTestsFromName(argv[1])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0:
        print(f"{argv[1]}: no tests ran", file=sys.stderr)
        return 1
    if result.skipped:
        bar = "=" * 78
        print(f"\n{bar}\nSKIPPED {len(result.skipped)} of {result.testsRun} test(s) "
              f"in {argv[1]}: NOT RUN, NOT PASSED", file=sys.stderr)
        for test, reason in result.skipped:
            print(f"  {test.id()}: {reason}", file=sys.stderr)
        print(bar, file=sys.stderr)
        return SKIPPED_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
