"""What hostile inputs cost a scan in time and memory (issue 10.7, 10.8): prints numbers, asserts nothing.

Each case runs ``python -m analyzer`` as a subprocess and reports wall seconds, peak RSS (MB), the exit
status and the first line of stderr::

    python bench/input_bounds_bench.py                 # every case, this tree
    python bench/input_bounds_bench.py slow-100-lines  # some cases
    PYTHONPATH=/path/to/old/tree python bench/input_bounds_bench.py   # the same cases, another tree

Cases:
- ``slow-100-lines``: a user pattern ``(a|aa)+$`` over 100 lines that each cost it about half a second,
  under the 1 s ``match_timeout`` (so no timeout ever fires);
- ``slow-10-files``: the same pattern over 10 files of 10 lines that each run into the timeout;
- ``laughs-8`` / ``laughs-9``: a YAML "billion laughs" (9**8, 9**9 strings) under ``match_timeout``;
- ``huge-repeat``: ``x{2147483648}`` as a user pattern.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import analyzer  # noqa: E402 - the tree under test: this one, or the one PYTHONPATH names

# ``python -m`` puts its working directory first on sys.path: run the CLI where that tree is.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(analyzer.__file__)))
SLOW_RULE = (
    "rules:\n  - {id: slow-rule, kind: crash, severity: error, message: slow, doc: d, pattern: '(a|aa)+$'}\n"
)


def _laughs(levels: int) -> str:
    lines = ["match_timeout:", '  - &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        lines.append(f"  - &a{level} [" + ",".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _write(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def slow_100_lines(tmp: str) -> List[str]:
    config = _write(tmp, "ci.yml", SLOW_RULE)
    log = _write(tmp, "job.log", ("a" * 26 + "!\n") * 100)
    return ["--config", config, log]


def slow_10_files(tmp: str) -> List[str]:
    config = _write(tmp, "ci.yml", SLOW_RULE)
    logs = [_write(tmp, f"{index}_step.txt", ("a" * 29 + "!\n") * 10) for index in range(10)]
    return ["--config", config, *logs]


def _config_only(text: str) -> Callable[[str], List[str]]:
    def case(tmp: str) -> List[str]:
        return ["--config", _write(tmp, "bomb.yaml", text), _write(tmp, "job.log", "ok\n")]

    return case


CASES: Dict[str, Callable[[str], List[str]]] = {
    "slow-100-lines": slow_100_lines,
    "slow-10-files": slow_10_files,
    "laughs-8": _config_only(_laughs(8)),
    "laughs-9": _config_only(_laughs(9)),
    "huge-repeat": _config_only(
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: 'x{2147483648}'}\n"
    ),
}


def measure(args: List[str]) -> Tuple[float, float, int, str]:
    """(wall seconds, peak RSS in MB, exit status, first stderr line) of one CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    wall = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    first = (done.stderr.strip().splitlines() or [""])[-1 if "Traceback" in done.stderr else 0]
    return wall, max(peak, before) / 1024, done.returncode, first[:160]


def main(names: List[str]) -> int:
    print(f"{'case':<16} {'seconds':>8} {'peak MB':>8} {'exit':>4}  stderr")
    for name in names or list(CASES):
        with tempfile.TemporaryDirectory() as tmp:
            wall, peak, code, first = measure(CASES[name](tmp))
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run one case per call for exact MB.
        print(f"{name:<16} {wall:>8.1f} {peak:>8.0f} {code:>4}  {first}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
