"""The runner's cancel before the guard is ready for it: recorded, never fatal.

GitHub's runner may cancel a step at any moment, also in the guard's first milliseconds: while Python
starts, the catalogue loads and the options are checked, before ``guard.supervise`` installs the
handlers that end a run with a report. Until then SIGTERM and SIGHUP had their default action (the
guard died with 143 or 129 and left no report, red41's q02) and SIGINT raised ``KeyboardInterrupt``
(130, no report). ``hold`` is the first thing the program does; the first signal is kept with its time,
so the CLI can write a report that says the run was cancelled before the command started, and
``supervise`` can take over one that came after that check and before its own handlers.
"""

from __future__ import annotations

import signal
import time
from typing import Optional, Tuple

# The runner's cancel (SIGINT, then SIGTERM) and a lost session (SIGHUP). The other signals the guard
# treats as a cancel come from the command itself, which has not started yet.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_first: Optional[Tuple[int, float]] = None
_held_since = 0.0


def _record(signum: int, _frame: object) -> None:
    global _first
    if _first is None:
        _first = (signum, time.monotonic())


def hold() -> None:
    """From now on the cancel signals are recorded, not acted on (main thread only)."""
    global _held_since
    _held_since = time.monotonic()
    for signum in SIGNALS:
        signal.signal(signum, _record)


def taken() -> Optional[Tuple[int, float]]:
    """The first cancel signal since ``hold`` and its ``time.monotonic()``, or None."""
    return _first


def held_since() -> float:
    """``time.monotonic()`` when ``hold`` was called (0.0 when it was not)."""
    return _held_since
