"""A failure's wording in a test's source code is not an event: the report's exception and output lines are.

pytest's failure report lists the failing test's source (``--tb=long``: the function with its lines
indented, the failing one marked ``>``; ``--tb=short`` and ``native``: the frame's line under its
location), and a Python traceback shows each frame's line. A test that prints a CUDA error's wording, then
fails on something else, gave two findings before: the captured stderr line, and its own
``print("RuntimeError: CUDA error: ...", file=sys.stderr)`` source line (a message ending in
``", file=sys.stderr)``). The logs here come from a real pytest run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scan.test_attribution import scan, summary

TESTS = '''
import sys


def test_kernel_reports_and_fails():
    print("RuntimeError: CUDA error: an illegal memory access was encountered", file=sys.stderr)
    assert False, "the kernel's result is wrong"


# (a long name: the short summary cuts the reason before the wording, which it would tell a second time)
def test_kernel_launch_raises_the_error_it_was_given():
    raise RuntimeError("CUDA error: device-side assert triggered")
'''


def _pytest(where: Path, *args: str) -> str:
    (where / "test_kernels.py").write_text(textwrap.dedent(TESTS))
    env = dict(os.environ, COLUMNS="80")
    # pytest never cuts the short summary on CI (CI or BUILD_NUMBER set: _pytest/terminal.py running_on_ci)
    for name in ("PYTEST_ADDOPTS", "CI", "BUILD_NUMBER"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "test_kernels.py"],
        cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env,
    )
    return proc.stdout.decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("tb", ["long", "short", "native"])
def test_a_wording_in_the_listed_source_is_not_a_second_event(tmp_path, tb):
    log = _pytest(tmp_path, "--tb=" + tb)
    lines = log.split("\n")
    found = [f for f in scan({"job.log": log}) if f.rule == "cuda-error"]
    texts = [lines[f.line - 1] for f in found]
    # The printed line (Captured stderr) and the raised exception's line, never the source that says them.
    assert texts == [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        next(t for t in lines if t.lstrip("E ").startswith("RuntimeError: CUDA error: device-side")),
    ], texts
    assert all(f.severity.value == "error" for f in found)
    assert not any(f.message.endswith('file=sys.stderr)') for f in found)


def test_each_failed_test_is_named(tmp_path):
    log = _pytest(tmp_path, "-rA")
    failures = [s for s in summary(scan({"job.log": log})) if s[0] == "pytest-test-outcome"]
    assert sorted(s[3] for s in failures) == [
        "test_kernels.py::test_kernel_launch_raises_the_error_it_was_given",
        "test_kernels.py::test_kernel_reports_and_fails",
    ]
