"""Make log text safe to show: on a terminal, in Markdown, in HTML, and inside a fenced code block.

Log text is untrusted: it carries ANSI colour, progress-bar carriage returns, NUL bytes, backticks,
``</details>``, ``<script>`` and table pipes. Every renderer passes log-derived text through one of
these functions before placing it anywhere.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, List

from ..markup import backtick_fence, visible
from ..model import Report
from ..redact import redact, redact_argv

# CSI (colour, cursor), OSC (titles, hyperlinks; ended by BEL or ST) and two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_WORDS = re.compile(r"(\s+)")
# GFM's extended autolinks start at "www." or a scheme's "://" (spec 6.9); a character reference there
# stops them (checked with cmark-gfm in tests/report/test_gfm.py). An e-mail autolink and GitHub's
# @mention and #123 links look at the decoded text, so a word holding "@" or "#" goes in a code span.
_WWW = re.compile(r"(?i)\b(www)\.")
_SCHEME = re.compile(r":(?=//)")
_CODE_WORTHY = ("@", "#")

# Characters that mean something to Markdown written as character references: CommonMark never treats
# a reference as structure, so they show as themselves. The text never starts a line (it follows a
# marker or a cell pipe), so `#`, `-` and `1.` need nothing. `!` and `(` stay: a link or an image
# needs `[...]` right before `(`, and both brackets are always references here.
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


def _safe_value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, tuple):
        return tuple(_safe_value(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _safe_value(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        if isinstance(changes.get("argv"), tuple):
            changes["argv"] = redact_argv(changes["argv"])
        return dataclasses.replace(value, **changes)
    return value


def _displayable(text: str) -> str:
    """Lone surrogates (a file name's undecodable bytes) as ``\\xNN``; everything else kept."""
    # Only a surrogate fails strict UTF-8; a regex class of the surrogates cost 4 ms to compile per run.
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(visible(c) if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def safe_text(text: str) -> str:
    """One string as ``safe_report`` makes every string of a report: redacted, no lone surrogates."""
    return redact(_displayable(text))


def safe_report(report: Report) -> Report:
    """``report`` with every string credential-free (``redact``) and free of lone surrogates.

    Every renderer starts here, so no format can show a token from a command line or an excerpt,
    and none can fail to encode a file name that is not UTF-8. Idempotent.
    """
    return _safe_value(report)


def clean_text(text: str) -> str:
    """Text fit for display: ANSI escapes removed, line endings as ``\\n``, other controls visible.

    A lone ``\\r`` (a progress bar redrawing itself) becomes a line break so each redraw is readable;
    other controls, Unicode separators, bidi overrides and lone surrogates become ``\\xNN`` or
    ``\\uNNNN`` so a NUL, a bell or an undecodable byte cannot reach a terminal or a browser.
    """
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return visible(text, keep="\n\t")


def one_line(text: str) -> str:
    """``text`` cleaned and folded onto one line (runs of whitespace become one space)."""
    return " ".join(clean_text(text).split())


def html_text(text: str) -> str:
    """For HTML context (``<summary>``): cleaned, one line, ``& < > "`` escaped."""
    import html  # here: a JSON report needs no HTML (html.entities is about 1 ms of start-up)

    return html.escape(one_line(text), quote=True)


def html_inline(text: str) -> str:
    """For text inside a raw HTML block (``<summary>``), where Markdown is not parsed.

    HTML-escaped; a backtick span and any word holding ``@`` or ``#`` become ``<code>``, which
    GitHub's mention and issue-reference filters leave alone.
    """
    import html

    out: List[str] = []
    for code, part in _spans(one_line(text)):
        if code:
            out.append(f"<code>{html.escape(part, quote=True)}</code>")
            continue
        for word in _WORDS.split(part):
            escaped = html.escape(word, quote=True).replace("@", "&#64;")
            out.append(f"<code>{escaped}</code>" if _code_worthy(word) else escaped)
    return "".join(out)


def markdown_code(text: str, table: bool = False) -> str:
    """``text`` as a Markdown code span: shown literally, never a link, mention, image or tag.

    The span's backtick run is longer than any inside (CommonMark 6.1), with a space inside each end
    so text starting or ending with a backtick is safe. In a table cell ``|`` is written ``\\|``:
    GFM splits cells before it parses code spans (spec 4.10), and takes ``\\|`` back as ``|``.
    """
    body = one_line(text)
    if not body:
        return ""
    if table:
        body = body.replace("|", "\\|")
    fence = backtick_fence(body, minimum=1)
    return f"{fence} {body} {fence}"


def _code_worthy(word: str) -> bool:
    return any(mark in word for mark in _CODE_WORTHY)


def _entities(text: str) -> str:
    text = text.translate(_MARKDOWN_ENTITIES)
    return _WWW.sub(r"\1&#46;", _SCHEME.sub("&#58;", text))


def markdown_text(text: str, table: bool = False) -> str:
    """For Markdown paragraphs and table cells: one line, nothing of it can become structure.

    Structural characters are character references, autolinks are broken at ``www.`` and ``://``,
    and a word with ``@`` or ``#`` (an e-mail, a mention, an issue reference) is a code span.
    """
    return _markdown_words(one_line(text), table)


def _markdown_words(text: str, table: bool) -> str:
    return "".join(
        markdown_code(word, table) if _code_worthy(word) else _entities(word) for word in _WORDS.split(text)
    )


def _spans(text: str) -> List[Any]:
    """``text`` split into ``(is_code, part)``: backtick code spans and the text between them."""
    parts: List[Any] = []
    pos = 0
    for match in _CODE_SPAN.finditer(text):
        parts.append((False, text[pos : match.start()]))
        parts.append((True, match.group(2).strip() or match.group(2)))
        pos = match.end()
    parts.append((False, text[pos:]))
    return parts


def markdown_inline(text: str, table: bool = False) -> str:
    """Like ``markdown_text`` but a backtick span in ``text`` (`` `_prepare_to_exit` ``) shows as code.

    The span is written as a Markdown code span (never as ``<code>``: GFM still parses Markdown and
    autolinks inside a raw ``<code>`` tag).
    """
    pieces: List[str] = []
    for code, part in _spans(one_line(text)):
        piece = markdown_code(part, table) if code else _markdown_words(part, table)
        if not piece:
            continue
        if piece.startswith("`") and pieces and pieces[-1].endswith("`"):
            # Two code spans back to back would merge their backtick runs into one fence, and what the
            # second held ("`b<img src=x>") would be read as Markdown and HTML.
            pieces.append(" ")
        pieces.append(piece)
    return "".join(pieces)


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
