"""The tree passes the linter configured in pyproject.toml (ruff: pyflakes, pycodestyle, bugbear).

ruff is a test dependency, so CI runs it like any test; a long line or an unused import fails here
instead of waiting for someone to run the linter by hand.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=str(ROOT), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
