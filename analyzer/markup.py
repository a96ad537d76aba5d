"""Make untrusted text (log lines, file names, rule patterns) inert wherever the guard prints it.

Three hazards, one function each:

* a backtick run that would close a Markdown code fence or span early (``backtick_fence``);
* characters that a terminal, a log viewer or a line-based parser acts on: line breaks, C0/C1
  controls, Unicode line separators and bidi overrides, and the lone surrogates that ``os.fsdecode``
  makes of a file name's undecodable bytes (``visible``: each becomes a ``\\n``/``\\xNN``/``\\uNNNN``
  escape, so every message is one line and encodes in any codec);
* GitHub's legacy ``##[command]`` syntax, which the runner accepts anywhere in a line of a step's output
  (actions/runner ``src/Runner.Common/ActionCommand.cs``, ``TryParse``: ``message.IndexOf("##[")``)
  (``inert_commands``).
"""

from __future__ import annotations

import functools
import re

_BACKTICK_RUN = re.compile(r"`+")
# C0 and C1 controls, DEL, U+2028/2029 (line and paragraph separators), the bidi embeddings, overrides
# and isolates (CVE-2021-42574 "Trojan Source"), and every surrogate (only lone ones reach a str).
_UNSAFE_RANGES = (
    (0x00, 0x1F), (0x7F, 0x9F), (0x2028, 0x2029), (0x202A, 0x202E), (0x2066, 0x2069), (0xD800, 0xDFFF),
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# The runner matches the prefix exactly and case-sensitively; a ``\\x23`` for the second ``#`` reads
# like the other escapes and can never be taken for it.
_LEGACY_PREFIX = "##["
_LEGACY_INERT = "#\\x23["


def backtick_fence(text: str, minimum: int = 3) -> str:
    """A backtick run longer than any inside ``text``, at least ``minimum`` long.

    CommonMark ends a fenced block (4.5) or a code span (6.1) only at a run of the same length or
    longer, so text between two such runs can never end the block early.
    """
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    return "`" * max(minimum, longest + 1)


def _escape_char(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        # os.fsdecode's surrogateescape: the original byte of a file name that is not UTF-8.
        return "\\x%02x" % (code - 0xDC00)
    return "\\x%02x" % code if code <= 0xFF else "\\u%04x" % code


def visible(text: str, keep: str = "") -> str:
    """``text`` with every control, separator, bidi override and lone surrogate written as an escape.

    Characters in ``keep`` (for example ``"\\n\\t"`` for a multi-line excerpt) stay as they are. The
    result is valid Unicode without surrogates, so it encodes as UTF-8 (or with ``backslashreplace``
    in any codec) and, without ``\\n`` in ``keep``, is exactly one line.
    """
    return _unsafe_chars(keep).sub(lambda m: _escape_char(m.group()), text)


@functools.lru_cache(maxsize=8)
def _unsafe_chars(keep: str) -> "re.Pattern[str]":
    """A character class of the unsafe characters but those in ``keep`` (a newline in every excerpt
    line must not cost a callback)."""
    kept = {ord(char) for char in keep}
    codes = [c for low, high in _UNSAFE_RANGES for c in range(low, high + 1) if c not in kept]
    return re.compile("[" + "".join(re.escape(chr(c)) for c in codes) + "]")


def inert_commands(text: str) -> str:
    """``text`` with the runner's legacy ``##[`` command prefix broken (``#\\x23[``).

    For one-line messages printed outside a stop-commands fence, whose start we write ourselves (so
    the ``::command::`` form, which must begin the line, cannot occur).
    """
    return text.replace(_LEGACY_PREFIX, _LEGACY_INERT)


def one_line_message(text: str, max_chars: int = 2000) -> str:
    """A message fit for one line of stderr under any runner: ``visible``, ``inert_commands``, bounded."""
    text = inert_commands(visible(text))
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."
