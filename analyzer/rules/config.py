"""The user's ``--config FILE``: extra rules, severity changes, and known benign findings to ignore.

The file is YAML; every key is optional::

    # gpu-hang-guard.yml
    match_timeout: 0.5            # seconds one of YOUR patterns may spend on one line (default 1s);
                                  # a number of seconds, or a duration such as 500ms
    match_budget: 10s             # seconds one of YOUR patterns may spend over the whole scan
                                  # (default 10s); past it the pattern is switched off, with a warning
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
pattern that runs out of time does not ignore the finding. A rule that spends its ``match_budget`` is
switched off for the rest of the scan with a ``scan-incomplete`` warning naming it.

The file is read up to 1 MiB; YAML aliases may not expand it past a million nodes and characters, and
a pattern's counted repeats (``x{1000}``) may not expand it past 100,000 items (``schema.py``).

This module reads the file and checks its shape against the tables below (``schema.check_mapping``);
``analyzer.rules.loader`` checks the rules and rule ids against the catalogue and builds the
``Catalogue``. Every problem is a ``ConfigError`` naming the file and the key, e.g.
``ci.yml: severity.no-such-rule: unknown rule id``.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Dict, Tuple

from ..errors import ConfigError
from ..model import Severity
from . import schema
from .model import DEFAULT_MATCH_BUDGET_S, DEFAULT_MATCH_TIMEOUT_S, LineIgnore
from .schema import Key, Table, check_mapping, show

SEVERITIES = tuple(s.value for s in Severity)


class UserConfig:
    """The user's config file, shape-checked; rule ids are checked later against the catalogue.

    ``rules`` holds the raw rule mappings (the loader validates them with the catalogue's schema).
    ``severity`` and the ``rules`` of each ``LineIgnore`` name rule ids that may not exist.

    A plain class, not a dataclass: read once by the loader, never compared or copied, and a frozen
    dataclass's generated methods cost every run's start-up about half a millisecond (perf22).
    """

    __slots__ = ("source", "match_timeout_s", "severity", "ignore_rules", "ignore_paths", "ignore_lines",
                 "rules", "match_budget_s")

    def __init__(
        self,
        source: str,
        match_timeout_s: float = DEFAULT_MATCH_TIMEOUT_S,
        severity: Tuple[Tuple[str, Severity], ...] = (),
        ignore_rules: Tuple[str, ...] = (),
        ignore_paths: Tuple[str, ...] = (),
        ignore_lines: Tuple[LineIgnore, ...] = (),
        rules: Tuple[Any, ...] = (),
        match_budget_s: float = DEFAULT_MATCH_BUDGET_S,
    ) -> None:
        self.source = source
        self.match_timeout_s = match_timeout_s
        self.severity = severity
        self.ignore_rules = ignore_rules
        self.ignore_paths = ignore_paths
        self.ignore_lines = ignore_lines
        self.rules = rules
        self.match_budget_s = match_budget_s


def _severity_map(value: Any, source: str, key: str) -> Tuple[Tuple[str, Severity], ...]:
    if not isinstance(value, dict):
        raise ConfigError(source, key, f"must map rule ids to a severity, not {schema.type_name(value)}")
    level = schema.choice(SEVERITIES, Severity)
    pairs = []
    for rule_id, given in value.items():
        where = f"{key}.{schema.key_part(rule_id)}"
        if not isinstance(rule_id, str):
            raise ConfigError(source, where, "a rule id must be a string")
        pairs.append((rule_id, level(given, source, where)))
    return tuple(pairs)


def _regex(value: Any, source: str, key: str) -> Any:
    if not isinstance(value, str) or not value:
        raise ConfigError(source, key, f"must be a non-empty regex, not {show(value)}")
    return schema.compile_pattern(value, source, key)


LINE_IGNORE = Table(
    (
        Key("pattern", _regex, required=True, hint="the regex to ignore"),
        Key("rules", schema.strings(accept_one=True), default=()),
    )
)


def _line_ignores(value: Any, source: str, key: str) -> Tuple[LineIgnore, ...]:
    if not isinstance(value, list):
        raise ConfigError(source, key, f"must be a list, not {schema.type_name(value)}")
    ignores = []
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        if isinstance(item, str):
            pattern, rules = item, ()
            compiled = _regex(item, source, where)
        else:
            entry = check_mapping(item, LINE_IGNORE, source, where)
            pattern, rules = item["pattern"], entry["rules"]
            compiled = entry["pattern"]
        ignores.append(LineIgnore(pattern=pattern, rules=rules, pattern_re=compiled))
    return tuple(ignores)


IGNORE = Table(
    (
        Key("rules", schema.strings(accept_one=True), default=()),
        Key("paths", schema.strings(accept_one=True), default=()),
        Key("lines", _line_ignores, default=()),
    )
)


def _ignore(value: Any, source: str, key: str) -> Dict[str, Any]:
    return check_mapping(value, IGNORE, source, key)


TOP_LEVEL = Table(
    (
        Key("match_timeout", schema.duration, default=DEFAULT_MATCH_TIMEOUT_S),
        Key("severity", _severity_map, default=()),
        Key("ignore", _ignore, default=None),
        Key("rules", schema.rule_list, default=()),
        Key("match_budget", schema.duration, default=DEFAULT_MATCH_BUDGET_S),
    )
)
TOP_LEVEL_KEYS = TOP_LEVEL.names


def parse_yaml(text: str, source: str) -> Any:
    """The data in YAML ``text`` (safe types only); raises ``ConfigError`` naming ``source`` and the line."""
    from .yaml_safe import parse_yaml as parse  # PyYAML only when some YAML is parsed

    return parse(text, source)


def read_yaml(path: str) -> Any:
    """The data in the YAML file at ``path``; raises ``ConfigError`` when unreadable, too big or invalid."""
    return parse_yaml_bytes(read_config_bytes(path), path)


def read_config_bytes(path: str) -> bytes:
    """The bytes of the config file at ``path``; raises ``ConfigError`` when unreadable or too big."""
    try:
        # Non-blocking: a FIFO (or a device) given as the config must not hang the guard before it starts.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ConfigError(path, "file", "not a regular file")
            raw = handle.read(schema.MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise ConfigError(path, "file", f"cannot read: {err.strerror or err}") from None
    if len(raw) > schema.MAX_CONFIG_BYTES:
        raise ConfigError(path, "file", f"too big: more than {schema.MAX_CONFIG_BYTES:,} bytes")
    return raw


def parse_yaml_bytes(raw: bytes, path: str) -> Any:
    """The data in ``raw``, the bytes of the YAML file at ``path``; raises ``ConfigError`` when invalid."""
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
    top = check_mapping(data, TOP_LEVEL, source, "document", prefix="")
    ignore = top["ignore"] or check_mapping({}, IGNORE, source, "ignore")
    return UserConfig(
        source=source,
        match_timeout_s=top["match_timeout"],
        match_budget_s=top["match_budget"],
        severity=top["severity"],
        ignore_rules=ignore["rules"],
        ignore_paths=ignore["paths"],
        ignore_lines=ignore["lines"],
        rules=tuple(top["rules"]),
    )
