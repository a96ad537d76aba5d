"""Turn one raw log line into the text rules match: no BOM, timestamp, ANSI escapes, NULs or rank prefix.

Cleaning happens in two steps so the engine can do the first one over a whole window at once:
``strip_controls`` removes NULs and ANSI escape sequences (neither ever contains ``\\n``, so line
numbers survive), and ``clean_stripped`` removes what sits at the start of a line (UTF-8 BOM, GitHub's
timestamp, ``[rankN]:``), decodes, and drops the line ending. ``clean_line`` is both in a row.

Carriage returns: a progress bar redraws one terminal line with ``\\r`` many times before its ``\\n``.
Line numbers count ``\\n`` only, so the whole redraw stays one line, and the cleaned text keeps the
inner ``\\r`` as a separator between what were separate visible states of that line. The engine
matches each ``\\r`` segment on its own (``split_segments``): an error printed after a bar is found with
its ``^`` anchors working, and no match spans two redraws that never appeared together on screen. A
trailing ``\\r`` (CRLF line endings) is a line ending, not a segment.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

# CSI (colours, cursor moves), OSC terminated by BEL or ST (hyperlinks, titles), and the short
# two-byte escapes. No branch can consume b"\n", which keeps line numbering intact.
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[ -/]*[0-~])")
_BOM = b"\xef\xbb\xbf"
_TIMESTAMP = re.compile(rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z ")
# torchrun's --tee/--log-line-prefix and recent torch print "[rank3]:" before every line of a rank.
_RANK = re.compile(r"\[rank(\d+)\]: ?")


# Above this many coloured lines in a window, one substitution over all of it beats editing each.
_ESCAPES_PER_LINE_EDIT = 64


def strip_controls(raw: bytes) -> bytes:
    """Remove NUL bytes and ANSI escape sequences; never removes or adds a ``\\n``."""
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    at = raw.find(b"\x1b")
    if at == -1:
        return raw
    # A few coloured lines in a big window (pytest's PASSED among NCCL chatter): edit just those
    # lines, found with memchr; the regex engine would walk every byte of the window looking for ESC.
    parts = []
    pos = 0
    while at != -1:
        if len(parts) > 2 * _ESCAPES_PER_LINE_EDIT:
            return _ANSI.sub(b"", raw)
        start = raw.rfind(b"\n", pos, at) + 1 or pos
        end = raw.find(b"\n", at)
        if end == -1:
            end = len(raw)
        parts.append(raw[pos:start])
        parts.append(_ANSI.sub(b"", raw[start:end]))
        pos = end
        at = raw.find(b"\x1b", end)
    parts.append(raw[pos:])
    return b"".join(parts)


def clean_stripped(raw: bytes) -> Tuple[str, Optional[int]]:
    """Clean a line that already went through ``strip_controls``; see ``clean_line``."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    while raw.endswith(b"\r"):
        raw = raw[:-1]
    if raw.startswith(_BOM):
        raw = raw[3:]
    if raw[:1].isdigit():
        m = _TIMESTAMP.match(raw)
        if m is not None:
            raw = raw[m.end():]
            if raw.startswith(_BOM):
                raw = raw[3:]
    text = raw.decode("utf-8", "backslashreplace")
    rank = None
    if text.startswith("[rank"):
        m = _RANK.match(text)
        if m is not None:
            rank = int(m.group(1))
            text = text[m.end():]
    return text, rank


def clean_line(raw: bytes) -> Tuple[str, Optional[int]]:
    """Return the text rules match for one raw line, and N from a ``[rankN]:`` prefix (else None).

    Decoding is lenient (invalid UTF-8 becomes ``\\xNN`` text); inner ``\\r`` are kept as segment
    separators (see the module docstring). Never raises on any input.
    """
    return clean_stripped(strip_controls(raw))


def split_segments(text: str) -> List[str]:
    """The ``\\r``-separated states of a cleaned line, each matched on its own."""
    if "\r" in text:
        return text.split("\r")
    return [text]


def visible_excerpt(raw_stripped: bytes) -> str:
    """One line for an excerpt: the original text (timestamp kept) without its line ending."""
    if raw_stripped.endswith(b"\n"):
        raw_stripped = raw_stripped[:-1]
    while raw_stripped.endswith(b"\r"):
        raw_stripped = raw_stripped[:-1]
    return raw_stripped.decode("utf-8", "backslashreplace")
