"""A structural check of Markdown the way CommonMark/GFM reads it, for the renderer tests.

No Markdown library is a dependency, so this follows the few CommonMark rules the summary's safety
rests on: a backtick fence opens with a run of 3+ backticks and closes only with a run at least as
long; a code span is literal to the matching backtick run; HTML outside fences and spans is live; a
table row splits on every unescaped ``|``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Tuple

_OPEN = re.compile(r"^ {0,3}(`{3,})([^`]*)$")
_CLOSE = re.compile(r"^ {0,3}(`{3,})\s*$")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


@dataclass
class Parsed:
    outside: List[str] = field(default_factory=list)  # lines Markdown/HTML would interpret
    blocks: List[str] = field(default_factory=list)  # the literal contents of each fenced block
    unclosed: bool = False


def parse(markdown: str) -> Parsed:
    parsed = Parsed()
    fence = 0
    body: List[str] = []
    for line in markdown.split("\n"):
        if fence:
            close = _CLOSE.match(line)
            if close and len(close.group(1)) >= fence:
                parsed.blocks.append("\n".join(body))
                fence, body = 0, []
            else:
                body.append(line)
            continue
        opening = _OPEN.match(line)
        if opening:
            fence = len(opening.group(1))
            continue
        parsed.outside.append(line)
    parsed.unclosed = bool(fence)
    return parsed


def cells(row: str) -> List[str]:
    """A GFM table row's cells: split on ``|`` not preceded by a backslash."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def problems(markdown: str, columns: int = 6) -> List[Tuple[str, str]]:
    """Everything that would let log text escape its place; empty when the document is safe."""
    found: List[Tuple[str, str]] = []
    parsed = parse(markdown)
    if parsed.unclosed:
        found.append(("unclosed fence", ""))
    opened = closed = 0
    for line in parsed.outside:
        low = _CODE_SPAN.sub("`code`", line).lower()
        if "<script" in low or "<img" in low or "<iframe" in low:
            found.append(("live html", line))
        opened += low.count("<details>")
        closed += low.count("</details>")
        if line.startswith("| ") and len(cells(line)) != columns:
            found.append(("table cell count", line))
    if opened != closed:
        found.append(("details balance", f"{opened} opened, {closed} closed"))
    return found
