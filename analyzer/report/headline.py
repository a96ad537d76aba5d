"""The one line a tired on-call engineer reads first, shared by the text and Markdown reports.

``"Failed: <root cause message>; <how the command ended>"`` or ``"Passed: ..."``. The line is plain
text that may hold backtick code spans (rule messages use them for function names); each renderer
escapes it for its medium.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..durations import format_duration
from ..exits import describe_command_exit, describe_exit
from ..markup import visible
from ..model import CommandResult, Finding, Kind, Report, Severity, Verdict

PASSED = "Passed"
FAILED = "Failed"


def plural(count: int, noun: str) -> str:
    """``plural(1, "finding") -> "1 finding"``, ``plural(3, "process") -> "3 processes"``."""
    if count == 1:
        return f"{count:,} {noun}"
    return f"{count:,} {noun}es" if noun.endswith("s") else f"{count:,} {noun}s"


def root_cause(report: Report) -> Optional[Finding]:
    """The finding the report leads with: the first error (findings arrive ranked), else the first."""
    for finding in report.findings:
        if finding.severity is Severity.ERROR:
            return finding
    return report.findings[0] if report.findings else None


def location(finding: Finding) -> str:
    """``path:line``; ``path`` alone for line 0; ``(guard)`` for a finding the guard made itself.

    The path is ``visible``: a line break, a control or an undecodable byte in a file name shows as
    an escape (``bad\\xff\\nname.log``), so a location is always one line and says exactly which file.
    """
    if not finding.path:
        return "(guard)"
    path = visible(finding.path)
    return f"{path}:{finding.line}" if finding.line > 0 else path


def severity_counts(findings: Sequence[Finding]) -> str:
    """``"2 errors, 1 warning"``; only severities that occur; ``"no findings"`` when empty."""
    parts = []
    for severity in Severity:
        count = sum(1 for f in findings if f.severity is severity)
        if count:
            parts.append(plural(count, severity.value))
    return ", ".join(parts) if parts else "no findings"


def command_outcome(command: CommandResult, failed: bool) -> str:
    """How the guarded command ended, in words: ``"exit 143 (SIGTERM) after 4.2s"``."""
    took = format_duration(command.duration_s)
    survivors = len(command.unkillable_pids)
    stopped = how_it_was_stopped(command)
    if command.timed_out:
        if command.timeout_reason == "idle":
            text = f"went silent past the idle timeout after {took}; {stopped}"
        elif command.timeout_reason == "cancelled":
            text = f"the job was cancelled after {took}; {stopped}"
        else:
            text = f"timed out after {took}; {stopped}"
    elif command.exit_code is None:
        text = f"still running after {took}; {stopped}"
    else:
        if command.exit_code == 0:
            text = "the command exited 0 anyway" if failed else f"exited 0 in {took}"
        else:
            text = f"{describe_exit(command.exit_code)} after {took}"
        if survivors:
            text += f"; {plural(survivors, 'process')} survived even SIGKILL"
    return _with_leftovers(text, command)


def _with_leftovers(text: str, command: CommandResult) -> str:
    if command.leftover_pids and not command.unkillable_pids:
        text += f"; {plural(len(command.leftover_pids), 'leftover process')} ended by the guard"
    return text


def how_it_ended(command: CommandResult) -> str:
    """``"exit 143 (SIGTERM) after 2s"``, or that the command was never started (cancelled first)."""
    if not command.started:
        return "never started (the run was cancelled first)"
    took = format_duration(command.duration_s)
    return f"{describe_command_exit(command.exit_code, command.timed_out)} after {took}"


def timeout_reason(command: CommandResult) -> str:
    """``"wall"``, ``"idle"``, ``"cancelled"`` or ``"aborted"``: why the guard ended the command."""
    reason = command.timeout_reason
    return str(getattr(reason, "value", reason) or "wall")


def how_it_was_stopped(command: CommandResult) -> str:
    """``"the guard killed it"``, or how many processes survived even SIGKILL."""
    if not command.started:
        return "nothing was started"
    survivors = len(command.unkillable_pids)
    return f"{plural(survivors, 'process')} survived even SIGKILL" if survivors else "the guard killed it"


def headline(report: Report) -> str:
    """The verdict line: ``"Failed: <root cause>; <outcome> (+N more findings)"`` or ``"Passed: ..."``."""
    findings = report.findings
    if report.verdict is Verdict.PASS:
        if report.command is not None:
            detail = command_outcome(report.command, failed=False)
            if findings:
                detail += f"; {severity_counts(findings)} below the failure level"
            return f"{PASSED}: {detail}"
        if findings:
            return f"{PASSED}: {severity_counts(findings)}, none at the failure level"
        return f"{PASSED}: no findings"

    cause = root_cause(report)
    parts = []
    if cause is not None:
        parts.append(" ".join(cause.message.split()) or cause.rule)
    if report.command is not None:
        if cause is not None and cause.kind is Kind.HANG and report.command.timed_out:
            # The hang finding already says where and for how long; only the ending is news.
            parts.append(_with_leftovers(how_it_was_stopped(report.command), report.command))
        else:
            parts.append(command_outcome(report.command, failed=True))
    if not parts:
        parts.append(f"exit status {report.exit_status}")
    line = f"{FAILED}: " + "; ".join(parts)
    more = len(findings) - 1 if cause is not None else 0
    if more > 0:
        line += f" (+{plural(more, 'more finding')})"
    return line
