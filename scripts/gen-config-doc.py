#!/usr/bin/python3
"""Regenerates the reference part of docs/CONFIG.md from `sluiced plugins --json`.

The node types and functions are documented by the plugins themselves (their
declared params and docs); this script only lays them out, so the reference
cannot drift from the code. `--check` exits 1 when the file is stale (a test runs it).

usage: gen-config-doc.py SLUICED CONFIG_MD [--check] [--plugin-dir DIR ...]
"""
import json
import subprocess
import sys

BEGIN = "<!-- BEGIN GENERATED: scripts/gen-config-doc.py -->"
END = "<!-- END GENERATED -->"
IN_TREE = ("core_ops", "sinks", "kafka", "net", "postgres", "files", "http", "mqtt")


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def params_table(params):
    if not params:
        return "No parameters.\n"
    rows = ["| key | type | default | valid values | description |", "|---|---|---|---|---|"]
    for p in params:
        default = "**required**" if p["required"] else (
            "`" + json.dumps(p["default"]) + "`" if "default" in p else "—")
        valid = p.get("constraints", "") or "—"
        rows.append(f"| `{p['name']}` | {p['type']} | {cell(default)} | {cell(valid)} "
                    f"| {cell(p['doc'])} |")
    return "\n".join(rows) + "\n"


def inputs_text(t):
    if t["role"] == "source":
        return "no inputs"
    lo, hi = t["min_inputs"], t["max_inputs"]
    if hi == -1:
        return f"{lo} or more inputs"
    return f"{lo} input" + ("" if lo == 1 else "s") if lo == hi else f"{lo} to {hi} inputs"


def render(doc):
    out = [BEGIN, ""]
    plugins = [p for p in doc["plugins"] if p["name"] in IN_TREE]
    for role, title in (("source", "Sources"), ("operator", "Operators"), ("sink", "Sinks")):
        out.append(f"## {title}\n")
        for p in plugins:
            for t in sorted(p["node_types"], key=lambda t: t["name"]):
                if t["role"] != role:
                    continue
                flags = ", stateful" if t["stateful"] else ""
                for side in t.get("side_outputs", []):
                    flags += f', side output `"ID.{side}"`'
                out.append(f"### `{t['name']}`\n")
                out.append(f"*{role}, {inputs_text(t)}{flags}; plugin `{p['name']}`*\n")
                out.append(t["doc"] + "\n")
                out.append(params_table(t["params"]))
    out.append("## Functions\n")
    for p in plugins:
        for f in sorted(p["functions"], key=lambda f: f["name"]):
            out.append(f"### `{f['name']}`\n")
            out.append(f"*{f['kind']}; plugin `{p['name']}`*\n")
            out.append(f["doc"] + "\n")
            out.append(params_table(f["params"]))
    out.append(END)
    return "\n".join(out)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv[1:] if a != "--check"]
    sluiced, path, extra = args[0], args[1], args[2:]
    listing = subprocess.run([sluiced, "plugins", "--json", *extra], check=True,
                             capture_output=True, text=True).stdout
    generated = render(json.loads(listing))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{path}: markers {BEGIN!r} ... {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    updated = head + generated + tail
    if check:
        if updated != text:
            sys.stderr.write(f"{path} is out of date with `sluiced plugins --json`: run\n"
                             f"  scripts/gen-config-doc.py {sluiced} {path}\n")
            return 1
        print(f"{path} matches the plugins' declarations")
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
