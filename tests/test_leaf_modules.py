"""The shared vocabulary: exit descriptions, durations and the verdict table."""

from __future__ import annotations

import pytest

from analyzer.durations import format_duration, parse_duration
from analyzer.errors import UsageError
from analyzer.exits import (
    describe_exit,
    describe_exit_byte,
    describe_wait_status,
    shell_status,
    signal_of_status,
)
from analyzer.markup import backtick_fence
from analyzer.model import CommandResult, Finding, Kind, Severity, Verdict
from analyzer.verdict import decide


@pytest.mark.parametrize(
    "status, text",
    [
        (143, "exit 143 (SIGTERM)"),
        (-15, "exit -15 (SIGTERM)"),
        (137, "exit 137 (SIGKILL)"),
        (-6, "exit -6 (SIGABRT)"),
        (1, "exit 1"),
        (0, "exit 0"),
        (124, "exit 124"),
        (None, "no exit (still running)"),
    ],
)
def test_describe_exit_reads_the_same_for_python_and_shell_statuses(status, text):
    assert describe_exit(status) == text


@pytest.mark.parametrize(
    "status, text",
    [
        (9, "signal 9 (SIGKILL)"),
        (15, "signal 15 (SIGTERM)"),
        (134, "signal 6 (SIGABRT), core dumped"),
        (139, "signal 11 (SIGSEGV), core dumped"),
        (0, "status 0"),
        (256, "status 256"),
    ],
)
def test_describe_wait_status_reads_the_signal_of_a_raw_wait_status(status, text):
    """MPICH's hydra prints a killed rank's raw wait(2) status as its "EXIT CODE" (134: SIGABRT, core)."""
    assert describe_wait_status(status) == text


@pytest.mark.parametrize(
    "status, text",
    [
        (247, "exit 247 (SIGKILL, as 256 - 9)"),  # exit(-9): Horovod's "exit with status code 247"
        (241, "exit 241 (SIGTERM, as 256 - 15)"),
        (137, "exit 137 (SIGKILL)"),
        (255, "exit 255"),  # exit(-1): an error a program reports on purpose
        (254, "exit 254"),
        (200, "exit 200"),
        (1, "exit 1"),
        (-9, "exit -9 (SIGKILL)"),
    ],
)
def test_describe_exit_byte_reads_a_negative_return_code_passed_to_exit(status, text):
    assert describe_exit_byte(status) == text


def test_signal_of_status_and_shell_status_agree():
    assert signal_of_status(-9) == signal_of_status(137) == 9
    assert signal_of_status(1) is None
    assert shell_status(-15) == 143
    assert shell_status(3) == 3


@pytest.mark.parametrize(
    "text, seconds",
    [("90", 90.0), ("30s", 30.0), ("10m", 600.0), ("1h", 3600.0), ("0.5s", 0.5), ("250ms", 0.25)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0, "0s"),
        (-1, "0s"),
        (0.7, "0.7s"),
        (1.0, "1s"),
        (4.213, "4.2s"),
        (9.96, "10s"),
        (42.4, "42s"),
        (59.6, "1m"),
        (90, "1m 30s"),
        (600.41, "10m"),
        (603, "10m 3s"),
        (3600, "1h"),
        (3700, "1h 1m"),
        (3725, "1h 2m"),
    ],
)
def test_format_duration_reads_the_same_in_the_guard_and_the_reports(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("text", ["", "ten", "10x", "-5", "1h30m", "m"])
def test_parse_duration_rejects_with_the_option_named(text):
    with pytest.raises(UsageError, match="--timeout"):
        parse_duration(text, "--timeout")


def _finding(severity: Severity) -> Finding:
    return Finding(Kind.CRASH, "some-rule", severity, "log.txt", 3, "boom")


def _command(exit_code, timed_out=False) -> CommandResult:
    return CommandResult(argv=("pytest",), exit_code=exit_code, timed_out=timed_out)


@pytest.mark.parametrize(
    "findings, command, fail_on, expected",
    [
        ([], None, Severity.ERROR, (Verdict.PASS, 0)),
        ([_finding(Severity.WARNING)], None, Severity.ERROR, (Verdict.PASS, 0)),
        ([_finding(Severity.WARNING)], None, Severity.WARNING, (Verdict.FAIL, 1)),
        ([_finding(Severity.ERROR)], None, Severity.ERROR, (Verdict.FAIL, 1)),
        ([], _command(0), Severity.ERROR, (Verdict.PASS, 0)),
        ([_finding(Severity.ERROR)], _command(0), Severity.ERROR, (Verdict.FAIL, 1)),
        ([], _command(3), Severity.ERROR, (Verdict.FAIL, 3)),
        ([_finding(Severity.ERROR)], _command(139), Severity.ERROR, (Verdict.FAIL, 139)),
        ([], _command(143, timed_out=True), Severity.ERROR, (Verdict.FAIL, 124)),
        ([], _command(None, timed_out=True), Severity.ERROR, (Verdict.FAIL, 124)),
        ([_finding(Severity.NOTICE)], _command(0), Severity.WARNING, (Verdict.PASS, 0)),
    ],
)
def test_the_exit_table(findings, command, fail_on, expected):
    assert decide(findings, command, fail_on) == expected


@pytest.mark.parametrize(
    "text, minimum, fence",
    [("plain", 3, "```"), ("a ```` b", 3, "`````"), ("no ticks", 1, "`"), ("x `y` z", 1, "``")],
)
def test_backtick_fence_outlasts_every_run_inside(text, minimum, fence):
    assert backtick_fence(text, minimum) == fence
