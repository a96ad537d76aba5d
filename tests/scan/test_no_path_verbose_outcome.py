"""pytest -v's own line for a failed test whose node id has no path ("::TestX::test_y FAILED [ 50%]": a test
file outside --rootdir, or ``pytest --pyargs``; pyargs25, review26) names the failed test as the ".py::" form
does, also where no short summary and no report header names it (``-rN --tb=no``). A passing test's output
of C++ names and workflow commands ("::error::boom", "::ERROR::...") names no test. Real pytest runs of the
interpreter running the tests (pytest 9.2.0 on CPython 3.11, 8.4.2 on 3.9), both engines; the suite and its
expectations are tests/scan/test_no_path_short_summary.py's, written from the run's verdict before the scan.
"""

from __future__ import annotations

import re

import pytest

from analyzer.model import Severity
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES
from tests.scan.test_no_path_short_summary import BUILTIN, EXPECTED, _log


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [
    ("-v", "-rN", "--tb=no"), ("-v", "-rN", "--tb=no", "-s"), ("-vv", "-rN", "--tb=no", "--color=yes"),
    # with the reports (their headers name the tests too) and the summary: still one finding per test
    ("-v",), ("-v", "-rN"), ("-v", "-s", "--tb=short"),
])
def test_each_failed_test_of_a_no_path_verbose_run_is_one_finding(tmp_path, engine, options):
    log = _log(tmp_path, options)
    text = log.read_text()
    lines = re.sub("\x1b\\[[0-9;]*m", "", text).splitlines()
    assert "2 failed, 2 passed" in lines[-1], text
    findings = scan_paths([str(log)], BUILTIN, engine=engine)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    assert sorted((f.rule, f.test) for f in errors) == [
        ("pytest-test-outcome", test) for test, _ in EXPECTED], findings
    for finding in errors if "--tb=no" in options else ():  # the -v line is all that names them
        line = lines[finding.line - 1]
        assert line.startswith(finding.test + " ") or finding.test + " " in line, line
        assert "FAILED" in line, line
    # nothing names another test, nor a test that is no test
    assert {f.test for f in findings} <= {test for test, _ in EXPECTED} | {None}, findings
