"""A quiet inner run stopped by a collection error, shown in a passing test's report (healthy11).

A pytester run under ``-q`` prints no "test session starts": with ``-rA`` the outer run's PASSES section
shows its "short test summary info", its "!!! Interrupted: 1 error during collection !!!" and its verdict
"1 error in 0.2s" as they came. That summary follows a passing test's report, as the log's own would; the
next report header (or the log's own summary) says it was the inner run's, and the stop it told then
belongs to the passing test (a notice), whatever the outer run's verdict. A test that fails checking that
output still fails the log. All run pytest for real, under -v and -q.
"""

from __future__ import annotations

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

OUTER = '''
    pytest_plugins = "pytester"


    def test_inner_collection_stops(pytester):
        pytester.makepyfile(test_broken="raise ValueError(0)\\n")
        result = pytester.runpytest("-q")
        result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])
        assert result.ret == 2
'''
AFTER = '''

    def test_inner_passes(pytester):
        pytester.makepyfile(test_ok="def test_ok():\\n    pass\\n")
        assert pytester.runpytest("-q").ret == 0
'''
BROKEN = '''

    def test_outer_broken():
        assert 1 == 2
'''
STOP = "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!"
OPTIONS = {"verbose": ("-v", "-rA"), "quiet": ("-q", "-rA")}


@pytest.mark.parametrize("options", sorted(OPTIONS))
@pytest.mark.parametrize("last", [False, True], ids=["report-follows", "last-report"])
@pytest.mark.parametrize("engine", ENGINES)
def test_an_inner_quiet_runs_collection_stop_in_a_passing_report_is_a_notice(tmp_path, engine, last, options):
    # last: the inner run's report is the last one, the log's own short summary right after it
    log = pytest_log(tmp_path, "test_outer.py", OUTER if last else OUTER + AFTER, OPTIONS[options])
    assert STOP in log and ("1 passed in " if last else "2 passed in ") in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert [(s[0], s[3]) for s in summary(findings)] == [
        ("pytest-collection-interrupted", "test_outer.py::test_inner_collection_stops")]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("options", sorted(OPTIONS))
@pytest.mark.parametrize("engine", ENGINES)
def test_a_broken_test_beside_it_is_the_error_and_the_stop_stays_a_notice(tmp_path, engine, options):
    log = pytest_log(tmp_path, "test_outer.py", OUTER + AFTER + BROKEN, OPTIONS[options])
    assert STOP in log and "FAILED test_outer.py::test_outer_broken" in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[1], s[3]) for s in summary(findings)] == [
        ("pytest-test-outcome", "error", "test_outer.py::test_outer_broken"),
        ("pytest-collection-interrupted", "notice", "test_outer.py::test_inner_collection_stops"),
    ]
    assert decide(findings)[1] == 1
