"""The candidate finders against a naive reference: every line holding a literal, and nothing else.

The pure-Python finder picks, per literal, a pivot byte, a shared substring pass or a plain pass,
depending on measured byte frequencies; each strategy is forced here in turn (through its cost
constants) so all of them are checked on the same text, exact and caseless literals alike.
"""

from __future__ import annotations

import random

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import _engine_prefilter as prefilter
from analyzer.scan._engine_literals import Literal, Plan, build_plan, pattern_requirement
from analyzer.scan._hyperscan import match_ends
from analyzer.scan.clean import strip_controls
from tests.scan.test_engine_equivalence import synthetic_log
from tests.scan.test_engine_helpers import ENGINES


def reference(plan: Plan, window: bytes):
    out = {}
    start = 0
    for line in window.split(b"\n"):
        lowered = line.lower()
        for index, lit in enumerate(plan.literals):
            if lit.needle in (lowered if lit.caseless else line):
                out.setdefault(start, set()).add(index)
        start += len(line) + 1
    return out


def big_window() -> bytes:
    text = b"".join(synthetic_log(seed) for seed in range(10, 14))
    rng = random.Random(5)
    # Upper-case variants exercise caseless literals; a line without "\n" at the end, an edge.
    variants = [b"EXITCODE: -9\n", b"Exit Code  -15\n", b"eXiT_cOdE=-6\n", b"exit code 0\n"]
    extra = b"".join(rng.choice(variants) for _ in range(300))
    # Literals at the very start of the window and of consecutive lines: the edges of every loop.
    first = b"Watchdog caught collective operation timeout: WorkNCCL(x)\n"
    edges = b" passed in 1s\n error in 2s\n passed in 3s\nno tests ran in 0.1s\njjjfoo\njjjbar\n" * 20
    return strip_controls(first + text + extra + edges + b"Segmentation fault without newline")


PLAN = build_plan(load_catalogue().rules)
CASELESS_PLAN = Plan(
    literals=PLAN.literals + (
        Literal(b"kelvin", True, (0,)), Literal(b"q", True, (0,)), Literal(b"z", False, (0,)),
        Literal(b"jjjfoo", False, (1,)), Literal(b"jjjbar", False, (1,)),
    ),
    always=(),
)


def _no_pivots(monkeypatch):
    """Make every pivot dearer than any pass, searched or not."""
    monkeypatch.setattr(prefilter, "_HIT_COST_S", 1.0)
    monkeypatch.setattr(prefilter, "_SUFFIX_PASS_COST_S_PER_MIB", 1.0)


@pytest.mark.parametrize(
    "strategy", ["measured", "pivots", "pivots-searched", "shared", "passes", "passes-searched"]
)
@pytest.mark.parametrize("plan", [PLAN, CASELESS_PLAN], ids=["catalogue", "extra"])
def test_python_finder_equals_the_reference(monkeypatch, strategy, plan):
    window = big_window() * 2  # a full sample: a plan waits for one
    if strategy == "pivots":
        monkeypatch.setattr(prefilter, "_HIT_COST_S", 0.0)
    elif strategy == "pivots-searched":
        monkeypatch.setattr(prefilter, "_HIT_COST_S", 0.0)
        monkeypatch.setattr(prefilter, "_SUFFIX_PASS_COST_S_PER_MIB", -1.0)
    elif strategy == "shared":
        _no_pivots(monkeypatch)
        monkeypatch.setattr(prefilter, "_ANCHOR_HIT_COST_S", 0.0)
    elif strategy in ("passes", "passes-searched"):
        _no_pivots(monkeypatch)
        monkeypatch.setattr(prefilter, "_ANCHOR_HIT_COST_S", 1.0)
        searched = strategy == "passes-searched"
        monkeypatch.setattr(prefilter, "_RE_PASS_COST_S_PER_MIB", -1.0 if searched else 1.0)
    expected = reference(plan, window)
    assert len(expected) > 100
    find = prefilter.python_finder(plan)
    assert find(window) == expected
    planned = find.pivots.planned
    assert planned.sampled == prefilter._SAMPLE_BYTES
    if strategy == "passes-searched":
        assert planned.searched and len(planned.searched) == len(planned.passes)
    elif strategy == "passes":
        assert planned.passes and not planned.searched
    # a second window reuses the plan made on the first
    assert find(window[: len(window) // 3]) == reference(plan, window[: len(window) // 3])


def test_a_literal_of_thousands_of_common_bytes_is_searched_without_recursing(monkeypatch):
    # A user's rule may hold a literal of thousands of bytes; on a searched pivot, its trie and look back
    # are cut short (a group per byte went past Python's recursion limit) and its hits confirmed in full.
    monkeypatch.setattr(prefilter, "_HIT_COST_S", 0.0)
    monkeypatch.setattr(prefilter, "_SUFFIX_PASS_COST_S_PER_MIB", -1.0)
    long_one = b"".join(b"aolt"[(i * 3) % 4:(i * 3) % 4 + 1] + (b"" if i % 5 else b" ") for i in range(2500))
    plan = Plan(literals=PLAN.literals + (Literal(long_one, False, (0,)),), always=())
    window = big_window() * 2 + b"\n" + long_one + b"\n" + long_one[:-1] + b"\n"
    finder = prefilter._PivotFinder([(i, lit.needle, lit.caseless) for i, lit in enumerate(plan.literals)])
    out: dict = {}
    finder(window, out)
    assert out == reference(plan, window)
    searched = [pivot for pivot in finder.pivots if pivot.search is not None
                and any(n == long_one for entries in pivot.exact.values() for n, _, _ in entries)]
    assert searched, "the long literal is not on a searched pivot: the test tests nothing"


def test_each_strategy_is_really_used(monkeypatch):
    finder = prefilter._PivotFinder([(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)])
    monkeypatch.setattr(prefilter, "_HIT_COST_S", 0.0)
    finder._plan(big_window())
    assert finder.pivots and not finder.shared
    assert not any(pivot.search for pivot in finder.pivots)
    monkeypatch.setattr(prefilter, "_SUFFIX_PASS_COST_S_PER_MIB", -1.0)
    finder._plan(big_window())
    assert finder.pivots and all(pivot.search for pivot in finder.pivots)
    monkeypatch.undo()
    _no_pivots(monkeypatch)
    monkeypatch.setattr(prefilter, "_ANCHOR_HIT_COST_S", 0.0)
    finder._plan(big_window())
    assert finder.shared and not finder.pivots


def test_literals_that_share_a_byte_share_its_pivot():
    # glog's fatal lines give ten literals F0..F9. In a log where "F" is common enough that each
    # alone would rather take a pass of its own, the ten together are cheaper at one pivot.
    needles = [(i, b"F%d" % i, False) for i in range(10)]
    window = (b"F" + b"x" * 500 + b"\n") * 2000 + b"glog F0325 12:00:00 fatal\n"
    finder = prefilter._PivotFinder(needles)
    finder._plan(window)
    assert [pivot.byte for pivot in finder.pivots] == [b"F"]
    # ...and so common that Python should see only the hits where a digit follows it
    assert finder.pivots[0].search is not None
    assert finder.passes == [] and finder.shared == []
    out: dict = {}
    finder(window, out)
    assert out == {window.rindex(b"glog"): {0}}


def test_a_plan_made_on_a_tiny_window_is_made_again_on_the_next_big_one():
    # A run archive's first member can be a 63-byte "Set up job" log: on so small a sample every byte
    # looks frequent and nearly every literal gets a pass of its own, for the next 63 windows.
    needles = [(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)]
    finder = prefilter._PivotFinder(needles)
    finder(b"2024-01-09T18:41:23.1234567Z Current runner version: '2.311.0'\n", {})
    finder._plan(b"2024-01-09T18:41:23.1234567Z Current runner version: '2.311.0'\n")
    window = big_window() * 2
    out: dict = {}
    finder(window, out)
    # planned again on the big window: the plan a finder that only ever saw the big window makes (how
    # many passes each plan has depends on the catalogue's literals and the synthetic log built from
    # its examples, so the count alone proves nothing)
    fresh = prefilter._PivotFinder(needles)
    fresh(window, {})
    assert finder.sampled == min(len(window), prefilter._SAMPLE_BYTES)
    assert (finder.passes, finder.shared) == (fresh.passes, fresh.shared)
    assert [pivot.byte for pivot in finder.pivots] == [pivot.byte for pivot in fresh.pivots]
    assert out == reference(PLAN, window)



def test_a_plan_is_kept_where_the_log_reads_alike_and_made_again_where_it_changed(monkeypatch):
    # A plan costs about 45 ms; an hour of one test suite reads alike, and its plans came out the same.
    monkeypatch.setattr(prefilter, "_REPLAN_BYTES", 1)  # every window is due for a new plan
    finder = prefilter._PivotFinder([(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)])
    window = big_window() * 2  # a full sample
    finder(window, {})
    assert finder.sampled == prefilter._SAMPLE_BYTES
    plans = []
    real_plan = prefilter._PivotFinder._plan

    def spy(self, sample):
        plans.append(len(sample))
        real_plan(self, sample)

    monkeypatch.setattr(prefilter._PivotFinder, "_plan", spy)
    out: dict = {}
    finder(window, out)
    assert plans == [] and out == reference(PLAN, window)
    # the same lines, but every "F" line ten times over: the bytes the plan weighed moved
    changed = b"".join(line + b"\n" + (b"Fx" * 40 + b"\n") * 10 for line in window.split(b"\n")[:500])
    out = {}
    finder(changed, out)
    assert len(plans) == 1 and out == reference(PLAN, changed)


def test_a_small_log_is_searched_without_a_plan_and_the_plan_waits_for_a_full_sample():
    finder = prefilter._PivotFinder([(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)])
    window = big_window()
    chunks = [window[i:i + 40_000] for i in range(0, len(window), 40_000)]
    searched = 0
    for chunk in chunks:
        out: dict = {}
        finder(chunk, out)
        assert out == reference(PLAN, chunk)
        searched += len(chunk)
        if searched < prefilter._SAMPLE_BYTES:
            assert finder.sampled == 0 and not finder.pivots and len(finder.passes) == len(PLAN.literals)
    out = {}
    finder(window, out)  # the bytes searched reach a sample: planned now, on this window
    assert finder.sampled == len(window) and finder.pivots
    assert out == reference(PLAN, window)


@pytest.mark.skipif("hyperscan" not in ENGINES, reason="hyperscan is not installed for this Python")
@pytest.mark.parametrize("plan", [PLAN, CASELESS_PLAN], ids=["catalogue", "extra"])
def test_hyperscan_finder_equals_the_reference(plan):
    window = big_window()
    assert prefilter.hyperscan_finder(plan)(window) == reference(plan, window)


@pytest.mark.parametrize(
    "pattern, ignore_case, expected",
    [
        (r"Segmentation fault", False, ("Segmentation fault",)),
        (r"^Fatal Python error: (?P<what>\w+)", False, ("Fatal Python error: ",)),
        (r"(?:Bus error|Segmentation fault) \(core dumped\)", False, (" (core dumped)",)),
        (r"(?:Bus error|Aborted)", False, ("Bus error", "Aborted")),
        (r"exit[ _]?code", True, ("exit",)),
        (r"(?i)watchdog caught", False, ("watchdog caught",)),
        (r"\d+ passed", False, (" passed",)),
        (r"(?:ab)?c", False, ("c",)),
        (r"x*", False, None),
        (r"\p{Lu}+ failed", False, None),  # syntax only the regex module knows
        (r"(?:é|ü)rror", True, ("rror",)),  # a caseless non-ASCII literal is never used
    ],
)
def test_literal_extraction(pattern, ignore_case, expected):
    req = pattern_requirement(pattern, ignore_case)
    assert (req.alternatives if req else None) == expected
    if req is not None and ("(?i)" in pattern or ignore_case):
        assert req.caseless


@pytest.mark.skipif("hyperscan" not in ENGINES, reason="hyperscan is not installed for this Python")
def test_the_literal_pass_finds_the_progress_letters_hints_as_their_own_pass_does():
    # Literals, loosened patterns and the letters' hints share one database (``_LiteralPass``): each
    # must be found as in a pass of its own, the literals in pattern mode as in literal mode.
    from analyzer.scan import letters
    from analyzer.scan._engine_approx import LoosePatterns

    window = big_window() + b"....F\n=====\n\x1b[32m.s\x1b[0m\n[default0]:..\ntests/t.py .F"
    hints = letters.HYPERSCAN_HINTS
    own = sorted(end for end, _ in match_ends(letters._hint_database(), letters._SCRATCH, window))
    one = prefilter.hyperscan_finder(PLAN, None, hints)
    cands, ends = one.with_hints(window)
    assert cands == reference(PLAN, window) and sorted(ends) == own and len(own) > 4
    rules = tuple(rule for rule in load_catalogue().rules if not rule.guard)  # as ``engine.prepare``
    loose = LoosePatterns(rules)
    noisy = [i for i, rule in enumerate(rules)
             if rule.id in ("process-exitcode-signal", "torchrun-signal-exit")]
    assert len(noisy) == 2
    loose.noisy = frozenset(noisy)
    plan = build_plan(rules)
    merged = prefilter.hyperscan_finder(plan, loose, hints)
    apart = prefilter._LooseSwitch(plan, prefilter._literal_database(plan.literals), loose,
                                   prefilter._literal_database, prefilter._hyperscan_loose_matcher)
    cands, ends = merged.with_hints(window)
    assert isinstance(merged.state[1], prefilter._LiteralPass) and merged.state[1].loose
    assert cands == apart(window) and sorted(ends) == own


def test_a_finder_for_some_of_the_literals_takes_the_plan_made_for_all_of_them(monkeypatch):
    # The noisy rules' takeover makes a finder for the literals it leaves, once per rule it takes:
    # a plan costs about 45 ms, and the plan for all the literals serves any of them.
    window = big_window() * 2  # a full sample
    needles = [(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)]
    full = prefilter._PivotFinder(needles)
    monkeypatch.setattr(prefilter, "_SUFFIX_PASS_COST_S_PER_MIB", -1.0)  # every pivot searched
    full(window, {})
    searched = {pivot.byte: pivot.search for pivot in full.pivots}
    # without the literals of one pivot's first key (it keeps others), and every other one
    pivot = next(p for p in full.pivots if len({e[2] for es in p.exact.values() for e in es}) > 1)
    gone = {entry[2] for entry in next(iter(pivot.exact.values()))}
    kept = [needle for n, needle in enumerate(needles) if needle[0] not in gone and n % 2 == 0]
    part = prefilter._PivotFinder(kept)
    monkeypatch.setattr(prefilter._PivotFinder, "_plan", lambda self, sample: pytest.fail("planned again"))
    part.inherit(full)
    assert part.sampled == full.sampled and part.pivots
    assert all(searched[p.byte] is not p.search for p in part.pivots if p.byte == pivot.byte)
    out: dict = {}
    part(window, out)
    ids = {needle[0] for needle in kept}
    expected = {start: lits & ids for start, lits in reference(PLAN, window).items() if lits & ids}
    assert out == expected
    # a finder for literals the plan never held makes its own
    other = prefilter._PivotFinder([(len(needles), b"never planned", False)])
    other.inherit(full)
    assert other.sampled == 0


def test_an_escaped_literal_matches_its_own_bytes_and_no_others():
    # _LiteralPass compiles each literal as a pattern (_escaped): every byte, in any order, matches
    # itself alone; letters and digits stay as they are, so a caseless literal's flag still applies.
    import re

    rng = random.Random(18)
    for needle in [bytes([c]) for c in range(256)] + [rng.randbytes(rng.randint(1, 24)) for _ in range(300)]:
        pattern = re.compile(prefilter._escaped(needle), re.DOTALL)
        assert pattern.fullmatch(needle), needle
        for at in range(len(needle)):
            other = needle[:at] + bytes([(needle[at] + 1) % 256]) + needle[at + 1:]
            assert not pattern.fullmatch(other), (needle, other)
    assert prefilter._escaped(b"NCCL error:") == b"NCCL\\x20error\\x3a"


def test_a_plan_counts_each_byte_as_bytes_count_does():
    # _count skips the count of a byte the window lacks (memchr first): the plan's weights are unchanged.
    window = big_window()
    assert len(set(window)) < 200, "every byte is in the window: the test tests nothing"
    for byte in range(256):
        assert prefilter._count(window, byte) == window.count(bytes([byte])), byte
    assert prefilter._count(b"", 10) == 0
    assert [prefilter._count(b"\x00ab\x01", byte) for byte in (0, 1, 2)] == [1, 1, 0]  # at either end


def _trie_reference(rests):
    """``_rests_pattern`` as it was written first: a group per byte, one level at a time."""
    import re

    if any(not rest and not behind for rest, behind in rests):
        return b""
    branches = [b"(?<=" + re.escape(behind) + b")" for behind in sorted({b for r, b in rests if not r and b})]
    by_first = {}
    for rest, behind in rests:
        if rest:
            by_first.setdefault(rest[:1], []).append((rest[1:], behind))
    branches.extend(re.escape(first) + _trie_reference(by_first[first]) for first in sorted(by_first))
    return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"


def test_the_rests_pattern_of_a_lone_branch_is_the_tries_own():
    # A branch that leads to one literal is written at once (its escaped bytes, then its look back), the
    # same bytes as the trie wrote a level at a time: the compiled searches, and their matches, are unchanged.
    rng = random.Random(20)
    alphabet = b"ab.(|)\\ *?-c"
    for _ in range(400):
        rests = sorted({(bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 6))),
                         bytes(rng.choice(alphabet) for _ in range(rng.choice((0, 0, 3)))))
                        for _ in range(rng.randint(1, 5))})
        assert prefilter._rests_pattern(rests) == _trie_reference(rests), rests
    finder = prefilter._PivotFinder([(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)])
    finder._plan(big_window() * 2)
    for pivot in finder.pivots:
        for table in (pivot.exact, pivot.caseless):
            if table:
                rests = prefilter._rests(table)
                assert prefilter._rests_pattern(rests) == _trie_reference(rests), pivot.byte


@pytest.mark.parametrize("stops", ["measured", "dear"])
def test_a_pivot_search_that_cannot_pay_is_not_compiled(monkeypatch, stops):
    # _suffix_search weighs a search against the pivot's memchr pass; where the search loses even with no
    # match of its own, its pattern is not compiled (nor counted on the sample), and the answer is the same.
    if stops == "dear":  # a stop in the search as dear as a hit in Python: no search can pay
        monkeypatch.setattr(prefilter, "_SUFFIX_STOP_COST_S", prefilter._HIT_COST_S)
    compiled = []
    real = prefilter._searched_for
    monkeypatch.setattr(prefilter, "_searched_for", lambda *args: compiled.append(args[0]) or real(*args))
    sample = big_window() * 2
    scale = (1 << 20) / len(sample)
    finder = prefilter._PivotFinder([(i, lit.needle, lit.caseless) for i, lit in enumerate(PLAN.literals)])
    finder._plan(sample)
    skipped = searched = 0
    for pivot in finder.pivots:
        hits = (sample.count(pivot.byte) + 1) * scale
        if prefilter._pivot_cost(hits) <= prefilter._SUFFIX_PASS_COST_S_PER_MIB:
            continue
        pattern = real(pivot.byte, pivot.exact, pivot.caseless)
        next_bytes = len({needle[offset + 1] for table in (pivot.exact, pivot.caseless)
                          for entries in table.values() for needle, offset, _ in entries})
        stop = prefilter._SUFFIX_STOP_COST_S + next_bytes * prefilter._SUFFIX_ALTERNATIVE_COST_S
        cost = (prefilter._SUFFIX_PASS_COST_S_PER_MIB + hits * stop
                + (len(pattern.findall(sample)) + 1) * scale * prefilter._HIT_COST_S)
        compiled.clear()
        got = prefilter._suffix_search(pivot.byte, pivot.exact, pivot.caseless, hits, sample, scale)
        assert (got is not None) == (cost < prefilter._pivot_cost(hits)), pivot.byte
        skipped += not compiled
        searched += got is not None
    if stops == "dear":
        assert skipped and not searched, "no pivot's search was skipped: the test tests nothing"
    else:
        assert searched, "no pivot is searched: the test tests nothing"
