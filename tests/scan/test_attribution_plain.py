"""pytest without ``-v`` names no running test: its verdict judges what its run printed.

Plain ``pytest`` prints a file's name, then a dot per test; whatever a test's child prints (with ``-s``,
or through the real fd 2 as faulthandler does) lands between the dots. An event there belongs to the run
whose "test session starts" the log shows: when that run's verdict reports no failure and no error the
event was handled (a notice); when it reports one, the letters after the event say which test printed it
only when they account for the verdict (``analyzer.scan.letters``), else it stays an error; and what came
before the run started, or after its verdict, is not the run's. Real pytest runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.scan.test_attribution import scan, summary
from tests.scan.test_engine_helpers import ENGINES

# A test that checks its child dies of SIGSEGV (faulthandler reports it), and one that may be broken.
SUITE = """
    import subprocess, sys

    def test_child_segfault_is_reported():
        code = "import ctypes; ctypes.string_at(0)"
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code])
        assert proc.returncode == -11

    def test_config():
        assert BROKEN == 0
"""
CRASH_LINE = "Fatal Python error: Segmentation fault"


def plain_pytest(tmp_path: Path, broken: int) -> str:
    (tmp_path / "test_plain.py").write_text(textwrap.dedent(SUITE).replace("BROKEN", str(broken)))
    env = dict(os.environ, COLUMNS="80")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "test_plain.py"],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env,
    )
    return proc.stdout.decode("utf-8", "replace")


def crash_line(log: str) -> int:
    return next(n for n, line in enumerate(log.splitlines(), 1) if line.endswith(CRASH_LINE))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_a_passing_plain_run_printed_is_a_notice(tmp_path, engine):
    log = plain_pytest(tmp_path, broken=0)
    assert "2 passed" in log and "::" not in log  # plain: no line names a test
    findings = scan({"job.log": log}, engine=engine)
    assert summary(findings) == [("fatal-python-error", "notice", crash_line(log), None)]
    assert "during the test run, which passed (2 passed in " in findings[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_a_failing_plain_run_printed_is_its_tests_as_the_letters_tell(tmp_path, engine):
    # "test_plain.py <crash>" then ".F": the letters account for "1 failed, 1 passed", and the one after
    # the crash is its test's dot (analyzer.scan.letters; tests/scan/test_attribution_letters.py).
    log = plain_pytest(tmp_path, broken=1)
    assert "1 failed, 1 passed" in log
    findings = scan({"job.log": log}, engine=engine)
    assert ("fatal-python-error", "notice", crash_line(log), None) in summary(findings)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_a_failing_plain_run_printed_stays_an_error_when_letters_do_not_add_up(tmp_path, engine):
    # The verdict counts a test the letters do not show (a dot glued to the end of a test's output): which
    # test printed the crash is unknown.
    log = plain_pytest(tmp_path, broken=1)
    log = log.replace("1 failed, 1 passed", "1 failed, 2 passed")
    findings = scan({"job.log": log}, engine=engine)
    assert ("fatal-python-error", "error", crash_line(log), None) in summary(findings)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_before_the_run_started_is_not_the_runs_to_handle(tmp_path, engine):
    # One step: a warm-up script crashes (exit status ignored by the step), then a passing suite runs.
    warmup = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
    ).stdout.decode("utf-8", "replace")
    assert CRASH_LINE in warmup
    log = warmup + plain_pytest(tmp_path, broken=0)
    findings = scan({"job.log": log}, engine=engine)
    found = {(rule, severity, line) for rule, severity, line, _ in summary(findings)}
    assert ("fatal-python-error", "error", crash_line(log)) in found
    assert any(severity == "notice" and line > crash_line(log) for _, severity, line in found)
