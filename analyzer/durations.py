"""Durations as people write and read them: ``90``, ``30s``, ``10m``, ``1h``, ``1h 2m``."""

from __future__ import annotations

import re

from .errors import UsageError

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*\Z")
_SECONDS_PER_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
# The longest duration any option or config value may name. Nothing the guard times (a job, a kill
# grace, an idle spell) is longer than GitHub's 35-day workflow limit allows, and a value past this is a
# typo whose wait would never end (`--kill-grace 99999999999999999999` after a SIGTERM it ignores).
MAX_DURATION_S = 7 * 24 * 3600.0


def parse_duration(text: str, option: str = "duration") -> float:
    """Seconds in ``text`` (a bare number is seconds), at most ``MAX_DURATION_S``; raises ``UsageError``
    naming ``option``."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(
            f"{option}: {text!r} is not a duration; write it as 90, 30s, 10m or 1h"
        )
    seconds = float(match.group(1)) * _SECONDS_PER_UNIT[match.group(2)]
    if not seconds <= MAX_DURATION_S:
        raise UsageError(f"{option}: {text!r} is longer than the most allowed, 168h (7 days)")
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds as people say them: ``4.2s``, ``1s``, ``42s``, ``10m``, ``10m 3s``, ``1h 2m``."""
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f}".rstrip("0").rstrip(".") + "s"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
