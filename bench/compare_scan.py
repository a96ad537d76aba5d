"""Compare the whole scan of two checkouts side by side, interleaved, with grep as the yardstick.

Usage: ``python bench/compare_scan.py --base DIR [--engine auto] [--repeat 3] [--patterns FILE] LOG...``

On a machine shared with other work the wall time of one run swings by 2x; this runs grep, the base
checkout's scan (``DIR``, e.g. ``git worktree add /tmp/base main``) and this checkout's scan in turn,
reversing the order every round, and prints for each log the medians of wall time and of CPU time
(user + system, from ``wait4``, which other work on the machine disturbs far less), each as a ratio to
grep's, the peak RSS, and whether both scans printed the same report. ``--patterns``: the ERE file
``scan_bench.py --keep DIR`` writes (``DIR/patterns.ere``); without it grep is not run. The logs are
those ``scan_bench.py --keep`` leaves, or any other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# As an installed package runs: with its bytecode (and its catalogue cache) written by a first run.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

Sample = Tuple[float, float, float, bytes]  # wall s, CPU s, peak RSS MiB, stdout


def _run(argv: Sequence[str], cwd: Optional[str], env: Dict[str, str]) -> Sample:
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE)
    out = proc.stdout.read() if proc.stdout is not None else b""
    _pid, _status, usage = os.wait4(proc.pid, 0)
    if proc.stdout is not None:
        proc.stdout.close()
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the other checkout's root (it holds analyzer/)")
    parser.add_argument("--engine", default="auto", help="the scanner's --engine (default auto)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are shown (default 3)")
    parser.add_argument("--patterns", help="grep -E patterns file (scan_bench.py --keep writes one)")
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args(argv)
    scan = [sys.executable, "-m", "analyzer", "--format", "json", "--engine", args.engine]
    commands = {
        "base": lambda log: _run([*scan, log], os.path.abspath(args.base), ENV),
        "this": lambda log: _run([*scan, log], ROOT, ENV),
    }
    if args.patterns:
        grep_env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "")}
        commands["grep"] = lambda log: _run(["grep", "-E", "-c", "-f", args.patterns, log], None, grep_env)
    for name in ("base", "this"):  # write bytecode and caches, as an installed package has them
        commands[name](os.devnull)
    loads = [os.getloadavg()[0]]
    print(f"engine {args.engine}; medians of {args.repeat} interleaved rounds; CPU = user + system")
    for log in args.logs:
        samples: Dict[str, List[Sample]] = {name: [] for name in commands}
        for round_ in range(args.repeat):
            order = list(commands) if round_ % 2 == 0 else list(commands)[::-1]
            for name in order:
                samples[name].append(commands[name](log))
            loads.append(os.getloadavg()[0])
        medians = {
            name: (statistics.median(s[0] for s in runs), statistics.median(s[1] for s in runs),
                   max(s[2] for s in runs))
            for name, runs in samples.items()
        }
        same = samples["base"][-1][3] == samples["this"][-1][3]
        row = f"{os.path.basename(log)} ({os.path.getsize(log) / 1e6:.0f} MB), same report: {same}"
        grep = medians.get("grep")
        for name in ("grep", "base", "this"):
            if name not in medians:
                continue
            wall, cpu, peak = medians[name]
            ratio = f" ({wall / grep[0]:.2f}x, CPU {cpu / grep[1]:.2f}x)" if grep and name != "grep" else ""
            row += f"\n  {name:<5} {wall:7.2f} s, CPU {cpu:6.2f} s{ratio}, peak {peak:.0f} MiB"
        print(row, flush=True)
    print("load average during the runs: " + " ".join(f"{load:.1f}" for load in loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
