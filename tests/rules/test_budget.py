"""Issue 10.7: a user pattern that is slow but never times out is bounded over the WHOLE scan.

The pattern is really slow (``(a|aa)+$`` backtracks exponentially on a run of a's that ends in ``!``),
nothing is mocked. No timing is asserted: the proof is that the rule got switched off, that the scan
went on and said so in a scan-incomplete finding naming the rule, and (for many files) that one budget
covers all of them, since one file alone would not spend it. The numbers are in bench/ and the note.
"""

from __future__ import annotations

import os
import textwrap

import regex

from analyzer.model import Kind, Severity
from analyzer.rules.budget import MatchBudget
from analyzer.rules.config import load_config
from analyzer.rules.loader import apply_config, builtin_rules
from analyzer.scan import scan_paths
from analyzer.scan.engine import iter_matches
from analyzer.scan.sources import iter_sources

# One search of this line costs ~0.1 s here (and grows 1.6x per extra "a"): slow, under match_timeout.
SLOW_LINE = "a" * 24 + "!"
SLOW = regex.compile(r"(a|aa)+$")


def configured(tmp_path, budget: str = "200ms"):
    path = tmp_path / "ci.yml"
    path.write_text(
        textwrap.dedent(
            f"""\
            match_timeout: 30s
            match_budget: {budget}
            rules:
              - id: slow-rule
                kind: crash
                severity: error
                message: "slow rule matched"
                doc: A pattern that backtracks exponentially on runs of a's.
                pattern: '(a|aa)+$'
              - id: quick-rule
                kind: crash
                severity: error
                message: "quick rule matched {{what}}"
                doc: A plain user pattern.
                pattern: 'QUICK (?P<what>\\w+)'
            """
        ),
        encoding="utf-8",
    )
    return apply_config(builtin_rules(), load_config(str(path)))


def incomplete(findings):
    return [f for f in findings if f.kind is Kind.SCAN_INCOMPLETE]


def test_the_budget_switches_a_key_off_once_spent_and_never_searches_it_again():
    budget = MatchBudget(per_search_s=30.0, total_s=0.2)
    searches = 0
    while not budget.is_off("slow") and searches < 1000:
        assert budget.search("slow", SLOW, SLOW_LINE) is None
        searches += 1
    assert budget.is_off("slow") and budget.off_keys() == ["slow"]
    assert 0.2 <= budget.spent_s("slow") and searches < 1000
    spent = budget.spent_s("slow")
    assert budget.search("slow", SLOW, "aa") is None  # would match, but the key is off
    assert budget.spent_s("slow") == spent
    assert budget.search("other", SLOW, "aa") is not None and not budget.is_off("other")


def test_a_search_that_runs_out_of_time_finds_nothing_and_is_charged():
    budget = MatchBudget(per_search_s=0.01, total_s=100.0)
    assert budget.search("k", SLOW, "a" * 40 + "!") is None
    assert 0.01 <= budget.spent_s("k") and not budget.is_off("k")


def test_a_slow_user_rule_over_100_lines_is_switched_off_and_the_scan_goes_on(tmp_path):
    catalogue = configured(tmp_path)
    log = tmp_path / "job.log"
    log.write_text("\n".join([SLOW_LINE] * 100 + ["QUICK done", "Segmentation fault (core dumped)"]) + "\n")
    findings = scan_paths([str(log)], catalogue, engine="python")
    (notice,) = incomplete(findings)
    assert (notice.rule, notice.severity, notice.path) == ("scan-incomplete", Severity.WARNING, str(log))
    assert 1 <= notice.line < 100
    assert notice.message == (
        "part of the input was not scanned: rule slow-rule used up its match_budget (0.2s) and was "
        "switched off from here on"
    )
    rules = [f.rule for f in findings]
    assert "quick-rule" in rules and "slow-rule" not in rules  # the other rules kept matching
    assert any(f.kind is Kind.CRASH and f.line == 102 for f in findings)  # the built-in ones too


def test_one_budget_covers_every_file_of_the_scan(tmp_path):
    """Ten files of one slow line each and ONE notice: a budget per file would make none (a line costs
    less than the budget) or ten (it costs more); one budget for the scan runs out once, whatever the
    machine's speed."""
    catalogue = configured(tmp_path, budget="300ms")
    paths = []
    for index in range(10):
        path = os.path.join(str(tmp_path), f"{index}_step.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(SLOW_LINE + "\nQUICK x\n")
        paths.append(path)
    # Count what the engine reports (ranking may fold equal findings of different logs into one).
    matches = list(iter_matches(iter_sources(paths), catalogue, engine="python"))
    (notice,) = [m for m in matches if m.rule.id == "scan-incomplete"]
    assert notice.groups["rule"] == "slow-rule" and notice.path in paths and notice.line == 1
    assert sum(m.rule.id == "quick-rule" for m in matches) == 10
    assert incomplete(scan_paths(paths, configured(tmp_path, budget="300ms"), engine="python"))


def test_the_notice_is_regraded_and_ignored_like_any_rule(tmp_path):
    log = tmp_path / "job.log"
    log.write_text((SLOW_LINE + "\n") * 50)
    base = configured(tmp_path)
    source = tmp_path / "ci.yml"
    text = source.read_text(encoding="utf-8")
    source.write_text(text + "severity: {scan-incomplete: error}\n", encoding="utf-8")
    regraded = apply_config(builtin_rules(), load_config(str(source)))
    (notice,) = incomplete(scan_paths([str(log)], regraded, engine="python"))
    assert notice.severity is Severity.ERROR
    source.write_text(text + "ignore: {rules: [scan-incomplete]}\n", encoding="utf-8")
    ignored = apply_config(builtin_rules(), load_config(str(source)))
    assert incomplete(scan_paths([str(log)], ignored, engine="python")) == []
    assert incomplete(scan_paths([str(log)], base, engine="python"))


def test_the_engine_skips_guard_rules_even_in_a_hand_built_catalogue(tmp_path):
    from analyzer.rules.model import Catalogue

    rules = builtin_rules()
    assert any(rule.guard for rule in rules)
    log = tmp_path / "job.log"
    log.write_text("Segmentation fault (core dumped)\n")
    findings = scan_paths([str(log)], Catalogue(rules=rules), engine="python")
    assert [f.kind for f in findings] == [Kind.CRASH]
