"""The Markdown report for ``$GITHUB_STEP_SUMMARY``: the verdict first, the root cause, then the rest.

Order: the headline; the root cause with its excerpt; a table of every finding; each other excerpt in
a collapsed ``<details>``; the diagnostics (stack dumps, process table, GPU snapshot) collapsed; the
command and where the full logs are.

GitHub drops a step summary larger than 1,048,576 bytes entirely, so the report never exceeds
``budget_bytes``. Over budget it first drops detail (low-ranked excerpts and diagnostics, then every
excerpt but the root cause's), then trims (table rows, then the root cause's excerpt), and says so
in a visible ``Trimmed:`` line right under the headline.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ..markup import visible
from ..model import CommandResult, Finding, Report, Verdict
from ._escape import (
    code_fence,
    html_inline,
    markdown_code,
    markdown_inline,
    markdown_text,
    safe_report,
    safe_text,
)
from .headline import FAILED, PASSED, headline, how_it_ended, location, plural, root_cause, timeout_reason

DEFAULT_BUDGET_BYTES = 1_000_000
EXCERPT_MAX_BYTES = 64 * 1024
DIAGNOSTIC_MAX_BYTES = 256 * 1024
CELL_MAX_CHARS = 500
HEADLINE_MAX_CHARS = 1000
SUMMARY_MAX_CHARS = 200
ARGV_MAX_CHARS = 2000
TOP_EXCERPTS = 10  # excerpts of the best-ranked findings outrank diagnostics when space is short
TITLE = "gpu-hang-guard"
TRIMMED_RESERVE_BYTES = 800  # the "Trimmed:" line (plus the paths it names), headings, separators


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cut(text: str, max_bytes: int) -> Tuple[str, bool]:
    """``text`` cut to at most ``max_bytes`` of UTF-8 on a character boundary; whether it was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text, False
    return raw[: max(0, max_bytes)].decode("utf-8", "ignore"), True


def _short(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def _excerpt_block(excerpt: str, max_bytes: int) -> str:
    body, was_cut = _cut(excerpt, max_bytes)
    block = code_fence(body)
    if was_cut:
        block += (
            f"\n\n_Excerpt cut at {max_bytes:,} bytes of {_size(excerpt):,}; the JSON report has all of it._"
        )
    return block


def _details(summary: str, body: str) -> str:
    # The blank line after </summary> makes GitHub render the fence inside as Markdown.
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>\n\n"


@dataclass(frozen=True)
class _Optional:
    """A block of detail that may be dropped when space is short; ``order`` is its document position."""

    order: int
    text: str
    is_diagnostic: bool


def _header(report: Report) -> str:
    line = headline(report)
    word = PASSED if report.verdict is Verdict.PASS else FAILED
    rest = line.split(": ", 1)[1] if ": " in line else line
    return f"## {TITLE}: {word}\n\n**{word}:** {markdown_inline(_short(rest, HEADLINE_MAX_CHARS))}\n"


def _where_found(finding: Finding) -> str:
    if not finding.path:
        return "found by the guard"
    return f"at {markdown_code(location(finding))}"


def _root_section(cause: Finding, excerpt_max_bytes: int) -> str:
    out = [
        "### Root cause\n",
        f"**{markdown_text(cause.kind.value)}** {markdown_code(cause.rule)} {_where_found(cause)}: "
        f"{markdown_inline(_short(cause.message, CELL_MAX_CHARS))}\n",
    ]
    if cause.excerpt.strip():
        out.append(_excerpt_block(cause.excerpt, excerpt_max_bytes) + "\n")
    return "\n".join(out)


def _table_head(count: int) -> str:
    return (
        f"### Findings ({count:,})\n\n"
        "| # | Severity | Kind | Rule | Location | Message |\n"
        "| --: | --- | --- | --- | --- | --- |\n"
    )


def _row(number: int, finding: Finding) -> str:
    return (
        f"| {number} | {finding.severity.value} | {markdown_text(finding.kind.value, table=True)} "
        f"| {markdown_code(finding.rule, table=True)} "
        f"| {markdown_code(_short(location(finding), CELL_MAX_CHARS), table=True)} "
        f"| {markdown_inline(_short(finding.message, CELL_MAX_CHARS), table=True)} |\n"
    )


def _excerpt_details(number: int, finding: Finding) -> str:
    # Inside <details> the line is a raw HTML block: Markdown is not parsed there, HTML is.
    text = _short(f"{location(finding)}: {finding.message}", SUMMARY_MAX_CHARS)
    summary = f"{number}. {html_inline(text)}"
    return _details(summary, _excerpt_block(finding.excerpt, EXCERPT_MAX_BYTES))


def _command_section(command: CommandResult) -> str:
    argv = _short(visible(shlex.join(command.argv)), ARGV_MAX_CHARS)
    lines = [
        "### Command\n",
        f"- Command: {markdown_code(argv)}",
        f"- Ended: {how_it_ended(command)}",
        f"- Timed out: {'yes (' + timeout_reason(command) + ')' if command.timed_out else 'no'}",
    ]
    if command.leftover_pids:
        lines.append("- Leftover processes ended by the guard: " + ", ".join(map(str, command.leftover_pids)))
    if command.unkillable_pids:
        lines.append(
            "- Processes that survived SIGKILL (the host may need recycling): "
            + ", ".join(map(str, command.unkillable_pids))
        )
    if command.containment:
        lines.append(f"- Containment: {markdown_text(command.containment)}")
    return "\n".join(lines) + "\n"


def _where(log_dir: Optional[str], report_path: Optional[str]) -> str:
    parts = []
    if log_dir:
        parts.append(f"Full logs: {markdown_code(log_dir)}")
    if report_path:
        parts.append(f"JSON report: {markdown_code(report_path)}")
    return ("\n\n".join(parts) + "\n") if parts else ""


def _trimmed_line(
    excerpts: int,
    diagnostics: int,
    rows: int,
    cut_root: bool,
    log_dir: Optional[str],
    report_path: Optional[str],
) -> str:
    dropped = []
    if excerpts:
        dropped.append(plural(excerpts, "excerpt"))
    if diagnostics:
        dropped.append(plural(diagnostics, "diagnostic"))
    if rows:
        dropped.append(plural(rows, "table row"))
    what = ", ".join(dropped) + " omitted" if dropped else ""
    if cut_root:
        what = (what + " and " if what else "") + "the root cause's excerpt cut"
    where = []
    if report_path:
        where.append(f"the JSON report {markdown_code(_short(report_path, 200))}")
    if log_dir:
        where.append(f"the logs in {markdown_code(_short(log_dir, 200))}")
    full = " and ".join(where) if where else "the JSON report (`--json FILE`)"
    return f"> **Trimmed:** {what} to stay under GitHub's 1 MiB summary limit; full report in {full}.\n"


def render_markdown(
    report: Report, budget_bytes: int = DEFAULT_BUDGET_BYTES, report_path: Optional[str] = None
) -> str:
    """The step-summary Markdown for ``report``, never more than ``budget_bytes`` of UTF-8.

    ``report_path`` (optional) is named as the place of the full report when something was trimmed.
    All log-derived text is escaped: excerpts are fenced with a fence longer than any backtick run
    inside them, and text in HTML or table context is HTML-escaped.
    """
    report = safe_report(report)
    # Paths show their line breaks and controls as escapes (one line, exactly which file).
    report_path = visible(safe_text(report_path)) if report_path is not None else None
    log_dir = visible(report.log_dir) if report.log_dir else None
    # A passing report has no root cause to lead with; its findings are only listed.
    cause = root_cause(report) if report.verdict is Verdict.FAIL else None
    cause_index = report.findings.index(cause) if cause is not None else -1

    header = _header(report)
    tail = "\n".join(
        part
        for part in (_command_section(report.command) if report.command else "", _where(log_dir, report_path))
        if part
    )

    optional: List[_Optional] = []
    # Document positions: 0 root, 1 table, 2.. excerpts in rank order, then diagnostics, then the tail.
    for number, finding in enumerate(report.findings, 1):
        if number - 1 != cause_index and finding.excerpt.strip():
            optional.append(_Optional(1 + number, _excerpt_details(number, finding), False))
    diag_base = 2 + len(report.findings)
    diagnostic_blocks = []
    for i, diagnostic in enumerate(report.diagnostics):
        body = _excerpt_block(diagnostic.text, DIAGNOSTIC_MAX_BYTES)
        title = html_inline(diagnostic.title)
        diagnostic_blocks.append(_Optional(diag_base + i, _details(title, body), True))
    # Keep first: the best-ranked excerpts, then diagnostics, then the remaining excerpts.
    priority = optional[:TOP_EXCERPTS] + diagnostic_blocks + optional[TOP_EXCERPTS:]

    reserve = TRIMMED_RESERVE_BYTES + _size(log_dir or "") + _size(report_path or "")
    left = budget_bytes - reserve - _size(header) - _size(tail)

    root = ""
    cut_root = False
    if cause is not None:
        root = _root_section(cause, EXCERPT_MAX_BYTES)
        if _size(root) > max(0, left):
            # Even alone the root cause is too big: keep its message and as much excerpt as fits.
            bare = _size(_root_section(cause, 0))
            root = _root_section(cause, max(0, left - bare - 200))
            cut_root = True
    left -= _size(root)

    rows: List[str] = []
    rows_dropped = 0
    if report.findings:
        left -= _size(_table_head(len(report.findings))) + 200  # 200: the "N more rows" line
        for number, finding in enumerate(report.findings, 1):
            row = _row(number, finding)
            if _size(row) <= left:
                rows.append(row)
                left -= _size(row)
            else:
                rows_dropped = len(report.findings) - len(rows)
                break

    kept: List[_Optional] = []
    for block in priority:
        if _size(block.text) + 1 <= left:
            kept.append(block)
            left -= _size(block.text) + 1
    excerpts_dropped = sum(1 for b in priority if not b.is_diagnostic) - sum(
        1 for b in kept if not b.is_diagnostic
    )
    diagnostics_dropped = len(diagnostic_blocks) - sum(1 for b in kept if b.is_diagnostic)

    parts = [header]
    if excerpts_dropped or diagnostics_dropped or rows_dropped or cut_root:
        parts.append(
            _trimmed_line(excerpts_dropped, diagnostics_dropped, rows_dropped, cut_root, log_dir, report_path)
        )
    if root:
        parts.append(root)
    if report.findings:
        table = _table_head(len(report.findings)) + "".join(rows)
        if rows_dropped:
            table += f"\n_{rows_dropped:,} more findings not listed here; the JSON report has them all._\n"
        parts.append(table)
    kept.sort(key=lambda block: block.order)
    excerpt_blocks = [b.text for b in kept if not b.is_diagnostic]
    if excerpt_blocks:
        parts.append("".join(excerpt_blocks).rstrip("\n") + "\n")
    if diagnostic_blocks:
        shown = [b.text for b in kept if b.is_diagnostic]
        parts.append(
            "### Diagnostics\n\n"
            + ("".join(shown).rstrip("\n") + "\n" if shown else "_Omitted for size; see the logs._\n")
        )
    if tail:
        parts.append(tail)
    text = "\n".join(parts)
    if _size(text) > budget_bytes:
        # Only reachable with a budget too small for the fixed parts (a tiny test budget, a huge path):
        # a cut document is still better than one GitHub drops whole.
        note = "> **Trimmed:** cut to fit GitHub's 1 MiB summary limit; the JSON report has everything.\n\n"
        text = _cut(note + text, budget_bytes)[0]
    return text
