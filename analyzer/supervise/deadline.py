"""One deadline for the end of a run, computed once and passed down to every stage.

When a clock runs out (or the runner cancels) the guard computes when it must be done, and each
stage (stack dumps, the SIGTERM grace, the SIGKILL wait, the pipe drains) asks how much of that is
left instead of carrying its own timeout. A cancel that arrives later can only bring the deadline
closer (``cap``), never push it back.
"""

from __future__ import annotations

import time


class Deadline:
    """A point on the ``time.monotonic()`` clock; ``remaining`` and ``within`` are in seconds."""

    def __init__(self, seconds_from_now: float) -> None:
        self.at = time.monotonic() + max(0.0, seconds_from_now)

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def within(self, seconds: float, reserve: float = 0.0) -> float:
        """``seconds``, or less: what is left after keeping ``reserve`` for the stages after this one."""
        return max(0.0, min(seconds, self.remaining() - reserve))

    def cap(self, seconds_from_now: float) -> None:
        """Bring the deadline to ``seconds_from_now`` at the latest."""
        self.at = min(self.at, time.monotonic() + max(0.0, seconds_from_now))

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at
