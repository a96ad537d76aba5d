"""Property: whatever a user writes in a config or catalogue, the only error that comes out is ConfigError.

Anything else (a KeyError, a TypeError from comparing a list with a string, a RecursionError from YAML)
would reach the user as a traceback instead of one line and exit status 2.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.errors import ConfigError
from analyzer.rules.config import parse_config, parse_yaml
from analyzer.rules.loader import apply_config, parse_catalogue

from .test_loader import GOOD

BUILTIN = parse_catalogue(parse_yaml(GOOD, "catalogue.yaml"), "catalogue.yaml")
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,  # a fixed-seed fuzz run: the same examples on every machine
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

WORDS = [
    "rules",
    "severity",
    "ignore",
    "lines",
    "paths",
    "match_timeout",
    "pattern",
    "start",
    "end",
    "id",
    "kind",
    "message",
    "doc",
    "examples",
    "match",
    "no_match",
    "marker",
    "collateral_after",
    "literals",
    "root_cause",
    "ignore_case",
    "max_lines",
    "worker-exitcode",
    "closing-signal",
    "hang",
    "error",
    "warning",
    "crash",
    "{x}",
    "(?P<x>a)",
    "(",
    "[",
    "x*",
    "true",
    "2",
    "-1",
    ".inf",
    "~",
]
TOKENS = WORDS + [
    ":",
    ": ",
    "- ",
    "\n",
    "  ",
    "    ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    '"',
    "&a",
    "*a",
    "!!",
    "#",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.sampled_from(WORDS),
    st.text(max_size=8),
)
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(WORDS), scalars), inner, max_size=5),
    ),
    max_leaves=25,
)
rule_like = st.fixed_dictionaries(
    {"id": st.sampled_from(["mine", "x", "Bad Id", "closing-signal"]), "pattern": st.sampled_from(WORDS)},
    optional={key: structures for key in WORDS[:21] if key not in ("id", "pattern")},
)


def only_config_errors(action) -> None:
    try:
        action()
    except ConfigError as err:
        assert "\n" not in str(err) and str(err).startswith("f.yml: ")


def load_config_text(text: str) -> None:
    apply_config(BUILTIN, parse_config(parse_yaml(text, "f.yml"), "f.yml"))


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_yamlish_config_text_raises_only_config_errors(text):
    only_config_errors(lambda: load_config_text(text))


@SETTINGS
@given(st.text(max_size=200))
def test_any_text_raises_only_config_errors(text):
    only_config_errors(lambda: load_config_text(text))
    only_config_errors(lambda: parse_catalogue(parse_yaml(text, "f.yml"), "f.yml"))


@SETTINGS
@given(structures)
def test_any_structure_as_config_raises_only_config_errors(data):
    only_config_errors(lambda: apply_config(BUILTIN, parse_config(data, "f.yml")))


@SETTINGS
@given(st.lists(st.one_of(rule_like, structures), max_size=3), st.booleans())
def test_any_rule_list_raises_only_config_errors(rules, as_user):
    if as_user:
        only_config_errors(lambda: apply_config(BUILTIN, parse_config({"rules": rules}, "f.yml")))
    else:
        only_config_errors(lambda: parse_catalogue({"rules": rules}, "f.yml", require_examples=True))


def test_deep_nesting_is_a_config_error_not_a_recursion_error():
    only_config_errors(lambda: load_config_text("[" * 5000 + "]" * 5000))
    only_config_errors(lambda: load_config_text("a: " + "{b: " * 3000 + "1" + "}" * 3000))
    deep = "[" * 3000 + "]" * 3000
    for text in (f"severity: {{x: {deep}}}", f"match_timeout: {deep}", f"rules: [{{id: {deep}}}]"):
        only_config_errors(lambda text=text: load_config_text(text))
