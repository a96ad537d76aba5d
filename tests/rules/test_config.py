"""The user's --config file: severities, ignores, extra rules, match_timeout; every mistake one exact line."""

from __future__ import annotations

import os

import textwrap
import time
from pathlib import Path

import pytest

from analyzer.errors import ConfigError
from analyzer.model import GUARD_RULE_IDS, Kind, Severity
from analyzer.rules.config import DEFAULT_MATCH_TIMEOUT_S, load_config
from analyzer.rules.loader import apply_config, builtin_rules, load_rules_file

from .test_loader import GOOD


@pytest.fixture
def builtin(tmp_path):
    path = tmp_path / "catalogue.yaml"
    path.write_text(GOOD, encoding="utf-8")
    return load_rules_file(str(path))


def write(tmp_path, text):
    path = tmp_path / "ci.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def catalogue(builtin, tmp_path, text):
    return apply_config(builtin, load_config(write(tmp_path, text)))


def config_error(builtin, tmp_path, text):
    with pytest.raises(ConfigError) as info:
        catalogue(builtin, tmp_path, text)
    message = str(info.value)
    assert "\n" not in message
    return message.replace(str(tmp_path / "ci.yml"), "ci.yml")


def test_an_empty_config_changes_nothing(builtin, tmp_path):
    result = catalogue(builtin, tmp_path, "")
    assert result.rules == builtin
    assert (result.ignore_paths, result.ignore_lines, result.ignore_rules) == ((), (), ())
    assert result.match_timeout_s == DEFAULT_MATCH_TIMEOUT_S


def _yaml_block_after(text: str, heading: str) -> str:
    section = text[text.index(heading) :]
    start = section.index("```yaml\n") + len("```yaml\n")
    return section[start : section.index("```", start)]


def test_the_documented_example_loads_against_the_real_catalogue(tmp_path):
    """The example in analyzer/rules/config.py's docstring is a valid config, rule ids included."""
    import analyzer.rules.config as config_module

    doc = config_module.__doc__
    example = doc[doc.index("# gpu-hang-guard.yml") : doc.index("Path globs")].replace("\\\\", "\\")
    result = apply_config(builtin_rules(), load_config(write(tmp_path, textwrap.dedent(example))))
    assert result.match_timeout_s == 0.5
    assert result.rules[-1].id == "our-deadlock-detector" and result.rules[-1].user_defined
    assert result.rules[-1].kind is Kind.HANG and result.rules[-1].literals == ("DEADLOCK",)
    assert result.ignore_rules == ("github-operation-canceled",)
    assert result.ignore_paths == ("*/flaky_step.txt",)
    assert [i.rules for i in result.ignore_lines] == [(), ("torchrun-signal-exit",)]
    assert dict(result.severity_overrides) == {
        "pytest-timeout": Severity.WARNING,
        "guard-leaked-process": Severity.ERROR,
    }


def test_the_readme_configuration_example_loads_against_the_real_catalogue(tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    example = _yaml_block_after(readme, "## Configuration")
    apply_config(builtin_rules(), load_config(write(tmp_path, example)))


@pytest.mark.parametrize("rule_id", GUARD_RULE_IDS)
def test_every_guard_finding_can_be_regraded_and_ignored(rule_id, tmp_path):
    config = write(tmp_path, f"severity: {{{rule_id}: notice}}\nignore: {{rules: [{rule_id}]}}\n")
    result = apply_config(builtin_rules(), load_config(config))
    assert dict(result.severity_overrides)[rule_id] is Severity.NOTICE
    assert rule_id in result.ignore_rules


def test_severity_override_and_ignored_rules(builtin, tmp_path):
    result = catalogue(
        builtin,
        tmp_path,
        """\
        severity: {worker-exitcode: notice}
        ignore: {rules: [atexit-traceback]}
        """,
    )
    by_id = {rule.id: rule for rule in result.rules}
    assert by_id["worker-exitcode"].severity is Severity.NOTICE
    assert "atexit-traceback" not in by_id
    assert result.ignore_rules == ("atexit-traceback",)
    assert result.severity_overrides == (("worker-exitcode", Severity.NOTICE),)


def test_user_rules_are_user_defined_and_may_use_builtin_markers(builtin, tmp_path):
    result = catalogue(
        builtin,
        tmp_path,
        """\
        rules:
          - id: our-exit
            kind: signal-exit
            severity: warning
            message: "our worker ended with {code_exit}"
            doc: Ours.
            pattern: 'our worker exit (?P<code>-?\\d+)'
            collateral_after: [closing-signal]
        """,
    )
    added = result.rules[-1]
    assert added.id == "our-exit" and added.user_defined and added.collateral_after == ("closing-signal",)
    assert not any(rule.user_defined for rule in result.rules[:-1])


ERRORS = [
    ("severity: {no-such-rule: warning}\n", "ci.yml: severity.no-such-rule: unknown rule id"),
    (
        "severity: {worker-exitcod: warning}\n",
        "ci.yml: severity.worker-exitcod: unknown rule id; did you mean worker-exitcode?",
    ),
    (
        "severity: {worker-exitcode: fatal}\n",
        "ci.yml: severity.worker-exitcode: 'fatal' is not one of: error, warning, notice",
    ),
    (
        "severity: {closing-signal: error}\n",
        "ci.yml: severity.closing-signal: is a marker rule; it makes no finding, so it has no severity",
    ),
    ("severity: [a, b]\n", "ci.yml: severity: must map rule ids to a severity, not a list"),
    ("ignore: {rules: [nope]}\n", "ci.yml: ignore.rules[0]: unknown rule id"),
    ("ignore: {rules: [1]}\n", "ci.yml: ignore.rules[0]: must be a non-empty string, not 1"),
    ("ignore: {paths: 3}\n", "ci.yml: ignore.paths: must be a list of strings, not a number"),
    ("ignore: {files: [x]}\n", "ci.yml: ignore.files: unknown key; expected one of: rules, paths, lines"),
    ("ignore: [x]\n", "ci.yml: ignore: must be a mapping, not a list"),
    ("ignore: {lines: ['(unclosed']}\n", "ci.yml: ignore.lines[0]: invalid regex: missing ) at position 9"),
    (
        "ignore: {lines: [{rules: [worker-exitcode]}]}\n",
        "ci.yml: ignore.lines[0].pattern: missing; the regex",
    ),
    (
        "ignore: {lines: [{pattern: x, rule: [a]}]}\n",
        "ci.yml: ignore.lines[0].rule: unknown key; expected one",
    ),
    (
        "ignore: {lines: [{pattern: '[', rules: []}]}\n",
        "ci.yml: ignore.lines[0].pattern: invalid regex: unterminated character set at position 1",
    ),
    ("ignore: {lines: [{pattern: x, rules: [nope]}]}\n", "ci.yml: ignore.lines[0].rules[0]: unknown rule id"),
    ("ignore: {lines: 'x'}\n", "ci.yml: ignore.lines: must be a list, not a string"),
    ("match_timeout: 0\n", "ci.yml: match_timeout: 0 is not a positive duration; write 0.5, 500ms or 2s"),
    ("match_timeout: soon\n", "ci.yml: match_timeout: 'soon' is not a positive duration; write 0.5"),
    ("match_timeout: true\n", "ci.yml: match_timeout: True is not a positive duration"),
    ("match_timeout: .inf\n", "ci.yml: match_timeout: inf is not a positive duration"),
    (
        "colour: blue\n",
        "ci.yml: colour: unknown key; expected one of: match_timeout, severity, ignore, rules",
    ),
    ("- a list\n", "ci.yml: document: must be a mapping, not a list"),
    ("rules: {a: 1}\n", "ci.yml: rules: must be a list of rules, not a mapping"),
    (
        "rules:\n  - {id: closing-signal, marker: closing-signal, doc: d, pattern: x}\n",
        "ci.yml: rules[0].id: closing-signal is a built-in rule; change its severity under severity: instead",
    ),
    (
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: 'x(', x: 1}\n",
        "ci.yml: rules[0].x: unknown key; expected one of: id, kind",
    ),
    (
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: 'x('}\n",
        "ci.yml: rules[0].pattern: rule mine: invalid regex: missing ) at position 2",
    ),
    (
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: x,"
        " collateral_after: [shutdown]}\n",
        "ci.yml: rules[0].collateral_after[0]: no rule defines marker shutdown; markers: closing-signal",
    ),
    (
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: 'stuck',"
        " examples: {match: [stack]}}\n",
        "ci.yml: rules[0].examples.match[0]: rule mine: does not match: 'stack'",
    ),
    (
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: 'stuck',"
        " examples: {match: [stuck], no_match: [unstuck]}}\n",
        "ci.yml: rules[0].examples.no_match[0]: rule mine: matches, but must not: 'unstuck'",
    ),
    ("rules:\n  - id: a\n    id: b\n", "ci.yml: line 3: invalid YAML: duplicate key 'id'"),
    ("severity:\n  a: [\n", "ci.yml: line 3: invalid YAML: "),
]


@pytest.mark.parametrize("text, expected", ERRORS)
def test_each_config_mistake_is_one_line_naming_file_and_key(builtin, tmp_path, text, expected):
    message = config_error(builtin, tmp_path, text)
    assert message.startswith(expected), message


def test_a_missing_config_file(builtin, tmp_path):
    path = str(tmp_path / "absent.yml")
    with pytest.raises(ConfigError) as info:
        apply_config(builtin, load_config(path))
    assert str(info.value) == f"{path}: file: cannot read: No such file or directory"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_config_that_is_not_a_regular_file_is_refused_without_waiting_on_it(builtin, tmp_path, kind):
    path = tmp_path / "config.yml"
    # A FIFO nobody writes would block a plain open forever; a device would be read as endless input.
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("/dev/zero")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(info.value) == f"{path}: file: not a regular file"


def test_match_timeout_accepts_numbers_and_durations(builtin, tmp_path):
    assert catalogue(builtin, tmp_path, "match_timeout: 2\n").match_timeout_s == 2.0
    assert catalogue(builtin, tmp_path, "match_timeout: 250ms\n").match_timeout_s == 0.25


def test_a_catastrophic_user_pattern_is_stopped_by_match_timeout_at_load(builtin, tmp_path):
    """(a|aa)+$ backtracks exponentially on a long run of a's followed by !: the timeout ends it."""
    text = (
        "match_timeout: 0.2\n"
        "rules:\n  - {id: slow, kind: hang, severity: error, message: m, doc: d, pattern: '(a|aa)+$',"
        " examples: {no_match: ['" + "a" * 60 + "!']}}\n"
    )
    started = time.monotonic()
    message = config_error(builtin, tmp_path, text)
    assert (
        message == "ci.yml: rules[0].examples.no_match[0]: rule slow: the pattern ran out of time (0.2s) "
        "on this example"
    )
    assert time.monotonic() - started < 30  # generous: without the timeout this search takes centuries


def test_guard_rules_are_regraded_and_ignored_by_the_same_policy(tmp_path):
    config = write(
        tmp_path,
        "severity: {guard-leaked-process: error, pytest-timeout: notice}\n"
        "ignore: {rules: [guard-cancelled]}\n",
    )
    result = apply_config(builtin_rules(), load_config(config))
    guard = {rule.id: rule for rule in result.guard_rules}
    assert guard["guard-leaked-process"].severity is Severity.ERROR
    assert "guard-cancelled" not in guard and "guard-cancelled" in result.ignore_rules
    assert {rule.id: rule for rule in result.rules}["pytest-timeout"].severity is Severity.NOTICE
    assert not any(rule.guard for rule in result.rules)


def test_a_scanning_rule_is_looked_up_as_configured_and_is_absent_once_ignored(tmp_path):
    config = write(tmp_path, "severity: {pytest-timeout: warning}\nignore: {rules: [pytest-test-outcome]}\n")
    result = apply_config(builtin_rules(), load_config(config))
    assert result.scan_rule("pytest-timeout").severity is Severity.WARNING
    assert result.scan_rule("python-traceback").severity is None  # a marker: makes no finding itself
    assert result.scan_rule("pytest-test-outcome") is None
    assert result.scan_rule("guard-cancelled") is None  # made by the guard, never by a scan


def test_a_user_rule_cannot_claim_to_be_made_by_the_guard(builtin, tmp_path):
    message = config_error(
        builtin,
        tmp_path,
        "rules:\n  - {id: mine, guard: true, kind: hang, severity: error, message: m, doc: d}\n",
    )
    assert message == "ci.yml: rules[0].guard: only built-in rules are made by the guard itself"


def test_match_budget_is_a_duration(builtin, tmp_path):
    assert catalogue(builtin, tmp_path, "match_budget: 30s\n").match_budget_s == 30.0
    assert catalogue(builtin, tmp_path, "").match_budget_s == 10.0
    assert config_error(builtin, tmp_path, "match_budget: -1\n") == (
        "ci.yml: match_budget: -1 is not a positive duration; write 0.5, 500ms or 2s"
    )
