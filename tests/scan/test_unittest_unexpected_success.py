"""A unittest run whose only failure is an @expectedFailure test that passed fails, naming that test.

unittest counts an unexpected success against the run ("FAILED (unexpected successes=1)", exit 1:
Lib/unittest/runner.py's run() since CPython 3.4). Since 3.11 ``printErrors`` names the test under
"UNEXPECTED SUCCESS: test_m (mod.C.test_m)"; before, only -v's "test_m (mod.C) ... unexpected success" does.
Both passed the scan before (issue 7 section 1). Real runs of this interpreter's unittest, and the CPython 3.9
capture in ``fixtures/without-v/verdict24-unittest-unexpected-success-py39-v.log``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUILTIN = load_catalogue()
TESTS = """
    import unittest


    class TestFlaky(unittest.TestCase):
        def test_ok(self):
            pass

        @unittest.expectedFailure
        def test_known_bug(self):
            self.assertEqual(1, 2)
"""
UNEXPECTED = """
        @unittest.expectedFailure
        def test_fixed_upstream(self):
            self.assertEqual(1, 1)
"""


def _errors(path: Path, engine: str):
    return [(f.rule, f.test) for f in scan_paths([str(path)], BUILTIN, engine=engine)
            if f.severity is Severity.ERROR]


def _unittest_log(where: Path, more: str, options: tuple) -> Path:
    source = textwrap.dedent(TESTS) + textwrap.indent(textwrap.dedent(more), "    ")
    (where / "test_flaky.py").write_text(source)
    proc = subprocess.run([sys.executable, "-m", "unittest", *options, "test_flaky"], cwd=str(where),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    log = where / "unittest.log"
    log.write_bytes(proc.stdout)
    return log


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [(), ("-v",), ("-q",), ("-b",)])
def test_an_unexpected_success_is_the_runs_one_error_naming_its_test(tmp_path, engine, options):
    log = _unittest_log(tmp_path, UNEXPECTED, options)
    assert "unexpected successes=1" in log.read_text()
    errors = _errors(log, engine)
    # Before 3.11 only -v's line names the test; without it the verdict's count is one error of no test
    # (tests/scan/test_verdict_counts_unnamed.py), as CI's 3.9 leg runs it.
    named = sys.version_info >= (3, 11) or "-v" in options
    assert [test for _, test in errors] == ["test_fixed_upstream (test_flaky.TestFlaky)" if named else None]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [(), ("-v",)])
def test_an_expected_failure_alone_is_no_error(tmp_path, engine, options):
    log = _unittest_log(tmp_path, "", options)
    assert log.read_text().rstrip().endswith("OK (expected failures=1)")
    assert _errors(log, engine) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_before_311_the_verbose_line_alone_names_the_unexpected_success(engine):
    path = FIXTURES / "without-v/verdict24-unittest-unexpected-success-py39-v.log"
    assert "UNEXPECTED SUCCESS:" not in path.read_text(encoding="utf-8")
    assert [e for e in _errors(path, engine) if e[0] != "github-exit-code"] == [
        ("unittest-test-outcome", "test_fixed_upstream (test_unexpected.TestFlaky)")]
