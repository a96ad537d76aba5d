"""Load the rule catalogue: the built-in ``catalogue.yaml``, checked and compiled, plus the user's config.

Every rule is validated when it loads (known keys only, kebab-case unique ids, a kind and severity
from the contract, ``pattern`` or ``start`` + ``end``, message fields that name a regex group, examples
of the right shape) and every pattern is compiled with ``regex``, so a broken rule fails at start-up
with a ``ConfigError`` that names the file and the key (``catalogue.yaml: rules[3].pattern: ...``)
instead of failing, or silently matching nothing, in the middle of a scan.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import string
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import regex

from ..errors import ConfigError
from ..model import GUARD_RULE_IDS, Kind, Severity
from .config import UserConfig, compile_user_pattern, load_config, read_yaml, regex_problem, key_part, show
from .model import Catalogue, Rule

BUILTIN_CATALOGUE = "catalogue.yaml"
RULE_KEYS = (
    "id",
    "kind",
    "severity",
    "message",
    "doc",
    "pattern",
    "start",
    "end",
    "capture",
    "max_lines",
    "ignore_case",
    "literals",
    "examples",
    "marker",
    "collateral_after",
    "root_cause",
)
EXAMPLE_KEYS = ("match", "no_match")
KINDS = tuple(k.value for k in Kind)
SEVERITIES = tuple(s.value for s in Severity)
# A message may also name ``{<group>_exit}``: the group's number described as an exit, e.g.
# "exit 143 (SIGTERM)" (see analyzer.exits.describe_exit), so every rule words exits the same way.
EXIT_FIELD_SUFFIX = "_exit"
_KEBAB = regex.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_COMPILE_ERRORS = (regex.error, ValueError, OverflowError, RecursionError, TypeError)


def builtin_rules_path() -> str:
    """The absolute path of the catalogue shipped inside the package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), BUILTIN_CATALOGUE)


def load_catalogue(config_path: Optional[str] = None) -> Catalogue:
    """The built-in rules in order, with the user's config at ``config_path`` merged in.

    Raises ``ConfigError`` (one line naming the file and the key) for any problem in either file.
    """
    rules = load_rules_file(builtin_rules_path(), require_examples=True)
    if config_path is None:
        return Catalogue(rules=rules)
    return apply_config(rules, load_config(config_path))


def load_rules_file(
    path: str, user_defined: bool = False, require_examples: bool = False
) -> Tuple[Rule, ...]:
    """The rules of a catalogue file (a top-level ``rules:`` list) in order; raises ``ConfigError``."""
    return parse_catalogue(read_yaml(path), path, user_defined, require_examples)


def parse_catalogue(
    data: Any, source: str, user_defined: bool = False, require_examples: bool = False
) -> Tuple[Rule, ...]:
    """The rules of a loaded catalogue document, checked as a whole; raises ``ConfigError``."""
    if not isinstance(data, dict) or "rules" not in data:
        raise ConfigError(source, "rules", "missing; a catalogue is a mapping with a top-level rules: list")
    extra = sorted(str(key) for key in data if key != "rules")
    if extra:
        raise ConfigError(source, key_part(extra[0]), "unknown key; a catalogue has only rules:")
    rules = parse_rules(data["rules"], source, user_defined=user_defined, require_examples=require_examples)
    check_markers(rules, source)
    return rules


def parse_rules(
    data: Any,
    source: str,
    key: str = "rules",
    user_defined: bool = False,
    require_examples: bool = False,
    reserved_ids: Iterable[str] = (),
) -> Tuple[Rule, ...]:
    """Validate and compile a list of rule mappings; raises ``ConfigError`` naming ``source`` and key.

    ``reserved_ids`` are ids already taken (the built-in ones, when ``data`` is the user's).
    """
    if not isinstance(data, list):
        raise ConfigError(source, key, "must be a list of rules")
    reserved = set(reserved_ids)
    first_seen: Dict[str, str] = {}
    rules: List[Rule] = []
    for index, item in enumerate(data):
        where = f"{key}[{index}]"
        rule = parse_rule(item, source, where, user_defined, require_examples)
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


def parse_rule(
    data: Any, source: str, where: str, user_defined: bool = False, require_examples: bool = False
) -> Rule:
    """One rule mapping, validated and compiled; ``where`` is its key (``rules[3]``) for errors."""
    if not isinstance(data, dict):
        raise ConfigError(source, where, "a rule must be a mapping of keys such as id, kind, pattern")
    for name in data:
        if not isinstance(name, str) or name not in RULE_KEYS:
            raise ConfigError(
                source, f"{where}.{key_part(name)}", f"unknown key; expected one of: {', '.join(RULE_KEYS)}"
            )
    rule_id = _required_str(data, "id", source, where)
    if not _KEBAB.match(rule_id):
        raise ConfigError(
            source, f"{where}.id", f"{show(rule_id)} is not kebab-case (lowercase words joined by -)"
        )
    marker = _optional_str(data, "marker", source, where)
    if marker is not None and not _KEBAB.match(marker):
        raise ConfigError(source, f"{where}.marker", f"{show(marker)} is not kebab-case")
    kind, severity = _kind_and_severity(data, marker, source, where)
    message = _optional_str(data, "message", source, where) if marker else None
    if not marker:
        message = _required_str(data, "message", source, where)
    if message and ("\n" in message or "\r" in message):
        raise ConfigError(source, f"{where}.message", "must be one line")
    doc = _required_str(data, "doc", source, where)

    pattern = _optional_str(data, "pattern", source, where)
    start = _optional_str(data, "start", source, where)
    end = _optional_str(data, "end", source, where)
    if pattern is not None and (start is not None or end is not None):
        raise ConfigError(source, f"{where}.pattern", "give either pattern, or start and end, not both")
    if pattern is None and start is None and end is None:
        raise ConfigError(source, f"{where}.pattern", "missing; give pattern, or start and end for a block")
    if pattern is None and (start is None or end is None):
        missing = "end" if end is None else "start"
        raise ConfigError(source, f"{where}.{missing}", "missing; a block rule needs both start and end")
    capture = _optional_str(data, "capture", source, where)
    if capture is not None and start is None:
        raise ConfigError(source, f"{where}.capture", "only a block rule (start and end) has capture")
    if "max_lines" in data and start is None:
        raise ConfigError(source, f"{where}.max_lines", "only a block rule (start and end) has max_lines")
    max_lines = data.get("max_lines", 200)
    if isinstance(max_lines, bool) or not isinstance(max_lines, int) or max_lines < 2:
        raise ConfigError(
            source, f"{where}.max_lines", f"must be a whole number of lines >= 2, not {show(max_lines)}"
        )
    ignore_case = _bool(data, "ignore_case", source, where)
    root_cause = _bool(data, "root_cause", source, where)

    compiled = {
        name: _compile(text, ignore_case, source, f"{where}.{name}", rule_id)
        for name, text in (("pattern", pattern), ("start", start), ("end", end), ("capture", capture))
        if text is not None
    }
    for name in ("pattern", "start"):
        if name in compiled and compiled[name].search("") is not None:
            raise ConfigError(
                source,
                f"{where}.{name}",
                f"rule {rule_id}: matches an empty line, so it would match every line",
            )
    groups: Set[str] = set()
    for rx in compiled.values():
        groups.update(rx.groupindex)
    if message:
        _check_message(message, groups, source, f"{where}.message")

    literals = _str_list(data, "literals", source, where)
    collateral_after = _str_list(data, "collateral_after", source, where)
    for index, name in enumerate(collateral_after):
        if not _KEBAB.match(name):
            raise ConfigError(source, f"{where}.collateral_after[{index}]", f"{show(name)} is not kebab-case")
    if marker and (collateral_after or root_cause):
        key = "collateral_after" if collateral_after else "root_cause"
        raise ConfigError(
            source, f"{where}.{key}", "a marker rule makes no finding; it cannot be collateral or root cause"
        )
    examples_match, examples_no_match = _examples(data, source, where, require_examples)

    return Rule(
        id=rule_id,
        kind=kind,
        severity=severity,
        message=message or "",
        doc=doc,
        pattern=pattern,
        start=start,
        end=end,
        capture=capture,
        max_lines=max_lines,
        ignore_case=ignore_case,
        literals=literals,
        examples_match=examples_match,
        examples_no_match=examples_no_match,
        marker=marker,
        collateral_after=collateral_after,
        root_cause=root_cause,
        user_defined=user_defined,
        pattern_re=compiled.get("pattern"),
        start_re=compiled.get("start"),
        end_re=compiled.get("end"),
        capture_re=compiled.get("capture"),
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


def apply_config(builtin: Sequence[Rule], config: UserConfig) -> Catalogue:
    """The catalogue in force: ``builtin`` with the user's severities, ignores and extra rules.

    Ignored rules are dropped (they cost no matching time); their ids stay in ``ignore_rules``.
    Raises ``ConfigError`` naming ``config.source`` for an unknown rule id or a bad extra rule.
    """
    source = config.source
    builtin_ids = [rule.id for rule in builtin]
    extra = parse_rules(list(config.rules), source, "rules", user_defined=True, reserved_ids=builtin_ids)
    for index, rule in enumerate(extra):
        check_examples(rule, source, f"rules[{index}]", config.match_timeout_s)
    by_id = {rule.id: rule for rule in (*builtin, *extra)}
    known = list(by_id) + [rule_id for rule_id in GUARD_RULE_IDS if rule_id not in by_id]

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
    rules = tuple(
        dataclasses.replace(rule, severity=severities[rule.id]) if rule.id in severities else rule
        for rule in (*builtin, *extra)
        if rule.id not in ignored
    )
    check_markers(extra, source, markers={rule.marker for rule in rules if rule.marker})
    return Catalogue(
        rules=rules,
        ignore_paths=config.ignore_paths,
        ignore_lines=config.ignore_lines,
        match_timeout_s=config.match_timeout_s,
        ignore_rules=config.ignore_rules,
        severity_overrides=config.severity,
    )


def example_matches(rule: Rule, example: str, timeout_s: Optional[float] = None) -> bool:
    """Whether ``rule`` matches the cleaned text ``example`` (lines split on ``\\n``), as the engine would.

    A line must hold one of ``literals`` (if any), and the rule's ``pattern`` (a block rule: its
    ``start``; the engine closes a block at its ``end``, at ``max_lines`` or at the end of the log) must
    be found in one of its ``\\r`` segments. Raises ``TimeoutError`` when a search runs out of ``timeout_s``.
    """
    kwargs = {} if timeout_s is None else {"timeout": timeout_s}
    compiled = rule.start_re if rule.is_block else rule.pattern_re
    for line in example.split("\n"):
        if rule.literals and not any(literal in line for literal in rule.literals):
            continue
        for segment in line.split("\r"):
            if compiled.search(segment, **kwargs) is not None:
                return True
    return False


def check_examples(rule: Rule, source: str, where: str, timeout_s: Optional[float] = None) -> None:
    """Raise ``ConfigError`` unless every ``match`` example matches and no ``no_match`` example does."""
    cases = [("match", text, True) for text in rule.examples_match]
    cases += [("no_match", text, False) for text in rule.examples_no_match]
    counters = {"match": 0, "no_match": 0}
    for group, text, expected in cases:
        key = f"{where}.examples.{group}[{counters[group]}]"
        counters[group] += 1
        try:
            matched = example_matches(rule, text, timeout_s)
        except TimeoutError:
            raise ConfigError(
                source, key, f"rule {rule.id}: the pattern ran out of time ({timeout_s}s) on this example"
            ) from None
        if matched != expected:
            problem = "does not match" if expected else "matches, but must not"
            raise ConfigError(source, key, f"rule {rule.id}: {problem}: {show(text)}")


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
        if not field.isidentifier() or spec or conversion:
            raise ConfigError(source, key, f"{{{field}}} is not a plain {{name}} field")
        base = field[: -len(EXIT_FIELD_SUFFIX)] if field.endswith(EXIT_FIELD_SUFFIX) else None
        if field not in groups and base not in groups:
            names = ", ".join(sorted(groups)) or "none"
            raise ConfigError(
                source, key, f"{{{field}}} is not a named group of the pattern (groups: {names})"
            )


def _kind_and_severity(
    data: Mapping[str, Any], marker: Optional[str], source: str, where: str
) -> Tuple[Optional[Kind], Optional[Severity]]:
    if marker:
        for name in ("kind", "severity"):
            if name in data:
                raise ConfigError(source, f"{where}.{name}", "a marker rule makes no finding; remove it")
        return None, None
    kind = _required_str(data, "kind", source, where)
    if kind not in KINDS:
        raise ConfigError(source, f"{where}.kind", f"{show(kind)} is not one of: {', '.join(KINDS)}")
    severity = _required_str(data, "severity", source, where)
    if severity not in SEVERITIES:
        raise ConfigError(
            source, f"{where}.severity", f"{show(severity)} is not one of: {', '.join(SEVERITIES)}"
        )
    return Kind(kind), Severity(severity)


def _compile(pattern: str, ignore_case: bool, source: str, key: str, rule_id: str) -> Any:
    if not pattern:
        raise ConfigError(source, key, f"rule {rule_id}: empty pattern")
    try:
        return compile_user_pattern(pattern, ignore_case)
    except _COMPILE_ERRORS as err:
        raise ConfigError(source, key, f"rule {rule_id}: invalid regex: {regex_problem(err)}") from None


def _examples(
    data: Mapping[str, Any], source: str, where: str, required: bool
) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    examples = data.get("examples")
    if examples is None:
        if required:
            raise ConfigError(
                source, f"{where}.examples", "missing; list lines that must match (and must not)"
            )
        return (), ()
    if not isinstance(examples, dict):
        raise ConfigError(source, f"{where}.examples", "must be a mapping with match: and no_match: lists")
    for name in examples:
        if name not in EXAMPLE_KEYS:
            raise ConfigError(
                source, f"{where}.examples.{key_part(name)}", "unknown key; expected match or no_match"
            )
    matching = _str_list(examples, "match", source, f"{where}.examples")
    not_matching = _str_list(examples, "no_match", source, f"{where}.examples")
    if required and not matching:
        raise ConfigError(
            source, f"{where}.examples.match", "missing; give at least one line that must match"
        )
    return matching, not_matching


def _check_rule_id(rule_id: str, known: Sequence[str], source: str, key: str) -> None:
    if rule_id in known:
        return
    close = difflib.get_close_matches(rule_id, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise ConfigError(source, key, f"unknown rule id{hint}")


def _required_str(data: Mapping[str, Any], name: str, source: str, where: str) -> str:
    if name not in data or data[name] is None:
        raise ConfigError(source, f"{where}.{name}", "missing")
    value = data[name]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(source, f"{where}.{name}", f"must be a non-empty string, not {show(value)}")
    return value


def _optional_str(data: Mapping[str, Any], name: str, source: str, where: str) -> Optional[str]:
    if data.get(name) is None:
        return None
    return _required_str(data, name, source, where)


def _bool(data: Mapping[str, Any], name: str, source: str, where: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise ConfigError(source, f"{where}.{name}", f"must be true or false, not {show(value)}")
    return value


def _str_list(data: Mapping[str, Any], name: str, source: str, where: str) -> Tuple[str, ...]:
    value = data.get(name)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(source, f"{where}.{name}", "must be a list of strings")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ConfigError(
                source, f"{where}.{name}[{index}]", f"must be a non-empty string, not {show(item)}"
            )
    return tuple(value)
