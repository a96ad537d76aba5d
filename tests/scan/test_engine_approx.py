"""The loosened raw-line patterns never reject a line their rule matches, and do reject innocent ones.

``_engine_approx`` turns each rule's pattern into a bytes pattern for the raw line (timestamp, logger
prefix and line ending still there). The engine drops a candidate line when that pattern does not
match it, so a loosened pattern that is not a superset would hide real failures from both engines at
once (the engine-equivalence tests could not see it). Checked here against the rule's own compiled
pattern on the catalogue's examples, wrapped the way real logs wrap them, and on random mutations.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.rules.loader import load_catalogue
from analyzer.scan import _engine_approx as approx
from analyzer.scan import _engine_prefilter as prefilter
from analyzer.scan.clean import clean_line, split_segments
from tests.scan.test_engine_helpers import ENGINES, scan_bytes, summary

RULES = [rule for rule in load_catalogue().rules if not rule.guard]
# How real logs wrap a line: GitHub's timestamp, a rank prefix, other loggers, CRLF, a progress bar.
WRAPPERS = [
    lambda t: t,
    lambda t: "2024-01-09T18:41:23.1234567Z " + t,
    lambda t: "[rank3]: " + t,
    lambda t: "Nov 29 17:59:56 gpu-node-3 python[4121]: " + t,
    lambda t: "[2024-01-09 18:41:23,123] [ERROR] " + t,
    lambda t: "E0325 12:00:00.123456 1234 file.cpp:12] " + t,
    lambda t: "gpu-node-3:4121:4188 [1] " + t,
    lambda t: t + "\r",
    lambda t: "epoch 1: 100%|##########| 10/10\r" + t,
]


def rule_matches(rule, raw: bytes) -> bool:
    compiled = rule.start_re if rule.is_block else rule.pattern_re
    text, _rank = clean_line(raw)
    return any(compiled.search(seg) for seg in split_segments(text))


def loosely_matches(rule, raw: bytes, folded: bool) -> bool:
    pattern = approx.rule_line_pattern(rule, folded)
    if pattern is None:
        return True  # no loosened pattern: the rule keeps the literal prefilter alone
    haystack = raw.lower() if folded else raw
    end = len(raw) - 1 if raw.endswith(b"\n") else len(raw)
    return re.compile(pattern).search(haystack, 0, end) is not None


def test_nearly_every_catalogue_rule_gets_a_loosened_pattern():
    loosened = [rule.id for rule in RULES if approx.rule_line_pattern(rule) is not None]
    assert len(loosened) >= len(RULES) - 2, sorted({r.id for r in RULES} - set(loosened))


@pytest.mark.parametrize("folded", [False, True], ids=["exact", "folded"])
@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_every_match_example_stays_a_candidate_however_the_line_is_wrapped(rule, folded):
    checked = 0
    for example in rule.examples_match:
        first = example.split("\n")[0]
        for wrap in WRAPPERS:
            raw = (wrap(first) + "\n").encode("utf-8")
            if not raw.isascii() or not rule_matches(rule, raw):
                continue
            checked += 1
            assert loosely_matches(rule, raw, folded), (rule.id, raw)
    if any(example.isascii() for example in rule.examples_match):
        assert checked, f"{rule.id}: no ASCII example matched its own rule"


def _mutations(rng: random.Random, text: str):
    """Insertions, deletions and case flips around a real wording: near misses and near matches."""
    alphabet = "aZ09 _-:()[]=.,'\"/\\\t\x1c\x1f|#*+!?<>{}"
    for _ in range(12):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            at = rng.randrange(len(chars) + 1)
            if roll < 0.4:
                chars.insert(at, rng.choice(alphabet))
            elif roll < 0.7 and chars:
                del chars[min(at, len(chars) - 1)]
            elif chars:
                i = min(at, len(chars) - 1)
                chars[i] = chars[i].swapcase()
        yield "".join(chars)


@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_mutated_examples_never_match_the_rule_but_not_its_loosened_pattern(rule):
    rng = random.Random(rule.id)
    for example in rule.examples_match + rule.examples_no_match:
        first = example.split("\n")[0]
        for text in _mutations(rng, first):
            raw = (rng.choice(WRAPPERS)(text) + "\n").encode("utf-8")
            if raw.isascii() and rule_matches(rule, raw):
                assert loosely_matches(rule, raw, False), (rule.id, raw)
                assert loosely_matches(rule, raw, True), (rule.id, raw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RULES), st.data())
def test_random_ascii_around_a_wording_is_never_lost(rule, data):
    examples = [e.split("\n")[0] for e in rule.examples_match if e.isascii()] or ["x"]
    core = data.draw(st.sampled_from(examples))
    ascii_text = st.text(st.characters(min_codepoint=0x01, max_codepoint=0x7F, blacklist_characters="\n\x1b"),
                         max_size=30)
    raw = (data.draw(ascii_text) + core + data.draw(ascii_text) + "\n").encode("ascii")
    if rule_matches(rule, raw):
        assert loosely_matches(rule, raw, False)
        assert loosely_matches(rule, raw, True)


@pytest.mark.parametrize(
    "pattern, flags, line, expected",
    [
        # anchors and lookarounds are dropped: the raw line still has its prefix
        (r"^Segmentation fault$", 0, b"2024-01-09T18:41:23.1Z Segmentation fault\n", True),
        (r"(?<!failed \()\bexit code -9", 0, b"x exit code -9", True),
        # a caseless part is searched on the lowercased line, an exact part too (a superset)
        (r"(?i)exit[ _-]?code -(?:9|15)", 0, b"exit_code -15", True),
        (r"(?i:KILLED) by Signal", 0, b"killed by Signal", True),
        # [^A] on a folded line must still take what was an "a"
        (r"x[^A]y", 0, b"xay", True),
        # the tail of a repeated body is only cut when a single copy remains
        (r"(?:a\d+){2}!", 0, b"a12a3!", True),
        (r"(?:a\d+){2}", 0, b"a12a3", True),
        # regex allows a group name twice in alternatives; re does not, the names go
        (r"(?:(?P<what>foo \d+)|(?P<what>bar \w+))", 0, b"bar baz", True),
        # a backreference becomes "anything on the line"
        (r"(?P<q>['\"])x(?P=q)", 0, b"'x'", True),
        # innocent lines are rejected: the point of it all
        (r"\bexitcode\s*:\s*-\d+", 0, b"step 1 exitcode: 0 loss 0.1\n", False),
        (r"Fatal Python error: \w+", 0, b"Fatal Python errors are bad", False),
    ],
)
def test_line_pattern_constructs(pattern, flags, line, expected):
    for folded in (False, True):
        loose = approx.line_pattern(pattern, False, folded)
        assert loose is not None
        haystack = line.lower() if folded else line
        assert (re.compile(loose).search(haystack) is not None) is expected, (pattern, folded, loose)


def test_a_caseless_non_ascii_character_is_not_loosened():
    # regex folds the Kelvin sign to "k" and the long s to "s": such a pattern can match an ASCII line
    assert approx.line_pattern("\u212aILLED", ignore_case=True) is None
    assert approx.line_pattern("[\u017f]egfault", ignore_case=True) is None
    assert approx.line_pattern("caf\u00e9 (?:ok)", ignore_case=False) is not None


def test_a_pattern_that_matches_the_empty_line_is_not_loosened():
    assert approx.line_pattern(r"(?:foo)?") is None
    assert approx.line_pattern(r"^\s*$") is None


def _noisy_log() -> bytes:
    rng = random.Random(7)
    lines = []
    for i in range(30_000):
        lines.append(f"2024-01-09T10:00:{i % 60:02d}.0000000Z step {i} timed_out=False exitcode: 0 loss 1\n")
        if i % 5000 == 4999:
            lines.append(f"2024-01-09T10:00:00.0000000Z Worker-{i} exitcode: -9\n")
        if rng.random() < 0.001:
            lines.append("2024-01-09T10:00:00.0000000Z Traceback (most recent call last):\n")
            lines.append('2024-01-09T10:00:00.0000000Z   File "x.py", line 1, in <module>\n')
            lines.append("2024-01-09T10:00:00.0000000Z RuntimeError: boom\n")
    return "".join(lines).encode()


@pytest.mark.skipif("hyperscan" not in ENGINES, reason="hyperscan is not installed for this Python")
def test_hyperscan_takes_over_a_noisy_rule_and_finds_the_same(monkeypatch, tmp_path):
    monkeypatch.setattr(approx, "NOISY_AFTER_REJECTS", 200)
    taken = []
    real_build = prefilter._LooseSwitch._build

    def spy(self, noisy):
        state = real_build(self, noisy)
        taken.append(sorted(noisy))
        return state

    monkeypatch.setattr(prefilter._LooseSwitch, "_build", spy)
    log = _noisy_log()
    real = load_catalogue()
    by_engine = {engine: summary(scan_bytes(tmp_path, log, real, engine)) for engine in ENGINES}
    assert taken, "no rule became noisy"
    assert by_engine["python"] == by_engine["hyperscan"]
    signals = [m for m in by_engine["hyperscan"] if m[0] == "process-exitcode-signal"]
    assert len(signals) == 6, signals  # one per planted "exitcode: -9", before and after the switch
    assert any(m[0] == "python-traceback" for m in by_engine["hyperscan"])


def _no_takeover(self, noisy):
    return None


def test_the_python_engine_takes_over_a_noisy_rule_and_finds_the_same(monkeypatch, tmp_path):
    # Without the takeover every "exitcode: 0" line is cleaned and checked in Python; with it, an re
    # search for the loosened pattern over the window leaves them in C. The matches must not change.
    monkeypatch.setattr(approx, "NOISY_AFTER_REJECTS", 200)
    log = _noisy_log()
    real = load_catalogue()
    taken = []
    real_build = prefilter._LooseSwitch._build

    def spy(self, noisy):
        state = real_build(self, noisy)
        if state is not None:
            taken.append(sorted(state[3]))
        return state

    monkeypatch.setattr(prefilter._LooseSwitch, "_build", spy)
    switched = summary(scan_bytes(tmp_path, log, real, "python"))
    assert taken, "the pure-Python engine took over no noisy rule"
    monkeypatch.setattr(prefilter._LooseSwitch, "_build", _no_takeover)
    assert summary(scan_bytes(tmp_path, log, real, "python")) == switched
    signals = [m for m in switched if m[0] == "process-exitcode-signal"]
    assert len(signals) == 6, signals


@pytest.mark.parametrize("text", [
    b"ab\ncd\nab cd\n",  # the loosened \s takes a newline: searched over the lines at once, it must not
    b"ab\ncd ab cd\n",  # ...nor hide the match the next line holds after such a span
    b"ab cd ab cd\nxx\nab cd",  # two in a line, none, one in a last line without a newline
    b"",
    b"\n\nab cd\n\n",
])
def test_lines_matching_finds_the_lines_a_check_of_each_line_finds(text):
    each_line = re.compile(approx.line_pattern(r"ab\s+cd"))
    expected, start = [], 0
    for line in text.split(b"\n"):
        if each_line.search(line):
            expected.append(start)
        start += len(line) + 1
    within = re.compile(approx.line_pattern(r"ab\s+cd", within_line=True))
    assert list(prefilter._lines_matching(within, text)) == expected


def _within_line_patterns():
    for rule in load_catalogue().rules:
        pattern = approx.rule_line_pattern(rule, approx.searched_folded(rule), within_line=True)
        if rule.examples_match and not rule.guard and pattern is not None:
            yield pytest.param(rule, pattern, id=rule.id)


@pytest.mark.parametrize("rule, pattern", list(_within_line_patterns()))
def test_a_within_line_pattern_never_matches_across_a_line_end(rule, pattern):
    # Searched over a whole window, a class that takes "\n" would let one attempt read on for lines
    # (a loosened [^']* to the next quote) and find matches no single line holds.
    compiled = re.compile(pattern)
    for example in rule.examples_match:
        raw = example.encode("utf-8", "surrogateescape")
        raw = raw.lower() if approx.searched_folded(rule) else raw
        for cut in range(1, len(raw)):
            text = raw[:cut] + b"\n" + raw[cut:]
            assert all(b"\n" not in m.group() for m in compiled.finditer(text)), (rule.id, text)



def test_rules_that_open_alike_share_one_search_and_find_what_each_finds_alone():
    # The pure-Python engine's takeover of noisy rules: four launcher rules open with "exit", and one
    # search for them costs about one pass where four did four. On a line it finds, each rule's own
    # search says which hold: the (line, rule) pairs must be those of a search per rule.
    rules = load_catalogue().rules
    searched = []
    for index, rule in enumerate(rules):
        folded = approx.searched_folded(rule)
        pattern = approx.rule_line_pattern(rule, folded, within_line=True)
        if pattern is not None and prefilter._starts_with_literal(pattern):
            searched.append((index, pattern, folded))
    grouped = [own for _p, _f, own in prefilter._shared_searches(searched) if len(own) > 1]
    assert grouped, "no two loosened patterns share a search: the test tests nothing"
    taken = {index: rules[index] for own in grouped for index, _search in own}
    line_hits, _ = prefilter._python_loose_matcher(taken, approx.LoosePatterns(rules))
    lines = [e.encode() for rule in taken.values() for e in rule.examples_match + rule.examples_no_match]
    rng = random.Random(3)
    text = b"".join(rng.choice(lines) + rng.choice([b"\n", b"\r", b" \n", b"\r\n"]) for _ in range(3000))
    found = False
    for case in (text, text.rstrip(b"\n"), b"", b"\n".join(lines)):
        lowered = case.lower()
        expected = {
            (start, index)
            for index, pattern, folded in searched if index in taken
            for start in prefilter._lines_matching(re.compile(pattern), lowered if folded else case)
        }
        assert set(line_hits(case)) == expected
        found = found or bool(expected)
    assert found, "no example line matched: the test tests nothing"


def _noisy_and_warm_log() -> bytes:
    # A launcher's "exitcode: 0" on every line turns its rules noisy in the first window; pytest's XFAIL
    # (the literal FAIL of unittest's outcome rule) on every 100th line is warm by then, noisy later.
    lines = []
    for i in range(60_000):
        stamp = f"2024-01-09T10:00:{i % 60:02d}.0000000Z"
        lines.append(f"{stamp} step {i} timed_out=False exitcode: 0 loss 1\n")
        if i % 100 == 0:
            lines.append(f"2024-01-09T10:00:00.0000000Z tests/t.py::test_case_{i} XFAIL [ 5%]\n")
        if i % 15_000 == 14_999:
            lines.append(f"2024-01-09T10:00:00.0000000Z Worker-{i} exitcode: -9\n")
            lines.append(f"{stamp} test_b_{i} (test_glog.StoreTest.test_b_{i}) ... FAIL\n")
    return "".join(lines).encode()


@pytest.mark.skipif("hyperscan" not in ENGINES, reason="hyperscan is not installed for this Python")
def test_warm_rules_ride_along_the_one_hyperscan_recompile_and_find_the_same(monkeypatch, tmp_path):
    # Taking over a noisy rule recompiles Hyperscan's one pass (30-60 ms): a rule that has rejected a
    # tenth as many lines by then comes along, rather than costing a recompile of its own later. The
    # merged pass is compiled without the loosened patterns' database of their own (only a failed merge
    # needs it). The matches must not change.
    monkeypatch.setattr(approx, "NOISY_AFTER_REJECTS", 200)
    builds = []
    alone = []
    real_build = prefilter._LooseSwitch._build
    real_matcher = prefilter._hyperscan_loose_matcher

    def spy(self, noisy):
        state = real_build(self, noisy)
        builds.append(sorted(self.loose.rules[i].id for i in (state[3] if state is not None else ())))
        return state

    def matcher_spy(rules, loose):
        alone.append(sorted(rules))
        return real_matcher(rules, loose)

    monkeypatch.setattr(prefilter._LooseSwitch, "_build", spy)
    monkeypatch.setattr(prefilter, "_hyperscan_loose_matcher", matcher_spy)
    log = _noisy_and_warm_log()
    real = load_catalogue()
    switched = summary(scan_bytes(tmp_path, log, real, "hyperscan"))
    assert len(builds) == 1 and {"process-exitcode-signal", "unittest-test-outcome"} <= set(builds[0]), builds
    assert alone == []
    assert switched == summary(scan_bytes(tmp_path, log, real, "python"))
    monkeypatch.setattr(prefilter._LooseSwitch, "_build", _no_takeover)
    assert summary(scan_bytes(tmp_path, log, real, "hyperscan")) == switched
    assert len([m for m in switched if m[0] == "process-exitcode-signal"]) == 4
    assert len([m for m in switched if m[0] == "unittest-test-outcome"]) == 4
