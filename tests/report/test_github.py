"""GitHub workflow commands and step outputs, checked with exact strings and parsed back the way the
runner parses them (actions/runner ``ActionCommand.TryParseV2`` and its file-command reader)."""

from __future__ import annotations

from typing import Dict, List, Tuple

import pytest

from analyzer.model import CommandResult, Finding, Kind, Report, Severity, Verdict
from analyzer.report.github import (
    escape_data,
    escape_property,
    render_annotations,
    render_outputs,
    select_annotations,
)


def _unescape(value: str, prop: bool) -> str:
    # The runner undoes the escapes with '%25' last, so '%253A' comes back as '%3A', not ':'.
    pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else [])
    for token, char in pairs:
        value = value.replace(token, char)
    return value.replace("%25", "%")


def parse_command(line: str) -> Tuple[str, Dict[str, str], str]:
    """``::cmd k=v,k=v::message`` -> (cmd, properties, message), unescaped like the runner does."""
    assert line.startswith("::"), line
    end = line.index("::", 2)
    head, message = line[2:end], line[end + 2 :]
    command, _, props = head.partition(" ")
    properties = {}
    for pair in filter(None, props.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = _unescape(value, prop=True)
    return command, properties, _unescape(message, prop=False)


def _finding(severity: Severity, i: int = 0, **kw) -> Finding:
    values = dict(
        kind=Kind.SIGNAL_EXIT,
        rule="worker-signal",
        severity=severity,
        path="logs/job.txt",
        line=10 + i,
        message=f"worker {i} exit -15 (SIGTERM)",
        excerpt="line one\nline two",
    )
    values.update(kw)
    return Finding(**values)


def _report(findings: List[Finding]) -> Report:
    return Report(verdict=Verdict.FAIL, exit_status=1, findings=tuple(findings))


def _lines(report: Report, cap: int = 10) -> List[str]:
    text = render_annotations(report, per_severity_cap=cap)
    assert text == "" or text.endswith("\n")
    return text.splitlines()


# -- escaping, exactly as actions/toolkit packages/core/src/command.ts --------------------------------


def test_escape_data_exact():
    assert escape_data("%25") == "%2525"
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_data("a:b,c") == "a:b,c"
    assert escape_data("%0A") == "%250A"


def test_escape_property_exact():
    assert escape_property("%25") == "%2525"
    assert escape_property("a:b,c%\r\n") == "a%3Ab%2Cc%25%0D%0A"
    assert escape_property("logs/2_Run tests.txt") == "logs/2_Run tests.txt"


@pytest.mark.parametrize("value", ["%3A", "%%2C", "a\r\nb", "::error::x", "x,line=1", "50%"])
def test_escapes_round_trip_through_the_runner(value):
    assert _unescape(escape_data(value), prop=False) == value
    assert _unescape(escape_property(value), prop=True) == value


# -- annotations ----------------------------------------------------------------------------------


def test_annotation_exact_line():
    finding = _finding(Severity.ERROR, message="RuntimeError: 100% boom\nsecond", path="a,b:c.txt", line=7)
    assert _lines(_report([finding])) == [
        "::error file=a%2Cb%3Ac.txt,line=7,title=gpu-hang-guard%3A signal-exit [worker-signal]"
        "::RuntimeError: 100%25 boom second"
    ]


def test_annotation_omits_file_and_line_for_guard_findings():
    guard = _finding(Severity.ERROR, kind=Kind.HANG, rule="guard-timeout", path="", line=0, message="hung")
    no_line = _finding(Severity.WARNING, path="stdout.log", line=0, message="leaked")
    command, props, message = parse_command(_lines(_report([guard]))[0])
    assert (command, props, message) == ("error", {"title": "gpu-hang-guard: hang [guard-timeout]"}, "hung")
    assert "file" not in parse_command(_lines(_report([no_line]))[0])[1]


def test_annotation_never_carries_the_excerpt():
    finding = _finding(Severity.ERROR, excerpt="Traceback (most recent call last):\nSECRET-EXCERPT")
    text = render_annotations(_report([finding]))
    assert "SECRET-EXCERPT" not in text and "Traceback" not in text


def test_annotation_message_is_bounded():
    finding = _finding(Severity.ERROR, message="x" * 50_000)
    _, _, message = parse_command(_lines(_report([finding]))[0])
    assert len(message) <= 1000 < 4096  # the runner cuts at 4,096


@pytest.mark.parametrize("severity", [Severity.ERROR, Severity.WARNING])
@pytest.mark.parametrize("cap", [10, 3])
def test_cap_at_exactly_n(severity, cap):
    exactly = _lines(_report([_finding(severity, i) for i in range(cap)]), cap)
    assert len(exactly) == cap
    assert all(line.startswith(f"::{severity.value} ") for line in exactly)

    one_more = _lines(_report([_finding(severity, i) for i in range(cap + 1)]), cap)
    assert len(one_more) == cap + 1
    assert one_more[:cap] == exactly
    command, props, message = parse_command(one_more[-1])
    assert command == "notice"
    assert props["title"] == "gpu-hang-guard: 1 more finding"
    assert message.startswith(f"1 more finding (1 {severity.value}) not annotated here")
    assert "job summary" in message


def test_notices_keep_a_slot_for_the_overflow_notice():
    # The runner keeps 10 notices per step; the "N more" notice must not be the 11th.
    ten = _lines(_report([_finding(Severity.NOTICE, i) for i in range(10)]))
    assert len(ten) == 10 and all(line.startswith("::notice file=") for line in ten)
    eleven = _lines(_report([_finding(Severity.NOTICE, i) for i in range(11)]))
    assert len(eleven) == 10
    assert sum(line.startswith("::notice file=") for line in eleven) == 9
    assert parse_command(eleven[-1])[2].startswith("2 more findings (2 notices)")
    # Errors overflowing while notices fit: still at most 10 notice lines in total.
    mixed = [_finding(Severity.ERROR, i) for i in range(11)] + [
        _finding(Severity.NOTICE, i) for i in range(10)
    ]
    lines = _lines(_report(mixed))
    assert sum(line.startswith("::notice") for line in lines) == 10
    assert sum(line.startswith("::error") for line in lines) == 10
    assert parse_command(lines[-1])[2].startswith("2 more findings (1 error, 1 notice)")


def test_flood_counts_per_severity():
    findings = (
        [_finding(Severity.ERROR, i) for i in range(25)]
        + [_finding(Severity.WARNING, i) for i in range(15)]
        + [_finding(Severity.NOTICE, i) for i in range(3)]
    )
    lines = _lines(_report(findings))
    counts = {s: sum(line.startswith(f"::{s.value} file=") for line in lines) for s in Severity}
    assert counts == {Severity.ERROR: 10, Severity.WARNING: 10, Severity.NOTICE: 3}
    assert parse_command(lines[-1])[2].startswith("20 more findings (15 errors, 5 warnings)")
    annotated, left_out = select_annotations(findings)
    assert len(annotated) + len(left_out) == len(findings)


def test_root_cause_comes_first():
    warning = _finding(Severity.WARNING, 1, message="collateral")
    error = _finding(Severity.ERROR, 2, message="the root cause")
    lines = _lines(_report([warning, error]))
    assert parse_command(lines[0])[2] == "the root cause"


def test_no_findings_no_annotations():
    assert render_annotations(Report(verdict=Verdict.PASS, exit_status=0)) == ""


# -- $GITHUB_OUTPUT -------------------------------------------------------------------------------


def parse_outputs(text: str) -> Dict[str, str]:
    """Read a $GITHUB_OUTPUT file the way the runner does: ``k=v`` lines and ``k<<DELIM`` blocks."""
    lines = text.split("\n")
    assert lines[-1] == ""
    lines = lines[:-1]
    out: Dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        eq, heredoc = line.find("="), line.find("<<")
        if heredoc != -1 and (eq == -1 or heredoc < eq):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        else:
            name, value = line[:eq], line[eq + 1 :]
            out[name] = value
            i += 1
    return out


def test_outputs_plain():
    report = Report(
        verdict=Verdict.FAIL,
        exit_status=124,
        findings=(_finding(Severity.ERROR),),
        command=CommandResult(argv=("pytest",), exit_code=143, timed_out=True, log_dir="/tmp/logs"),
    )
    text = render_outputs(report, "/tmp/report.json")
    assert text == (
        "verdict=fail\nexit-code=124\nreport=/tmp/report.json\nlog-dir=/tmp/logs\nfindings=1\ntimed-out=true\n"
    )


def test_a_command_that_exited_124_itself_did_not_time_out():
    # coreutils' timeout inside the test script exits 124, the guard's own timeout status: only the
    # timed-out output tells the two apart.
    report = Report(
        verdict=Verdict.FAIL,
        exit_status=124,
        command=CommandResult(argv=("bash", "-c", "timeout 1 sleep 5"), exit_code=124, log_dir="/tmp/logs"),
    )
    outputs = parse_outputs(render_outputs(report, ""))
    assert (outputs["exit-code"], outputs["timed-out"]) == ("124", "false")


def test_outputs_multiline_value_uses_a_random_delimiter():
    sneaky = "/tmp/a\nverdict=pass\nEOF"
    command = CommandResult(argv=("pytest",), exit_code=0, log_dir=sneaky)
    report = Report(verdict=Verdict.PASS, exit_status=0, command=command)
    first = render_outputs(report, "")
    second = render_outputs(report, "")
    assert parse_outputs(first) == {
        "verdict": "pass",
        "exit-code": "0",
        "report": "",
        "log-dir": sneaky,
        "findings": "0",
        "timed-out": "false",
    }
    delimiter = [line for line in first.splitlines() if line.startswith("log-dir<<")][0][len("log-dir<<") :]
    assert delimiter.startswith("ghadelimiter_") and len(delimiter) > 30
    assert first != second  # a fresh delimiter each time: log text cannot guess it
