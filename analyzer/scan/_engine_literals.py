"""Which literal strings a line must contain before a rule can match it: the engine's prefilter plan.

Both engines find candidate lines with the *same* literals (Hyperscan as a multi-literal matcher, the
pure-Python path with ``bytes.find``), so they produce the same candidates and therefore the same
matches by construction; only the speed differs. A rule's literals come from its ``literals`` key, or
are extracted here from its pattern (``pattern``, or ``start`` for a block rule) by reading the parse
tree of Python's own regex parser: a run of literal characters every match must contain, or one of a
set of alternatives when the requirement sits in an alternation. A rule with no usable literal (a
pattern that only the ``regex`` module can parse, or one made only of classes) is checked on every line:
correct, but slow on big logs.

A single-line echo marker (``state.is_line_echo``: pytest's "t.py::t[...] PASSED" lines) only drops the
other matches of its own line, so its literals are not searched for: it *rides* on the lines some other
rule is a candidate of. Its literal (PASSED) is on 40% of a test-heavy log's lines, and finding them all
would cost a Python call per innocent test line.

Caseless literals are ASCII-caseless in both engines (Hyperscan's ``HS_FLAG_CASELESS``, ``bytes.lower``
in Python). ``regex``'s Unicode case folding also lets ``k`` match the Kelvin sign and ``s`` the long
s; a line whose only spelling of a caseless literal uses such characters is not a candidate.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from ..rules.model import Rule
from .state import is_line_echo

try:  # Python 3.11+ moved the parser and deprecated the old module name.
    from re import _constants as _sre_constants  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.9 and 3.10
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_C = _sre_constants
_REPEATS = tuple(
    getattr(_C, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_C, name)
)
_ATOMIC = getattr(_C, "ATOMIC_GROUP", None)


# Requirement, Literal and Plan are plain classes, not frozen dataclasses: making the three cost about
# 1 ms of every run's start-up (the generated methods' ``exec``), and none of them is compared, hashed,
# ``replace``d or read with ``fields()``; they are never changed after they are made.
class Requirement:
    """A line can match only if it contains one of ``alternatives`` (ASCII-caseless if ``caseless``)."""

    __slots__ = ("alternatives", "caseless")

    def __init__(self, alternatives: Tuple[str, ...], caseless: bool) -> None:
        self.alternatives = alternatives
        self.caseless = caseless

    @property
    def score(self) -> Tuple[int, int]:
        return (min(len(a) for a in self.alternatives), -len(self.alternatives))


class Literal:
    """One distinct needle of the plan and the indices of the rules it makes candidates."""

    __slots__ = ("needle", "caseless", "rules")

    def __init__(self, needle: bytes, caseless: bool, rules: Tuple[int, ...]) -> None:
        self.needle = needle  # lowercased when caseless
        self.caseless = caseless
        self.rules = rules


class Plan:
    """The prefilter for a catalogue: distinct literals, rules that must see every line, and rules
    tried on every line another rule is a candidate of (``riders``). A probe is a literal of no rule
    that the engine wants to hear of in the same pass (a line holding it is a candidate)."""

    __slots__ = ("literals", "always", "riders", "probes")

    def __init__(
        self, literals: Tuple[Literal, ...], always: Tuple[int, ...], riders: Tuple[int, ...] = (),
        probes: Tuple[bytes, ...] = (),
    ) -> None:
        self.literals = literals
        self.always = always
        self.riders = riders
        self.probes = probes  # the last literals, in this order

    def probe(self, needle: bytes) -> Optional[int]:
        """The index of the probe literal ``needle`` (``build_plan``'s ``probes``), None if not one."""
        if needle not in self.probes:
            return None
        return len(self.literals) - len(self.probes) + self.probes.index(needle)

    @property
    def any_caseless(self) -> bool:
        return any(lit.caseless for lit in self.literals)


def build_plan(rules: Sequence[Rule], probes: Sequence[bytes] = ()) -> Plan:
    """Compute each rule's requirement and merge identical needles into one ``Literal``; ``probes``
    (case-sensitive needles) are added as literals of no rule."""
    needles: Dict[Tuple[bytes, bool], List[int]] = {}
    always: List[int] = []
    riders: List[int] = []
    for index, rule in enumerate(rules):
        if is_line_echo(rule):
            riders.append(index)
            continue
        req = rule_requirement(rule)
        if req is None:
            always.append(index)
            continue
        for alt in req.alternatives:
            needle = alt.encode("utf-8")
            if req.caseless:
                needle = needle.lower()
            needles.setdefault((needle, req.caseless), []).append(index)
    literals = tuple(
        Literal(needle, caseless, tuple(sorted(set(idx)))) for (needle, caseless), idx in needles.items()
    ) + tuple(Literal(needle, False, ()) for needle in probes)
    return Plan(literals=literals, always=tuple(always), riders=tuple(riders), probes=tuple(probes))


def rule_requirement(rule: Rule) -> Optional[Requirement]:
    """The literals that a line must hold for ``rule`` to match (its own ``literals`` first)."""
    if rule.literals:
        alts = tuple(lit for lit in rule.literals if lit and "\n" not in lit)
        if len(alts) != len(rule.literals):
            return None
        caseless = rule.ignore_case
        if caseless and not all(lit.isascii() for lit in alts):
            return None
        return Requirement(alts, caseless)
    pattern = rule.start if rule.is_block else rule.pattern
    if pattern is None:
        return None
    return pattern_requirement(pattern, rule.ignore_case)


def pattern_requirement(pattern: str, ignore_case: bool = False) -> Optional[Requirement]:
    """Extract a requirement from a regular expression, or None when none can be proven."""
    try:
        parsed = _sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except Exception:  # any syntax only the ``regex`` module knows: no literal, check every line
        return None
    caseless = bool(parsed.state.flags & re.IGNORECASE)
    return _usable(_sequence(list(parsed), caseless))


def _usable(req: Optional[Requirement]) -> Optional[Requirement]:
    if req is None:
        return None
    for alt in req.alternatives:
        if not alt or "\n" in alt or (req.caseless and not alt.isascii()):
            return None
    return req


def _sequence(items: list, caseless: bool) -> Optional[Requirement]:
    """The best requirement of a concatenation: its longest literal run or a required child."""
    found: List[Requirement] = []
    run: List[str] = []

    def flush() -> None:
        if run:
            found.append(Requirement(("".join(run),), caseless))
            run.clear()

    for op, av in items:
        if op is _C.LITERAL:
            run.append(chr(av))
            continue
        flush()
        child: Optional[Requirement] = None
        if op is _C.SUBPATTERN:
            add_flags, del_flags, sub = av[1], av[2], av[3]
            inner = (caseless or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
            child = _sequence(list(sub), inner)
        elif op in _REPEATS:
            low, _high, sub = av
            if low >= 1:
                child = _sequence(list(sub), caseless)
        elif op is _C.BRANCH:
            child = _branch(av[1], caseless)
        elif _ATOMIC is not None and op is _ATOMIC:
            child = _sequence(list(av), caseless)
        child = _usable(child)
        if child is not None:
            found.append(child)
    flush()
    if not found:
        return None
    return max(found, key=lambda r: r.score)


def _branch(branches: list, caseless: bool) -> Optional[Requirement]:
    alts: List[str] = []
    any_caseless = False
    for branch in branches:
        req = _usable(_sequence(list(branch), caseless))
        if req is None:
            return None
        alts.extend(req.alternatives)
        any_caseless = any_caseless or req.caseless
    # A mix of caseless and exact alternatives is searched caselessly: a superset, never a miss.
    return Requirement(tuple(dict.fromkeys(alts)), any_caseless)
