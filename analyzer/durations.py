"""Parse the durations users write on command lines and in action inputs: ``90``, ``30s``, ``10m``, ``1h``."""

from __future__ import annotations

import re

from .errors import UsageError

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*\Z")
_SECONDS_PER_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str, option: str = "duration") -> float:
    """Seconds in ``text`` (a bare number is seconds); raises ``UsageError`` naming ``option``."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(
            f"{option}: {text!r} is not a duration; write it as 90, 30s, 10m or 1h"
        )
    return float(match.group(1)) * _SECONDS_PER_UNIT[match.group(2)]
