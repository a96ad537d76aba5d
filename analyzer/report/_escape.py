"""Make log text safe to show: on a terminal, in Markdown, in HTML, and inside a fenced code block.

Log text is untrusted: it carries ANSI colour, progress-bar carriage returns, NUL bytes, backticks,
``</details>``, ``<script>`` and table pipes. Every renderer passes log-derived text through one of
these functions before placing it anywhere.
"""

from __future__ import annotations

import html
import re
from typing import List

from ..markup import backtick_fence

# CSI (colour, cursor), OSC (titles, hyperlinks; ended by BEL or ST) and two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)

# Characters that mean something to Markdown (or to GitHub: @mentions) written as character
# references: CommonMark never treats a reference as structure, so they show as themselves. The text
# never starts a line (it follows a marker or a cell pipe), so `#`, `-` and `1.` need nothing.
_MARKDOWN_ENTITIES = {
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    ord('"'): "&quot;",
    ord("|"): "&#124;",
    ord("`"): "&#96;",
    ord("*"): "&#42;",
    ord("_"): "&#95;",
    ord("["): "&#91;",
    ord("]"): "&#93;",
    ord("\\"): "&#92;",
    ord("~"): "&#126;",
    ord("@"): "&#64;",
}


def clean_text(text: str) -> str:
    """Text fit for display: ANSI escapes removed, line endings as ``\\n``, other controls visible.

    A lone ``\\r`` (a progress bar redrawing itself) becomes a line break so each redraw is readable;
    other C0 controls become ``\\xNN`` so a NUL or a bell cannot reach a terminal or a browser.
    """
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)


def one_line(text: str) -> str:
    """``text`` cleaned and folded onto one line (runs of whitespace become one space)."""
    return " ".join(clean_text(text).split())


def html_text(text: str) -> str:
    """For HTML context (``<summary>``, ``<code>``): cleaned, one line, ``& < > "`` escaped."""
    return html.escape(one_line(text), quote=True)


def markdown_text(text: str) -> str:
    """For Markdown paragraphs and table cells: one line, every structural character neutralised."""
    return one_line(text).translate(_MARKDOWN_ENTITIES)


def markdown_inline(text: str) -> str:
    """Like ``markdown_text`` but a backtick span in ``text`` (`` `_prepare_to_exit` ``) shows as code.

    Code spans are written as ``<code>`` with HTML escaping, not as backticks, so that a ``|`` inside
    cannot split a table cell and ``<`` cannot open a tag.
    """
    text = one_line(text)
    out: List[str] = []
    pos = 0
    for match in _CODE_SPAN.finditer(text):
        out.append(text[pos : match.start()].translate(_MARKDOWN_ENTITIES))
        code = html.escape(match.group(2).strip() or match.group(2), quote=True).replace("|", "&#124;")
        out.append(f"<code>{code}</code>")
        pos = match.end()
    out.append(text[pos:].translate(_MARKDOWN_ENTITIES))
    return "".join(out)


def code_fence(text: str) -> str:
    """A fenced code block holding ``text`` verbatim: the fence is longer than any backtick run inside.

    CommonMark closes a fence only with a run at least as long as the opening one, so no line of log
    text can end the block early, and ``</details>`` or ``<script>`` inside it stay literal text.
    """
    body = clean_text(text).rstrip("\n")
    fence = backtick_fence(body)
    return f"{fence}text\n{body}\n{fence}"


def code_fence_overhead(text: str) -> int:
    """Bytes ``code_fence`` adds around ``text`` (upper bound, for budget arithmetic)."""
    return 2 * len(backtick_fence(text)) + len("text\n\n")
