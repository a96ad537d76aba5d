"""Compare the whole scan of two checkouts by the instructions it runs (valgrind's cachegrind), not its time.

Usage: ``python bench/compare_instructions.py --base DIR [--engine auto] LOG...``

On a machine shared with other work even the CPU time of ``compare_scan.py`` drifts by 10-20% between two
checkouts at a load of 8 on 2 cores (perf30: the same code measured 8% slower on one log, then equal). The
count of instructions does not depend on the load: it changes only with the work done (and a little with
the hash seed). Each checkout first scans a one-line log under valgrind, so that its bytecode and its
Hyperscan database are cached for the CPU that valgrind shows (``_hyperscan.py`` keys the cache by its
flags), then that log again (the start-up with the rules and the database loaded, subtracted), then each
log. Prints, for each log, the instructions
of the scan past start-up of both checkouts and the change. About 50 times slower than a scan: use logs
of a few MB (``head -c 4000000 tracebacks.log``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")


def _instructions(checkout: str, engine: str, log: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = checkout
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
            sys.executable, "-m", "analyzer", "--format", "json", "--engine", engine, log]
    proc = subprocess.run(argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    found = _REFS.search(proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from valgrind for {log} in {checkout}")
    return int(found.group(1).replace(b",", b""))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the other checkout's root (it holds analyzer/)")
    parser.add_argument("--engine", default="auto", help="the scanner's --engine (default auto)")
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("compare_instructions: valgrind is not installed", file=sys.stderr)
        return 2
    checkouts = {"base": os.path.abspath(args.base), "this": ROOT}
    with tempfile.TemporaryDirectory() as scratch:
        one = os.path.join(scratch, "one.log")
        with open(one, "w") as f:
            f.write("Traceback (most recent call last):\n")
        start: Dict[str, int] = {}
        for name, checkout in checkouts.items():
            _instructions(checkout, args.engine, one)  # caches written for valgrind's CPU
            start[name] = _instructions(checkout, args.engine, one)
        print(f"engine {args.engine}; instructions past start-up (base {start['base']:,}, this "
              f"{start['this']:,})")
        for log in args.logs:
            scan = {name: _instructions(checkout, args.engine, log) - start[name]
                    for name, checkout in checkouts.items()}
            change = (scan["this"] - scan["base"]) / scan["base"] * 100 if scan["base"] else 0.0
            size = os.path.getsize(log)
            print(f"{os.path.basename(log)} ({size / 1e6:.0f} MB): base {scan['base']:,} "
                  f"({scan['base'] / max(size, 1):.0f}/byte), this {scan['this']:,}, {change:+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
