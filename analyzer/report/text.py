"""The terminal report: the headline, numbered findings with bounded excerpts, the command, the logs."""

from __future__ import annotations

import shlex
from typing import List

from ..model import CommandResult, Finding, Report
from ..markup import visible
from ._escape import clean_text, one_line, safe_report
from .headline import headline, how_it_ended, location, timeout_reason

EXCERPT_MAX_LINES = 20
EXCERPTS_SHOWN = 10  # the best-ranked findings show their excerpt; the rest one line each
DIAGNOSTIC_MAX_LINES = 40
LINE_MAX_CHARS = 300
INDENT = "      "


def _bounded(text: str, max_lines: int) -> List[str]:
    """``text`` as at most ``max_lines`` lines of at most ``LINE_MAX_CHARS``, saying what was cut."""
    lines = clean_text(text).rstrip("\n").split("\n")
    shown = [
        line if len(line) <= LINE_MAX_CHARS else line[:LINE_MAX_CHARS] + f"... ({len(line):,} chars)"
        for line in lines[:max_lines]
    ]
    if len(lines) > max_lines:
        shown.append(f"... {len(lines) - max_lines:,} more lines (see the JSON report)")
    return shown


def _finding(number: int, finding: Finding, with_excerpt: bool) -> List[str]:
    head = (
        f"{number:>3}. {one_line(location(finding))}: {finding.severity.value} {finding.kind.value} "
        f"[{finding.rule}] {one_line(finding.message)}"
    )
    lines = [head]
    if with_excerpt and finding.excerpt.strip():
        lines.extend(INDENT + line for line in _bounded(finding.excerpt, EXCERPT_MAX_LINES))
    return lines


def _command(command: CommandResult) -> List[str]:
    lines = [
        f"Command: {visible(shlex.join(command.argv))}",
        f"  outcome: {how_it_ended(command)}",
    ]
    if command.timed_out:
        lines.append(f"  timed out: yes ({timeout_reason(command)})")
    if command.leftover_pids:
        lines.append("  leftover pids (ended by the guard): " + " ".join(map(str, command.leftover_pids)))
    if command.unkillable_pids:
        lines.append("  unkillable pids (survived SIGKILL): " + " ".join(map(str, command.unkillable_pids)))
    if command.containment:
        lines.append(f"  containment: {one_line(command.containment)}")
    return lines


def render_text(report: Report) -> str:
    """The report for a terminal: plain text, no colour, every log-derived line cleaned and bounded.

    Under GitHub Actions the CLI prints it inside a stop-commands fence (``github.fence_commands``):
    an excerpt line is the log's own text and may look like a workflow command.
    """
    report = safe_report(report)
    out = [one_line(headline(report))]
    if report.findings:
        out.append("")
        out.append("Findings (root cause first):")
        for number, finding in enumerate(report.findings, 1):
            out.extend(_finding(number, finding, number <= EXCERPTS_SHOWN))
        if len(report.findings) > EXCERPTS_SHOWN:
            out.append(f"(excerpts shown for the first {EXCERPTS_SHOWN}; --format json has them all)")
    for diagnostic in report.diagnostics:
        out.append("")
        out.append(f"{one_line(diagnostic.title)}:")
        out.extend(INDENT + line for line in _bounded(diagnostic.text, DIAGNOSTIC_MAX_LINES))
    if report.command is not None:
        out.append("")
        out.extend(_command(report.command))
    if report.log_dir:
        out.append(f"Logs: {visible(report.log_dir)}")
    return "\n".join(out) + "\n"
