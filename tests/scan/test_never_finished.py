"""A log that ends in the middle of a test, with nothing after it that says why, is no pass.

Real runs, not hand-written logs: pytest -v and unittest -v on tests that call ``os._exit(0)`` (the run
exits 0 with no verdict: CI shows green) and that segfault while faulthandler writes to the stream pytest
captures (the report is lost with the process). Both leave only the test's progress line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.model import Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
REPO = Path(__file__).resolve().parents[2]

EXITS_EARLY = """
import os

def test_first():
    pass

def test_exits_early():
    os._exit(0)

def test_never_runs():
    assert False
"""

CRASH_REPORT_CAPTURED = """
import ctypes, faulthandler

def test_first():
    pass

def test_segfaults():
    faulthandler.enable()  # onto pytest's captured stderr: the report dies with the process
    ctypes.string_at(0)
"""

CRASH_REPORT_SHOWN = """
import ctypes

def test_segfaults():
    ctypes.string_at(0)
"""

UNITTEST_EXITS_EARLY = """
import os, unittest

class Handoff(unittest.TestCase):
    def test_a(self):
        pass

    def test_b(self):
        os._exit(0)

if __name__ == "__main__":
    unittest.main(verbosity=2)
"""


def _pytest_log(tmp_path: Path, source: str, *flags: str) -> Path:
    (tmp_path / "test_run.py").write_text(source)
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *flags, "test_run.py"],
                       cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, timeout=120)
    return log


def _errors(log: Path, engine: str = "python"):
    return [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pytest_run_that_exits_0_inside_a_test_fails_naming_it(tmp_path, engine):
    errors = _errors(_pytest_log(tmp_path, EXITS_EARLY, "-v"), engine)
    assert [(f.rule, f.kind, f.test) for f in errors] == [
        ("test-never-finished", Kind.TEST_FAILURE, "test_run.py::test_exits_early")]
    assert errors[0].message.startswith("test_run.py::test_exits_early never finished")


def test_a_crash_whose_report_was_captured_leaves_the_test_named(tmp_path):
    errors = _errors(_pytest_log(tmp_path, CRASH_REPORT_CAPTURED, "-v"))
    assert [(f.rule, f.test) for f in errors] == [("test-never-finished", "test_run.py::test_segfaults")]


def test_a_crash_the_log_shows_is_the_one_finding(tmp_path):
    errors = _errors(_pytest_log(tmp_path, CRASH_REPORT_SHOWN, "-v"))
    assert [f.rule for f in errors] == ["fatal-python-error"]
    assert errors[0].test == "test_run.py::test_segfaults"


def test_a_finished_run_has_no_such_finding(tmp_path):
    log = _pytest_log(tmp_path, EXITS_EARLY.replace("os._exit(0)", "pass"), "-v")
    errors = _errors(log)
    assert [(f.rule, f.test) for f in errors] == [("pytest-test-outcome", "test_run.py::test_never_runs")]


def test_a_unittest_run_that_exits_0_inside_a_test_fails_naming_it(tmp_path):
    script = tmp_path / "run_handoff.py"
    script.write_text(UNITTEST_EXITS_EARLY)
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        subprocess.run([sys.executable, str(script)], cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                       timeout=60, check=True)
    errors = _errors(log)
    assert [(f.rule, f.test) for f in errors] == [("test-never-finished", "test_b (__main__.Handoff)")]


def test_the_guard_fails_a_command_that_exits_0_inside_a_test(tmp_path):
    (tmp_path / "test_run.py").write_text(EXITS_EARLY)
    report = tmp_path / "report.json"
    guard = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json", str(report),
         "--", sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_run.py"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, timeout=120,
    )
    assert guard.returncode == 1, guard.stdout.decode(errors="replace")[-2000:]
    findings = json.loads(report.read_text())["findings"]
    assert [(f["rule"], f["test"]) for f in findings if f["severity"] == "error"] == [
        ("test-never-finished", "test_run.py::test_exits_early")]


@pytest.mark.parametrize("flags", [(), ("-rA",)])
def test_without_v_the_run_that_never_printed_its_verdict_is_named(tmp_path, flags):
    log = _pytest_log(tmp_path, EXITS_EARLY, *flags)
    errors = _errors(log)
    assert [(f.rule, f.test) for f in errors] == [("test-never-finished", None)]
    # The row of the file whose test ended the run, cut before its percentage ("test_run.py ."); the
    # session's start where the log shows no row.
    assert log.read_text().splitlines()[errors[0].line - 1] == "test_run.py ."
    assert errors[0].message.startswith("the test run never finished")


@pytest.mark.parametrize("flags", [(), ("--co",), ("--co", "-q"), ("-x",)])
def test_without_v_a_run_that_printed_its_verdict_has_no_such_finding(tmp_path, flags):
    log = _pytest_log(tmp_path, EXITS_EARLY.replace("os._exit(0)", "pass").replace("assert False", "pass"),
                      *flags)
    assert _errors(log) == []


MANY_THEN_EXIT = """
import os, pytest

@pytest.mark.parametrize("i", range(120))
def test_many(i):
    if i == EXIT_AT:
        os._exit(0)
"""


def test_with_q_the_last_progress_row_below_100_percent_is_where_the_run_stopped(tmp_path):
    # pytest -q prints neither the session's start nor a test's name: only rows of progress, each ending
    # in the share of the run done ("....... [ 60%]"); one that stops short of 100% with no verdict after it
    # is a run that died there.
    log = _pytest_log(tmp_path, MANY_THEN_EXIT.replace("EXIT_AT", "72"), "-q")
    errors = _errors(log)
    assert [(f.rule, f.test) for f in errors] == [("test-never-finished", None)]
    assert log.read_text().splitlines()[errors[0].line - 1].endswith("[ 60%]")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "flags, exit_at", [(("-q",), "1"), (("-q", "-s"), "1"), (("-qq",), "1"), (("-q",), "100")]
)
def test_with_q_a_log_that_ends_inside_a_row_is_where_the_run_stopped(tmp_path, engine, flags, exit_at):
    # Before: a pass. A row ends in its percentage, so a log that ends in a row's progress letters alone
    # ("." with no newline, no percentage, no verdict) ended inside the run: the second test's os._exit(0)
    # exited 0, and a run of fewer tests than a row shows nothing else.
    log = _pytest_log(tmp_path, MANY_THEN_EXIT.replace("EXIT_AT", exit_at), *flags)
    errors = _errors(log, engine)
    assert [(f.rule, f.test) for f in errors] == [("test-never-finished", None)]
    last = log.read_text().splitlines()[-1]
    assert errors[0].line == len(log.read_text().splitlines()) and set(last) == {"."}, last


@pytest.mark.parametrize("flags", [("-q", "-s"), ("-qq",), ("-qq", "-s"), ("-qqq", "-s")])
def test_with_q_a_run_that_ends_after_its_last_row_has_no_such_finding(tmp_path, flags):
    # -qq prints no verdict and -s no percentage: a whole run still ends its last row with a newline.
    log = _pytest_log(tmp_path, MANY_THEN_EXIT.replace("EXIT_AT", "-1").replace("120", "3"), *flags)
    assert log.read_bytes().endswith(b"\n")
    assert _errors(log) == []


def test_a_plain_unittest_run_that_exits_0_inside_a_test_fails(tmp_path):
    (tmp_path / "test_run.py").write_text(UNITTEST_EXITS_EARLY)
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        subprocess.run([sys.executable, "-m", "unittest", "test_run"], cwd=tmp_path, stderr=out, stdout=out,
                       timeout=120)
    assert log.read_bytes() == b"."  # unittest without -v: one letter per test, the row ended by its report
    assert [f.rule for f in _errors(log)] == ["test-never-finished"]


def test_with_q_a_run_that_ends_has_no_such_finding(tmp_path):
    log = _pytest_log(tmp_path, MANY_THEN_EXIT.replace("EXIT_AT", "-1"), "-q")
    assert "120 passed" in log.read_text()
    assert _errors(log) == []
