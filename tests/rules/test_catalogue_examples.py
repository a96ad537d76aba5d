"""Every rule's examples, run through the real engine: each `match` example matches, no `no_match` one does.

Both engines run them (Hyperscan where installed, and the pure-Python prefilter), with the whole
catalogue loaded, exactly as a scan would. The loader's own example check (used for users' rules at
load time) must agree with the engine on every example. A single-line echo marker, which the engine
tries only on a line where another rule is a candidate (``_engine_literals``), is run beside a rule every
line is a candidate of.
"""

from __future__ import annotations

import io
import re
from typing import List, Set

import pytest

from analyzer.rules.loader import example_matches, load_catalogue
from analyzer.scan.clean import CTEST_VERBOSE, clean_speaking
from analyzer.scan.engine import iter_matches
from analyzer.scan.rank import MISSING_FIELD, format_message
from analyzer.scan.sources import Source
from analyzer.scan.state import is_line_echo
from tests.scan.test_engine_helpers import with_every_line_a_candidate

CATALOGUE = load_catalogue()
EVERY_LINE = with_every_line_a_candidate(CATALOGUE)
RULES = CATALOGUE.rules
ENGINES = ["python", "auto"]


def matched_rules(rule, example: str, engine: str) -> Set[str]:
    """The rules the engine matches on ``example``, with the catalogue in force for ``rule``."""
    catalogue = EVERY_LINE if is_line_echo(rule) else CATALOGUE
    source = Source(display_path="example.log", opener=lambda: io.BytesIO(example.encode("utf-8")))
    return {m.rule.id for m in iter_matches([source], catalogue, engine=engine)}


def cleaned(example: str) -> str:
    # As the engine reads a log: one that shows ctest -V keeps the numbers before its lines.
    task_labels = CTEST_VERBOSE not in example.encode("utf-8")
    lines = example.split("\n")
    return "\n".join(clean_speaking(line.encode("utf-8"), task_labels=task_labels)[0] for line in lines)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_examples_match_and_do_not_match(rule, engine):
    wrong: List[str] = []
    for example in rule.examples_match:
        if rule.id not in matched_rules(rule, example, engine):
            wrong.append(f"should match: {example!r}")
    for example in rule.examples_no_match:
        if rule.id in matched_rules(rule, example, engine):
            wrong.append(f"should not match: {example!r}")
    assert not wrong, f"rule {rule.id} ({engine} engine): " + "; ".join(wrong)


FINDING_RULES = [rule for rule in RULES if rule.kind is not None and rule.message]


@pytest.mark.parametrize("rule", FINDING_RULES, ids=[rule.id for rule in FINDING_RULES])
def test_messages_on_the_examples_name_no_missing_field(rule):
    """A wording's optional part goes in a ``{name:text {}}`` template: a finding never reads "?"."""
    catalogue = EVERY_LINE if is_line_echo(rule) else CATALOGUE
    for example in rule.examples_match:
        data = example.encode("utf-8")
        source = Source(display_path="example.log", opener=lambda data=data: io.BytesIO(data))
        for match in iter_matches([source], catalogue, engine="python"):
            if match.rule.id == rule.id:
                message = format_message(rule.message, match.groups)
                words = re.split(r"[\s():,;.\[\]]+", message)
                assert MISSING_FIELD not in words, f"{example!r} gives {message!r}"


@pytest.mark.parametrize("rule", RULES, ids=[rule.id for rule in RULES])
def test_the_loader_example_check_agrees_with_the_engine(rule):
    for example in (*rule.examples_match, *rule.examples_no_match):
        engine_says = rule.id in matched_rules(rule, example, "python")
        assert example_matches(rule, cleaned(example)) == engine_says, example


def test_every_rule_has_an_example_that_matches():
    assert all(rule.examples_match for rule in RULES)
    assert sum(len(rule.examples_no_match) for rule in RULES) >= len(RULES)
