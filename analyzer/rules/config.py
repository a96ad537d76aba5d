"""The user's ``--config FILE``: extra rules, severity changes, and known benign findings to ignore.

The file is YAML; every key is optional::

    # gpu-hang-guard.yml
    match_timeout: 0.5            # seconds one of YOUR patterns may spend on one line (default 1s);
                                  # a number of seconds, or a duration such as 500ms
    severity:                     # change the severity of a rule: error, warning or notice
      pytest-timeout: warning
      guard-leaked-process: error # the guard's own findings have ids too (guard-timeout, ...)
    ignore:
      rules: [github-operation-canceled]  # drop every finding of these rules
      paths: ["*/flaky_step.txt"] # drop findings in logs whose reported path matches a glob
      lines:                      # drop a finding when a regex is found in its cleaned line
        - 'wandb: .*atexit'       #   (for a block: in any of its lines)
        - pattern: 'Process \\d+ got signal: 15'
          rules: [torchrun-signal-exit]   # ... only for findings of these rules
    rules:                        # add rules; same keys as analyzer/rules/catalogue.yaml
      - id: our-deadlock-detector
        kind: hang
        severity: error
        message: "our deadlock detector fired on {where}"
        doc: The in-house watchdog prints this when two ranks wait on each other.
        pattern: 'DEADLOCK DETECTED in (?P<where>\\S+)'
        literals: [DEADLOCK]      # optional: a line can only match if it holds one of these
        examples:
          match: ["DEADLOCK DETECTED in allreduce"]
          no_match: ["deadlock detection enabled"]

Path globs are ``fnmatch`` patterns matched against the path as reported (``*`` also crosses ``/``;
for a GitHub run-log archive the path reads ``logs.zip!job/2_Run tests.txt``); a glob without ``/`` is
also tried against the file name alone. Line patterns and your rules' patterns use Python's ``regex``
syntax and are matched with ``match_timeout``, so a catastrophic pattern cannot hang a CI job: a line
pattern that runs out of time does not ignore the finding.

This module reads the file and checks its shape; ``analyzer.rules.loader`` checks the rules and rule
ids against the catalogue and builds the ``Catalogue``. Every problem is a ``ConfigError`` naming the
file and the key, e.g. ``ci.yml: severity.no-such-rule: unknown rule id``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import regex
import yaml

from ..durations import parse_duration
from ..errors import ConfigError, UsageError
from ..model import Severity
from .model import LineIgnore

DEFAULT_MATCH_TIMEOUT_S = 1.0
TOP_LEVEL_KEYS = ("match_timeout", "severity", "ignore", "rules")
IGNORE_KEYS = ("rules", "paths", "lines")
LINE_IGNORE_KEYS = ("pattern", "rules")
SEVERITIES = tuple(s.value for s in Severity)


@dataclass(frozen=True)
class UserConfig:
    """The user's config file, shape-checked; rule ids are checked later against the catalogue.

    ``rules`` holds the raw rule mappings (the loader validates them with the catalogue's schema).
    ``severity`` and the ``rules`` of each ``LineIgnore`` name rule ids that may not exist.
    """

    source: str
    match_timeout_s: float = DEFAULT_MATCH_TIMEOUT_S
    severity: Tuple[Tuple[str, Severity], ...] = ()
    ignore_rules: Tuple[str, ...] = ()
    ignore_paths: Tuple[str, ...] = ()
    ignore_lines: Tuple[LineIgnore, ...] = ()
    rules: Tuple[Any, ...] = ()


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """``yaml.safe_load`` that refuses a key given twice (YAML would silently keep the last one)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key; the base class reports it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {show(key)}", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, source: str) -> Any:
    """The data in YAML ``text`` (safe types only); raises ``ConfigError`` naming ``source`` and the line."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}" if mark is not None else "document"
        problem = " ".join(" ".join(str(p).split()) for p in (err.context, err.problem) if p)
        raise ConfigError(source, where, f"invalid YAML: {problem or err}") from None
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError, TypeError) as err:
        # ValueError: an impossible date such as 2024-13-45; RecursionError: absurd nesting.
        detail = " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(source, "document", f"invalid YAML: {detail}") from None


def read_yaml(path: str) -> Any:
    """The data in the YAML file at ``path``; raises ``ConfigError`` when it is unreadable or invalid."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as err:
        raise ConfigError(path, "file", f"cannot read: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(path, "file", f"not UTF-8 (line {line})") from None
    return parse_yaml(text, path)


def load_config(path: str) -> UserConfig:
    """The shape-checked config in the file at ``path``; raises ``ConfigError``."""
    return parse_config(read_yaml(path), path)


def parse_config(data: Any, source: str) -> UserConfig:
    """``data`` (a loaded YAML document) as a ``UserConfig``; raises ``ConfigError`` naming ``source``."""
    if data is None:
        return UserConfig(source=source)
    top = _mapping(data, source, "document", TOP_LEVEL_KEYS, "")
    ignore = _mapping(top.get("ignore", {}), source, "ignore", IGNORE_KEYS, "ignore.")
    rules = top.get("rules", [])
    if rules is None:
        rules = []
    if not isinstance(rules, list):
        raise ConfigError(source, "rules", f"must be a list of rules, not {_type_name(rules)}")
    return UserConfig(
        source=source,
        match_timeout_s=_match_timeout(top.get("match_timeout"), source),
        severity=_severities(top.get("severity", {}), source),
        ignore_rules=_strings(ignore.get("rules", []), source, "ignore.rules"),
        ignore_paths=_strings(ignore.get("paths", []), source, "ignore.paths"),
        ignore_lines=_line_ignores(ignore.get("lines", []), source),
        rules=tuple(rules),
    )


def compile_user_pattern(pattern: str, ignore_case: bool = False) -> Any:
    """``pattern`` compiled with ``regex``; raises ``regex.error`` (the caller names file and key)."""
    return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)


def regex_problem(err: BaseException) -> str:
    """A compile error as one line: ``regex`` puts the position in its message, RecursionError does not."""
    text = " ".join(str(err).split())
    return text or type(err).__name__


def key_part(name: Any) -> str:
    """A key the user wrote, fit to name in a one-line error (quoted when it holds odd characters)."""
    if isinstance(name, str) and name and name.isprintable() and len(name) <= 60:
        return name
    return show(name)


def show(value: Any, limit: int = 60) -> str:
    """A user's value quoted for an error message: ``repr``, cut short, safe on absurd nesting."""
    try:
        text = repr(value)
    except RecursionError:
        return f"{_type_name(value)} nested too deep"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mapping(data: Any, source: str, key: str, allowed: Sequence[str], prefix: str) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(source, key, f"must be a mapping, not {_type_name(data)}")
    for name in data:
        if not isinstance(name, str) or name not in allowed:
            raise ConfigError(
                source, f"{prefix}{key_part(name)}", f"unknown key; expected one of: {', '.join(allowed)}"
            )
    return data


def _match_timeout(value: Any, source: str) -> float:
    if value is None:
        return DEFAULT_MATCH_TIMEOUT_S
    if isinstance(value, bool):
        seconds: Optional[float] = None
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value, "match_timeout")
        except UsageError:
            seconds = None
    else:
        seconds = None
    if seconds is None or not (0 < seconds < float("inf")):
        raise ConfigError(
            source, "match_timeout", f"{show(value)} is not a positive duration; write 0.5, 500ms or 2s"
        )
    return seconds


def _severities(data: Any, source: str) -> Tuple[Tuple[str, Severity], ...]:
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise ConfigError(source, "severity", f"must map rule ids to a severity, not {_type_name(data)}")
    pairs: List[Tuple[str, Severity]] = []
    for rule_id, value in data.items():
        if not isinstance(rule_id, str):
            raise ConfigError(source, f"severity.{key_part(rule_id)}", "a rule id must be a string")
        if value not in SEVERITIES:
            raise ConfigError(
                source,
                f"severity.{key_part(rule_id)}",
                f"{show(value)} is not one of: {', '.join(SEVERITIES)}",
            )
        pairs.append((rule_id, Severity(value)))
    return tuple(pairs)


def _strings(data: Any, source: str, key: str) -> Tuple[str, ...]:
    if data is None:
        return ()
    if isinstance(data, str):
        data = [data]
    if not isinstance(data, list):
        raise ConfigError(source, key, f"must be a list of strings, not {_type_name(data)}")
    for index, item in enumerate(data):
        if not isinstance(item, str) or not item:
            raise ConfigError(source, f"{key}[{index}]", f"must be a non-empty string, not {show(item)}")
    return tuple(data)


def _line_ignores(data: Any, source: str) -> Tuple[LineIgnore, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ConfigError(source, "ignore.lines", f"must be a list, not {_type_name(data)}")
    ignores = []
    for index, item in enumerate(data):
        key = f"ignore.lines[{index}]"
        if isinstance(item, str):
            pattern, rules = item, ()
        else:
            entry = _mapping(item, source, key, LINE_IGNORE_KEYS, f"{key}.")
            if "pattern" not in entry:
                raise ConfigError(source, f"{key}.pattern", "missing; the regex to ignore")
            pattern = entry["pattern"]
            rules = _strings(entry.get("rules", []), source, f"{key}.rules")
            key = f"{key}.pattern"
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(source, key, f"must be a non-empty regex, not {show(pattern)}")
        try:
            compiled = compile_user_pattern(pattern)
        except (regex.error, ValueError, OverflowError, RecursionError, TypeError) as err:
            raise ConfigError(source, key, f"invalid regex: {regex_problem(err)}") from None
        ignores.append(LineIgnore(pattern=pattern, rules=rules, pattern_re=compiled))
    return tuple(ignores)


def _type_name(value: Any) -> str:
    names = {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "empty",
        int: "a number",
        float: "a number",
    }
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"
