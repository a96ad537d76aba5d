"""Attribution of CPython's own test runner (``python -m test``, regrtest), run for real.

regrtest runs test files, each a unittest suite. Sequentially (``-v``) it prints ``0:00:00 load avg:
0.50 [1/2] test_x`` when a file starts, then unittest's own ``-v`` lines. In parallel (``-jN``, the
mode of CPython's CI) it prints ``[1/2] test_x passed`` (or ``failed (1 failure)``, ``worker non-zero
exit code (Exit code -11 (SIGSEGV))``) when a file's worker is done, and only then that worker's
output. A crash printed by a child of a test that passed is handled either way; a file that failed
or whose worker died is an error naming it.

Each case runs the interpreter running these tests on a tiny test directory (``--testdir``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from analyzer.model import Finding
from analyzer.verdict import decide
from tests.scan.test_attribution import scan, summary
from tests.scan.test_engine_helpers import ENGINES

# A test that checks its child dies of SIGSEGV; the child's faulthandler report reaches the log.
HANDLED = """
    import subprocess, sys, unittest

    class HandledCrash(unittest.TestCase):
        def test_child_segfault_is_reported(self):
            code = "import ctypes; ctypes.string_at(0)"
            proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code])
            self.assertEqual(proc.returncode, -11)

        def test_fine(self):
            self.assertTrue(True)
"""
BROKEN = """
    import unittest

    class Broken(unittest.TestCase):
        def test_store_roundtrip(self):
            self.assertEqual(1, 2)
"""
SEGV = """
    import ctypes, unittest

    class Segv(unittest.TestCase):
        def test_native_crash(self):
            ctypes.string_at(0)
"""


def regrtest(tmp_path: Path, *args: str, **files: str) -> str:
    """The log of ``python -m test --testdir DIR ARGS`` over ``files`` (name -> source)."""
    testdir = tmp_path / "td"
    testdir.mkdir(exist_ok=True)
    for name, source in files.items():
        (testdir / (name + ".py")).write_text(textwrap.dedent(source))
    proc = subprocess.run(
        [sys.executable, "-m", "test", "--testdir", str(testdir), *args, *sorted(files)],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
    )
    return proc.stdout.decode("utf-8", "backslashreplace")


def errors(findings: List[Finding]) -> List[tuple]:
    return [s for s in summary(findings) if s[1] != "notice"]


def crash_notices(findings: List[Finding]) -> List[tuple]:
    return [(s[0], s[3]) for s in summary(findings) if s[1] == "notice"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sequential_green_run_makes_the_handled_crash_a_notice(tmp_path, engine):
    log = regrtest(tmp_path, "-v", test_handled=HANDLED)
    assert "== Tests result: SUCCESS ==" in log
    findings = scan({"job.log": log}, engine=engine)
    assert errors(findings) == []
    assert crash_notices(findings) == [
        ("fatal-python-error", "test_child_segfault_is_reported (test_handled.HandledCrash)")
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_parallel_green_run_gives_the_output_after_a_passed_line_to_that_file(tmp_path, engine):
    log = regrtest(tmp_path, "-j2", test_handled=HANDLED, test_other=BROKEN.replace("1, 2", "2, 2"))
    assert "] test_handled passed" in log and "== Tests result: SUCCESS ==" in log
    findings = scan({"job.log": log}, engine=engine)
    assert errors(findings) == []
    assert crash_notices(findings) == [("fatal-python-error", "test_handled")]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_parallel_run_with_a_failed_file_fails_naming_it(tmp_path, engine):
    log = regrtest(tmp_path, "-j2", test_handled=HANDLED, test_broken=BROKEN)
    assert "] test_broken failed" in log
    findings = scan({"job.log": log}, engine=engine)
    (failed,) = errors(findings)
    assert failed[0] == "regrtest-test-failed" and failed[3] == "test_broken"
    assert crash_notices(findings) == [("fatal-python-error", "test_handled")]
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_parallel_worker_that_segfaults_is_an_error_and_its_output_is_not_handled(tmp_path, engine):
    log = regrtest(tmp_path, "-j1", test_segv=SEGV)
    assert "] test_segv worker non-zero exit code (Exit code -11" in log or "] test_segv crashed" in log
    findings = scan({"job.log": log}, engine=engine)
    assert ("regrtest-test-failed", "test_segv") in [(s[0], s[3]) for s in errors(findings)]
    assert crash_notices(findings) == []
    assert all(f.test == "test_segv" for f in findings)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_quiet_sequential_green_run_makes_the_handled_crash_a_notice(tmp_path, engine):
    # Without -v a sequential run prints "[1/1] test_handled" and nothing when the file passes: only
    # the run's verdict says the file whose test printed the crash did not fail.
    log = regrtest(tmp_path, test_handled=HANDLED)
    assert "[1/1] test_handled\n" in log and "== Tests result: SUCCESS ==" in log
    findings = scan({"job.log": log}, engine=engine)
    assert errors(findings) == []
    assert crash_notices(findings) == [("fatal-python-error", "test_handled")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_quiet_sequential_run_keeps_the_crash_of_the_file_that_failed(tmp_path, engine):
    log = regrtest(tmp_path, test_handled=HANDLED.replace("-11", "0"))
    assert "test_handled failed" in log and "== Tests result: FAILURE ==" in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[3]) for s in errors(findings)] == [
        ("fatal-python-error", "test_handled"),
        ("regrtest-test-failed", "test_handled"),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_quiet_sequential_run_that_dies_before_its_verdict_keeps_every_crash(tmp_path, engine):
    # test_segv crashes regrtest itself: no verdict says that test_a, before it, passed.
    log = regrtest(tmp_path, test_a=HANDLED, test_segv=SEGV)
    assert "== Tests result:" not in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[3]) for s in errors(findings)] == [
        ("fatal-python-error", "test_a"),
        ("fatal-python-error", "test_segv"),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sequential_failed_run_fails_naming_the_unittest_test(tmp_path, engine):
    log = regrtest(tmp_path, "-v", test_handled=HANDLED, test_broken=BROKEN)
    assert "== Tests result: FAILURE ==" in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[3]) for s in errors(findings)] == [
        ("unittest-test-failed", "test_store_roundtrip (test_broken.Broken)"),
        ("regrtest-test-failed", "test_broken"),
    ]
    assert crash_notices(findings) == [
        ("fatal-python-error", "test_child_segfault_is_reported (test_handled.HandledCrash)")
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sequential_file_that_fails_at_import_fails_the_log_naming_it(tmp_path, engine):
    # No unittest header and no verdict line of its own: only "test test_imp crashed -- Traceback".
    log = regrtest(tmp_path, "-v", test_imp='raise ImportError("No module named apex")\n',
                   test_handled=HANDLED)
    assert "test test_imp crashed" in log or "test test_imp failed" in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[3]) for s in errors(findings)] == [("regrtest-test-failed", "test_imp")]
    assert decide(findings)[1] == 1


def test_a_parallel_run_whose_passing_file_reports_first_keeps_its_output():
    # Real: CPython 3.9.18's regrtest -j2 over HANDLED and BROKEN when test_handled's worker reported
    # first (a race; tests/scan/logs/regrtest-j2-handled-first.log, its temp dir renamed). Its first
    # line is the longest but one and the next starts with a digit: that once read as a terminal's cut,
    # joined the two rows and lost "[1/2] test_handled passed", so the handled crash became an error.
    log = (Path(__file__).resolve().parent / "logs" / "regrtest-j2-handled-first.log").read_text()
    findings = scan({"job.log": log}, engine="python")
    assert [(s[0], s[3]) for s in errors(findings)] == [("regrtest-test-failed", "test_broken")]
    assert crash_notices(findings) == [("fatal-python-error", "test_handled")]
