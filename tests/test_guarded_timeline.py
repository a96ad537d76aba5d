"""The guard's timeline of stdout's passing test runs (``_RunTimeline``) follows the scanner's state when
verdicts turn out to be inner runs': a real pytest log (pytest's own test_cacheprovider.py under -q -s,
pytester's quiet inner runs back to back) scanned with the timeline as its ``on_run``.

The pump's clock is stood in for by the line number (line N arrived at N seconds): the timeline only
compares arrival times, and this test is about which runs it keeps, not about the pump.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

from analyzer.guarded import _RunTimeline
from analyzer.rules.loader import load_catalogue
from analyzer.scan.pipeline import LogScan
from analyzer.scan.sources import iter_sources

NEGATIVE = Path(__file__).resolve().parents[1] / "fixtures" / "negative"
LOG = NEGATIVE / "pytest-cacheprovider-suite-quiet-s.log"


class _LineClock:
    """Stands in for ``_Follow``: the offset of line N is N, and it arrived at N seconds."""

    def line_offset(self, line: int, hint: Optional[Tuple[int, int]] = None) -> int:
        return line

    def arrival_bounds(self, offset: int) -> Tuple[float, float]:
        return float(offset), float(offset)


def _timeline_of(log: Path):
    timeline = _RunTimeline(_LineClock())  # type: ignore[arg-type]
    calls = []

    def on_run(what, match, passed):
        calls.append(what)
        timeline(what, match, passed)

    LogScan(next(iter_sources([str(log)])), load_catalogue(), engine="python", on_run=on_run).run()
    return timeline, calls


def test_every_verdict_found_an_inner_runs_is_taken_back():
    # Before: only the last of the ten inner verdicts was taken back; the other passing ones stayed
    # runs of their own, each "handling" a stderr event that arrived in it.
    timeline, calls = _timeline_of(LOG)
    assert calls.count("inner") >= 2, calls  # the log really has several inner verdicts to take back
    # One run left: the outer one, from the log's start (it shows no start of its own) to its verdict.
    kept = [(started, after, verdict.line) for started, after, verdict in timeline.runs]
    assert kept == [(0.0, 102.0, 102)]


def test_inner_sessions_back_to_back_are_taken_back_across_their_starts():
    # pytest -q -s prints a test's pytester sessions whole, start and all, before its first dot: the scan
    # finds all five verdicts inner runs' only at the outer run's verdict, across the sessions' starts.
    # Before: a start forgot the verdicts before it, and the passing inner session (lines 31-39) stayed.
    timeline, calls = _timeline_of(NEGATIVE / "pytest-lastfailed-inner-sessions-quiet-s.log")
    assert calls.count("inner") == 5, calls
    kept = [(started, after, verdict.line) for started, after, verdict in timeline.runs]
    assert kept == [(5.0, 98.0, 98)]  # the outer run, from its first session's start (-q prints none)
