"""Inner pytest sessions a test prints back to back before the outer run prints anything (``-q -s``).

pytester's in-process runs print their whole session, start included, on the outer run's stdout under
``-s``; the outer run under ``-q`` prints no start, no test id, and its first progress dot only after the
test's output. The first test's inner sessions then look like the log's own runs, one after the other,
failing ones among them; only each session header's ``rootdir:`` in pytester's sandbox
(``pytest-of-USER/pytest-N/``) tells they were inner. pytest 9.2.0's own test_lastfailed_usecase did this
(healthy6). The logs come from real pytest runs; the outer test that fails after its inner runs must
still fail the log, and so must a log's own run that a harness roots in a temporary directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

OUTER = '''
    pytest_plugins = "pytester"


    def test_inner_sessions_fail_on_purpose(pytester):
        pytester.makepyfile("def test_1(): assert 0\\ndef test_2(): pass\\n")
        pytester.runpytest().assert_outcomes(failed=1, passed=1)
        pytester.runpytest("--co").assert_outcomes()
        pytester.runpytest().assert_outcomes(failed=1, passed=1)
'''
BROKEN = OUTER.rstrip() + "\n        assert False, 'broken on purpose'\n"


def outer_run(tmp_path: Path, source: str, verbosity: str = "-q") -> str:
    """A real ``pytest -q -s`` over ``source``: its first test's inner sessions come first in the log."""
    return pytest_log(tmp_path, "test_outer.py", source, (verbosity, "-s"))


@pytest.mark.parametrize("engine", ENGINES)
def test_inner_sessions_before_the_outer_runs_first_dot_are_not_the_logs(tmp_path, engine):
    log = outer_run(tmp_path, OUTER)
    assert log.startswith("=") and "FAILED test_inner_sessions_fail_on_purpose.py::test_1" in log
    assert "pytest-of-" in log and "\n1 passed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [s for s in summary(findings) if s[1] != "notice"] == []
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_the_outer_test_failing_after_its_inner_sessions_still_fails_the_log(tmp_path, engine):
    log = outer_run(tmp_path, BROKEN)
    assert "\n1 failed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert [(s[0], s[1], s[3]) for s in summary(findings) if s[1] != "notice"] == [
        ("pytest-test-outcome", "error", "test_outer.py::test_inner_sessions_fail_on_purpose")
    ]
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_logs_own_run_rooted_in_pytesters_sandbox_keeps_its_failing_verdict(tmp_path, engine):
    """A harness that runs pytest in a test's temporary directory: the log's own run is rooted in the
    sandbox too, and no quiet verdict or outer progress follows its verdict, which stands."""
    log = outer_run(tmp_path, BROKEN, verbosity="-v")
    assert "rootdir: " in log and "pytest-of-" in log and "= 1 failed in " in log
    findings = scan({"job.log": log}, engine=engine)
    assert ("pytest-test-outcome", "error", "test_outer.py::test_inner_sessions_fail_on_purpose") in [
        (s[0], s[1], s[3]) for s in summary(findings)]
    assert decide(findings)[1] == 1
