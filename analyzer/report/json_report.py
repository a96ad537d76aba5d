"""The JSON report: the public contract spelled out by ``Report.to_dict`` (``version: 1``)."""

from __future__ import annotations

import json

from ..model import Report


def render_json(report: Report) -> str:
    """``report`` as indented JSON with a trailing newline; non-ASCII text is kept as UTF-8."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
