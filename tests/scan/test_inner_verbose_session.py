"""An inner pytest session under ``-v`` inside a test of an outer ``pytest -v -s`` run: the inner session
prints its own progress lines (``test_inner.py::test_kernel FAILED``, xdist's ``[gw0] [ 20%] FAILED ...``)
and its own verdict, then the outer test's bare ``PASSED``. Those lines are the inner session's: they
neither end nor judge the outer test. Before, the first of them ended the outer test, its ``PASSED`` was
never read, and the inner run's failures and crashes were errors of a test that passed (pytest-xdist
3.8.0's TestDistribution::test_dist_tests_with_crash, issue 7). The logs come from real pytest runs; an
outer test that fails after its inner session must keep its inner events errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.scan import engine as engine_module
from tests.scan.test_attribution import pytest_log, scan, summary
from tests.scan.test_engine_helpers import ENGINES

OUTER = '''
    pytest_plugins = "pytester"

    INNER = """
    def test_ok():
        print("hello from the inner test")

    def test_kernel():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    """


    def test_inner_verbose_runs(pytester):
        pytester.makepyfile(test_inner=INNER)
        pytester.runpytest("-v").assert_outcomes(failed=1, passed=1)
        pytester.runpytest("-v", "-s").assert_outcomes(failed=1, passed=1)
        BROKEN


    def test_after():
        pass
'''


def _log(where: Path, broken: bool) -> str:
    source = OUTER.replace("BROKEN", "assert False, 'broken on purpose'" if broken else "pass")
    return pytest_log(where, "test_outer.py", source, options=("-v", "-s", "-p", "no:cacheprovider"))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("read_size", [engine_module.READ_SIZE, 7])
def test_an_inner_verbose_sessions_events_are_notices_of_the_passing_outer_test(
    tmp_path, engine, read_size, monkeypatch
):
    log = _log(tmp_path, broken=False)
    assert "\ntest_inner.py::test_kernel FAILED" in log and "\nPASSED\ntest_outer.py::test_after" in log
    monkeypatch.setattr(engine_module, "READ_SIZE", read_size)
    found = summary(scan({"job.log": log}, engine=engine))
    assert found and all(s[1] == "notice" for s in found), found
    assert found[0][3] == "test_outer.py::test_inner_verbose_runs", found


def test_the_same_inner_sessions_events_of_a_failing_outer_test_stay_errors(tmp_path):
    log = _log(tmp_path, broken=True)
    assert "\nFAILED\ntest_outer.py::test_after" in log
    found = summary(scan({"job.log": log}))
    assert ("cuda-error", "error") in [(s[0], s[1]) for s in found], found
