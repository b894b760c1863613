"""The conformance kit's read-back for to_http: prints the records ({"n": N}) of every body
the test server accepted (one per line, from RECORD_FILE of http_server.py), then empties
the record, so each of the kit's exercises starts from nothing received. The kit's
"hostile elements" check, which never reads back, also posts its odd values to the same
server before the first crash exercise: those are not records of any exercise and are left
out (only {"n": N} objects are printed)."""

import json
import sys

path = sys.argv[1]
with open(path, "r+", encoding="utf-8") as f:
    for line in f:
        r = json.loads(line)
        a = r["answer"]
        if a.get("reset") or "hang" in a or not 200 <= a.get("status", 200) < 300:
            continue
        for x in r["body"].split("\n"):
            try:
                v = json.loads(x)
            except (ValueError, RecursionError):
                continue  # a hostile element (or the empty tail after the last newline)
            if isinstance(v, dict) and list(v) == ["n"]:
                sys.stdout.write(x + "\n")
    f.truncate(0)
