"""Runners that never print the start of their run: ``pytest -q`` and unittest without ``-v``.

``pytest -q`` prints no "test session starts", only dots and a bare verdict ("2 passed in 0.31s");
``python -m unittest`` prints dots, then "Ran 2 tests in 0.3s" and OK or FAILED. What a test's child
prints through the real fd 2 (faulthandler's crash report) lands between the dots, on no test's line.
Since the log shows no start, an event on no test's lines before such a verdict (since the log's start or
the last verdict) is the run's: a passing verdict says it was handled (a notice), a failing one leaves it
an error unless the progress letters say the test that printed it passed (``analyzer.scan.letters``: the
first test's output comes before the run's first letter), and an event after a verdict stays an error
also when a later run passes (the exit path of the run before; since the later run's start is not shown
either, what it printed reads as that exit path too: an error, never a failure missed). The price, taken
on purpose: a crash printed by an earlier command of the same step, whose status the step ignored, reads
as the run's. Real pytest and unittest runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from tests.scan.test_attribution import scan, summary
from tests.scan.test_engine_helpers import ENGINES

CRASH_LINE = "Fatal Python error: Segmentation fault"
CHILD_SEGFAULT = (
    "proc = subprocess.run([sys.executable, '-X', 'faulthandler', '-c',"
    " 'import ctypes; ctypes.string_at(0)'])"
)
PYTEST_SUITE = f"""
    import subprocess, sys

    def test_child_segfault_is_reported():
        {CHILD_SEGFAULT}
        assert proc.returncode == -11

    def test_config():
        assert BROKEN == 0
"""
UNITTEST_SUITE = f"""
    import subprocess, sys, unittest

    class ChildCrash(unittest.TestCase):
        def test_child_segfault_is_reported(self):
            {CHILD_SEGFAULT}
            self.assertEqual(proc.returncode, -11)

        def test_config(self):
            self.assertEqual(BROKEN, 0)
"""
# A script whose verdict passes, then dies at exit: what it prints after its verdict is its exit path.
EXIT_CRASH = """
    import faulthandler, os, signal, sys, unittest

    class Quick(unittest.TestCase):
        def test_ok(self):
            pass

    if __name__ == "__main__":
        faulthandler.enable()
        unittest.main(exit=False)
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
"""


def _run(argv: List[str], cwd: Path) -> str:
    env = dict(os.environ, COLUMNS="80")
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.run(
        argv, cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, env=env
    )
    return proc.stdout.decode("utf-8", "replace")


def quiet_pytest(where: Path, broken: int, crash_fails: bool = False) -> str:
    source = textwrap.dedent(PYTEST_SUITE).replace("BROKEN", str(broken))
    (where / "test_quiet.py").write_text(source.replace("-11", "0") if crash_fails else source)
    argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_quiet.py"]
    return _run(argv, where)


def plain_unittest(where: Path, broken: int, crash_fails: bool = False) -> str:
    source = textwrap.dedent(UNITTEST_SUITE).replace("BROKEN", str(broken))
    source = source.replace("-11", "0") if crash_fails else source
    (where / "test_plain_unittest.py").write_text(source)
    return _run([sys.executable, "-m", "unittest", "test_plain_unittest"], where)


def crash_lines(log: str) -> List[int]:
    return [n for n, line in enumerate(log.splitlines(), 1) if line.endswith(CRASH_LINE)]


def found(log: str, engine: str) -> set:
    findings = scan({"job.log": log}, engine=engine)
    return {(rule, severity, line) for rule, severity, line, _ in summary(findings)}


# Per runner: how to run the suite; the passing run's verdict as its log (and the notice) spells it, and
# text its log must not show (a session start, pytest's "=" separators, unittest -v's " ... "); the failing
# run's verdict.
RUNNERS = {
    "pytest -q": (quiet_pytest, "2 passed in ", ("test session starts", "="), "1 failed, 1 passed in "),
    "unittest": (plain_unittest, "Ran 2 tests in ", (" ... ",), "FAILED (failures=1)"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_crash_a_passing_unframed_run_printed_is_a_notice(tmp_path, engine, runner):
    run, verdict, absent, _ = RUNNERS[runner]
    log = run(tmp_path, broken=0)
    assert verdict in log and not any(text in log for text in absent)
    findings = scan({"job.log": log}, engine=engine)
    assert summary(findings) == [("fatal-python-error", "notice", crash_lines(log)[0], None)]
    assert "during the test run, which passed (" + verdict in findings[0].message


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_crash_a_failing_unframed_run_printed_is_read_by_its_tests_letter(tmp_path, engine, runner):
    # The crash is the first test's output, before the run's first letter: that test passed, another failed.
    run, _, _, failing_verdict = RUNNERS[runner]
    log = run(tmp_path, broken=1)
    assert failing_verdict in log
    assert ("fatal-python-error", "notice", crash_lines(log)[0]) in found(log, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_crash_a_failing_unframed_run_printed_stays_an_error_when_its_test_failed(tmp_path, engine, runner):
    run, _, _, _ = RUNNERS[runner]
    log = run(tmp_path, broken=1, crash_fails=True)
    assert ("fatal-python-error", "error", crash_lines(log)[0]) in found(log, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_crash_after_a_verdict_stays_an_error_when_the_next_run_passes(tmp_path, engine):
    # One shell step runs two unittest scripts: the first passes, then segfaults at exit; the second
    # passes (its crash-testing child's report cannot be told from the first one's exit path).
    (tmp_path / "exit_crash.py").write_text(textwrap.dedent(EXIT_CRASH))
    first = _run([sys.executable, "exit_crash.py"], tmp_path)
    assert "Ran 1 test in " in first and CRASH_LINE in first
    log = first + plain_unittest(tmp_path, broken=0)
    exit_crash = crash_lines(log)[0]
    assert "Ran 2 tests in " in log[log.index(CRASH_LINE):]
    assert ("fatal-python-error", "error", exit_crash) in found(log, engine)
