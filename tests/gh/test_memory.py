"""Memory stays that of one scan: two 64 MiB logs fetched and scanned by a real ``gh`` process.

The numbers come from bench/gh_bench.py (its loopback server streams each log, so the peak RSS it
prints is the analyzer's alone). Only memory is asserted; speed is the benchmark's to print.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEAK_LIMIT_MIB = 200


def test_peak_rss_is_flat_over_large_logs():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gh_bench.py"), "--mb", "64", "--jobs", "2", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    peak = float(re.search(r"peak RSS of the analyzer: (\d+) MiB", proc.stdout).group(1))
    assert peak < PEAK_LIMIT_MIB, proc.stdout
    assert "atexit findings 2/2" in proc.stdout, proc.stdout
