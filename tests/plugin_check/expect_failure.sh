#!/bin/sh
# expect_failure.sh REGEX COMMAND...: COMMAND (a `sluiced plugin-check` run over a plugin
# broken on purpose) must exit 3, "a check failed", and print a line matching REGEX
# (grep -E): the kit found the very fault the plugin was broken with.
regex=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 3 ]; then
  echo "expect_failure: exit status $rc, wanted 3 (a check failed)"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -E -- "$regex" >/dev/null; then
  echo "expect_failure: no line matches: $regex"
  exit 1
fi
echo "expect_failure: rejected as expected"
