#!/bin/sh
# expect_failure.sh [--status N] REGEX COMMAND...: COMMAND (a `sluiced plugin-check` run
# over a plugin broken on purpose) must exit 3, "a check failed" (or N), and print a line
# matching REGEX (grep -E): the kit found the very fault the plugin was broken with.
want=3
if [ "$1" = "--status" ]; then
  want=$2
  shift 2
fi
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want" ]; then
  echo "expect_failure: exit status $rc, wanted $want"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -E -- "$regex" >/dev/null; then
  echo "expect_failure: no line matches: $regex"
  exit 1
fi
echo "expect_failure: rejected as expected"
