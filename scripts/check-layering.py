#!/usr/bin/python3
"""Checks that the host's modules include each other in one direction only.

The layer order is the subsystem list of host/CMakeLists.txt (the `foreach(subsystem IN
ITEMS ...)` line), lowest first: a file of host/src/<module>/ may include headers of its own
module and of modules listed before it, never of one listed after it. main.cc (directly
under src/) sits above every module. Between files, no include cycle is allowed either.

    check-layering.py [--host DIR]     (default: the host/ folder beside this script)

Exit 0 when the includes follow the order; 1 with one line per violation otherwise.
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SUBSYSTEMS = re.compile(r"foreach\s*\(\s*subsystem\s+IN\s+ITEMS\s+([^)]*)\)", re.S)


def layer_order(cmake_file):
    match = SUBSYSTEMS.search(cmake_file.read_text())
    if not match:
        sys.exit(f"{cmake_file}: no 'foreach(subsystem IN ITEMS ...)' list to read the order from")
    return match.group(1).split()


def includes(src):
    """(file, line number, included path) for every quoted include of a file under src."""
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".hpp", ".cc", ".h"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and (src / m.group(1)).is_file():
                yield path.relative_to(src).as_posix(), number, m.group(1)


def module_of(relative):
    return relative.split("/", 1)[0] if "/" in relative else None  # None: main.cc


def find_cycle(edges):
    """One include cycle as a list of files, or None."""
    state = {}  # file -> 1 while on the stack, 2 when done
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent / "host")
    args = parser.parse_args()
    src = args.host / "src"
    order = layer_order(args.host / "CMakeLists.txt")
    rank = {m: i for i, m in enumerate(order)}
    problems = []
    modules = {p.name for p in src.iterdir() if p.is_dir()}
    for missing in sorted(modules - set(rank)):
        problems.append(f"host/src/{missing}/: a module missing from the layer order in "
                        f"{args.host / 'CMakeLists.txt'}")
    edges = {}
    for file, number, target in includes(src):
        edges.setdefault(file, set()).add(target)
        source_module, target_module = module_of(file), module_of(target)
        if source_module is None or source_module == target_module:
            continue
        if target_module not in rank or source_module not in rank:
            continue  # reported above as a missing module
        if rank[target_module] > rank[source_module]:
            below = ", ".join(order[:rank[source_module]]) or "none"
            problems.append(f"host/src/{file}:{number}: includes {target}: {source_module}/ may "
                            f"include only its own headers and those of the modules below it "
                            f"({below}), and {target_module}/ is above it")
    cycle = find_cycle(edges)
    if cycle:
        problems.append("include cycle: " + " -> ".join(cycle))
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} problem(s); the order is {' < '.join(order)} < main.cc")
        return 1
    print(f"layering: OK ({len(edges)} files; {' < '.join(order)} < main.cc)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
