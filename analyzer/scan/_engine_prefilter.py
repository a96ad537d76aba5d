"""Find candidate lines in a window of log bytes: Hyperscan when it is installed, ``bytes.find`` if not.

Both finders take the same ``Plan`` and return the same thing for a window: a map from the offset where
each candidate line starts to the indices of the literals found in it. The window has already been
through ``strip_controls``, so an ANSI colour code inside a literal cannot hide it.
"""

from __future__ import annotations

import re
import threading
from functools import partial
from typing import (
    Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple,
)

from ..rules.model import Rule
from ._engine_approx import HYPERSCAN_LINE_END, LINE_END, LoosePatterns, rule_line_pattern, searched_folded
from ._engine_literals import _C, Literal, Plan, _sre_parse
from ._hyperscan import database, match_ends

Candidates = Dict[int, Set[int]]  # line start offset -> literal indices found in that line
Finder = Callable[[bytes], Candidates]
# Where a window's other patterns matched (``hyperscan_finder``'s ``hints``): the end offset of each match,
# or None where the finder did not look for them (the caller then looks itself).
HintEnds = Optional[List[int]]


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


def python_finder(plan: Plan, loose: Optional[LoosePatterns] = None) -> Finder:
    """A finder built on ``bytes.find`` (``_PivotFinder``); given the engine's ``loose`` patterns, ``re``
    takes over their noisy rules (``_LooseSwitch``)."""
    literal = _python_literals(plan.literals)
    if loose is None:
        return literal
    return _LooseSwitch(plan, literal, loose, _python_literals, _python_loose_matcher)


def _python_literals(literals: Sequence[Literal], ids: Optional[Sequence[int]] = None) -> Finder:
    """A ``_PivotFinder`` for ``literals``, reported as ``ids`` (default: their positions)."""
    indices = range(len(literals)) if ids is None else ids
    finder = _PivotFinder([(i, lit.needle, lit.caseless) for i, lit in zip(indices, literals)])

    def find(window: bytes) -> Candidates:
        out: Candidates = {}
        finder(window, out)
        return out

    find.pivots = finder  # type: ignore[attr-defined]  # (``_inherit``)
    return find


def _inherit(finder: Finder, planned: Finder) -> None:
    """Give ``finder`` the plan of ``planned`` (``_PivotFinder.inherit``) where both are pure-Python
    finders; Hyperscan's have no plan."""
    mine, theirs = getattr(finder, "pivots", None), getattr(planned, "pivots", None)
    if isinstance(mine, _PivotFinder) and isinstance(theirs, _PivotFinder):
        mine.inherit(theirs)


# Rough costs measured on CPython 3.11 (a 2-core x86 runner): one Python-level step per pivot hit, a
# little more per anchor hit (the whole line is checked), one memchr pass over a MiB for each pivot
# byte, and one bytes.find pass over a MiB for a literal of its own (dearer for short literals:
# "F0" 1.3 ms, "Process " 0.6 ms, "closing signal" 0.35 ms).
_HIT_COST_S = 1.0e-6
_ANCHOR_HIT_COST_S = 1.5e-6
_MEMCHR_COST_S_PER_MIB = 0.05e-3
_PASS_COST_S_PER_MIB = 0.3e-3
_PASS_COST_S_PER_MIB_BYTE = 2.0e-3  # divided by the literal's length
# A literal's pass as an ``re`` search instead: sre skims for its first byte in C and compares the rest
# there, where ``bytes.find`` skips by its last byte, so the search is cheaper for a literal that starts
# with a byte rarer than it ends with ("] test": 0.40 against 0.70 ms a MiB of the test-heavy shape;
# " skipped in " the other way, 0.52 against 0.37; CPython 3.11, 2026-12-06).
_RE_PASS_COST_S_PER_MIB = 0.26e-3
_RE_PASS_STOP_COST_S = 3e-9  # at each occurrence of the literal's first byte
# A pivot hit in a common byte is mostly innocent ("F" of every "INFO"): one ``re`` search for the pivot
# followed by the rest of one of its literals skims a MiB in C (sre's loop for a one-byte prefix, slower
# than memchr) and stops in C at each pivot byte, so Python sees only the hits whose rest matches. Each
# stop enters sre's matcher, then tries the branch of each byte that can follow the pivot (measured on
# the bench's test-heavy log: 12 ns plus 6 ns per branch).
_SUFFIX_PASS_COST_S_PER_MIB = 0.35e-3
_SUFFIX_STOP_COST_S = 12e-9
_SUFFIX_ALTERNATIVE_COST_S = 6e-9  # at each stop, for each byte that can follow the pivot
_TYPICAL_ALTERNATIVES = 8
_REPLAN_BYTES = 64 << 20  # logs change character (start-up chatter, tests, teardown)
_SAMPLE_BYTES = 256 * 1024
# Every _REPLAN_BYTES the window's head is compared with the plan's sample first, on the bytes the plan
# weighed: a plan costs about 45 ms (the cover, the pivots' searches tried on the sample), counting
# those bytes in 64 KiB about 5, and a log of one character (a test suite's hour) keeps its plan. A byte
# whose count moved past half of the larger count (and past _ALIKE_SLACK) makes a new plan.
_PROFILE_BYTES = 64 * 1024
_ALIKE_SLACK = 16

Needle = Tuple[int, bytes, bool]  # literal index, bytes (lowercased when caseless), caseless
Entry = Tuple[bytes, int, int]  # needle, offset of the pivot in it, literal index
Search = Callable[..., Optional["re.Match[bytes]"]]


class _Pivot(NamedTuple):
    byte: bytes
    exact: Dict[bytes, List[Entry]]  # by the pivot and the byte after it
    caseless: Dict[bytes, List[Entry]]  # by the same two bytes lowercased
    search: Optional[Search]  # the pivot followed by the rest of one of its literals; None: memchr


class _Planned(NamedTuple):
    """A ``_PivotFinder``'s plan, replaced whole (another thread's scan may be reading the one in force)."""

    pivots: List[_Pivot]
    # shared anchor -> the byte after it in a literal ("" when it ends one) -> entries
    shared: List[Tuple[bytes, Dict[bytes, List[Entry]]]]
    passes: List[Needle]
    sampled: int  # bytes of the sample it was made on
    profile: Dict[int, int]  # the bytes it weighed -> their count in its sample's head (``_alike``)
    searched: Dict[int, Search]  # the passes made as an ``re`` search (literal index -> its search)


class _PivotFinder:
    """Find every line holding one of ``needles`` with few passes over the window.

    One ``bytes.find`` pass per literal costs a full scan each, and a catalogue has dozens. Instead
    each literal gets a *pivot*: one of its bytes, chosen so that few pivot bytes, rare in the log
    (measured on a sample of the current window, re-measured every ``_REPLAN_BYTES``), cover
    many literals (ten glog ``F0``..``F9`` literals share the pivot ``F``). A single-byte ``find`` is
    ``memchr``, which skims a window at memory speed; at each hit the pivot and the byte after it
    pick, from a dict, the few literals that can sit there, which are then checked in place. A pivot
    byte the log holds often is searched instead with a pattern of the pivot and the rest of each of
    its literals (``_suffix_search``), so that only the hits where one of them follows reach Python. Every
    occurrence of a literal holds its pivot at a known offset, so none is missed: the candidates are
    exactly those of a search for each literal. A caseless literal pivots on both cases of its byte.

    A literal whose every byte is common (all lowercase letters, say) gets a ``find`` pass of its own
    when that is cheaper; such literals share one pass when they share a substring that is rare
    enough (`` passed in `` and `` failed in `` share ``d in ``), and at each hit of that substring the
    byte after it picks the literals to check in place.
    """

    def __init__(self, needles: List[Needle]) -> None:
        self.needles = needles
        self.since_plan = 0  # bytes searched with the plan in force
        self.planned = _Planned([], [], list(needles), 0, {}, {})

    @property
    def pivots(self) -> List[_Pivot]:
        return self.planned.pivots

    @property
    def shared(self) -> List[Tuple[bytes, Dict[bytes, List[Entry]]]]:
        return self.planned.shared

    @property
    def passes(self) -> List[Needle]:
        return self.planned.passes

    @property
    def sampled(self) -> int:
        return self.planned.sampled

    def _plan(self, sample: bytes) -> None:
        sample = sample[:_SAMPLE_BYTES]
        scale = (1 << 20) / max(len(sample), 1)
        counts: Dict[int, float] = {}

        def hits(byte: int) -> float:
            if byte not in counts:
                counts[byte] = (_count(sample, byte) + 1) * scale
            return counts[byte]

        options: List[Tuple[Needle, List[FrozenSet[int]]]] = []
        passes: List[Needle] = []
        for needle_entry in self.needles:
            _, needle, folded = needle_entry
            if len(needle) < 2:
                passes.append(needle_entry)
                continue
            # The pivot is never the last byte, so it and the byte after it form the dict key.
            options.append((needle_entry, list(set(map(_PIVOT_BYTES[folded].__getitem__, needle[:-1])))))
        chosen, uncovered = _cover(options, hits)
        passes.extend(uncovered)
        exact: Dict[int, Dict[bytes, List[Entry]]] = {}
        caseless: Dict[int, Dict[bytes, List[Entry]]] = {}
        for (index, needle, folded), _ in options:
            pivot_bytes = _PIVOT_BYTES[folded]
            usable = [k for k in range(len(needle) - 1) if pivot_bytes[needle[k]] <= chosen]
            if not usable:
                continue
            offset = min(usable, key=lambda k: (sum(map(hits, pivot_bytes[needle[k]])), k))
            key = needle[offset:offset + 2]
            table = caseless if folded else exact
            for b in sorted(pivot_bytes[needle[offset]]):
                table.setdefault(b, {}).setdefault(key, []).append((needle, offset, index))
        pivots = []
        for b in sorted(set(exact) | set(caseless)):
            pivot, by_key, by_lowered = bytes((b,)), exact.get(b, {}), caseless.get(b, {})
            search = _suffix_search(pivot, by_key, by_lowered, hits(b), sample, scale)
            pivots.append(_Pivot(pivot, by_key, by_lowered, search))
        shared, passes = _share_passes(passes, sample)
        searched = {
            index: re.compile(re.escape(needle)).search for index, needle, folded in passes
            if _RE_PASS_COST_S_PER_MIB + _RE_PASS_STOP_COST_S * sum(
                hits(b) for b in _pivot_bytes(needle[0], folded)) < _pass_cost(needle)
        }
        self.planned = _Planned(
            pivots, [(anchor, _by_next_byte(anchor, entries)) for anchor, entries in shared], passes,
            len(sample), _profile(sample, counts), searched,
        )

    def inherit(self, other: "_PivotFinder") -> None:
        """Take ``other``'s plan for the literals this finder holds, where it held them all and has a plan:
        a plan for some literals serves any of them, and costs about 45 ms, which the noisy rules'
        takeover (``_LooseSwitch``) paid for each finder it made, once per rule it took. A searched
        pivot that lost literals is searched for the rest of those it kept, so it stops where they are."""
        keep = {index for index, _, _ in self.needles}
        theirs = other.planned
        if not theirs.sampled or not keep <= {index for index, _, _ in other.needles}:
            return
        pivots = []
        for pivot in theirs.pivots:
            exact, caseless = _kept(pivot.exact, keep), _kept(pivot.caseless, keep)
            if not (exact or caseless):
                continue
            search = pivot.search
            if search is not None and (exact, caseless) != (pivot.exact, pivot.caseless):
                search = _searched_for(pivot.byte, exact, caseless).search
            pivots.append(_Pivot(pivot.byte, exact, caseless, search))
        shared = [(anchor, by_next) for anchor, by_next in
                  ((anchor, _kept(by_next, keep)) for anchor, by_next in theirs.shared) if by_next]
        passes = [needle for needle in theirs.passes if needle[0] in keep]
        searched = {index: search for index, search in theirs.searched.items() if index in keep}
        self.planned = _Planned(pivots, shared, passes, theirs.sampled, theirs.profile, searched)
        self.since_plan = other.since_plan

    def _alike(self, window: bytes) -> bool:
        """Whether ``window``'s head counts the bytes the plan weighed about as its sample did, so that
        a new plan would weigh them alike; only for a plan made on a full sample."""
        planned = self.planned
        if planned.sampled < _SAMPLE_BYTES or len(window) < _PROFILE_BYTES:
            return False
        now = _profile(window, planned.profile)
        return all(abs(now[b] - was) <= max(now[b], was) // 2 + _ALIKE_SLACK
                   for b, was in planned.profile.items())

    def __call__(self, window: bytes, out: Candidates) -> None:
        # A plan made on a small sample (a run archive's 63-byte "Set up job" log, the guard's first
        # chunk) sees every byte as frequent and gives nearly every literal a pass: the first window
        # that offers twice the sample plans again.
        # The first plan waits for a sample's worth of log: making it (the cover of every literal) costs
        # about 0.1 s, more than plain passes over a small log cost in all.
        sample_at_hand = self.sampled > 0 or self.since_plan + len(window) >= _SAMPLE_BYTES
        if sample_at_hand and (
            self.since_plan >= _REPLAN_BYTES or min(len(window), _SAMPLE_BYTES) >= 2 * self.sampled
        ):
            if not (self.since_plan >= _REPLAN_BYTES and self._alike(window)):
                self._plan(window)
            self.since_plan = 0
        self.since_plan += len(window)
        find = window.find
        rfind = window.rfind
        startswith = window.startswith

        def record(start: int, index: int) -> None:
            hit = out.get(start)
            if hit is None:
                out[start] = {index}
            else:
                hit.add(index)

        pivots, shared, passes, _, _, searched = self.planned
        for pivot, exact, caseless, search in pivots:
            for at in _pivot_hits(window, pivot, search):
                key = window[at:at + 2]
                entries = exact.get(key)
                if entries is not None:
                    for needle, offset, index in entries:
                        if at >= offset and startswith(needle, at - offset):
                            record(rfind(b"\n", 0, at) + 1, index)
                if caseless:
                    entries = caseless.get(key.lower())
                    if entries is not None:
                        for needle, offset, index in entries:
                            begin = at - offset
                            if begin >= 0 and window[begin:begin + len(needle)].lower() == needle:
                                record(rfind(b"\n", 0, at) + 1, index)
        if not (shared or passes):
            return
        lowered = window.lower() if any(folded for _, _, folded in passes) else window
        for anchor, by_next in shared:
            at = find(anchor)
            after = len(anchor)
            while at != -1:
                for entries in (by_next.get(window[at + after:at + after + 1]), by_next.get(b"")):
                    for needle, offset, index in entries or ():
                        if at >= offset and startswith(needle, at - offset):
                            record(rfind(b"\n", 0, at) + 1, index)
                at = find(anchor, at + 1)
        for index, needle, folded in passes:
            haystack = lowered if folded else window
            search = searched.get(index)
            # partial, not a lambda: the plain find pass runs no Python frame per hit
            next_hit = partial(haystack.find, needle) if search is None else _search_starts(haystack, search)
            _scan(haystack, index, next_hit, out)


def _profile(sample: bytes, weighed: Iterable[int]) -> Dict[int, int]:
    """How often each byte of ``weighed`` occurs in the first ``_PROFILE_BYTES`` of ``sample``."""
    head = sample[:_PROFILE_BYTES]
    return {b: _count(head, b) for b in weighed}


def _count(data: bytes, byte: int) -> int:
    """How often ``byte`` occurs in ``data``. ``bytes.count`` of one byte is a plain loop (about 0.3 ms a
    MiB, CPython 3.11) where ``in`` is memchr (0.01 ms where the byte is absent): a plan weighs about 110
    bytes of the catalogue's literals, and half of them, or all but a few on a log of short lines, are
    not there."""
    one = bytes((byte,))
    return data.count(one) if one in data else 0


def _pivot_hits(window: bytes, pivot: bytes, search: Optional[Search]) -> Iterator[int]:
    """Every offset of ``pivot`` in ``window`` (memchr), or only those ``search`` matches at."""
    if search is None:
        find = window.find
        at = find(pivot)
        while at != -1:
            yield at
            at = find(pivot, at + 1)
        return
    # search, not finditer: a literal may start inside the match of another
    match = search(window)
    while match is not None:
        at = match.start()
        yield at
        match = search(window, at + 1)


def _suffix_search(
    pivot: bytes,
    exact: Dict[bytes, List[Entry]],
    caseless: Dict[bytes, List[Entry]],
    hits_per_mib: float,
    sample: bytes,
    scale: float,
) -> Optional[Search]:
    """The search for the literals of ``pivot``, matching at the pivot's offset in each, when it costs less
    than a memchr pass and a Python step at every hit; None otherwise. It matches wherever some entry of
    the pivot is found, so the entries checked at its hits are all those that can match."""
    if _pivot_cost(hits_per_mib) <= _SUFFIX_PASS_COST_S_PER_MIB:
        return None
    next_bytes = len({needle[offset + 1] for table in (exact, caseless) for entries in table.values()
                      for needle, offset, _ in entries})
    stop_cost = _SUFFIX_STOP_COST_S + next_bytes * _SUFFIX_ALTERNATIVE_COST_S
    # The search's own matches cost at least one hit (``matched`` counts one more than it finds): where
    # even that loses, the answer is None without compiling the pattern (1-3 ms for a pivot of a hundred
    # literals) to count its matches on the sample.
    least = _SUFFIX_PASS_COST_S_PER_MIB + hits_per_mib * stop_cost + scale * _HIT_COST_S
    if least >= _pivot_cost(hits_per_mib):
        return None
    pattern = _searched_for(pivot, exact, caseless)
    matched = (len(pattern.findall(sample)) + 1) * scale
    cost = _SUFFIX_PASS_COST_S_PER_MIB + hits_per_mib * stop_cost + matched * _HIT_COST_S
    return pattern.search if cost < _pivot_cost(hits_per_mib) else None


def _searched_for(
    pivot: bytes, exact: Dict[bytes, List[Entry]], caseless: Dict[bytes, List[Entry]]
) -> "re.Pattern[bytes]":
    """The pattern of ``pivot`` followed by the rest of one of its literals (``_suffix_search``)."""
    branches = [_rests_pattern(_rests(exact))] if exact else []
    if caseless:
        branches.append(b"(?i:" + _rests_pattern(_rests(caseless)) + b")")
    either = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
    return re.compile(re.escape(pivot) + either)


def _kept(table: Dict[bytes, List[Entry]], keep: Set[int]) -> Dict[bytes, List[Entry]]:
    """``table`` with only the entries of the literals ``keep`` names, and no key left without one."""
    kept = {key: [entry for entry in entries if entry[2] in keep] for key, entries in table.items()}
    return {key: entries for key, entries in kept.items() if entries}


Rest = Tuple[bytes, bytes]  # a literal after its pivot, and the literal to look back on (or b"")
# A user's literal may be thousands of bytes: the trie (a group per byte) and the look back stop this
# far, and the hits are confirmed in full in Python, as every hit is. Compiling the patterns is a quarter
# of a plan: at 32 and 64 bytes, 13.5 ms for the searched pivots of the bench's test-heavy log, at 8 and
# 16, 9 ms, with the same stops (9,121 in 8 MiB) and the same speed (CPython 3.11, 2026-12-06).
_REST_BYTES = 8
_BEHIND_BYTES = 16


def _rests(by_key: Dict[bytes, List[Entry]]) -> List[Rest]:
    # Past the pivot the rest can be short and common ("han" of "than"): a look back over the literal
    # confirms it, and costs only where the rest matched. A pivot at offset 0 needs none.
    rests = set()
    for entries in by_key.values():
        for needle, offset, _ in entries:
            end = min(len(needle), offset + 1 + _REST_BYTES)
            behind = needle[max(0, end - _BEHIND_BYTES):end] if offset else b""
            rests.add((needle[offset + 1:end], behind))
    return sorted(rests)


def _rests_pattern(rests: Sequence[Rest]) -> bytes:
    """A pattern matching where any of ``rests`` does, as a trie: at each byte sre tries only the
    branches of the bytes that can come next, however many literals share the pivot."""
    if len(rests) == 1:  # a branch of one literal: the same pattern as the trie's, a byte a level
        rest, behind = rests[0]
        return re.escape(rest) + (b"(?<=" + re.escape(behind) + b")" if behind else b"")
    if any(not rest and not behind for rest, behind in rests):
        return b""  # matches here already: the longer rests add nothing to where it matches
    branches = [b"(?<=" + re.escape(behind) + b")" for behind in sorted({b for r, b in rests if not r and b})]
    by_first: Dict[bytes, List[Rest]] = {}
    for rest, behind in rests:
        if rest:
            by_first.setdefault(rest[:1], []).append((rest[1:], behind))
    branches.extend(re.escape(first) + _rests_pattern(by_first[first]) for first in sorted(by_first))
    return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"


def _cover(
    options: List[Tuple[Needle, List[FrozenSet[int]]]], hits: Callable[[int], float]
) -> Tuple[Set[int], List[Needle]]:
    """The pivot bytes to search, and the literals better found by a pass of their own.

    A pivot byte costs its memchr pass and its hits once (or, for a common byte, its search: see
    ``_searched_pivot_cost``), however many literals use it, so pivots are chosen together: the classic
    greedy of weighted set cover, taking the pivot that costs least per pass it saves while that is
    below one."""
    chosen: Set[int] = set()
    left = options
    while left:
        saving: Dict[FrozenSet[int], float] = {}
        for (_, needle, _), sets in left:
            own = _pass_cost(needle)
            for pivot_set in sets:
                saving[pivot_set] = saving.get(pivot_set, 0.0) + own
        best, best_ratio = None, 1.0
        for pivot_set, saved in saving.items():
            ratio = sum(_searched_pivot_cost(hits(b)) for b in pivot_set if b not in chosen) / saved
            if ratio < best_ratio:
                best, best_ratio = pivot_set, ratio
        if best is None:
            break
        chosen |= best
        left = [(entry, sets) for entry, sets in left if not any(p <= chosen for p in sets)]
    return chosen, [entry for entry, _ in left]


def _pivot_bytes(byte: int, caseless: bool) -> FrozenSet[int]:
    """The bytes a pivot on ``byte`` must find: both cases of a letter of a caseless literal."""
    if caseless and 97 <= byte <= 122:
        return frozenset((byte, byte - 32))
    return frozenset((byte,))


# _pivot_bytes of every byte, exact and caseless, looked up: a plan asks it about 30,000 times, which as
# calls cost about a quarter of a plan's 22-40 ms (bench shapes, CPU time, 2026-12-06).
_PIVOT_BYTES = tuple(tuple(_pivot_bytes(b, caseless) for b in range(256)) for caseless in (False, True))


def _searched_pivot_cost(hits_per_mib: float) -> float:
    """What a pivot byte costs at best: a memchr pass, or (when the byte is common) a search of a few
    literals' rests (``_suffix_search``), their own hits not counted."""
    stop_cost = _SUFFIX_STOP_COST_S + _TYPICAL_ALTERNATIVES * _SUFFIX_ALTERNATIVE_COST_S
    return min(_pivot_cost(hits_per_mib), _SUFFIX_PASS_COST_S_PER_MIB + hits_per_mib * stop_cost)


def _pivot_cost(hits_per_mib: float) -> float:
    return _MEMCHR_COST_S_PER_MIB + hits_per_mib * _HIT_COST_S


def _pass_cost(needle: bytes) -> float:
    return _PASS_COST_S_PER_MIB + _PASS_COST_S_PER_MIB_BYTE / len(needle)


def _by_next_byte(anchor: bytes, needles: Sequence[Needle]) -> Dict[bytes, List[Entry]]:
    """Where ``anchor`` sits in each literal, keyed by the byte that follows it there: at a hit in the
    window, that byte picks the few literals worth checking in place."""
    table: Dict[bytes, List[Entry]] = {}
    for index, needle, _folded in needles:
        at = needle.find(anchor)
        while at != -1:
            after = at + len(anchor)
            table.setdefault(needle[after:after + 1], []).append((needle, at, index))
            at = needle.find(anchor, at + 1)
    return table


def _scan(window: bytes, index: int, next_hit: Callable[[int], int], out: Candidates) -> None:
    """Record each line of ``window`` holding literal ``index`` once; ``next_hit(pos)``: where its next
    hit at or after ``pos`` starts, -1 when none (``window.find`` of it, or ``_search_starts``)."""
    find = window.find
    rfind = window.rfind
    at = next_hit(0)
    while at != -1:
        start = rfind(b"\n", 0, at) + 1
        hit = out.get(start)
        if hit is None:
            out[start] = {index}
        else:
            hit.add(index)
        end = find(b"\n", at)
        if end == -1:
            break
        at = next_hit(end + 1)


def _search_starts(window: bytes, search: Search) -> Callable[[int], int]:
    """``_scan``'s ``next_hit`` for a literal found with its ``re`` search (a pass that sre makes cheaper)."""
    def next_hit(pos: int) -> int:
        match = search(window, pos)
        return -1 if match is None else match.start()
    return next_hit


def _share_passes(
    passes: List[Needle], sample: bytes
) -> Tuple[List[Tuple[bytes, Tuple[Needle, ...]]], List[Needle]]:
    """Greedily replace passes of literals by passes of substrings they share, while that saves time."""
    scale = (1 << 20) / max(len(sample), 1)
    counts: Dict[bytes, float] = {}
    shared: List[Tuple[bytes, Tuple[Needle, ...]]] = []
    remaining = list(passes)
    while len(remaining) > 1:
        covering: Dict[bytes, List[Needle]] = {}
        for entry in remaining:
            needle = entry[1]
            if entry[2]:
                continue  # a caseless literal keeps its own pass over the lowercased window
            subs = {needle[i:i + size] for size in range(3, 9) for i in range(len(needle) - size + 1)}
            for sub in subs:
                covering.setdefault(sub, []).append(entry)
        best = None
        for sub, covered in covering.items():
            if len(covered) < 2:
                continue
            if sub not in counts:
                counts[sub] = (sample.count(sub) + 1) * scale
            passes_saved = sum(_pass_cost(entry[1]) for entry in covered) - _pass_cost(sub)
            saving = passes_saved - counts[sub] * _ANCHOR_HIT_COST_S
            if saving > 0 and (best is None or (saving, sub) > (best[0], best[1])):
                best = (saving, sub, covered)
        if best is None:
            break
        shared.append((best[1], tuple(best[2])))
        remaining = [entry for entry in remaining if entry not in best[2]]
    return shared, remaining


def hyperscan_finder(
    plan: Plan, loose: Optional[LoosePatterns] = None, hints: Sequence[bytes] = (),
) -> Finder:
    """A finder that matches every literal of the plan in one Hyperscan pass over the window; given
    the engine's ``loose`` patterns, it takes over their noisy rules (``_LooseSwitch``) in the same pass.
    ``hints``: multi-line patterns the same pass also looks for (the progress letters' rows); the finder's
    ``with_hints(window)`` then returns the candidates and the end offset of each hint's match."""
    if not plan.literals:
        return lambda window: {}
    literal = _LiteralPass(plan.literals, None, {}, hints)
    if loose is None:
        return literal
    return _LooseSwitch(plan, literal, loose, _literal_database, _hyperscan_loose_matcher,
                        lambda lits, ids, patterns: _LiteralPass(lits, ids, patterns, hints))


_MAX_REBUILDS = 8  # each new noisy rule recompiles; a log cannot make that happen without end


LineHits = Callable[[bytes], Iterable[Tuple[int, int]]]  # window -> (line start, rule index) of matches
LiteralsFinder = Callable[[Sequence[Literal], Optional[Sequence[int]]], Finder]
LooseMatcher = Callable[[Dict[int, Rule], LoosePatterns], Optional[Tuple[LineHits, List[int]]]]
# The other literals and the noisy rules' loosened patterns (rule index -> pattern) in one pass.
Merged = Callable[[Sequence[Literal], List[int], Dict[int, bytes]], "_LiteralPass"]


class _LooseSwitch:
    """The literal finder, until the engine's loosened check finds a rule noisy (its literal holds
    thousands of innocent lines: ``exitcode`` in every ``exitcode: 0``). Noisy rules are then found by
    their loosened patterns (``_engine_approx``), and their literals leave the literal pass, so those
    innocent lines never reach Python: in one Hyperscan pass (``_hyperscan_loose_matcher``), or on the
    pure-Python path by an ``re`` search over the window for each rule whose loosened pattern starts
    with a literal, which sre skims for in C (``_python_loose_matcher``). Compiling a loosened pattern
    costs a few milliseconds and a few MiB, so only noisy rules get one.

    The output keeps the literal finder's meaning for every line it names (the literals in that
    line), and it names every line where a noisy rule's literal *and* its loosened pattern both
    occur: the only lines the engine's own loosened check keeps, so every mode (and the pure-Python
    engine) confirms the same lines. A line with a byte over 0x7f keeps the literal prefilter alone,
    as the engine's loosened check does.
    """

    def __init__(
        self, plan: Plan, literal: Finder, loose: LoosePatterns, literals: LiteralsFinder,
        matcher: LooseMatcher, merged: Optional[Merged] = None,
    ) -> None:
        """``merged``: Hyperscan's one pass of the other literals and the loosened patterns (None: the
        ``matcher``'s line hits are a pass of their own)."""
        self.plan = plan
        self.literal = literal
        self.loose = loose
        self.literals = literals
        self.matcher = matcher
        self.merged = merged
        self.loosened: FrozenSet[int] = frozenset()
        self.rebuilds = 0
        # (the noisy rules' line hits, the finder of the other literals, of the noisy rules' own
        # literals (for lines that are not ASCII), needles per rule)
        self.state: Optional[Tuple[LineHits, Finder, Finder, Dict[int, Tuple[Needle, ...]]]] = None
        self.lock = threading.Lock()

    def __call__(self, window: bytes) -> Candidates:
        return self.with_hints(window)[0]

    def with_hints(self, window: bytes, ascii: Optional[bool] = None) -> Tuple[Candidates, HintEnds]:
        """The candidates of ``window``, and the ends of the hints' matches where the pass found them;
        ``ascii``: whether the window is ASCII, where the caller knows (a pass over it saved)."""
        if not self.loose.noisy <= self.loosened and self.rebuilds < _MAX_REBUILDS:
            with self.lock:
                noisy = self.loose.noisy
                if not noisy <= self.loosened and self.rebuilds < _MAX_REBUILDS:
                    # One Hyperscan pass is recompiled for them: the warm rules come too (``WARM_SHARE``).
                    # The pure-Python path searches each taken rule's pattern over every window, which a
                    # rule of few candidate lines would not repay.
                    if self.merged is not None:
                        noisy = noisy | self.loose.warm()
                    self.state = self._build(noisy)
                    self.loosened = noisy
                    self.rebuilds += 1
        state = self.state
        if state is None:
            literal = self.literal
            if isinstance(literal, _LiteralPass):
                return literal.with_hints(window)
            return literal(window), None
        line_hits, rest, gone, needles = state
        if isinstance(rest, _LiteralPass) and rest.loose:
            out, hint_ends, hits = rest.scan(window)
            return self._loosely(window, out, hits, gone, needles, ascii), hint_ends
        out, hint_ends = rest.with_hints(window) if isinstance(rest, _LiteralPass) else (rest(window), None)
        return self._loosely(window, out, line_hits(window), gone, needles, ascii), hint_ends

    def _build(self, noisy: FrozenSet[int]):
        needles: Dict[int, List[Tuple[int, bytes, bool]]] = {rule: [] for rule in noisy}
        for index, lit in enumerate(self.plan.literals):
            for rule in lit.rules:
                if rule in needles:
                    needles[rule].append((index, lit.needle, lit.caseless))
        rules = {rule: self.loose.rules[rule] for rule in sorted(noisy) if needles[rule]}
        if self.merged is not None:
            state = self._build_merged(rules, needles)
            if state is not None:
                return state
        found = self.matcher(rules, self.loose)
        if found is None:
            return None
        line_hits, taken = found
        literals = self.plan.literals
        gone, rest = self._split_literals(taken)
        rest_finder: Optional[Finder] = None
        if self.merged is not None:
            try:
                rest_finder = self.merged([literals[i] for i in rest], rest, _hyperscan_loose_patterns(
                    {rule: self.loose.rules[rule] for rule in taken}))
            except Exception:  # hyperscan.error: the loosened patterns keep a pass of their own
                rest_finder = None
        # The finder in force planned for all the literals, or for more than the takeover leaves.
        planned = self.state[1] if self.state is not None else self.literal
        if rest_finder is None:
            rest_finder = self.literals([literals[i] for i in rest], rest)
            _inherit(rest_finder, planned)
        gone_finder = self.literals([literals[i] for i in gone], gone)
        _inherit(gone_finder, self.literal)
        return line_hits, rest_finder, gone_finder, {rule: tuple(needles[rule]) for rule in taken}

    def _split_literals(self, taken: Iterable[int]) -> Tuple[List[int], List[int]]:
        """The plan's literals whose rules are all ``taken`` over (no longer searched for themselves), and
        the rest, by index."""
        taken = set(taken)
        gone: List[int] = []
        rest: List[int] = []
        for i, lit in enumerate(self.plan.literals):
            (gone if lit.rules and set(lit.rules) <= taken else rest).append(i)
        return gone, rest

    def _build_merged(self, rules: Dict[int, Rule], needles: Dict[int, List[Tuple[int, bytes, bool]]]):
        """``_build``'s state when every one of ``rules``' loosened patterns compiles in Hyperscan's one
        merged pass, whose matches are then the line hits; None otherwise (``_build`` then finds which
        compile on their own). It saves compiling the loosened patterns in a database of their own
        first (about 10 ms a rebuild), which only a failed merge needs."""
        patterns = _hyperscan_loose_patterns(rules)
        if not patterns or self.merged is None:
            return None
        taken = sorted(patterns)
        literals = self.plan.literals
        gone, rest = self._split_literals(taken)
        try:
            rest_finder = self.merged([literals[i] for i in rest], rest, patterns)
        except Exception:  # hyperscan.error, as in ``_build``: there they get a pass of their own
            return None
        gone_finder = self.literals([literals[i] for i in gone], gone)
        _inherit(gone_finder, self.literal)
        loose = self.loose
        own: List[LineHits] = []

        def line_hits(window: bytes) -> Iterable[Tuple[int, int]]:
            # Unused while the merged pass holds the patterns (``with_hints``); kept for the state's shape.
            if not own:
                found = self.matcher(rules, loose)
                own.append(found[0] if found is not None else (lambda window: ()))
            return own[0](window)

        return line_hits, rest_finder, gone_finder, {rule: tuple(needles[rule]) for rule in taken}

    @staticmethod
    def _loosely(
        window: bytes, out: Candidates, line_hits: Iterable[Tuple[int, int]], gone: Finder, needles,
        ascii: Optional[bool] = None,
    ) -> Candidates:
        """``out``, the other literals' candidates, with each line a noisy rule's loosened pattern
        matched (``line_hits``: (line start, rule index)) where its literal is too."""
        if not (window.isascii() if ascii is None else ascii):
            for start, lits in gone(window).items():
                end = window.find(b"\n", start)
                if not window[start:end if end != -1 else len(window)].isascii():
                    out.setdefault(start, set()).update(lits)
        done: Set[Tuple[int, int]] = set()
        for start, rule in line_hits:
            if (start, rule) in done:
                continue
            done.add((start, rule))
            stop = window.find(b"\n", start)
            stop = len(window) if stop == -1 else stop
            lowered: Optional[bytes] = None  # the line folded, made when a caseless needle needs it
            for index, needle, caseless in needles[rule]:
                if caseless:
                    if lowered is None:
                        lowered = window[start:stop].lower()
                    found = lowered.find(needle) != -1
                else:
                    found = window.find(needle, start, stop) != -1
                if found:
                    out.setdefault(start, set()).add(index)
        return out


def _hyperscan_loose_matcher(
    rules: Dict[int, Rule], loose: LoosePatterns,
) -> Optional[Tuple[LineHits, List[int]]]:
    """The noisy rules' loosened patterns in one Hyperscan database; the line of each match's last byte
    (a loosened class may take a "\n")."""
    found = _loose_database(_hyperscan_loose_patterns(rules))
    if found is None:
        return None
    database, taken = found
    local = threading.local()

    def line_hits(window: bytes) -> Iterator[Tuple[int, int]]:
        for end, rule in match_ends(database, local, window):
            yield window.rfind(b"\n", 0, end - 1) + 1, rule

    return line_hits, taken


def _python_loose_matcher(
    rules: Dict[int, Rule], loose: LoosePatterns,
) -> Optional[Tuple[LineHits, List[int]]]:
    """The noisy rules whose loosened pattern, made to stay within a line (``within_line``), starts with
    a literal: sre finds that prefix in C, so a search over the window costs about a memchr pass, and no
    attempt runs past its line. A pattern that starts with a class would be tried at every byte: such
    rules keep their literals. Rules whose patterns open with the same literal (``exitcode`` of four
    launcher rules) share one search (``_shared_searches``)."""
    searched = []
    for index, rule in rules.items():
        folded = searched_folded(rule)
        pattern = rule_line_pattern(rule, folded, within_line=True)
        if pattern is not None and _starts_with_literal(pattern):
            searched.append((index, pattern, folded))
    if not searched:
        return None
    searches = _shared_searches(searched)

    def line_hits(window: bytes) -> Iterator[Tuple[int, int]]:
        lowered: Optional[bytes] = None
        for pattern, folded, own in searches:
            if folded and lowered is None:
                lowered = window.lower()
            text = lowered if folded else window
            if len(own) == 1:
                index = own[0][0]
                for start in _lines_matching(pattern, text):
                    yield start, index
                continue
            find = text.find
            for start in _lines_matching(pattern, text):
                stop = find(b"\n", start)
                stop = len(text) if stop == -1 else stop
                for index, search in own:
                    if search(text, start, stop) is not None:
                        yield start, index

    return line_hits, [index for index, _, _ in searched]


# The literal a pattern opens with that lets rules share one search: shorter, and the shared search
# stops where one rule's own would have skimmed on.
_SHARED_PREFIX_BYTES = 4
SharedSearch = Tuple[Any, bool, List[Tuple[int, Any]]]  # pattern, folded, (rule index, its own search)


def _shared_searches(searched: Sequence[Tuple[int, bytes, bool]]) -> List[SharedSearch]:
    """One search per group of loosened patterns that open with the same literal (and are searched in the
    same text, folded or not), each group's own patterns kept to tell which rules hold on a line it finds.

    A pattern that cannot match a ``\n`` matches somewhere in a line exactly when one of its branches
    does, so the lines the alternation finds are the union of the lines each finds; sre factors the shared
    opening literal out of the alternation, so it still skims for it in C (each search costs about
    0.3-0.7 ms a MiB of a test-heavy log, with four launcher rules opening with ``exit``). On a line it
    finds, each pattern is searched within that line only: the same answer, since none crosses a line."""
    groups: Dict[Tuple[bool, bytes], List[Tuple[int, bytes]]] = {}
    order: List[Tuple[bool, bytes]] = []
    for index, pattern, folded in searched:
        head = _literal_head(pattern)
        key = (folded, head[:_SHARED_PREFIX_BYTES] if len(head) >= _SHARED_PREFIX_BYTES else pattern)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((index, pattern))
    searches: List[SharedSearch] = []
    for key in order:
        members = groups[key]
        own = [(index, re.compile(pattern).search) for index, pattern in members]
        if len(members) == 1:
            searches.append((re.compile(members[0][1]), key[0], own))
            continue
        # (bare, not each in a group: sre factors out only items the branches share, and a group is one)
        joined = b"|".join(pattern for _, pattern in members)
        try:
            shared = re.compile(joined) if _starts_with_literal(joined) else None
        except re.error:
            shared = None
        if shared is not None:
            searches.append((shared, key[0], own))
        else:  # sre kept no literal to skim for: each its own search, as alone
            searches.extend((re.compile(pattern), key[0], [(index, search)])
                            for (index, pattern), (_, search) in zip(members, own))
    return searches


def _literal_head(pattern: bytes) -> bytes:
    """The fixed bytes ``pattern`` opens with (b"" when it opens with anything else)."""
    head = bytearray()
    for op, av in _sre_parse.parse(pattern).data:
        if op is not _C.LITERAL:
            break
        head.append(av)
    return bytes(head)


def _starts_with_literal(pattern: bytes) -> bool:
    data = _sre_parse.parse(pattern).data
    return bool(data) and data[0][0] is _C.LITERAL


def _hyperscan_loose_patterns(rules: Dict[int, Rule]) -> Dict[int, bytes]:
    """Each rule's loosened pattern as Hyperscan takes it (rule index -> pattern), where it has one."""
    patterns = {}
    for index, rule in rules.items():
        # The line's end as Hyperscan can say it (no lookahead; ``$`` before each "\n" in multi-line
        # mode): a match may take the "\r" a segment ends at, never the "\n", so its line is still its own.
        pattern = rule_line_pattern(rule, hyperscan=True)
        if pattern is not None:
            patterns[index] = pattern.replace(LINE_END, HYPERSCAN_LINE_END)
    return patterns


def _lines_matching(pattern: Any, text: bytes) -> Iterator[int]:
    """The start of every line of ``text`` holding a match of ``pattern``, which cannot match a ``\n``
    (``within_line``): each match found lies within one line, so the search goes on at the next."""
    search = pattern.search
    pos = 0
    while True:
        match = search(text, pos)
        if match is None:
            return
        yield text.rfind(b"\n", 0, match.start()) + 1
        pos = text.find(b"\n", match.end()) + 1
        if pos == 0:
            return


def _loose_database(patterns: Dict[int, bytes]) -> Optional[Tuple[Any, List[int]]]:
    """One Hyperscan database of the loosened patterns (id = rule index), leaving out any that
    Hyperscan refuses; None when none compiles."""
    import hyperscan

    ids = sorted(patterns)
    try:
        return _compile_prefilter([patterns[i] for i in ids], ids), ids
    except hyperscan.error:
        pass
    ids = [i for i in ids if _compiles(patterns[i])]
    return (_compile_prefilter([patterns[i] for i in ids], ids), ids) if ids else None


def _compiles(pattern: bytes) -> bool:
    import hyperscan

    try:
        _compile_prefilter([pattern], [0])
    except hyperscan.error:
        return False
    return True


def _compile_prefilter(expressions: List[bytes], ids: List[int]) -> Any:
    import hyperscan

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE  # "$" at each line's end
    db.compile(expressions=expressions, ids=ids, flags=[flags] * len(ids))
    return db


def hyperscan_markers(markers: Sequence[bytes]) -> Callable[[bytes], FrozenSet[bytes]]:
    """Which of ``markers`` (literals, none empty) occur in a window, in one Hyperscan pass that reports
    each at most once. Raises what Hyperscan raises when it cannot run here."""
    import hyperscan

    db = database("markers", list(markers), list(range(len(markers))),
                  [hyperscan.HS_FLAG_SINGLEMATCH] * len(markers), literal=True)
    local = threading.local()

    def found(window: bytes) -> FrozenSet[bytes]:
        return frozenset(markers[index] for _end, index in match_ends(db, local, window))

    return found


def _literal_database(literals: Sequence[Literal], ids: Optional[Sequence[int]] = None) -> Finder:
    """A finder for ``literals`` (reported as ``ids``, default their positions) in one Hyperscan pass."""
    if not literals:
        return lambda window: {}
    return _LiteralPass(literals, ids, {}, ())


# Ids of the patterns a literal pass holds beside the literals: a loosened pattern's is its rule's index
# plus _LOOSE_ID, a hint's its position plus _HINT_ID (a plan has far fewer literals).
_LOOSE_ID = 1 << 24
_HINT_ID = 1 << 25


class _LiteralPass:
    """One Hyperscan pass over a window for ``literals`` (reported as ``ids``, default their positions)
    and, in the same database, the noisy rules' loosened patterns (``loose``: rule index -> pattern,
    ``_LooseSwitch``) and the progress letters' ``hints``: each pass reads the whole window, and a test-heavy
    log's window costs about 0.6 ms a MiB for the literals, 0.3 for the loosened patterns and 0.65 for the
    hints in passes of their own, about 1.05 in one. With anything beside the literals the database is
    compiled in pattern mode, each literal's bytes escaped (the same matches, caseless ones too)."""

    def __init__(
        self, literals: Sequence[Literal], ids: Optional[Sequence[int]], loose: Dict[int, bytes],
        hints: Sequence[bytes],
    ) -> None:
        import hyperscan

        self.loose = bool(loose)
        self.hints = bool(hints)
        caseless = [hyperscan.HS_FLAG_CASELESS if lit.caseless else 0 for lit in literals]
        all_ids = list(ids) if ids is not None else list(range(len(literals)))
        name = "literals" if ids is None else "kept-literals"
        if not loose and not hints:
            self.db = database(name, [lit.needle for lit in literals], all_ids, caseless, literal=True)
        else:
            rules = sorted(loose)
            line_flags = hyperscan.HS_FLAG_MULTILINE  # "^" and "$" at each line's ends
            expressions = [_escaped(lit.needle) for lit in literals] + [loose[r] for r in rules] + list(hints)
            all_ids += [_LOOSE_ID + r for r in rules] + [_HINT_ID + k for k in range(len(hints))]
            flags = caseless + [hyperscan.HS_FLAG_PREFILTER | line_flags] * len(rules)
            flags += [line_flags] * len(hints)
            if loose:  # the rules a scan took over vary from log to log: not worth a file in the cache
                self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                self.db.compile(expressions=expressions, ids=all_ids, flags=flags)
            else:
                self.db = database(name + "-hints", expressions, all_ids, flags)
        self.local = threading.local()

    def __call__(self, window: bytes) -> Candidates:
        return self.scan(window)[0]

    def with_hints(self, window: bytes, ascii: Optional[bool] = None) -> Tuple[Candidates, HintEnds]:
        out, hint_ends, _ = self.scan(window)
        return out, hint_ends

    def scan(self, window: bytes) -> Tuple[Candidates, HintEnds, List[Tuple[int, int]]]:
        """The literals' candidates, the hints' match ends (None without hints), and (line start, rule
        index) of each loosened pattern's match (the line of its last byte: a loosened class may take
        a "\n")."""
        ends = match_ends(self.db, self.local, window)
        out: Candidates = {}
        hint_ends: HintEnds = [] if self.hints else None
        hits: List[Tuple[int, int]] = []
        rfind = window.rfind
        last_line = -1
        last_end = -1
        for end, index in ends:
            if index >= _LOOSE_ID:
                if index >= _HINT_ID:
                    hint_ends.append(end)  # type: ignore[union-attr]
                else:
                    hits.append((rfind(b"\n", 0, end - 1) + 1, index - _LOOSE_ID))
                continue
            # A literal never holds b"\n", so the line starts after the last one before its end.
            if last_line < end <= last_end:
                start = last_line
            else:
                start = rfind(b"\n", 0, end) + 1
                nl = window.find(b"\n", end)
                last_line, last_end = start, (nl if nl != -1 else len(window))
            hit = out.get(start)
            if hit is None:
                out[start] = {index}
            else:
                hit.add(index)
        return out, hint_ends, hits


def _escaped(needle: bytes) -> bytes:
    """``needle`` as a pattern that matches its bytes alone (letters and digits as they are, for caseless)."""
    return b"".join(map(_ESCAPES.__getitem__, needle))


# Each byte's escape, looked up: every run escapes the catalogue's ~690 literals to find the cached
# database, and a generator expression per byte cost 2.3 ms of start-up (this: 0.5 ms).
_ESCAPES = tuple(bytes([c]) if chr(c).isalnum() and c < 0x80 else b"\\x%02x" % c for c in range(256))
