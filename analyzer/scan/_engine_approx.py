"""A rule's pattern loosened to match raw log lines: the second, exact-enough stage of the prefilter.

A literal says only that a line *may* match: ``exitcode`` is in every ``exitcode: 0`` that a healthy
launcher prints, and each such line used to cost the full clean, decode and confirm in Python. The
loosened pattern rejects those lines in C (one Hyperscan pass, or one ``re`` search per candidate line
on the pure-Python path) and lets the engine confirm only lines that nearly match.

Loosened means a superset, never a miss: whenever the rule's pattern matches the cleaned text of a line
(``clean.clean_stripped``, a ``\\r`` segment of it), the loosened pattern matches the raw line as the
window holds it (ANSI and NULs already stripped, timestamp and logger prefixes still there). That
holds because cleaning only cuts a prefix and a line ending off the raw line and splits it at ``\\r``:
every segment is a substring of the raw line, so anchors (``^ $ \\b \\A``), lookarounds and
backreferences are dropped or widened (a final ``$`` becomes ``LINE_END``: the segment ends where the raw
line, or its ``\\r`` state, ends, but for the blanks and Markdown marks cleaning cuts; a leading ``^``
before a fixed character becomes the places a cleaned line may start, ``_cleaned_start``), lazy and
possessive repeats become greedy, and a trailing repeat keeps only its minimum. Character classes get
the meaning they have in ``regex`` on ASCII text, widened where Unicode and ASCII semantics differ
(``\\s`` also takes ``\\x1c``-``\\x1f``).

The loosened pattern is only trusted on ASCII lines: on a line with another byte, decoding changes the
text (``\\d`` may match an Arabic digit, ``(?i)k`` the Kelvin sign), so such lines keep the literal
prefilter alone. User patterns are never loosened: they run under their time budget in ``regex``, and
a loosened copy in ``re`` would run without one.
"""

from __future__ import annotations

import re
from typing import Any, Callable, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..rules.model import Rule
from ._engine_literals import _ATOMIC, _C, _REPEATS, _sre_parse  # Python's own regex parser, per version
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_ALL = frozenset(range(256))
_DIGIT = frozenset(range(0x30, 0x3A))
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# str.isspace() and regex's \s disagree on \x1c-\x1f: \s takes them and \S takes them too (a
# superset on ASCII lines either way).
_SPACE = frozenset(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")
_NOT_SPACE = _ALL - frozenset(b" \t\n\r\x0b\x0c")
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGIT, "CATEGORY_NOT_DIGIT": _ALL - _DIGIT,
    "CATEGORY_WORD": _WORD, "CATEGORY_NOT_WORD": _ALL - _WORD,
    "CATEGORY_SPACE": _SPACE, "CATEGORY_NOT_SPACE": _NOT_SPACE,
}


# Where a cleaned line's last segment ends in the raw line: cleaning cuts only blanks, Markdown's
# backticks and emphasis marks off a line's end (``clean.clean_speaking``), then its ``\r`` splits it;
# a final ``$`` kept as this (per line, in ``re``) rejects a word inside a longer one: unittest's bare
# "FAIL" outcome in each of pytest's XFAIL lines.
LINE_END = rb"(?=[ \t`*_]*(?:[\r\n]|$))"
HYPERSCAN_LINE_END = rb"[ \t`*_]*(?:\r|$)"  # the same in Hyperscan's multi-line mode


# Where a cleaned line's text starts in the raw line, for a pattern that opens with "^" and a fixed,
# non-blank character X. Cleaning cuts only prefixes there (``clean.clean_speaking``: GitHub's stamp, the
# loggers' prefixes, "[rankN]:", progress letters, Markdown's marks), and an indented line loses none, so
# the byte before X is the line's start, a ``\r``, or the last byte of a cut prefix. Every prefix ends in
# a non-blank, in one blank after one ("] ", "Z ", "[default0]: "), or in two after a digit (Jenkins'
# "12:00:00  "), but for pytest's failure mark ("E" and three or more blanks) and Python logging's
# padded level ("ERROR    ", "INFO     "), which four blanks take in. A traceback's frame line
# ("  File ...", "Z   File ..." after GitHub's stamp) has two blanks at the line's start or three after
# another blank: rejected, so frame lines stay in the engine.
# pytest -v -s's node id may be cut with any blanks after it, but only before a child's header
# (``clean._CHILD_BLOCK_HEAD``): a pattern whose X may start one of its words is not anchored so.
# Hyperscan takes the context before X; ``re`` (no lookbehind of varying width) checks it after X.
_CHILD_HEAD_WORDS = ("Process ", "Exception in thread ", "Traceback (most recent call last):")
_BLANKS = frozenset(b" \t\r\n\x0b\x0c\x1c\x1d\x1e\x1f")


class _Unsupported(Exception):
    """A construct this module does not loosen: the rule keeps the literal prefilter alone."""


def rule_line_pattern(
    rule: Rule, folded: bool = False, within_line: bool = False, hyperscan: bool = False
) -> Optional[bytes]:
    """The loosened raw-line pattern of ``rule``'s first pattern, or None when there is none;
    ``hyperscan``: in the form Hyperscan compiles (see ``line_pattern``)."""
    if rule.user_defined:
        return None
    pattern = rule.start if rule.is_block else rule.pattern
    if pattern is None:
        return None
    return line_pattern(pattern, rule.ignore_case, folded, within_line, hyperscan)


def searched_folded(rule: Rule) -> bool:
    """Whether ``rule``'s loosened pattern is searched in the line's ``bytes.lower()`` (it has a caseless
    part: ``re`` is several times faster on a fixed character than on a class of both cases)."""
    return rule.ignore_case or "(?i" in (rule.start or rule.pattern or "")


def line_pattern(
    pattern: str, ignore_case: bool = False, folded: bool = False, within_line: bool = False,
    hyperscan: bool = False,
) -> Optional[bytes]:
    """A bytes pattern (valid for Hyperscan and ``re``) matching every raw line whose text matches
    ``pattern``; None when the pattern uses a construct not handled here or the result matches the
    empty line (it would reject nothing). ``within_line``: no class of it takes a ``\n``, so searched over
    many lines at once it still finds just the matches within one line, and no attempt runs past its
    line (a loosened ``[^']*`` would otherwise read on to the next quote, lines away). A final ``$`` is
    kept as a lookahead for the raw line's end (``LINE_END``). A leading "^" before a fixed character
    is kept as the place a cleaned line may start (``_cleaned_start``): checked after the character in
    ``re``, before it where ``hyperscan`` (no lookbehind; "^" at each line's start in multi-line mode)."""
    try:
        parsed = _parse(pattern, re.IGNORECASE if ignore_case else 0)
        flags = parsed.state.flags
        caseless, dotall = bool(flags & re.IGNORECASE), bool(flags & re.DOTALL)
        loosener = _Loosener(folded, within_line)
        whole = list(parsed)
        head = _anchored_head(whole, caseless)
        if head:
            fixed = loosener.sequence(whole[1:1 + head], caseless, dotall, tail=False)
            rest = loosener.sequence(whole[1 + head:], caseless, dotall, tail=True)
            loose = _cleaned_start(loosener, fixed, caseless, hyperscan) + rest
        else:
            items = _without_optional_head(whole)
            loose = loosener.sequence(items, caseless, dotall, tail=True)
        compiled = re.compile(loose)
    except (_Unsupported, re.error, RecursionError, OverflowError, ValueError):
        return None
    except Exception:  # syntax only the ``regex`` module parses
        return None
    if compiled.search(b"") is not None:
        return None
    return loose


def starts_unblank(pattern: str, ignore_case: bool = False) -> bool:
    """Whether every match of ``pattern`` starts at the text's start ("^") with a character that is not a
    blank: it matches no text that starts with one (a traceback's end, "^(?P<exc>...)$", never matches
    a frame line). False where unsure (a construct not handled, an empty match possible)."""
    try:
        parsed = _parse(pattern, re.IGNORECASE if ignore_case else 0)
        items = list(parsed)
        if not items or items[0] != (_C.AT, _C.AT_BEGINNING):
            return False
        first, nullable = _first_chars(items[1:], bool(parsed.state.flags & re.IGNORECASE))
    except (_Unsupported, re.error, RecursionError, OverflowError, ValueError):
        return False
    except Exception:  # syntax only the ``regex`` module parses
        return False
    return not nullable and 0x20 not in first and 0x09 not in first


def _first_chars(items: list, caseless: bool) -> Tuple[FrozenSet[int], bool]:
    """The characters (ASCII; ``_ALL`` for any) a match of the sequence ``items`` may start with, and
    whether it may match the empty string (then what follows it may start the match)."""
    loosener = _Loosener(False)
    found: Set[int] = set()
    for op, av in items:
        if op is _C.LITERAL:
            chars, nullable = loosener.chars(av, caseless) if av < 0x80 else _ALL, False
        elif op in (_C.NOT_LITERAL, _C.ANY, _C.CATEGORY, _C.IN):
            chars = _ALL if op is not _C.IN else loosener.members(av, caseless)
            chars, nullable = (_category(av) if op is _C.CATEGORY else chars), False
        elif op is _C.SUBPATTERN:
            chars, nullable = _first_chars(list(av[3]), caseless or bool(av[1] & re.IGNORECASE))
        elif op is _C.BRANCH:
            parts = [_first_chars(list(branch), caseless) for branch in av[1]]
            chars = frozenset().union(*(c for c, _n in parts))
            nullable = any(n for _c, n in parts)
        elif op in _REPEATS:
            chars, nullable = _first_chars(list(av[2]), caseless)
            nullable = nullable or av[0] == 0
        elif op in (_C.AT, _C.ASSERT, _C.ASSERT_NOT):
            chars, nullable = frozenset(), True
        else:
            raise _Unsupported(str(op))
        found |= chars
        if not nullable:
            return frozenset(found), False
    return frozenset(found), True


def _anchored_head(items: list, caseless: bool) -> int:
    """How many fixed characters follow a leading "^" of ``items`` (0: not anchored by ``_cleaned_start``:
    no "^", no fixed character after it, a blank one, or one that may start a child's header)."""
    if len(items) < 2 or items[0] != (_C.AT, _C.AT_BEGINNING):
        return 0
    count = 0
    while 1 + count < len(items) and items[1 + count][0] is _C.LITERAL and items[1 + count][1] < 0x80:
        count += 1
    if not count or items[1][1] in _BLANKS:
        return 0
    fixed = "".join(chr(av) for _op, av in items[1:1 + count])
    for word in _CHILD_HEAD_WORDS:
        if word[:len(fixed)].lower() == fixed[:len(word)].lower():
            return 0
    return count


def _cleaned_start(loosener: "_Loosener", fixed: bytes, caseless: bool, hyperscan: bool) -> bytes:
    """``fixed`` (a loosened run of fixed characters) where a cleaned line may start (see above)."""
    e = loosener.cls(loosener.chars(ord("E"), caseless))
    not_blank = loosener.cls(_ALL - {0x20, 0x0A})
    digit = loosener.cls(_DIGIT)
    if hyperscan:
        return b"(?:^|" + not_blank + b"|" + not_blank + b" |" + digit + b" {2}|" + e + b" {3}| {4})" + fixed
    return (fixed + b"(?:(?<! " + fixed + b")|(?<=" + not_blank + b" " + fixed + b")|(?<=" + digit
            + b"  " + fixed + b")|(?<=" + e + b"   " + fixed + b")|(?<=    " + fixed + b"))")


def _parse(pattern: str, flags: int):
    try:
        return _sre_parse.parse(pattern, flags)
    except re.error:
        # regex lets alternatives reuse a group name ("(?P<what>a)|(?P<what>b)"), re does not; the
        # loosened pattern captures nothing, so the names can go.
        return _sre_parse.parse(_NAMED_GROUP.sub("(?:", pattern), flags)


def _without_optional_head(items: list) -> list:
    """Drop the head of a pattern up to its first fixed character: a search for "Y" finds a line
    wherever one for "XY" does (and one for "XY" wherever "X+Y" does), and ``re`` searches fast only
    for a pattern that starts with a fixed character."""
    while items:
        op, av = items[0]
        if op is _C.LITERAL:
            return items
        first_literal = next((i for i, (o, _a) in enumerate(items) if o is _C.LITERAL), None)
        if first_literal is not None:
            items = items[first_literal:]  # what comes before a fixed character only narrows
        elif op in (_C.AT, _C.ASSERT, _C.ASSERT_NOT) or (op in _REPEATS and av[0] == 0):
            items = items[1:]
        elif op in _REPEATS and av[0] == 1:
            items = list(av[2]) + items[1:]  # the last copy of the body, right before the rest
        elif op is _C.SUBPATTERN and not av[1] and not av[2]:
            items = list(av[3]) + items[1:]  # a group that changes no flag is just its items
        elif _ATOMIC is not None and op is _ATOMIC:
            items = list(av) + items[1:]
        elif op is _C.BRANCH:
            # "(?:X1Y1|X2Y2)R": a line holding either holds "Y1R" or "Y2R"; a branch that starts with
            # an optional part (".*?:", "\s*") would otherwise be tried at every byte of the line.
            return [(op, (av[0], [_without_optional_head(list(branch)) for branch in av[1]]))] + items[1:]
        else:
            return items
    return items


class _Loosener:
    """Serialise a parse tree as its loosened bytes pattern. ``folded``: for lines lowercased with
    ``bytes.lower`` (every letter is emitted in lower case, whatever the pattern's case flags);
    ``within_line``: no class takes a ``\n`` (see ``line_pattern``)."""

    def __init__(self, folded: bool, within_line: bool = False) -> None:
        self.folded = folded
        self.within_line = within_line

    def sequence(self, items: list, caseless: bool, dotall: bool, tail: bool) -> bytes:
        """A concatenation; ``tail``: nothing follows it, so its last repeat needs only its minimum."""
        last = len(items) - 1
        parts = [self.item(op, av, caseless, dotall, tail and i == last) for i, (op, av) in enumerate(items)]
        return b"".join(parts)

    def item(self, op, av, caseless: bool, dotall: bool, tail: bool) -> bytes:
        if op is _C.LITERAL:
            if av >= 0x80 and not caseless:  # only on a non-ASCII line, where no loosened pattern is used
                return b"".join(b"\\x%02x" % b for b in chr(av).encode("utf-8", "surrogatepass"))
            return self.cls(self.chars(av, caseless))
        if op is _C.NOT_LITERAL:
            return self.cls(_ALL - self.chars(av, caseless))
        if op is _C.ANY:
            return self.cls(_ALL if dotall else _ALL - {0x0A})
        if op is _C.IN:
            return self.cls(self.members(av, caseless))
        if op is _C.CATEGORY:
            return self.cls(_category(av))
        if op is _C.SUBPATTERN:
            add_flags, del_flags, sub = av[1], av[2], av[3]
            inner_case = (caseless or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            inner_dot = (dotall or bool(add_flags & re.DOTALL)) and not (del_flags & re.DOTALL)
            return b"(?:" + self.sequence(list(sub), inner_case, inner_dot, tail) + b")"
        if _ATOMIC is not None and op is _ATOMIC:
            return b"(?:" + self.sequence(list(av), caseless, dotall, tail) + b")"
        if op is _C.BRANCH:
            return b"(?:" + b"|".join(self.sequence(list(b), caseless, dotall, tail) for b in av[1]) + b")"
        if op in _REPEATS:
            return self.repeat(av, caseless, dotall, tail)
        if op is _C.AT and tail and av in (_C.AT_END, _C.AT_END_STRING):
            return LINE_END
        if op in (_C.AT, _C.ASSERT, _C.ASSERT_NOT):
            return b""  # dropping a zero-width condition only widens
        if op is _C.GROUPREF:
            return self.cls(_ALL - {0x0A}) + b"*"
        if op is _C.GROUPREF_EXISTS:
            _group, yes, no = av
            branches = [self.sequence(list(yes), caseless, dotall, tail)]
            branches.append(self.sequence(list(no), caseless, dotall, tail) if no is not None else b"")
            return b"(?:" + b"|".join(branches) + b")"
        raise _Unsupported(str(op))

    def repeat(self, av, caseless: bool, dotall: bool, tail: bool) -> bytes:
        low, high, sub = av
        if tail:  # a longer run implies the shortest one: the minimum matches wherever more would
            high = low
        if high == 0:
            return b""
        # Only a single last copy of the body may itself be cut short: "(?:a\\d+){2}" needs both whole.
        body = b"(?:" + self.sequence(list(sub), caseless, dotall, tail and high == 1) + b")"
        if high == _C.MAXREPEAT:
            return body + b"{%d,}" % low
        return body + (b"{%d}" % low if low == high else b"{%d,%d}" % (low, high))

    def chars(self, code: int, caseless: bool) -> FrozenSet[int]:
        if code >= 0x80:
            if caseless:  # the Kelvin sign folds to "k", the long s to "s": it can match an ASCII line
                raise _Unsupported("caseless non-ASCII character")
            return frozenset()
        if caseless and chr(code).isalpha():
            return frozenset({ord(chr(code).lower()), ord(chr(code).upper())})
        return frozenset({code})

    def members(self, items: list, caseless: bool) -> FrozenSet[int]:
        members: Set[int] = set()
        negate = False
        for op, av in items:
            if op is _C.NEGATE:
                negate = True
            elif op is _C.LITERAL:
                members |= self.chars(av, caseless)
            elif op is _C.RANGE:
                low, high = av
                if caseless and high >= 0x80:
                    raise _Unsupported("caseless range beyond ASCII")
                for code in range(low, min(high, 0x7F) + 1):
                    members |= self.chars(code, caseless)
            elif op is _C.CATEGORY:
                members |= _category(av)
            else:
                raise _Unsupported(str(op))
        if negate:
            # [^...] also takes every byte >= 0x80: a superset, and unused on non-ASCII lines anyway.
            return _ALL - (members & frozenset(range(0x80)))
        return frozenset(members)

    def cls(self, members: FrozenSet[int]) -> bytes:
        """The class of ``members``; on a lowercased line a character shows as its lower case, so the
        class takes the lower case of each character it takes (sets are built unfolded until here)."""
        if self.folded:
            members = frozenset(code + 32 if 0x41 <= code <= 0x5A else code for code in members)
        if self.within_line:
            members = members - {0x0A}
        return _class(members)


def _category(name) -> FrozenSet[int]:
    found = _CATEGORIES.get(str(name))
    if found is None:  # CATEGORY_LINEBREAK and the locale/unicode spellings
        raise _Unsupported(str(name))
    return found


def _class(members: FrozenSet[int]) -> bytes:
    if not members:
        raise _Unsupported("empty class")
    if len(members) == 1:
        (only,) = members
        return b"\\x%02x" % only
    ranges = []
    codes = sorted(members)
    start = prev = codes[0]
    for code in codes[1:]:
        if code == prev + 1:
            prev = code
            continue
        ranges.append((start, prev))
        start = prev = code
    ranges.append((start, prev))
    parts = [b"\\x%02x" % a if a == b else b"\\x%02x-\\x%02x" % (a, b) for a, b in ranges]
    return b"[" + b"".join(parts) + b"]"


_UNSET = object()


# A rule whose loosened pattern has rejected this many lines is "noisy": its literal is common in
# this log (``exitcode`` in a launcher's every ``exitcode: 0``), and Hyperscan may take it over.
NOISY_AFTER_REJECTS = 5_000
# A rule whose loosened pattern has rejected a tenth of that (``WARM_SHARE``) is "warm". Taking over a
# noisy rule recompiles the one Hyperscan pass anyway (30-60 ms, what some 6,000-10,000 rejected lines
# cost in Python), so the warm rules ride along for next to nothing, rather than each costing a
# recompile of its own when it turns noisy later (a test-heavy log's XFAIL and FAILED lines).
WARM_SHARE = 10


class LoosePatterns:
    """Each rule's loosened pattern, built and compiled with ``re`` the first time a line needs it
    (most rules never see a candidate line, and start-up counts on small logs). A pattern with a
    caseless part is searched folded, in the line's ``bytes.lower()`` copy, where it starts with a
    fixed character instead of a class (``re`` is several times faster then). Rejections are
    counted per rule, so that the Hyperscan finder can take over the noisy ones (``noisy``)."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = rules
        self.compiled: List[Any] = [_UNSET] * len(rules)
        self.rejects = [0] * len(rules)
        self.noisy: FrozenSet[int] = frozenset()
        self.ends: List[Any] = [_UNSET] * len(rules)

    def matching(self, indices: Sequence[int], buf: bytes, pos: int, stop: int) -> List[int]:
        """The rules of ``indices`` whose loosened pattern matches the ASCII line ``buf[pos:stop]``."""
        end = stop - 1 if stop > pos and buf[stop - 1] == 0x0A else stop
        compiled = self.compiled
        kept = []
        lowered = None  # the line folded, made when a folded pattern needs it (never the whole window)
        for index in indices:
            entry = compiled[index]
            if entry is _UNSET:
                entry = compiled[index] = self._compile(self.rules[index])
            if entry is None:
                kept.append(index)
                continue
            loose, folded = entry
            if folded:
                if lowered is None:
                    lowered = buf[pos:end].lower()
                found = loose.search(lowered)
            else:
                found = loose.search(buf, pos, end)
            if found is not None:
                kept.append(index)
                continue
            self.rejects[index] += 1
            if self.rejects[index] == NOISY_AFTER_REJECTS:
                self.noisy = self.noisy | {index}
        return kept

    def warm(self) -> FrozenSet[int]:
        """The rules whose loosened pattern has rejected at least ``NOISY_AFTER_REJECTS // WARM_SHARE``
        lines so far (the noisy ones among them)."""
        least = max(1, NOISY_AFTER_REJECTS // WARM_SHARE)
        return frozenset(index for index, count in enumerate(self.rejects) if count >= least)

    def end_search(self, index: int) -> Optional[Callable[[bytes, int, int], Any]]:
        """A search for the lines of ``buf[start:stop]`` (ASCII, whole lines) that block rule ``index``'s
        end may match, ``search(buf, start, stop)``: None where it finds none. It never misses a line the
        end matches, as a loosened start never does; None when the end has no loosened pattern."""
        found = self.ends[index]
        if found is _UNSET:
            found = self.ends[index] = self._end_search(self.rules[index])
        return found

    @staticmethod
    def _end_search(rule: Rule) -> Optional[Callable[[bytes, int, int], Any]]:
        if rule.user_defined or rule.end is None:
            return None
        folded = rule.ignore_case or "(?i" in rule.end
        pattern = line_pattern(rule.end, rule.ignore_case, folded, within_line=True)
        if pattern is None:
            return None
        search = re.compile(pattern).search
        if not folded:
            return search
        return lambda buf, start, stop: search(buf[start:stop].lower())

    @staticmethod
    def _compile(rule: Rule) -> Optional[Tuple[Any, bool]]:
        folded = searched_folded(rule)
        pattern = rule_line_pattern(rule, folded)
        return (re.compile(pattern), folded) if pattern is not None else None
