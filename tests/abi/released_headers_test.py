#!/usr/bin/python3
"""Plugins built against every released sluice.h load and run in today's host.

tests/abi/released_plugin.c is built once per released header (tests/abi/released/1.N);
this loads all of those plugins into one sluiced and, through the real CLI:
  - `sluiced plugins --json` lists each build with the ABI minor it was built with (and
    core_ops with the host minor the C++ SDK computed from its types);
  - `sluiced test` runs a pipeline through every build's operator, stateful operator and
    function, with the host's restart check (a snapshot and restore of every stateful node
    between steps), and compares the output;
  - `sluiced validate` applies the constraint the 1.2-and-later builds declare (factor >= 1)
    with file:line:col, and accepts the same value from the builds before 1.2, whose
    sl_param had no constraint fields (the host must not read past their stride).
Exit status 0 when everything holds, 1 otherwise (the failures are printed).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluiced", required=True)
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--released-dir", required=True)
    ap.add_argument("--versions", nargs="+", required=True)
    args = ap.parse_args()
    tags = {v: "v" + v.replace(".", "_") for v in args.versions}
    failures = []
    dirs = ["--plugin-dir", args.plugin_dir, "--plugin-dir", args.released_dir]

    def sluiced(*argv):
        return subprocess.run([args.sluiced, *argv], capture_output=True, text=True, timeout=60)

    # 1. Every build is loaded, with the minor it says it was built with.
    listed = sluiced("plugins", "--json", *dirs)
    if listed.returncode != 0:
        print(listed.stdout, listed.stderr)
        return 1
    plugins = {p["name"]: p for p in json.loads(listed.stdout)["plugins"]}
    for version, tag in tags.items():
        p = plugins.get(tag + "_released")
        if p is None:
            failures.append(f"{version}: plugin {tag}_released was not loaded")
            continue
        if p.get("abi") != version:
            failures.append(f"{version}: listed with ABI {p.get('abi')}")
    # core_ops, built with the C++ SDK, needs what its types declare: side outputs and
    # watermarks (1.5), which the SDK found on its own (min_host_minor).
    core = plugins.get("core_ops", {})
    if core.get("min_host_abi") != "1.5":
        failures.append(f"core_ops should need a 1.5 host, lists {core.get('min_host_abi')}")

    with tempfile.TemporaryDirectory() as tmp:
        # 2. One branch per build: 1, 2, 3 -> scale(x3) -> add(n=10) -> count, both kept.
        pipeline = ["[sources.src]", 'type = "from_iterable"', "values = []", ""]
        expect = []
        for tag in tags.values():
            pipeline += [
                f"[operators.{tag}_scaled]", f'type = "{tag}_scale"', 'inputs = ["src"]',
                "factor = 3", "",
                f"[operators.{tag}_added]", 'type = "map"', f'inputs = ["{tag}_scaled"]',
                f'function = "{tag}_add"', "args = { n = 10 }", "",
                f"[operators.{tag}_counted]", f'type = "{tag}_count"',
                f'inputs = ["{tag}_added"]', "",
            ]
            expect += [f"{tag}_added = [13, 16, 19]", f"{tag}_counted = [1, 2, 3]"]
        tests = ['[[tests]]', 'name = "every released build"',
                 'steps = [{ source = "src", value = 1 }, { source = "src", value = 2 },'
                 ' { source = "src", value = 3 }]', "[tests.expect]", *expect]
        pipeline_path = os.path.join(tmp, "released.toml")
        tests_path = os.path.join(tmp, "released.tests.toml")
        with open(pipeline_path, "w") as f:
            f.write("\n".join(pipeline) + "\n")
        with open(tests_path, "w") as f:
            f.write("\n".join(tests) + "\n")
        # Every case also runs with a snapshot and restore of each stateful node between
        # steps (the restart check): that is what exercises the old builds' state callbacks.
        ran = sluiced("test", pipeline_path, tests_path, *dirs)
        if ran.returncode != 0:
            failures.append(f"sluiced test failed ({ran.returncode}):\n{ran.stdout}{ran.stderr}")
        elif "(restart check ran)" not in ran.stdout:
            failures.append("sluiced test did not run the restart check:\n" + ran.stdout)

        # 3. factor = 0: refused by the constraint from 1.2 on, accepted before.
        for version, tag in tags.items():
            bad = os.path.join(tmp, f"bad_{tag}.toml")
            with open(bad, "w") as f:
                f.write("[sources.src]\ntype = \"from_iterable\"\nvalues = [1]\n\n"
                        f"[operators.s]\ntype = \"{tag}_scale\"\ninputs = [\"src\"]\n"
                        "factor = 0\n")
            checked = sluiced("validate", bad, *dirs)
            constrained = tuple(int(x) for x in version.split(".")) >= (1, 2)
            if constrained:
                if checked.returncode != 2 or "bad_%s.toml:8:10" % tag not in checked.stderr \
                        or "must be at least 1" not in checked.stderr:
                    failures.append(f"{version}: factor = 0 should be refused at 8:10, got "
                                    f"{checked.returncode}:\n{checked.stderr}")
            elif checked.returncode != 0:
                failures.append(f"{version}: a build without constraints should validate "
                                f"factor = 0, got {checked.returncode}:\n{checked.stderr}")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"ok: plugins built against ABI {', '.join(args.versions)} load and run")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
