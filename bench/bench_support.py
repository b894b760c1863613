"""What the benchmark scripts share: the Skip they raise when they cannot run here, their
log, and the command line of one benchmark run on its own (bench.py runs them all)."""
import argparse
import json
import os
import statistics
import sys
import tempfile


class Skip(Exception):
    """A benchmark that cannot run here (not built, a missing tool or package)."""


def log(msg):
    print(msg, flush=True)


def ratio_rows(times, base, n, unit, width=8, extra=None):
    """Logs one line per variant of `times` (name -> each run's seconds): its median, `n`
    divided by it as `unit`s per second, and its ratio to the median of variant `base`
    (base's time / this time: 1.0 is as fast, above is faster), then the text `extra(name)`
    if given. Returns {name: {"seconds", "<unit>_per_s", "ratio_to_<base>"}}."""
    base_median = statistics.median(times[base])
    out = {}
    for name, runs in times.items():
        med = statistics.median(runs)
        out[name] = {"seconds": med, f"{unit}_per_s": n / med,
                     f"ratio_to_{base}": base_median / med}
        log(f"  {name:{width}s} {n / med:12,.0f} {unit}/s  {med:7.3f} s  "
            f"ratio {base_median / med:5.2f}" + (f"  {extra(name)}" if extra else ""))
    return out


def standalone_main(doc, name, bench, before=None):
    """`SCRIPT [--quick | --smoke] [--build-dir DIR] [--json F]`: runs bench(build, mode,
    tmp) in a temporary directory (mode "full", "quick" or "smoke") and writes its figures
    to F; a Skip exits 77. `before(build, mode)` runs first (a banner)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", default=os.environ.get("SLUICE_BUILD_DIR", "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    build = os.path.abspath(args.build_dir)
    if before:
        before(build, mode)
    with tempfile.TemporaryDirectory(prefix=f"sluice-{name}-bench-") as tmp:
        # Readable by other users: the postgres benchmark's server runs as `postgres`.
        os.chmod(tmp, 0o755)
        try:
            out = bench(build, mode, tmp)
        except Skip as e:
            log(f"{name}: SKIPPED: {e}")
            return 77
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def run(doc, name, bench, before=None):
    sys.exit(standalone_main(doc, name, bench, before))
