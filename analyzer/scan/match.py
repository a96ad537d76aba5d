"""What the matching engine hands to ranking: one raw match of one rule, before it becomes a Finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from ..rules.model import Rule
from .attribution import TestLine


@dataclass(frozen=True)
class Match:
    """A rule matched at ``path:line`` (1-based, original numbering; a block runs to ``end_line``).

    ``text`` is the cleaned first line; ``excerpt`` is cut from the original lines (block lines, or
    the line with a little context) and decoded with ``errors="backslashreplace"``. ``seq`` orders
    matches of one scan in the order they appear (the earliest failure in time has the smallest seq).
    ``rank`` is N from a ``[rankN]:`` prefix that was stripped, if any.
    """

    rule: Rule
    path: str
    line: int
    end_line: int
    text: str
    excerpt: str
    seq: int
    groups: Mapping[str, str] = field(default_factory=dict)
    rank: Optional[int] = None
    # The last test runner progress line at or before this line (``analyzer.scan.attribution``).
    progress: Optional[TestLine] = None

    @property
    def test(self) -> Optional[str]:
        """The test of the progress line in force, when it names one that ran here (not xdist's)."""
        progress = self.progress
        return progress.test if progress is not None and not progress.xdist else None


def engine_match(
    rule: Rule, path: str, line: int, end_line: int, text: str, excerpt: str, seq: int,
    groups: Mapping[str, str], rank: Optional[int], progress: Optional[TestLine],
) -> Match:
    """``Match(...)`` with every field given, made for the engine's every match: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, which was about a twentieth of a scan of
    logged tracebacks (five matches each: the traceback, its ``store.set`` lines' echoes, its exception
    line). The same object: its ``__dict__`` is what ``__init__`` would have filled (a test compares them)."""
    match = _NEW(Match)
    match.__dict__.update(
        rule=rule, path=path, line=line, end_line=end_line, text=text, excerpt=excerpt, seq=seq,
        groups=groups, rank=rank, progress=progress,
    )
    return match


_NEW = object.__new__
