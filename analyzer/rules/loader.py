"""Load the rule catalogue: the built-in ``catalogue.yaml``, checked and compiled, plus the user's config.

Every rule is validated when it loads against the ``RULE`` table (known keys only, kebab-case unique
ids, a kind and severity from the contract, ``pattern`` or ``start`` + ``end``, message fields that
name a regex group, examples of the right shape; ``schema.check_mapping`` does the checking) and every
pattern is compiled with ``regex``, so a broken rule fails at start-up with a ``ConfigError`` that
names the file and the key (``catalogue.yaml: rules[3].pattern: ...``) instead of failing, or
silently matching nothing, in the middle of a scan.

A rule has one of these shapes, and each key of ``RULE`` says which shapes it belongs to:
``line`` (``pattern``), ``block`` (``start`` ... ``end``), ``marker-line`` / ``marker-block`` (a marker
rule: context for ranking, no finding) and ``guard`` (``guard: true``: a finding the program makes
itself, no pattern; see ``analyzer.rules.model``).
"""

from __future__ import annotations

import dataclasses
import os
import string
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import ConfigError
from ..model import (
    GUARD_RULE_IDS,
    SCAN_INCOMPLETE_RULE,
    TEST_NEVER_FINISHED_RULE,
    RANK_RAISED_RULE,
    TRACEBACK_ENDS_LOG_RULE,
    UNITTEST_FAILURES_UNNAMED_RULE,
    Kind,
    Severity,
)
from . import schema
from .cache import cached_rules, cached_yaml
from .config import UserConfig, load_config, parse_yaml_bytes, read_config_bytes, read_yaml
from .model import Catalogue, Rule
from .schema import Key, Table, check_mapping, key_part, show

BUILTIN_CATALOGUE = "catalogue.yaml"
KINDS = tuple(k.value for k in Kind)
SEVERITIES = tuple(s.value for s in Severity)
# A message may also name ``{<group>_exit}``: the group's number described as an exit, e.g.
# "exit 143 (SIGTERM)" (see analyzer.exits.describe_exit), so every rule words exits the same way.
EXIT_FIELD_SUFFIX = "_exit"
# ``{name_wstatus}``: group ``name`` read as a raw wait(2) status of a process a signal ended
# (analyzer.exits.describe_wait_status): MPICH's hydra prints one as its "EXIT CODE".
WAIT_STATUS_FIELD_SUFFIX = "_wstatus"
# ``{name_exitbyte}``: group ``name`` read as an exit status a wrapper passed on, 128 + N or 256 - N for
# a signal N (analyzer.exits.describe_exit_byte): "exit 247 (SIGKILL, as 256 - 9)" where one exit(-9)-ed.
EXIT_BYTE_FIELD_SUFFIX = "_exitbyte"
# A field may carry a template, ``{reason:: {}}``: the template with the value at ``{}`` where the group
# matched, nothing where it did not (analyzer.scan.rank.format_message), for a wording's optional part;
# or the text after a ``|`` where it did not: ``{test:test {}|a test}``.
TEMPLATE_SLOT = "{}"
TEMPLATE_OTHERWISE = "|"
PROGRAM_RULE_IDS = (
    *GUARD_RULE_IDS, SCAN_INCOMPLETE_RULE, TEST_NEVER_FINISHED_RULE, TRACEBACK_ENDS_LOG_RULE,
    RANK_RAISED_RULE, UNITTEST_FAILURES_UNNAMED_RULE,
)

LINE, BLOCK, MARKER_LINE, MARKER_BLOCK, GUARD = "line", "block", "marker-line", "marker-block", "guard"
_FINDINGS = frozenset({LINE, BLOCK, GUARD})
_PATTERNED = frozenset({LINE, BLOCK, MARKER_LINE, MARKER_BLOCK})
_BLOCKS = frozenset({BLOCK, MARKER_BLOCK})
_MARKERS = frozenset({MARKER_LINE, MARKER_BLOCK})
_ONLY_BLOCK = "only a block rule (start and end) has {name}"
_ONLY_MARKER = "only a marker rule has {name}"
_MARKER_NO_FINDING = "a marker rule makes no finding; it cannot be collateral or root cause"

EXAMPLES = Table(
    (Key("match", schema.strings(), default=()), Key("no_match", schema.strings(), default=())),
    not_mapping="must be a mapping with match: and no_match: lists",
    unknown="unknown key; expected match or no_match",
)


def _examples(value: Any, source: str, key: str) -> Dict[str, Any]:
    return check_mapping(value, EXAMPLES, source, key)


RULE = Table(
    (
        Key("id", schema.kebab, required=True),
        Key("kind", schema.choice(KINDS, Kind), required=True, shapes=_FINDINGS),
        Key("severity", schema.choice(SEVERITIES, Severity), required=True, shapes=_FINDINGS),
        Key("message", schema.one_line, default="", required=_FINDINGS),
        Key("inner_message", schema.one_line, default="", shapes=_FINDINGS),
        Key("doc", schema.text, required=True),
        Key("pattern", schema.text, shapes=frozenset({LINE, MARKER_LINE})),
        Key("start", schema.text, shapes=_BLOCKS),
        Key("end", schema.text, shapes=_BLOCKS),
        Key("capture", schema.text, shapes=_BLOCKS, misplaced=_ONLY_BLOCK),
        Key("cut_short", schema.text, shapes=_BLOCKS, misplaced=_ONLY_BLOCK),
        Key("max_lines", schema.count(2, "lines"), default=200, shapes=_BLOCKS, misplaced=_ONLY_BLOCK),
        Key("at_end", schema.flag, default=False, shapes=_BLOCKS, misplaced=_ONLY_BLOCK),
        Key("ignore_case", schema.flag, default=False, shapes=_PATTERNED),
        Key("literals", schema.strings(), default=(), shapes=_PATTERNED),
        Key("examples", _examples, shapes=_PATTERNED),
        Key("marker", schema.kebab, shapes=_MARKERS),
        Key("unframed_run", schema.flag, default=False, shapes=_MARKERS, misplaced=_ONLY_MARKER),
        Key("void_at_end", schema.flag, default=False, shapes=_MARKERS, misplaced=_ONLY_MARKER),
        Key("collateral_after", schema.strings(schema.kebab), default=(), shapes=_FINDINGS,
            misplaced=_MARKER_NO_FINDING),
        Key("root_cause", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("voids_verdict", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("same_event_as", schema.strings(schema.kebab), default=(), shapes=_FINDINGS,
            misplaced=_MARKER_NO_FINDING),
        Key("same_event_lines", schema.count(0, "lines"), default=0, shapes=_FINDINGS,
            misplaced=_MARKER_NO_FINDING),
        Key("same_event_in_test", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("dies_of", schema.signal_name, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("peer_lost", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("stack_follows", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("fold_groups", schema.strings(), default=(), shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("across_ranks", schema.strings(), default=(), shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("fallback", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("error_at_end", schema.flag, default=False, shapes=_FINDINGS, misplaced=_MARKER_NO_FINDING),
        Key("guard", schema.flag, default=False),
    ),
    not_mapping="a rule must be a mapping of keys such as id, kind, pattern",
    misplaced={
        LINE: _ONLY_BLOCK,
        MARKER_LINE: "a marker rule makes no finding; remove it",
        MARKER_BLOCK: "a marker rule makes no finding; remove it",
        GUARD: "a guard rule has no pattern: the program makes its finding itself; remove {name}",
    },
)
RULE_KEYS = RULE.names


_CATALOGUE_SHAPE = "a catalogue is a mapping with a top-level rules: list"
CATALOGUE = Table(
    (Key("rules", schema.rule_list, required=True, hint=_CATALOGUE_SHAPE),),
    not_mapping=f"missing; {_CATALOGUE_SHAPE}",
    unknown="unknown key; a catalogue has only rules:",
)


def builtin_rules_path() -> str:
    """The absolute path of the catalogue shipped inside the package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), BUILTIN_CATALOGUE)


def builtin_rules(checked: bool = False) -> Tuple[Rule, ...]:
    """Every rule of the built-in catalogue in order, its ``guard: true`` rules included.

    The shipped catalogue is checked by the test suite (``checked=True`` does every check a user's
    file gets); here its patterns compile on first use instead, since compiling them all is half of
    the scanner's start-up and most rules never see a candidate line.
    """
    return load_rules_file(builtin_rules_path(), require_examples=True, trusted=not checked)


def load_catalogue(config_path: Optional[str] = None) -> Catalogue:
    """The built-in rules in order, with the user's config at ``config_path`` merged in.

    Raises ``ConfigError`` (one line naming the file and the key) for any problem in either file.
    """
    rules = builtin_rules()
    config = load_config(config_path) if config_path is not None else UserConfig(source="")
    return apply_config(rules, config)


def load_rules_file(
    path: str, user_defined: bool = False, require_examples: bool = False, trusted: bool = False
) -> Tuple[Rule, ...]:
    """The rules of a catalogue file (a top-level ``rules:`` list) in order; raises ``ConfigError``.

    ``trusted``: the file is the shipped catalogue; see ``parse_rule``. Its parsed YAML and its checked
    rules are cached between runs (``analyzer.rules.cache``)."""
    if trusted:
        raw = read_config_bytes(path)

        def build() -> Tuple[Rule, ...]:
            data = cached_yaml(path, raw, lambda: parse_yaml_bytes(raw, path))
            return parse_catalogue(data, path, user_defined, require_examples, trusted)

        return cached_rules(path, raw, build, b"%d %d" % (user_defined, require_examples))
    return parse_catalogue(read_yaml(path), path, user_defined, require_examples, trusted)


def parse_catalogue(
    data: Any, source: str, user_defined: bool = False, require_examples: bool = False, trusted: bool = False
) -> Tuple[Rule, ...]:
    """The rules of a loaded catalogue document, checked as a whole; raises ``ConfigError``."""
    if not isinstance(data, dict):
        raise ConfigError(source, "rules", CATALOGUE.not_mapping)
    top = check_mapping(data, CATALOGUE, source, "document", prefix="")
    rules = parse_rules(
        top["rules"], source, user_defined=user_defined, require_examples=require_examples, trusted=trusted
    )
    check_markers(rules, source)
    check_same_event(rules, source, {rule.id for rule in rules if not rule.marker})
    return rules


def parse_rules(
    data: Any,
    source: str,
    key: str = "rules",
    user_defined: bool = False,
    require_examples: bool = False,
    reserved_ids: Iterable[str] = (),
    trusted: bool = False,
) -> Tuple[Rule, ...]:
    """Validate and compile a list of rule mappings; raises ``ConfigError`` naming ``source`` and key.

    ``reserved_ids`` are ids already taken (the built-in ones, when ``data`` is the user's).
    """
    data = schema.rule_list(data, source, key)
    reserved = set(reserved_ids)
    first_seen: Dict[str, str] = {}
    rules: List[Rule] = []
    for index, item in enumerate(data):
        where = f"{key}[{index}]"
        rule = parse_rule(item, source, where, user_defined, require_examples, trusted)
        if rule.id in reserved:
            raise ConfigError(
                source,
                f"{where}.id",
                f"{rule.id} is a built-in rule; change its severity under severity: instead",
            )
        if rule.id in first_seen:
            raise ConfigError(
                source, f"{where}.id", f"duplicate id {rule.id} (first at {first_seen[rule.id]})"
            )
        first_seen[rule.id] = where
        rules.append(rule)
    return tuple(rules)


def _shape(data: Mapping[str, Any], source: str, where: str) -> str:
    """Which shape of rule ``data`` is (see the module docstring); raises for a pattern/start/end mix."""
    if data.get("guard") is True:
        return GUARD
    pattern, start, end = (data.get(name) is not None for name in ("pattern", "start", "end"))
    if pattern and (start or end):
        raise ConfigError(source, f"{where}.pattern", "give either pattern, or start and end, not both")
    if not (pattern or start or end):
        raise ConfigError(source, f"{where}.pattern", "missing; give pattern, or start and end for a block")
    if not pattern and not (start and end):
        missing = "start" if end else "end"
        raise ConfigError(source, f"{where}.{missing}", "missing; a block rule needs both start and end")
    marker = data.get("marker") is not None
    if marker:  # a bad marker name explains the keys that follow better than they explain it
        schema.kebab(data["marker"], source, f"{where}.marker")
    return (MARKER_LINE if marker else LINE) if pattern else (MARKER_BLOCK if marker else BLOCK)


def parse_rule(
    data: Any, source: str, where: str, user_defined: bool = False, require_examples: bool = False,
    trusted: bool = False,
) -> Rule:
    """One rule mapping, validated and compiled; ``where`` is its key (``rules[3]``) for errors.

    ``trusted`` (the shipped catalogue only, which the test suite checks in full): the patterns are
    compiled on first use, and the checks that need them compiled (no empty match, the message's
    groups exist) are left to the tests."""
    if not isinstance(data, dict):
        raise ConfigError(source, where, RULE.not_mapping)
    shapes: List[str] = []

    def shape_of(checked: Dict[str, Any]) -> str:
        shapes.append(_shape(checked, source, where))
        if shapes[0] == GUARD and user_defined:
            raise ConfigError(source, f"{where}.guard", "only built-in rules are made by the guard itself")
        return shapes[0]

    values = check_mapping(data, RULE, source, where, shape=shape_of)
    shape = shapes[0]
    rule_id = values["id"]
    names = [name for name in ("pattern", "start", "end", "capture", "cut_short") if values[name] is not None]
    if trusted:
        compiled = {name: schema.LazyPattern(values[name], values["ignore_case"]) for name in names}
    else:
        compiled = {
            name: schema.compile_pattern(
                values[name], source, f"{where}.{name}", values["ignore_case"], label=f"rule {rule_id}: "
            )
            for name in names
        }
    for name in ("pattern", "start") if not trusted else ():
        if name in compiled and compiled[name].search("") is not None:
            raise ConfigError(
                source,
                f"{where}.{name}",
                f"rule {rule_id}: matches an empty line, so it would match every line",
            )
    if shape != GUARD and not trusted:
        groups: Set[str] = set()
        for rx in compiled.values():
            groups.update(rx.groupindex)
        if values["message"]:
            _check_message(values["message"], groups, source, f"{where}.message")
        if values["inner_message"]:
            _check_message(values["inner_message"], groups, source, f"{where}.inner_message")
        _check_fold_groups(values["fold_groups"], groups, source, f"{where}.fold_groups")
        _check_fold_groups([name.rstrip("?") for name in values["across_ranks"]], groups, source,
                           f"{where}.across_ranks")
    examples = values["examples"]
    if examples is None and require_examples and shape != GUARD:
        raise ConfigError(source, f"{where}.examples", "missing; list lines that must match (and must not)")
    examples = examples or {"match": (), "no_match": ()}
    if require_examples and shape != GUARD and not examples["match"]:
        raise ConfigError(
            source, f"{where}.examples.match", "missing; give at least one line that must match"
        )
    return Rule(
        id=rule_id,
        kind=values["kind"],
        severity=values["severity"],
        message=values["message"],
        inner_message=values["inner_message"],
        doc=values["doc"],
        pattern=values["pattern"],
        start=values["start"],
        end=values["end"],
        capture=values["capture"],
        cut_short=values["cut_short"],
        max_lines=values["max_lines"],
        ignore_case=values["ignore_case"],
        literals=values["literals"],
        examples_match=examples["match"],
        examples_no_match=examples["no_match"],
        marker=values["marker"],
        unframed_run=values["unframed_run"],
        void_at_end=values["void_at_end"],
        collateral_after=values["collateral_after"],
        root_cause=values["root_cause"],
        at_end=values["at_end"],
        voids_verdict=values["voids_verdict"],
        same_event_as=values["same_event_as"],
        same_event_lines=values["same_event_lines"],
        same_event_in_test=values["same_event_in_test"],
        dies_of=values["dies_of"],
        peer_lost=values["peer_lost"],
        stack_follows=values["stack_follows"],
        fold_groups=values["fold_groups"],
        across_ranks=values["across_ranks"],
        fallback=values["fallback"],
        error_at_end=values["error_at_end"],
        user_defined=user_defined,
        guard=shape == GUARD,
        pattern_re=compiled.get("pattern"),
        start_re=compiled.get("start"),
        end_re=compiled.get("end"),
        capture_re=compiled.get("capture"),
        cut_short_re=compiled.get("cut_short"),
    )


def check_markers(
    rules: Sequence[Rule], source: str, markers: Optional[Set[str]] = None, key: str = "rules"
) -> None:
    """Every ``collateral_after`` name must be a known marker; raises ``ConfigError`` naming the key.

    ``markers`` defaults to the markers ``rules`` define themselves.
    """
    if markers is None:
        markers = {rule.marker for rule in rules if rule.marker}
    for index, rule in enumerate(rules):
        for position, name in enumerate(rule.collateral_after):
            if name not in markers:
                raise ConfigError(
                    source,
                    f"{key}[{index}].collateral_after[{position}]",
                    f"no rule defines marker {name}; markers: {', '.join(sorted(markers)) or 'none'}",
                )


def check_same_event(rules: Sequence[Rule], source: str, known: Set[str], key: str = "rules") -> None:
    """Every ``same_event_as`` id must name a rule that makes findings; raises ``ConfigError``."""
    for index, rule in enumerate(rules):
        for position, name in enumerate(rule.same_event_as):
            if name not in known:
                where = f"{key}[{index}].same_event_as[{position}]"
                raise ConfigError(source, where, f"no rule has id {name}")


def apply_config(builtin: Sequence[Rule], config: UserConfig) -> Catalogue:
    """The catalogue in force: ``builtin`` with the user's severities, ignores and extra rules.

    ``builtin`` may hold ``guard: true`` rules; they are re-graded and ignored like the others and
    land in ``Catalogue.guard_rules``. Ignored rules are dropped (they cost no matching time); their
    ids stay in ``ignore_rules``. Raises ``ConfigError`` naming ``config.source`` for an unknown rule
    id or a bad extra rule.
    """
    source = config.source
    builtin_ids = [rule.id for rule in builtin]
    extra = parse_rules(list(config.rules), source, "rules", user_defined=True, reserved_ids=builtin_ids)
    deadline_s = config.match_budget_s
    for index, rule in enumerate(extra):
        check_examples(rule, source, f"rules[{index}]", config.match_timeout_s, deadline_s)
    by_id = {rule.id: rule for rule in (*builtin, *extra)}
    # The ids of findings the program makes itself are known even to a catalogue that does not
    # document them (one built by a test from a few rules).
    known = list(by_id) + [rule_id for rule_id in PROGRAM_RULE_IDS if rule_id not in by_id]

    for rule_id, _ in config.severity:
        _check_rule_id(rule_id, known, source, f"severity.{key_part(rule_id)}")
        if rule_id in by_id and by_id[rule_id].marker:
            raise ConfigError(
                source,
                f"severity.{key_part(rule_id)}",
                "is a marker rule; it makes no finding, so it has no severity",
            )
    for index, rule_id in enumerate(config.ignore_rules):
        _check_rule_id(rule_id, known, source, f"ignore.rules[{index}]")
    for index, line_ignore in enumerate(config.ignore_lines):
        for position, rule_id in enumerate(line_ignore.rules):
            _check_rule_id(rule_id, known, source, f"ignore.lines[{index}].rules[{position}]")

    severities = dict(config.severity)
    ignored = set(config.ignore_rules)
    in_force = tuple(
        dataclasses.replace(rule, severity=severities[rule.id]) if rule.id in severities else rule
        for rule in (*builtin, *extra)
        if rule.id not in ignored
    )
    rules = tuple(rule for rule in in_force if not rule.guard)
    check_markers(extra, source, markers={rule.marker for rule in rules if rule.marker})
    check_same_event(extra, source, {rule.id for rule in rules if not rule.marker})
    return Catalogue(
        rules=rules,
        guard_rules=tuple(rule for rule in in_force if rule.guard),
        ignore_paths=config.ignore_paths,
        ignore_lines=config.ignore_lines,
        match_timeout_s=config.match_timeout_s,
        match_budget_s=config.match_budget_s,
        ignore_rules=config.ignore_rules,
        severity_overrides=config.severity,
    )


def example_matches(
    rule: Rule, example: str, timeout_s: Optional[float] = None, deadline: Optional[float] = None
) -> bool:
    """Whether ``rule`` matches the cleaned text ``example`` (lines split on ``\\n``), as the engine would.

    A line must hold one of ``literals`` (if any), and the rule's ``pattern`` (a block rule: its
    ``start``; the engine closes a block at its ``end``, at ``max_lines`` or at the end of the log) must
    be found in one of its ``\\r`` segments. Raises ``TimeoutError`` when a search runs out of
    ``timeout_s``, or when the ``time.monotonic()`` ``deadline`` passes.
    """
    compiled = rule.start_re if rule.is_block else rule.pattern_re
    if compiled is None:
        return False
    for line in example.split("\n"):
        if rule.literals and not any(literal in line for literal in rule.literals):
            continue
        for segment in line.split("\r"):
            kwargs: Dict[str, float] = {}
            if timeout_s is not None:
                kwargs["timeout"] = timeout_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                kwargs["timeout"] = min(kwargs.get("timeout", left), left)
            if compiled.search(segment, **kwargs) is not None:
                return True
    return False


def check_examples(
    rule: Rule, source: str, where: str, timeout_s: Optional[float] = None, budget_s: Optional[float] = None
) -> None:
    """Raise ``ConfigError`` unless every ``match`` example matches and no ``no_match`` example does.

    Each search may take ``timeout_s``; all the rule's examples together ``budget_s`` (the config's
    ``match_budget``), so a slow pattern cannot make loading slow, whatever the number of examples.
    """
    cases = [("match", text, True) for text in rule.examples_match]
    cases += [("no_match", text, False) for text in rule.examples_no_match]
    counters = {"match": 0, "no_match": 0}
    deadline = None if budget_s is None else time.monotonic() + budget_s
    for group, text, expected in cases:
        key = f"{where}.examples.{group}[{counters[group]}]"
        counters[group] += 1
        try:
            matched = example_matches(rule, text, timeout_s, deadline)
        except TimeoutError:
            if deadline is not None and time.monotonic() >= deadline:
                problem = f"its examples took more than match_budget ({budget_s}s); the pattern is too slow"
            else:
                problem = f"the pattern ran out of time ({timeout_s}s) on this example"
            raise ConfigError(source, key, f"rule {rule.id}: {problem}") from None
        if matched != expected:
            problem = "does not match" if expected else "matches, but must not"
            raise ConfigError(source, key, f"rule {rule.id}: {problem}: {show(text)}")


def _described_group(field: str) -> Optional[str]:
    """The group a ``{name_exit}``, ``{name_wstatus}`` or ``{name_exitbyte}`` field describes; ``None``
    for another field."""
    for suffix in (EXIT_FIELD_SUFFIX, WAIT_STATUS_FIELD_SUFFIX, EXIT_BYTE_FIELD_SUFFIX):
        if field.endswith(suffix):
            return field[: -len(suffix)]
    return None


def message_fields(message: str) -> Tuple[str, ...]:
    """The ``{field}`` names in ``message``; raises ``ValueError`` for a malformed format string."""
    return tuple(field for _, field, _, _ in string.Formatter().parse(message) if field is not None)


def _check_message(message: str, groups: Set[str], source: str, key: str) -> None:
    try:
        parsed = list(string.Formatter().parse(message))
    except ValueError as err:
        raise ConfigError(source, key, f"{err}; write a literal brace as {{{{ or }}}}") from None
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier() or conversion or not _plain_template(spec):
            shapes = "a plain {name} field nor a {name:text {} text|otherwise} template"
            raise ConfigError(source, key, f"{{{field}}} is not {shapes}")
        base = _described_group(field)
        if field not in groups and base not in groups:
            names = ", ".join(sorted(groups)) or "none"
            raise ConfigError(
                source, key, f"{{{field}}} is not a named group of the pattern (groups: {names})"
            )


def fill_template(template: str, value: Optional[str]) -> str:
    """A message field's template for ``value``: the text before ``|`` with the value at ``{}``, or the
    text after ``|`` (nothing without one) when the group did not match (``None``)."""
    shown, _, otherwise = template.partition(TEMPLATE_OTHERWISE)
    return otherwise if value is None else shown.replace(TEMPLATE_SLOT, value, 1)


def _plain_template(spec: str) -> bool:
    """Whether a field's format spec is empty or a template: text with one ``{}`` and no other brace,
    then maybe ``|`` and a text without braces."""
    if not spec:
        return True
    shown, _, otherwise = spec.partition(TEMPLATE_OTHERWISE)
    rest = shown.replace(TEMPLATE_SLOT, "", 1) + otherwise
    return TEMPLATE_SLOT in shown and "{" not in rest and "}" not in rest


def _check_fold_groups(names: Sequence[str], groups: Set[str], source: str, key: str) -> None:
    for index, name in enumerate(names):
        if name not in groups:
            known = ", ".join(sorted(groups)) or "none"
            raise ConfigError(
                source, f"{key}[{index}]", f"{name!r} is not a named group of the pattern (groups: {known})"
            )


def _check_rule_id(rule_id: str, known: Sequence[str], source: str, key: str) -> None:
    if rule_id in known:
        return
    import difflib  # only for a config's unknown rule id

    close = difflib.get_close_matches(rule_id[: 4 * schema.SHOW_CHARS], known, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise ConfigError(source, key, f"unknown rule id{hint}")
