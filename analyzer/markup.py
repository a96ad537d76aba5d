"""Markdown code fences and spans that untrusted text (log lines, rule patterns) cannot close early."""

from __future__ import annotations

import re

_BACKTICK_RUN = re.compile(r"`+")


def backtick_fence(text: str, minimum: int = 3) -> str:
    """A backtick run longer than any inside ``text``, at least ``minimum`` long.

    CommonMark ends a fenced block (4.5) or a code span (6.1) only at a run of the same length or
    longer, so text between two such runs can never end the block early.
    """
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    return "`" * max(minimum, longest + 1)
