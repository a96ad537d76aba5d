"""The JSON report: the public contract spelled out by ``Report.to_dict`` (``version: 1``).

Strings are credential-free and hold no lone surrogates (``safe_report``), so the document always
encodes as UTF-8. It is also inert on a GitHub step's console: with ``indent`` every line starts
with whitespace and a JSON token, never ``::``, and the runner's legacy ``##[`` prefix, which it
accepts anywhere in a line (actions/runner ``src/Runner.Common/ActionCommand.cs`` ``TryParse``), is
written ``#\\u0023[`` inside strings: the same text to any JSON reader.
"""

from __future__ import annotations

import json

from ..model import Report
from ._escape import safe_report

# Outside strings JSON has no "#", so every "##[" in the document is inside a string, where "#" is
# never part of an escape sequence.
_LEGACY_PREFIX = "##["
_LEGACY_INERT = "#\\u0023["


def render_json(report: Report) -> str:
    """``report`` as indented JSON with a trailing newline; non-ASCII text is kept as UTF-8."""
    text = json.dumps(safe_report(report).to_dict(), indent=2, ensure_ascii=False) + "\n"
    return text.replace(_LEGACY_PREFIX, _LEGACY_INERT)
