"""Runs that retry, fall back or rerun and then pass give notices; what a retry did not cover still fails.

The logs are negatives9's real captures (fixtures/regenerate.py): CTest under ``--repeat until-pass:2``
whose flaky tests pass on their retry, torch.compile with ``suppress_errors`` falling back to eager
(dynamo's "WON'T CONVERT" block around the failure it caught), pytest-xdist with pytest-rerunfailures
replacing a worker that crashed. Two steps of one job are one log: a suppressed compile failure must not
hide an uncaught one that a later step printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CRASHED_TEST = "test_flaky_startup.py::test_worker_crash_recovers"


def body(name: str) -> str:
    """A fixture's log without its ``#!`` header."""
    text = (FIXTURES / (name + ".log")).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#! "))


@pytest.mark.parametrize("engine", ENGINES)
def test_ctest_failures_a_retry_passed_are_notices_that_say_so(engine):
    findings = scan({"job.log": body("negative/ctest-retry-until-pass")}, engine=engine)
    by_rule = {f.rule: f for f in findings}
    assert sorted((f.rule, f.severity.value) for f in findings) == [
        ("ctest-test-failed", "notice"), ("ctest-test-timeout", "notice")]
    assert by_rule["ctest-test-failed"].message == "port_is_free failed, then passed when re-run"
    assert by_rule["ctest-test-timeout"].message.endswith(
        "during the test run, which passed (100% tests passed, 0 tests failed out of 3)")
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_ctest_retry_that_failed_again_fails_the_run(engine):
    findings = scan({"job.log": body("timeout/ctest-retry-exhausted")}, engine=engine)
    assert ("ctest-test-failed", "error") in {(f.rule, f.severity.value) for f in findings}
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_suppressed_compile_failure_is_one_notice_naming_the_frame(engine):
    (finding,) = scan({"job.log": body("negative/torch-inductor-no-compiler-fallback")}, engine=engine)
    assert (finding.rule, finding.severity.value) == ("torch-compile-suppressed", "notice")
    assert finding.message.startswith("torch.compile gave up on inner (")
    assert "InductorError: InvalidCxxCompiler" in finding.message  # the failure it tells


@pytest.mark.parametrize("engine", ENGINES)
def test_an_uncaught_compile_failure_after_a_suppressed_one_is_still_an_error(engine):
    log = body("negative/torch-compile-suppressed-fallback") + body("crash/torch-inductor-no-compiler")
    findings = scan({"job.log": log}, engine=engine)
    assert [(f.rule, f.severity.value) for f in findings] == [
        ("torch-compile-failed", "error"), ("torch-compile-suppressed", "notice")]
    assert decide(findings)[1] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_compile_failure_uncaught_after_it_was_suppressed_still_fails_the_run(engine):
    # The uncaught one folds into the suppressed event (same text), so only the step's failed status
    # tells it: the run fails, named by the last traceback (negatives9-9.md, left open).
    log = body("negative/torch-compile-suppressed-fallback") + body("crash/torch-compile-not-suppressed")
    findings = scan({"job.log": log}, engine=engine)
    assert decide(findings)[1] == 1
    assert "BackendCompilerFailed" in next(f.message for f in findings if f.rule == "ci-step-failed")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_worker_crash_whose_rerun_passed_is_a_notice_of_that_test(engine):
    findings = scan({"job.log": body("negative/pytest-xdist-reruns-crash-healthy")}, engine=engine)
    crash = next(f for f in findings if f.rule == "xdist-node-down")
    assert (crash.severity.value, crash.test) == ("notice", CRASHED_TEST)
    assert crash.message.endswith("during %s, which passed on rerun" % CRASHED_TEST)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_worker_crash_whose_rerun_crashed_again_is_not_handled(engine):
    findings = scan({"job.log": body("pytest/xdist-reruns-crash-exhausted")}, engine=engine)
    # gw0 went down on the first attempt and gw1 on the rerun; the report that gw1 crashed tells its loss.
    # The first loss is a crash no rerun handled: an error of its own (recall11).
    downs = [(f.severity.value, f.line) for f in findings if f.rule == "xdist-node-down"]
    assert downs == [("error", 19)]
    (crashed,) = [f for f in findings if f.rule == "xdist-worker-crashed"]
    assert crashed.severity.value == "error"
    assert "pytest-xdist worker gw1 went down: Not properly terminated (line 25)" in crashed.message
    assert ("pytest-test-outcome", "error", CRASHED_TEST) in {
        (f.rule, f.severity.value, f.test) for f in findings}
