"""A run whose passing verdict counts the failures it printed as expected handled them (recall11).

Catch2 prints a whole "<file>:<line>: FAILED:" block for an assertion of a test tagged [!shouldfail] or
[!mayfail], then counts it "failed as expected" and exits 0. The log is negative/catch2-healthy, a real
capture (fixtures/regenerate.py); the failures of another run in the same log stay failures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def body(name: str) -> str:
    """A fixture's log without its ``#!`` header."""
    text = (FIXTURES / (name + ".log")).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#! "))


@pytest.mark.parametrize("engine", ENGINES)
def test_catch2_failures_its_run_expected_are_notices(engine):
    findings = scan({"job.log": body("negative/catch2-healthy")}, engine=engine)
    assert [(f.rule, f.severity.value) for f in findings] == [
        ("catch2-assertion-failed", "notice"), ("catch2-assertion-failed", "notice")]
    assert findings[0].message == (
        "test_kernels.cpp:28 failed, as its run expected (test cases: 5 | 3 passed | 2 failed as expected)")
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_catch2_failure_with_no_verdict_after_it_is_an_error(engine):
    findings = scan({"job.log": body("quoted/catch2-check-failed-expansion")}, engine=engine)
    assert [(f.rule, f.severity.value) for f in findings] == [("catch2-assertion-failed", "error")]
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_expected_failures_of_a_later_run_leave_an_earlier_runs_failure_failed(engine):
    log = body("pytest/timeout-signal") + body("negative/catch2-healthy")
    findings = scan({"job.log": log}, engine=engine)
    severities = {(f.rule, f.severity.value) for f in findings}
    assert ("pytest-test-outcome", "error") in severities
    assert ("catch2-assertion-failed", "notice") in severities
    assert decide(findings)[1] == 1
