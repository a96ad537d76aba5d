"""A loosened pattern that starts with an alternation starts each branch at its first fixed character:
``re`` tries a pattern at every byte of the line, and a branch opening with ``.*?`` or ``\\s*`` made
that cost tens of microseconds a candidate line (crash-core-dumped's ``^\\s*(...)|^.*?:\\s*(...)``)."""

from __future__ import annotations

import re

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import _engine_approx as approx

CRASH = (
    r"^\s*(?P<what>Segmentation fault|Aborted)(?: \(core dumped\))?\s*$"
    r"|^.*?:\s*(?P<what>Bus error) \(core dumped\)"
)


def test_each_branch_of_a_leading_alternation_starts_at_its_fixed_text():
    loose = approx.line_pattern(CRASH)
    assert loose is not None and loose.startswith(b"(?:")
    # neither "\s*" (first branch) nor ".*?" (second) survives at a branch's head
    assert not loose.startswith(b"(?:(?:[")
    assert b"|(?:[" not in loose.split(b")|", 1)[0]
    found = re.compile(loose)
    for line, expected in [
        (b"2024-01-09T18:41:23.1234567Z Segmentation fault\n", True),
        (b"   Aborted (core dumped)\n", True),
        (b"/bin/sh: line 1: Bus error (core dumped)\n", True),
        (b"Bus error without a core\n", False),
        (b"all good: 3 passed\n", False),
    ]:
        assert (found.search(line) is not None) is expected, line


def test_an_alternation_whose_branch_is_all_optional_is_not_loosened():
    # "(?:\s*|x)y" loses its first branch's head entirely: the pattern is "y" or "xy", still a filter
    loose = approx.line_pattern(r"(?:\s*|x)y")
    assert loose is not None and re.compile(loose).search(b"y")
    # an alternation that can match nothing at all rejects nothing: no loosened pattern
    assert approx.line_pattern(r"^(?:\s*|x?)$") is None


@pytest.mark.parametrize("rule", [r for r in load_catalogue().rules if (r.pattern or r.start)],
                         ids=lambda r: r.id)
def test_no_catalogue_rule_loosens_to_a_pattern_that_opens_with_a_repeat(rule):
    """Every loosened pattern of the catalogue starts at a fixed character or a class tried once, inside
    each top-level branch: none opens with an unbounded repeat that ``re`` would try at every byte."""
    loose = approx.rule_line_pattern(rule, approx.searched_folded(rule))
    assert loose is not None
    opening = re.compile(rb"^(?:\(\?:)*\((?:\?:)?\[[^\]]*\]\)\{0,\}")
    assert not opening.match(loose), loose[:80]
