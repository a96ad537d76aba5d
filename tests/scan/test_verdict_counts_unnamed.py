"""A run whose verdict counts more failures than its log names gets one error of no test saying so.

pytest ``--tb=line`` with an -r lacking f (``--tb=line -rs``, ``-q --tb=line -rs``, ``-rN --tb=line``) prints
each call-phase failure as "path:line: Exception" under FAILURES, with no header and no summary line, so
only an ERRORS-section test is named. pytest counts "failed" (call phase) apart from "error" (setup and
teardown: _pytest/terminal.py ``pytest_report_teststatus``, :351 in pytest 9.2.0, makes a failed setup or
teardown report's outcome "error"), so the verdict's "N failed" against the tests named FAILED is the count
of failures no line names.
CPython 3.9/3.10 unittest without -v prints only "u" and "FAILED (unexpected successes=1)" for an
@expectedFailure test that passed (runner.py printErrors names it only since 3.11). Real runs, both engines.
"""

from __future__ import annotations

import glob
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
PYTEST_TESTS = """
    import pytest


    @pytest.fixture
    def device():
        raise RuntimeError("no CUDA device visible to this runner")


    def test_ok():
        pass


    def test_allocates(device):
        pass


    def test_config():
        assert {"lr": 0.1} == {"lr": 0.2}, "config mismatch"


    def test_shape():
        raise ValueError("bad shape")


    def test_rank():
        assert [0, 1] == [0, 2]
"""
UNITTEST_TESTS = """
    import unittest


    class TestFlaky(unittest.TestCase):
        def test_ok(self):
            pass

        @unittest.expectedFailure
        def test_fixed_upstream(self):
            self.assertEqual(1, 1)
"""
FAILING = """
        def test_broken(self):
            self.assertEqual(1, 2)
"""
# CPython 3.9 from pyenv: its unittest prints no report for an unexpected success.
PY39 = sorted(glob.glob("/root/.pyenv/versions/3.9.*/bin/python"))


def _errors(path: Path, engine: str):
    return [(f.test, f.message) for f in scan_paths([str(path)], BUILTIN, engine=engine)
            if f.severity is Severity.ERROR]


def _run(where: Path, command: list, source: str, module: str) -> Path:
    (where / f"{module}.py").write_text(textwrap.dedent(source))
    proc = subprocess.run(command, cwd=str(where), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    log = where / "run.log"
    log.write_bytes(proc.stdout)
    return log


def _pytest_log(where: Path, options: tuple, source: str = PYTEST_TESTS) -> Path:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options, "test_model.py"]
    return _run(where, command, source, "test_model")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [("--tb=line", "-rs"), ("-q", "--tb=line", "-rs"), ("-rN", "--tb=line")])
def test_failures_tb_line_prints_no_header_for_are_one_unnamed_error(tmp_path, engine, options):
    log = _pytest_log(tmp_path, options)
    assert "3 failed, 1 passed, 1 error in " in log.read_text()
    errors = _errors(log, engine)
    assert sorted(str(test).rpartition("::")[2] for test, _ in errors) == ["None", "test_allocates"]
    unnamed = [message for test, message in errors if test is None]
    assert unnamed[0].startswith("pytest's verdict counts 3 failed (")
    assert unnamed[0].endswith("but the log names only 0 of them")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [(), ("-q",), ("--tb=line",), ("--tb=line", "-rfE")])
def test_a_run_that_names_every_failure_gets_no_unnamed_error(tmp_path, engine, options):
    log = _pytest_log(tmp_path, options)
    errors = _errors(log, engine)
    assert sorted(str(test).rpartition("::")[2] for test, _ in errors) == [
        "test_allocates", "test_config", "test_rank", "test_shape"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_green_tb_line_run_is_no_error(tmp_path, engine):
    log = _pytest_log(tmp_path, ("--tb=line", "-rs"), "def test_ok():\n    pass\n")
    assert _errors(log, engine) == []


def _unittest_log(where: Path, more: str, options: tuple = ()) -> Path:
    source = textwrap.dedent(UNITTEST_TESTS) + textwrap.indent(textwrap.dedent(more), "    ")
    return _run(where, [PY39[-1], "-m", "unittest", *options, "test_flaky"], source, "test_flaky")


needs_py39 = pytest.mark.skipif(not PY39, reason="CPython 3.9 from pyenv is not installed")


@needs_py39
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [(), ("-q",), ("-b",)])
def test_py39_unexpected_success_no_line_names_is_one_unnamed_error(tmp_path, engine, options):
    log = _unittest_log(tmp_path, "", options)
    assert log.read_text().rstrip().endswith("FAILED (unexpected successes=1)")
    assert "test_fixed_upstream" not in log.read_text()
    message = "unittest's verdict says FAILED (unexpected successes=1), but the log names none of those tests"
    assert _errors(log, engine) == [(None, message)]


@needs_py39
@pytest.mark.parametrize("engine", ENGINES)
def test_py39_named_failure_beside_an_unexpected_success_is_no_second_finding_for_it(tmp_path, engine):
    log = _unittest_log(tmp_path, FAILING)
    assert log.read_text().rstrip().endswith("FAILED (failures=1, unexpected successes=1)")
    errors = _errors(log, engine)
    assert sorted(str(test) for test, _ in errors) == ["None", "test_broken (test_flaky.TestFlaky)"]


@needs_py39
@pytest.mark.parametrize("engine", ENGINES)
def test_py39_verbose_line_naming_the_unexpected_success_is_its_only_error(tmp_path, engine):
    log = _unittest_log(tmp_path, "", ("-v",))
    assert _errors(log, engine) == [
        ("test_fixed_upstream (test_flaky.TestFlaky)", "test_fixed_upstream (test_flaky.TestFlaky) failed")]


@needs_py39
@pytest.mark.parametrize("engine", ENGINES)
def test_py39_expected_failure_alone_is_no_error(tmp_path, engine):
    source = UNITTEST_TESTS.replace("self.assertEqual(1, 1)", "self.assertEqual(1, 2)")
    log = _run(tmp_path, [PY39[-1], "-m", "unittest", "test_flaky"], source, "test_flaky")
    assert log.read_text().rstrip().endswith("OK (expected failures=1)")
    assert _errors(log, engine) == []
