"""The terminal report: headline first, numbered findings, bounded excerpts, nothing raw from the log."""

from __future__ import annotations

from analyzer.model import Finding, Kind, Report, Severity, Verdict
from analyzer.report.text import EXCERPT_MAX_LINES, EXCERPTS_SHOWN, render_text

from .reports import flood, guard_hang


def test_layout():
    lines = render_text(guard_hang()).splitlines()
    assert lines[0].startswith("Failed: hung in `_prepare_to_exit`")
    assert "  1. (guard): error hang [guard-timeout] hung in" in lines[3]
    assert "Command: python3 -m pytest -x tests/" in lines
    assert "  outcome: exit 143 (SIGTERM) after 10m" in lines
    assert lines[-1] == "Logs: /home/runner/work/_temp/gpu-hang-guard/logs"


def test_excerpts_are_bounded_and_cleaned():
    excerpt = "\n".join(f"\x1b[31mline {i}\x1b[0m\x00" for i in range(100)) + "\n" + "z" * 5000
    finding = Finding(Kind.CRASH, "crash", Severity.ERROR, "log.txt", 4, "boom", excerpt)
    text = render_text(Report(Verdict.FAIL, 1, (finding,)))
    assert "\x1b" not in text and "\x00" not in text and "line 0\\x00" in text
    assert f"line {EXCERPT_MAX_LINES - 1}\\x00" in text and f"line {EXCERPT_MAX_LINES}\\x00" not in text
    assert f"... {100 + 1 - EXCERPT_MAX_LINES} more lines" in text


def test_only_the_best_ranked_show_excerpts():
    text = render_text(flood(errors=15, warnings=0, notices=0))
    assert text.count("Traceback (most recent call last)") == EXCERPTS_SHOWN
    assert " 15. logs/job.txt:114: error worker-failure" in text
