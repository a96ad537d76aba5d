"""The catalogue loader: a good file loads in order with compiled patterns; each bad key is one exact line."""

from __future__ import annotations

import pickle
import textwrap

import pytest

from analyzer.errors import ConfigError
from analyzer.model import Kind, Severity
from analyzer.rules.loader import (
    builtin_rules, builtin_rules_path, example_matches, load_catalogue, load_rules_file,
)
from analyzer.rules.schema import LazyPattern

GOOD = """\
rules:
  - id: closing-signal
    marker: closing-signal
    doc: torchrun tells its workers to stop.
    pattern: 'Sending process (?P<pid>\\d+) closing signal (?P<signal>SIG[A-Z]+)'
    examples:
      match: ["Sending process 1799 closing signal SIGTERM"]
  - id: worker-exitcode
    kind: signal-exit
    severity: error
    message: "worker {pid} ended with {code_exit}"
    doc: torchrun's failure report names each dead worker.
    pattern: 'exitcode\\s*:\\s*(?P<code>-?\\d+) \\(pid: (?P<pid>\\d+)\\)'
    literals: [exitcode]
    collateral_after: [closing-signal]
    examples:
      match: ["  exitcode  : -15 (pid: 1798)"]
      no_match: ["exitcode: 0"]
  - id: atexit-traceback
    kind: atexit-exception
    severity: error
    message: "{exception} raised in atexit callback {callback}"
    doc: An exception in an atexit callback is printed, and Python still exits 0.
    start: 'Exception ignored in atexit callback:? <function (?P<callback>\\w+)'
    end: '^(?P<exception>\\w+(?:Error|Exception))'
    max_lines: 50
    ignore_case: true
    root_cause: true
    examples:
      match:
        - "Exception ignored in atexit callback: <function f at 0x7f>\\nTraceback:\\nRuntimeError: x"
"""


def write(tmp_path, text, name="catalogue.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def error_of(path, **kwargs):
    with pytest.raises(ConfigError) as info:
        load_rules_file(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_good_catalogue_loads_in_order_with_compiled_patterns(tmp_path):
    rules = load_rules_file(write(tmp_path, GOOD), require_examples=True)
    assert [r.id for r in rules] == ["closing-signal", "worker-exitcode", "atexit-traceback"]
    marker, worker, atexit = rules
    assert (marker.marker, marker.kind, marker.severity, marker.message) == ("closing-signal", None, None, "")
    assert (worker.kind, worker.severity, worker.literals) == (
        Kind.SIGNAL_EXIT,
        Severity.ERROR,
        ("exitcode",),
    )
    assert worker.pattern_re.search("exitcode : -9 (pid: 3)").group("code") == "-9"
    assert worker.collateral_after == ("closing-signal",)
    assert atexit.is_block and atexit.max_lines == 50 and atexit.root_cause and atexit.ignore_case
    assert atexit.start_re.search("EXCEPTION IGNORED IN ATEXIT CALLBACK <function g") is not None
    assert atexit.end_re is not None and not atexit.user_defined


def test_examples_run_like_the_engine(tmp_path):
    _, worker, atexit = load_rules_file(write(tmp_path, GOOD))
    assert example_matches(worker, "x\n  exitcode  : -15 (pid: 1)")
    assert not example_matches(worker, "EXITCODE : -15 (pid: 1)")
    assert example_matches(worker, "progress 10%\rexitcode : 1 (pid: 2)")
    assert example_matches(atexit, atexit.examples_match[0])


def test_the_builtin_catalogue_loads():
    catalogue = load_catalogue()
    assert builtin_rules_path().endswith("analyzer/rules/catalogue.yaml")
    assert len(catalogue.rules) >= 10
    assert all(rule.examples_match for rule in catalogue.rules)
    kinds = {rule.kind for rule in catalogue.rules if rule.kind}
    assert {Kind.ATEXIT_EXCEPTION, Kind.TIMEOUT, Kind.SIGNAL_EXIT, Kind.CRASH} <= kinds


def test_the_builtin_catalogue_passes_every_check_a_users_file_gets():
    # At run time the shipped patterns compile on first use and skip the checks that need them
    # compiled; this is where those checks run for it.
    checked = builtin_rules(checked=True)
    lazy = builtin_rules()
    assert [r.id for r in checked] == [r.id for r in lazy]
    for fast, full in zip(lazy, checked):
        for name in ("pattern_re", "start_re", "end_re", "capture_re", "cut_short_re"):
            a, b = getattr(fast, name), getattr(full, name)
            assert (a is None) == (b is None), (fast.id, name)
            if a is not None:
                assert a.pattern == b.pattern and a.groupindex == dict(b.groupindex), (fast.id, name)
                assert a.flags == b.flags, (fast.id, name)


def test_a_lazy_pattern_is_the_compiled_one_after_first_use():
    pattern = LazyPattern(r"(?P<what>seg\w+) fault", ignore_case=True)
    assert "search" not in vars(pattern)
    assert pattern.search("xx SEGMENTATION FAULT").group("what") == "SEGMENTATION"
    assert vars(pattern)["search"].__self__ is vars(pattern)["match"].__self__  # one compiled regex
    assert pickle.loads(pickle.dumps(pattern)).search("segv fault") is not None


RULE = """\
rules:
  - id: some-rule
    kind: crash
    severity: error
    message: "crashed: {what}"
    doc: A crash.
    pattern: 'CRASH (?P<what>\\w+)'
    examples: {match: ["CRASH now"]}
"""

CASES = [
    # (extra keys for rules[0], replacement of a base line or None, the expected key: problem)
    ("    colour: red\n", None, "rules[0].colour: unknown key; expected one of: id, kind, severity"),
    ("", ("    kind: crash\n", ""), "rules[0].kind: missing"),
    ("", ("    kind: crash\n", "    kind: explosion\n"), "rules[0].kind: 'explosion' is not one of: "),
    ("", ("    severity: error\n", "    severity: fatal\n"), "rules[0].severity: 'fatal' is not one of: "),
    ("", ("    severity: error\n", ""), "rules[0].severity: missing"),
    ("", ("- id: some-rule", "- id: Some_Rule"), "rules[0].id: 'Some_Rule' is not kebab-case"),
    ("", ("- id: some-rule", "- id: 12"), "rules[0].id: must be a non-empty string, not 12"),
    ("", ("    doc: A crash.\n", ""), "rules[0].doc: missing"),
    ("", ('    message: "crashed: {what}"\n', ""), "rules[0].message: missing"),
    (
        "",
        ("crashed: {what}", "crashed: {who}"),
        "rules[0].message: {who} is not a named group of the pattern (groups: what)",
    ),
    ("", ("crashed: {what}", "crashed: {what"), "rules[0].message: expected '}' before end of string"),
    (
        "",
        ("crashed: {what}", "crashed: {what!r}"),
        "rules[0].message: {what} is not a plain {name} field nor a {name:text {} text|otherwise} template",
    ),
    (
        "",
        ("crashed: {what}", "crashed{what:x}"),
        "rules[0].message: {what} is not a plain {name} field nor a {name:text {} text|otherwise} template",
    ),
    (
        "",
        ("crashed: {what}", "crashed{what:x|{}}"),
        "rules[0].message: {what} is not a plain {name} field nor a {name:text {} text|otherwise} template",
    ),
    (
        "",
        ("crashed: {what}", "crashed{what: {} and {}}"),
        "rules[0].message: {what} is not a plain {name} field nor a {name:text {} text|otherwise} template",
    ),
    (
        "",
        ("CRASH (?P<what>\\w+)", "CRASH (?P<what>\\w+"),
        "rules[0].pattern: rule some-rule: invalid regex: missing ) at position 18",
    ),
    ("", ("CRASH (?P<what>\\w+)", "(?P<what>x*)"), "rules[0].pattern: rule some-rule: matches an empty line"),
    (
        "    start: 'a'\n    end: 'b'\n",
        None,
        "rules[0].pattern: give either pattern, or start and end, not both",
    ),
    ("", ("    pattern: 'CRASH (?P<what>\\w+)'\n", ""), "rules[0].pattern: missing; give pattern, or start"),
    ("    max_lines: 10\n", None, "rules[0].max_lines: only a block rule (start and end) has max_lines"),
    ("    unframed_run: true\n", None, "rules[0].unframed_run: only a marker rule has unframed_run"),
    (
        "    capture: 'in (?P<where>\\w+)'\n",
        None,
        "rules[0].capture: only a block rule (start and end) has capture",
    ),
    ("    ignore_case: yes please\n", None, "rules[0].ignore_case: must be true or false, not 'yes please'"),
    ("    literals: CRASH\n", None, "rules[0].literals: must be a list of strings"),
    ("    literals: ['']\n", None, "rules[0].literals[0]: must be a non-empty string, not ''"),
    (
        "    collateral_after: [no-such-marker]\n",
        None,
        "rules[0].collateral_after[0]: no rule defines marker",
    ),
    ("    same_event_as: [no-such-rule]\n", None, "rules[0].same_event_as[0]: no rule has id no-such-rule"),
    ("    same_event_lines: -1\n", None, "rules[0].same_event_lines: must be a whole number of lines >= 0"),
    ("    dies_of: SIGNOPE\n", None, "rules[0].dies_of: 'SIGNOPE' is not a signal name such as SIGABRT"),
    ("    fold_groups: [who]\n", None, "rules[0].fold_groups[0]: 'who' is not a named group of the pattern"),
    ("    fold_groups: what\n", None, "rules[0].fold_groups: must be a list of strings"),
    ("    across_ranks: [who?]\n", None, "rules[0].across_ranks[0]: 'who' is not a named group of the"
     " pattern"),
    ("    marker: Closing\n", None, "rules[0].marker: 'Closing' is not kebab-case"),
    ("    marker: closing\n", None, "rules[0].kind: a marker rule makes no finding; remove it"),
    (
        "",
        ('examples: {match: ["CRASH now"]}', "examples: [CRASH now]"),
        "rules[0].examples: must be a mapping",
    ),
    ("", ('examples: {match: ["CRASH now"]}', "examples: {maybe: [x]}"), "rules[0].examples.maybe: unknown"),
    (
        "",
        ('examples: {match: ["CRASH now"]}', "examples: {no_match: [x]}"),
        "rules[0].examples.match: missing",
    ),
    ("", ('    examples: {match: ["CRASH now"]}\n', ""), "rules[0].examples: missing"),
]


@pytest.mark.parametrize("extra, replace, expected", CASES)
def test_each_bad_rule_key_is_one_line_naming_file_and_key(tmp_path, extra, replace, expected):
    text = (RULE if replace is None else RULE.replace(*replace)) + extra
    assert text != RULE
    path = write(tmp_path, text)
    message = error_of(path, require_examples=True)
    assert message.startswith(f"{path}: {expected}"), message


def test_block_rules_need_both_ends(tmp_path):
    base = "rules:\n  - {id: b, kind: crash, severity: error, message: m, doc: d, %s}\n"
    path = write(tmp_path, base % "start: 'x'")
    assert error_of(path) == f"{path}: rules[0].end: missing; a block rule needs both start and end"
    path = write(tmp_path, base % "end: 'x'")
    assert error_of(path) == f"{path}: rules[0].start: missing; a block rule needs both start and end"
    path = write(tmp_path, base % "start: 'x', end: 'y', max_lines: 1")
    assert error_of(path) == f"{path}: rules[0].max_lines: must be a whole number of lines >= 2, not 1"
    path = write(tmp_path, base % "start: 'x', end: 'y', max_lines: true")
    assert error_of(path) == f"{path}: rules[0].max_lines: must be a whole number of lines >= 2, not True"


def test_duplicate_ids_name_both_places(tmp_path):
    rule = "  - {id: dup, kind: crash, severity: error, message: m, doc: d, pattern: x}\n"
    path = write(tmp_path, "rules:\n" + rule + rule)
    assert error_of(path) == f"{path}: rules[1].id: duplicate id dup (first at rules[0])"


def test_a_yaml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, "rules:\n  - id: a\n    pattern: [unclosed\n")
    message = error_of(path)
    assert message.startswith(f"{path}: line 4: invalid YAML: "), message


def test_a_key_given_twice_is_refused_with_its_line(tmp_path):
    path = write(tmp_path, "rules:\n  - id: a\n    id: b\n")
    assert error_of(path) == f"{path}: line 3: invalid YAML: duplicate key 'id'"


def test_file_level_problems(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    assert error_of(missing) == f"{missing}: file: cannot read: No such file or directory"
    path = write(tmp_path, "- a\n- b\n")
    assert error_of(path).startswith(f"{path}: rules: missing; a catalogue is a mapping")
    path = write(tmp_path, "rules: []\nextra: 1\n")
    assert error_of(path) == f"{path}: extra: unknown key; a catalogue has only rules:"
    path = write(tmp_path, "rules: {a: 1}\n")
    assert error_of(path) == f"{path}: rules: must be a list of rules, not a mapping"
    path = write(tmp_path, "rules:\n  - just a string\n")
    assert error_of(path).startswith(f"{path}: rules[0]: a rule must be a mapping")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"rules: []\n# caf\xe9\n")
    assert error_of(str(bad)) == f"{bad}: file: not UTF-8 (line 2)"
    path = write(tmp_path, "rules: []\nwhen: 2024-13-45\n")
    assert error_of(path).startswith(f"{path}: document: invalid YAML: ")


# What analyzer/supervise/guard.py makes today (kind, severity) for each of its rule ids, and the
# scanner's own finding: the catalogue documents exactly these.
PROGRAM_FINDINGS = {
    "guard-timeout": (Kind.HANG, Severity.ERROR),
    "guard-idle-timeout": (Kind.HANG, Severity.ERROR),
    "guard-cancelled": (Kind.HANG, Severity.ERROR),
    "guard-aborted": (Kind.HANG, Severity.ERROR),
    "guard-unkillable-process": (Kind.UNKILLABLE_PROCESS, Severity.ERROR),
    "guard-leaked-process": (Kind.LEAKED_PROCESS, Severity.WARNING),
    "guard-command-failed": (Kind.CRASH, Severity.ERROR),
    "guard-oom-kill": (Kind.SIGNAL_EXIT, Severity.ERROR),
    "guard-command-not-started": (Kind.CRASH, Severity.ERROR),
    "scan-incomplete": (Kind.SCAN_INCOMPLETE, Severity.WARNING),
    "test-never-finished": (Kind.TEST_FAILURE, Severity.ERROR),
    "traceback-ends-log": (Kind.CRASH, Severity.ERROR),
    "rank-raised": (Kind.WORKER_FAILURE, Severity.ERROR),
    "unittest-failures-unnamed": (Kind.TEST_FAILURE, Severity.ERROR),
}


def test_the_catalogue_documents_every_finding_the_program_makes_itself():
    from analyzer.model import GUARD_RULE_IDS
    from analyzer.rules.loader import PROGRAM_RULE_IDS

    catalogue = load_catalogue()
    made = {rule.id: (rule.kind, rule.severity) for rule in catalogue.guard_rules}
    assert made == PROGRAM_FINDINGS
    assert set(made) == set(PROGRAM_RULE_IDS) >= set(GUARD_RULE_IDS)
    assert all(rule.guard and rule.pattern_re is None and rule.doc for rule in catalogue.guard_rules)
    assert not any(rule.guard for rule in catalogue.rules), "the engine must never see a guard rule"
    assert catalogue.guard_rule("scan-incomplete").message == "part of the input was not scanned: {reason}"


GUARD_RULE = (
    "rules:\n  - {id: g, guard: true, kind: hang, severity: error, message: 'hung <where>', doc: d%s}\n"
)


def test_a_guard_rule_has_no_pattern_and_needs_no_examples(tmp_path):
    (rule,) = load_rules_file(write(tmp_path, GUARD_RULE % ""), require_examples=True)
    assert rule.guard and rule.kind is Kind.HANG and rule.message == "hung <where>"
    misplaced = [(", pattern: x", "pattern"), (", literals: [x]", "literals")]
    misplaced.append((", start: a, end: b", "start"))
    for extra, key in misplaced:
        path = write(tmp_path, GUARD_RULE % extra)
        assert error_of(path) == (
            f"{path}: rules[0].{key}: a guard rule has no pattern: the program makes its finding itself; "
            f"remove {key}"
        )
    path = write(tmp_path, GUARD_RULE.replace("severity: error, ", ""))
    assert error_of(path) == f"{path}: rules[0].severity: missing"
