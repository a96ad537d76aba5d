"""An inner pytest run printed without "test session starts" (``-q``) inside a passing test's report.

pytest's own suite and its plugins' suites check their failure output with pytester runs in quiet
mode; with ``-rA`` the outer run shows that output in its PASSES section: the inner run's
``=== FAILURES ===``, ``short test summary info`` and ``FAILED ...`` lines, with no session line to
open an inner run. Those are the inner run's business. The log's own short summary, which also comes
right after a passing test's report, must still fail the log. Both run pytest for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

OUTER = '''
    pytest_plugins = "pytester"


    def test_inner_quiet_run_reports_its_failure(pytester):
        pytester.makepyfile("def test_func():\\n    assert 0\\n")
        result = pytester.runpytest("-q", "-p", "no:cacheprovider")
        result.stdout.fnmatch_lines(["FAILED test_inner_quiet_run_reports_its_failure.py::test_func*"])
'''
BROKEN = '''

    def test_outer_broken():
        assert 1 == 2
'''


def outer_run(tmp_path: Path, source: str) -> str:
    return pytest_log(tmp_path, "test_outer.py", source, ("-q", "-rA"))


@pytest.mark.parametrize("engine", ENGINES)
def test_an_inner_quiet_runs_failure_in_a_passing_report_is_not_the_logs(tmp_path, engine):
    log = outer_run(tmp_path, OUTER)
    assert "FAILED test_inner_quiet_run_reports_its_failure.py::test_func" in log and "\n1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_the_logs_own_summary_after_a_passing_report_still_fails_it(tmp_path, engine):
    log = outer_run(tmp_path, OUTER + BROKEN)
    assert "FAILED test_outer.py::test_outer_broken" in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[1], s[3]) for s in summary(findings)] == [
        ("pytest-test-outcome", "error", "test_outer.py::test_outer_broken")
    ]
    assert decide(findings)[1] == 1
