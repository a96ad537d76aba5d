"""Healthy runs whose passing tests print the failure they expect, and lines that only quote a command.

The logs are negatives10's real captures (fixtures/regenerate.py): death tests of a C ring buffer under
CTest -V and pytest -rA, a doctest run whose expected outputs are tracebacks and CUDA errors, HTTP and
upload retries that recover, a batch-size finder that catches the CPU allocator's out-of-memory error, a
CPU-only smoke run's CUDA warnings, a failure classifier's tests that print what they classify, a job
whose step greps its log for crash wordings (GitHub's echo of the script, then set -x), and one that
checks out a pinned commit whose subject names the error it fixed (git's "HEAD is now at SHA SUBJECT").
Each healthy run must give no error and no warning; each failing twin must still fail, on its failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.scan.clean import clean_line
from analyzer.verdict import decide
from tests.scan.test_attribution import BUILTIN, scan
from tests.scan.test_engine_helpers import ENGINES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HEALTHY = ("ctest-death-tests-verbose", "pytest-death-tests-ring", "doctest-expected-tracebacks",
           "urllib3-retries-recover", "tenacity-retries-recover", "cpu-oom-batch-finder",
           "cpu-only-smoke-warnings", "pytest-classifier-quotes-failures", "gha-crash-marker-check",
           "git-pinned-commit-subjects")
# each twin and the error it must give (the failure it really has)
TWINS = {
    "crash/ctest-death-test-fill-broken": "c-assertion-failed",
    "crash/pytest-death-test-fill-broken": "pytest-test-outcome",
    "crash/doctest-expected-output-wrong": "doctest-example-failed",
    "crash/urllib3-retries-exhausted": "ci-step-failed",
    "crash/tenacity-retries-exhausted": "ci-step-failed",
    "crash/cpu-oom-uncaught": "cpu-out-of-memory",
    "crash/cpu-only-smoke-cuda-call": "cuda-not-usable",
    "pytest/classifier-ubsan-case-fails": "pytest-test-outcome",
    "crash/gha-crash-marker-check-found": "c-assertion-failed",
    "crash/git-pinned-commit-assert": "c-assertion-failed",
}
TS = "2024-01-09T18:41:23.1234567Z "


def body(name: str) -> str:
    """A fixture's log without its ``#!`` header."""
    text = (FIXTURES / (name + ".log")).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#! "))


def severities(findings):
    return sorted((f.rule, f.severity.value) for f in findings)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_run_that_prints_the_failures_it_expects_gives_at_most_notices(name, engine):
    findings = scan({"job.log": body("negative/" + name)}, engine=engine)
    assert [f for f in findings if f.severity.value != "notice"] == []
    assert decide(findings)[1] == 0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(TWINS))
def test_the_same_run_with_its_expectation_broken_still_fails(name, engine):
    findings = scan({"job.log": body(name)}, engine=engine)
    assert (TWINS[name], "error") in severities(findings)
    assert decide(findings)[1] == 1


# -- doctest -------------------------------------------------------------------------------------

DOCTEST_RUN = """Trying:
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
Expecting:
    Traceback (most recent call last):
      ...
    RuntimeError: CUDA error: an illegal memory access was encountered
ok
1 items passed all tests:
   1 tests in gpu_utils.check
1 tests in 1 items.
1 passed and 0 failed.
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_verbose_doctest_run_that_passed_makes_its_expected_errors_notices(engine):
    findings = scan({"job.log": DOCTEST_RUN + "Test passed.\n"}, engine=engine)
    # its output; the example's source ("Trying:") is code, not an event (python-source-line)
    assert severities(findings) == [("cuda-error", "notice")]


@pytest.mark.parametrize("engine", ENGINES)
def test_without_the_verdict_the_same_lines_stay_errors(engine):
    findings = scan({"job.log": DOCTEST_RUN}, engine=engine)
    assert severities(findings) == [("cuda-error", "error")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_doctest_example_is_a_test_failure_naming_its_docstring(engine):
    log = ("**********************************************************************\n"
           'File "/src/launch_utils.py", line 27, in launch_utils.describe_exit\n'
           "Failed example:\n    describe_exit(-6)\nExpected:\n    'killed by signal 6 (SIGIOT)'\n"
           "Got:\n    'killed by signal 6 (SIGABRT)'\n"
           "**********************************************************************\n"
           "1 items had failures:\n   1 of   4 in launch_utils.describe_exit\n"
           "***Test Failed*** 1 failures.\n")
    (finding,) = scan({"job.log": log}, engine=engine)
    assert (finding.rule, finding.severity.value, finding.line) == ("doctest-example-failed", "error", 2)
    assert finding.test == "launch_utils.describe_exit"


# -- commands echoed by the runner and by set -x ---------------------------------------------------

def step(script: str, output: str, shell: bool = True) -> str:
    """A run step as actions/runner logs it: the script echoed in its group, then what it printed."""
    lines = script.split("\n")
    echo = ["##[group]Run " + lines[0]] + ["\x1b[36;1m%s\x1b[0m" % line for line in lines]
    echo += (["shell: /usr/bin/bash -e {0}"] if shell else ["with:", "  path: logs"]) + ["##[endgroup]"]
    return "".join(TS + line + "\n" for line in echo + output.split("\n"))


CHECK = ("python train.py > train.log 2>&1\n"
         'if grep -E "CUDA error: |Assertion .* failed" train.log; then exit 1; fi')


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_steps_script_echoed_by_the_runner_is_not_its_output(engine):
    assert scan({"job.log": step(CHECK, "training done")}, engine=engine) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_steps_env_echoed_by_the_runner_is_not_its_output(engine):
    env = "%senv:\n%s  RETRY_ON: CUDA error: an illegal memory access\n" % (TS, TS)
    shell = "shell: /usr/bin/bash -e {0}\n"
    log = step(CHECK, "training done").replace(shell, shell + env)
    assert scan({"job.log": log}, engine=engine) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_what_the_step_printed_after_its_echo_is_still_read(engine):
    log = step(CHECK, "RuntimeError: CUDA error: an illegal memory access was encountered")
    (finding,) = scan({"job.log": log}, engine=engine)
    assert (finding.rule, finding.severity.value, finding.line) == ("cuda-error", "error", 6)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_group_without_a_shell_line_is_output(engine):
    # a step's own ::group:: named "Run ..." and an action's group: what is in them was printed
    log = "".join(TS + line + "\n" for line in (
        "##[group]Run the GPU tests", "RuntimeError: CUDA error: an illegal memory access was encountered",
        "##[endgroup]"))
    assert severities(scan({"job.log": log}, engine=engine)) == [("cuda-error", "error")]
    log = step("actions/upload-artifact@v4", "", shell=False).replace(
        "  path: logs", "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert severities(scan({"job.log": log}, engine=engine)) == [("cuda-error", "error")]


def test_set_x_lines_clean_to_nothing_and_banners_stay():
    assert clean_line(b"+ grep -E 'CUDA error: |Killed' train.log\n") == ("", None)
    assert clean_line(TS.encode() + b"++ grep -c 'exited on signal' run.log\n") == ("", None)
    banner = "+" * 35 + " Timeout " + "+" * 36
    assert clean_line(banner.encode() + b"\n") == (banner, None)
    assert clean_line(b"+++ Timeout +++\n") == ("+++ Timeout +++", None)
    assert clean_line(b"2147483647 + 1 cannot be represented in type 'int'\n")[0].startswith("2147483647")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_error_a_set_x_grep_finds_is_read(engine):
    log = ("+ grep -E 'Assertion .* failed|CUDA error: ' run.log\n"
           "ring: ring.c:9: ring_push: Assertion `r->count < RING_CAP' failed.\n+ exit 1\n")
    (finding,) = scan({"job.log": log}, engine=engine)
    assert (finding.rule, finding.line) == ("c-assertion-failed", 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_run_line_itself_is_part_of_the_echo(engine):
    # the marker is first in the catalogue, so on its own line it comes before any other rule's match
    assert BUILTIN.rules[0].id == "github-run-script"
    log = step('grep -E "CUDA error: |Killed" train.log || echo "no crash markers"', "no crash markers")
    assert scan({"job.log": log}, engine=engine) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_commit_subject_git_prints_is_not_an_error_of_the_run(engine):
    subject = "Fix 'CUDA error: an illegal memory access was encountered' in fused_adam"
    log = "HEAD is now at 5987274 %s\nPrevious HEAD position was 5987274 %s\n" % (subject, subject)
    assert scan({"job.log": log}, engine=engine) == []
    log += "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    (finding,) = scan({"job.log": log}, engine=engine)
    assert (finding.rule, finding.line) == ("cuda-error", 3)
