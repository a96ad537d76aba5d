"""Healthy runs whose report lines quote the failures the newest rules read, and their failing twins.

The logs are precision13's real captures (fixtures/regenerate.py): a CUDA retry policy's tests on a
CPU-only runner, whose pytest -v -rA report names passing tests by parametrize ids that are
cudaGetErrorString texts ("[an illegal memory access was encountered]"), a skipped test by a reason
quoting "unspecified launch failure" and an expected failure by "RuntimeError: No CUDA GPUs are
available". The healthy run must give no error and no warning. Its twins must fail on the broken test
alone: one breaks an unrelated test (the passing tests' report lines are not CUDA failures of the run),
one makes the policy forget "unspecified launch failure", so the failure report shows the text as the
test's source and as pytest's repr of the error the test built, which are the test's data. Two more hold
as regression negatives: a child DataLoader that runs out of file descriptors ("Too many open files.
Communication with the workers is no longer possible.") and falls back to the file_system strategy inside
a passing test (its twin never falls back), and two torchrun agents on one host whose second store cannot
bind the shared port and joins as a client. And a plugin's test under pytest -s -q whose pytester
subprocess run pytest-timeout stops ("session-timeout: 1.0 sec exceeded", then "1 passed"): with no outer
"test session starts" only pytester's "running: PYTHON -mpytest" line says that run is inner, so the outer
verdict judges it; its twin stops the outer run itself, which stays an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.verdict import decide
from tests.scan.test_attribution import scan
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HEALTHY = ("negative/pytest-cuda-retry-policy-ids", "negative/dataloader-fd-exhaustion-falls-back",
           "negative/torchrun-two-agents-share-store", "negative/pytester-session-timeout-quiet")
# each twin and the only errors it must give
TWINS = {"pytest/cuda-retry-policy-backoff-broken": [("pytest-test-outcome", "error")],
         "pytest/cuda-retry-policy-forgets-a-text": [("pytest-test-outcome", "error")],
         "pytest/dataloader-fd-exhaustion-no-fallback": [("dataloader-shared-memory-failed", "error"),
                                                         ("pytest-test-outcome", "error")],
         "pytest/pytester-session-timeout-outer": [("pytest-session-timeout", "error")]}


def body(name: str) -> str:
    """A fixture's log without its ``#!`` header."""
    text = (FIXTURES / (name + ".log")).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#! "))


def errors(findings):
    return sorted((f.rule, f.severity.value) for f in findings if f.severity.value != "notice")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_run_whose_report_quotes_failures_gives_at_most_notices(name, engine):
    findings = scan({"job.log": body(name)}, engine=engine)
    assert errors(findings) == []
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(TWINS))
def test_the_same_run_with_a_test_broken_fails_on_that_test_alone(name, engine):
    findings = scan({"job.log": body(name)}, engine=engine)
    assert errors(findings) == TWINS[name]
    assert decide(findings)[1] == 1


REPORT_LINES = (
    "t.py::test_retryable[an illegal memory access was encountered] PASSED [ 11%]",
    "t.py::test_fused_kernel SKIPPED (flaky: unspecified launch failure) [ 88%]",
    "[gw0] [ 50%] PASSED t.py::test_retryable[unspecified launch failure] ",
    "PASSED t.py::test_retryable[device-side assert triggered]",
    "SKIPPED [1] t.py:43: RuntimeError: CUDA error: device-side assert triggered on ROCm",
    "XFAIL t.py::test_needs_a_gpu - RuntimeError: No CUDA GPUs are available on this runner",
    "test_kernel (t.T.test_kernel) ... skipped 'RuntimeError: CUDA error: device-side assert triggered'",
)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("line", REPORT_LINES)
def test_a_report_line_of_a_test_that_did_not_fail_is_not_an_event_of_a_failing_run(line, engine):
    log = line + "\nt.py::test_other FAILED [100%]\n"
    assert errors(scan({"job.log": log}, engine=engine)) == [("pytest-test-outcome", "error")]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_words_printed_by_the_run_are_still_read(engine):
    log = ("t.py::test_kernel RuntimeError: CUDA error: an illegal memory access was encountered\n"
           "FAILED\n")
    assert ("cuda-error", "error") in errors(scan({"job.log": log}, engine=engine))
