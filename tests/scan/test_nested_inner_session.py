"""An inner pytest run whose test runs pytest again: the nested session's start is glued to the inner run's
file name (``test_outer.py === test session starts ===``), as to the outer run's progress.

A start glued to a progress line is taken for the outer run's (an inner run that died without its verdict
is over), so the inner verdict after the nested one's looked like the log's own, and the events printed
before it on no test's lines were never judged by the outer run's passing verdict: pytest 9.2.0's own
testing/test_debugging.py under ``-q -s`` (test_trace_after_runpytest after test_pdb_custom_cls_invalid's
usage error, healthy7). The nested session's rootdir lies inside the inner run's, where pytester makes its
base temp: it is that run's nested session. And a subprocess run pytester announces ("running: PYTHON
-mpytest ... -q") is inner from the announcement to its verdict, though under -q it prints no session start:
its failures were taken for the log's own (pytest's test_assertrewrite.py, a run that fails on purpose). The
logs come from real pytest runs; a test that fails after its inner runs must still fail the log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

SUITE = '''
    pytest_plugins = "pytester"

    NESTED = """
    pytest_plugins = "pytester"


    def test_outer(pytester):
        pytester.makepyfile(test_inner="def test_inner(): pass")
        assert pytester.runpytest("-s").ret == 0
    """


    def test_a_bad_option_is_refused(pytester):
        assert pytester.runpytest_inprocess("--no-such-option").ret == 4


    def test_b_nested_run(pytester):
        pytester.makepyfile(test_outer=NESTED)
        result = pytester.runpytest_subprocess("-s", "-p", "pytester", "test_outer.py")
        assert result.ret == 0
'''
BROKEN = SUITE.rstrip() + "\n        assert False, 'broken on purpose'\n"
QUIET = '''
    pytest_plugins = "pytester"


    def test_quiet_subprocess_runs(pytester):
        pytester.makepyfile(test_x="def test_ok(): pass")
        assert pytester.runpytest_subprocess("-q").ret == 0
        pytester.makepyfile(test_x="def test_bad(): assert None")
        assert pytester.runpytest_subprocess("-q").ret == 1
'''
QUIET_BROKEN = QUIET.rstrip() + "\n        assert False, 'broken on purpose'\n"
# The first test's inner session prints whole before the outer run's first dot (its verdict looks like the
# log's own until the outer run's quiet verdict), then an inner run refuses an option: that usage error came
# after the inner verdict, inside the outer run (pytest's test_config.py, healthy7).
SANDBOX_FIRST = '''
    pytest_plugins = "pytester"


    def test_a_inner_session(pytester):
        pytester.makepyfile(test_x="def test_ok(): pass")
        pytester.runpytest().assert_outcomes(passed=1)


    def test_b_bad_option_is_refused(pytester):
        assert pytester.runpytest_inprocess("--no-such-option").ret == 4
'''


def quiet_run(tmp_path: Path, source: str, *extra: str) -> str:
    """A real ``pytest -q -s`` over ``source`` (and ``extra`` options)."""
    return pytest_log(tmp_path, "test_suite.py", source, ("-q", "-s", *extra))


@pytest.mark.parametrize("engine", ENGINES)
def test_an_inner_runs_nested_session_leaves_the_outer_verdict_the_judge(tmp_path, engine):
    log = quiet_run(tmp_path, SUITE)
    # the in-process run's program name is pytest 9's "pytest.main()", pytest 8's "__main__.py"
    assert "ERROR: usage: " in log and "test_outer.py =" in log
    assert "\n2 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert ("pytest-usage-error", "notice") in [s[:2] for s in summary(findings)]
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_test_failing_after_its_nested_runs_still_fails_the_log(tmp_path, engine):
    log = quiet_run(tmp_path, BROKEN)
    assert "test_outer.py =" in log and "\n1 failed, 1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    errors = [(s[0], s[3]) for s in summary(findings) if s[1] == "error"]
    assert ("pytest-test-outcome", "test_suite.py::test_b_nested_run") in errors
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_quiet_subprocess_runs_failure_is_that_runs(tmp_path, engine):
    log = quiet_run(tmp_path, QUIET)
    assert "running: " in log and "FAILED test_x.py::test_bad" in log and "test session starts" not in log
    assert "\n1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_test_failing_after_its_quiet_subprocess_runs_still_fails_the_log(tmp_path, engine):
    log = quiet_run(tmp_path, QUIET_BROKEN)
    assert "FAILED test_x.py::test_bad" in log and "\n1 failed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[1], s[3]) for s in summary(findings) if s[1] != "notice"] == [
        ("pytest-test-outcome", "error", "test_suite.py::test_quiet_subprocess_runs")]
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_an_event_after_an_inner_verdict_taken_for_the_logs_is_the_outer_runs(tmp_path, engine):
    log = quiet_run(tmp_path, SANDBOX_FIRST, "-rA")
    assert log.startswith("=") and "ERROR: usage: " in log and "\n2 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert decide(findings)[1] == 0
