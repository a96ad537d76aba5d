"""A pytest run whose verdict counts failures never passes the scan (verdict23, issue 7 section 1).

Under ``-rs`` (any ``-r`` without f, E, a or A) the short summary has no "FAILED x.py::t - reason" line, and
without ``-v`` no "x.py::t FAILED" line: only the "____ test_y ____" headers of the FAILURES and ERRORS
reports name the failed tests. Once the verdict counts failures, each such header is a test failure with
its report's reason (``LogState._headers_failed``); a line that names the test too makes no second one.

Real runs: pytest 9 over a suite with a failing assert, an error at setup, a failing unittest TestCase
method, a skip and an xfail, under each reporting option. An inner pytester run whose -rs report fails
inside a passing outer test stays the outer test's business.
"""

from __future__ import annotations

import pytest

from tests.scan.test_attribution import pytest_log, scan
from tests.scan.test_engine_helpers import ENGINES

SUITE = """
    import unittest

    import pytest


    @pytest.fixture
    def store():
        raise ConnectionRefusedError("could not reach the rendezvous store")


    def test_a_pass():
        pass


    def test_b_fail():
        assert 0.5 == 0.25, "loss diverged"


    def test_c_store(store):
        pass


    @pytest.mark.skip(reason="needs a GPU")
    def test_d_gpu():
        pass


    class TestE(unittest.TestCase):
        def test_resume(self):
            self.assertEqual(3, 4, "resumed at the wrong step")
"""

BY_HEADER = {
    "test_b_fail": "test_b_fail failed: AssertionError: loss diverged",
    "test_c_store": "test_c_store failed: ConnectionRefusedError: could not reach the rendezvous store",
    "TestE.test_resume": "TestE.test_resume failed: AssertionError: 3 != 4 : resumed at the wrong step",
}
NODE_IDS = {"test_v.py::test_b_fail", "test_v.py::test_c_store", "test_v.py::TestE::test_resume"}


# pytest -rs prints no short summary when nothing was skipped: its verdict follows the last report.
NO_SKIP = "\n".join(line for line in SUITE.split("\n") if "mark.skip" not in line)


def failures(log: str, engine: str) -> dict:
    return {f.test: (f.severity.value, f.message) for f in scan({"job.log": log}, engine=engine)
            if f.kind.value == "test-failure"}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("suite", [SUITE, NO_SKIP], ids=["skip", "no-skip"])
@pytest.mark.parametrize(
    "options", [["-rs"], ["-q", "-rs"], ["-s", "-rsx"], ["-q", "-rN"], ["--tb=short", "-rs"]]
)
def test_a_failure_only_its_report_header_names_is_an_error_with_its_reason(tmp_path, engine, suite, options):
    log = pytest_log(tmp_path, "test_v.py", suite, options)
    assert "FAILED test_v.py" not in log and "2 failed" in log, log
    found = failures(log, engine)
    assert found == {test: ("error", message) for test, message in BY_HEADER.items()}, found


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-q"], ["-v", "-rs"], ["-rA"], ["-v"], ["-q", "-rfE"]])
def test_a_failure_a_line_names_is_one_finding_named_by_that_line(tmp_path, engine, options):
    log = pytest_log(tmp_path, "test_v.py", SUITE, options)
    found = failures(log, engine)
    assert set(found) == NODE_IDS, found
    assert all(severity == "error" for severity, _ in found.values()), found


INNER = """
    pytest_plugins = "pytester"


    def test_inner_run_fails_as_expected(pytester):
        pytester.makepyfile(
            '''
            def test_config():
                assert {"lr": 0.1} == {"lr": 0.2}, "config mismatch"
            '''
        )
        result = pytester.runpytest("-rs")
        result.assert_outcomes(failed=1)
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-s", "-rs"], ["-q", "-s", "-rs"], ["-v", "-s", "-rs"]])
def test_an_inner_runs_failed_report_in_a_passing_test_is_no_failure(tmp_path, engine, options):
    log = pytest_log(tmp_path, "test_outer.py", INNER, options)
    assert "_ test_config _" in log and "1 passed" in log, log
    errors = [f for f in scan({"job.log": log}, engine=engine) if f.severity.value == "error"]
    assert errors == [], errors


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("options", [["-rs"], ["-q"], ["-v", "-rA"]])
def test_a_verdict_counting_failures_the_log_names_no_test_of_is_one_error(tmp_path, engine, options):
    # a paste or a cut log: the run's start, its progress and its verdict, every report and summary line gone
    log = pytest_log(tmp_path, "test_v.py", SUITE, options)
    lines = log.splitlines()
    reports = next(n for n, line in enumerate(lines) if "= FAILURES =" in line or "= ERRORS =" in line)
    kept = [line for line in lines[:reports] if "FAILED" not in line and "ERROR" not in line] + lines[-1:]
    assert "2 failed" in kept[-1], kept
    found = [f for f in scan({"job.log": "\n".join(kept) + "\n"}, engine=engine)
             if f.severity.value == "error"]
    assert [(f.rule, f.test, f.line) for f in found] == [("pytest-test-outcome", None, len(kept))], found
    assert found[0].message.startswith("pytest's verdict counts 2 failed, "), found[0].message
