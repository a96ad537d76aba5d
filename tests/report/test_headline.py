"""The one-line verdict: what the on-call engineer reads first."""

from __future__ import annotations

import pytest

from analyzer.model import CommandResult, Finding, Kind, Report, Severity, Verdict
from analyzer.report.headline import headline, root_cause

from .reports import flood, guard_hang, guard_pass, scan_atexit


def _atexit_finding() -> Finding:
    return Finding(
        Kind.ATEXIT_EXCEPTION,
        "atexit",
        Severity.ERROR,
        "stderr.log",
        5,
        "RuntimeError: boom raised in atexit callback _prepare_to_exit",
    )


def test_scan_failure_names_the_root_cause_and_the_rest():
    assert headline(scan_atexit()) == (
        "Failed: RuntimeError: boom raised in atexit callback `_prepare_to_exit`; Python exits 0 anyway "
        "(+1 more finding)"
    )


def test_guard_exit_0_with_an_error_finding():
    report = Report(Verdict.FAIL, 1, (_atexit_finding(),), CommandResult(("pytest",), 0, duration_s=3.0))
    assert headline(report) == (
        "Failed: RuntimeError: boom raised in atexit callback _prepare_to_exit; the command exited 0 anyway"
    )


def test_guard_hang_says_where_and_that_the_guard_killed_it_once():
    # The hang finding already says where and for how long, so the outcome adds only how it ended.
    assert headline(guard_hang()) == (
        "Failed: hung in `_prepare_to_exit` (tests/conftest.py:44) for 10m after the test run printed its "
        "verdict (812 passed); the guard killed it; 1 leftover process ended by the guard (+1 more finding)"
    )


@pytest.mark.parametrize(
    "command, text",
    [
        (CommandResult(("x",), 143, "SIGTERM", duration_s=4.2), "Failed: exit 143 (SIGTERM) after 4.2s"),
        (CommandResult(("x",), -9, "SIGKILL", duration_s=70), "Failed: exit -9 (SIGKILL) after 1m 10s"),
        (CommandResult(("x",), 1, duration_s=12), "Failed: exit 1 after 12s"),
        (
            CommandResult(("x",), 137, timed_out=True, timeout_reason="idle", duration_s=300),
            "Failed: went silent past the idle timeout after 5m; the guard killed it",
        ),
        (
            CommandResult(("x",), 130, timed_out=True, timeout_reason="cancelled", duration_s=61),
            "Failed: the job was cancelled after 1m 1s; the guard killed it",
        ),
        (
            CommandResult(
                ("x",), None, timed_out=True, timeout_reason="wall", duration_s=3600, unkillable_pids=(7, 8)
            ),
            "Failed: timed out after 1h; 2 processes survived even SIGKILL",
        ),
        (
            CommandResult(("x",), 0, duration_s=2, unkillable_pids=(7,)),
            "Failed: the command exited 0 anyway; 1 process survived even SIGKILL",
        ),
    ],
)
def test_guard_failures_without_findings(command, text):
    assert headline(Report(Verdict.FAIL, 1, (), command)) == text


def test_passes():
    assert headline(guard_pass()) == "Passed: exited 0 in 4.2s"
    assert headline(Report(Verdict.PASS, 0)) == "Passed: no findings"
    warning = Finding(Kind.SIGNAL_EXIT, "w", Severity.WARNING, "a.log", 1, "m")
    assert (
        headline(Report(Verdict.PASS, 0, (warning, warning)))
        == "Passed: 2 warnings, none at the failure level"
    )


def test_root_cause_is_the_first_error_even_behind_a_warning():
    report = flood(errors=2, warnings=3, notices=0)
    reordered = Report(Verdict.FAIL, 1, report.findings[2:] + report.findings[:2])
    assert root_cause(reordered) is report.findings[0]
    assert headline(reordered).startswith("Failed: rank 0 failed")


def test_headline_is_one_line():
    finding = Finding(Kind.CRASH, "c", Severity.ERROR, "a", 1, "first\nsecond\r\nthird")
    assert headline(Report(Verdict.FAIL, 1, (finding,))) == "Failed: first second third"
