"""A log pasted as a Markdown indented code block: four spaces (or a tab) before every line.

An issue's text quotes a log as code either in a fence or by indenting each line; a log saved from such a
paste keeps the indent, and a rule anchored at a line's start ("Segmentation fault", a traceback's last
line, "Process NAME:") no longer finds its wording. A source is indented when every non-blank line of
its first ``SAMPLE_BYTES`` starts with the same indent, over at least ``MIN_LINES`` lines; then that
indent is removed from the start of every line (a traceback's own indent beyond it stays). Output that
reached the log through a pipe (CI, the guard) was never pasted, and is left as it is.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Iterator

SAMPLE_BYTES = 64 * 1024
MIN_LINES = 3
INDENTS = (b"    ", b"\t")


def common_indent(sample: bytes) -> bytes:
    """The indent every non-blank line of ``sample`` starts with, or b"" when there is none."""
    lines = [line for line in sample.split(b"\n") if line.strip()]
    if len(lines) < MIN_LINES:
        return b""
    return next((indent for indent in INDENTS if all(line.startswith(indent) for line in lines)), b"")


def dedented(windows: Iterable[bytes]) -> Iterator[bytes]:
    """The windows (each ending at a "\\n") without the common indent of the source's first lines."""
    windows = iter(windows)
    first = next(windows, None)
    if first is None:
        return
    sample = first[:SAMPLE_BYTES]
    indent = common_indent(sample[: sample.rfind(b"\n") + 1] if len(first) > SAMPLE_BYTES else sample)
    if not indent:
        yield first
        yield from windows
        return
    for window in itertools.chain((first,), windows):
        window = window.replace(b"\n" + indent, b"\n")
        yield window[len(indent):] if window.startswith(indent) else window
