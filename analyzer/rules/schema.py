"""The keys of the catalogue and of the user's config, declared once as tables and checked by one function.

Each key is a ``Key``: its name, its value type (one of the checkers below, each written once), whether
it is required, its default, and the shapes of rule it belongs to. ``check_mapping`` is the only code
that walks a mapping of user keys: unknown keys, missing keys, keys that do not fit the rule's shape,
and each value's type, in table order, each problem a ``ConfigError`` naming the file and the key.
The tables themselves live with what they describe (``loader.RULE``, ``config.TOP_LEVEL`` ...), as
yamllint's rules carry their ``CONF``.

The bounds on size and time are here too, so that whatever a config holds, loading it costs bounded
time and memory and every error is one short line:
- ``MAX_CONFIG_BYTES``: a config or catalogue file is read up to this size;
- ``MAX_YAML_SIZE``: nodes plus scalar characters once YAML aliases are expanded (a "billion laughs"
  of 348 bytes expands to 10^9 strings; anything that walks or prints it would never end);
- ``MAX_PATTERN_SIZE``: a regex's size once its counted repeats are expanded (``regex`` compiles
  ``x{2147483648}`` into a 2-GB program and dies of MemoryError);
- ``show`` quotes a value with ``reprlib`` limits, so an error never prints a huge value.
"""

from __future__ import annotations

import reprlib
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

from ..durations import parse_duration
from ..exits import signal_name as _signal_name, signal_number
from ..errors import ConfigError, UsageError
from ..lazy_re import lazy_regex

MAX_CONFIG_BYTES = 1 << 20
MAX_YAML_SIZE = 1_000_000
MAX_PATTERN_SIZE = 100_000
MAX_PROBLEM_CHARS = 200
SHOW_CHARS = 60

# A checker turns a raw YAML value into the value used, or raises ConfigError(source, key, ...).
Checker = Callable[[Any, str, str], Any]

_KEBAB = lazy_regex(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
_COMPILE_ERRORS = (ValueError, OverflowError, RecursionError, TypeError, MemoryError)  # and regex.error


class Key:
    """One key of a table: its value type and where it may or must appear.

    ``shapes``: the shapes of mapping the key belongs to (``None``: every shape); ``required``: the
    shapes where it must be given (``True``: every shape it belongs to). ``hint`` follows "missing;"
    in the error for a missing key. ``misplaced``: the error for a key given in a shape it does not
    belong to (default: the table's).

    A plain class, not a dataclass, as ``Table``: never compared or copied, and a frozen dataclass's
    generated methods cost every run's start-up about half a millisecond (perf22).
    """

    __slots__ = ("name", "check", "default", "required", "shapes", "hint", "misplaced")

    def __init__(
        self, name: str, check: Checker, default: Any = None, required: Any = False,
        shapes: Optional[FrozenSet[str]] = None, hint: str = "", misplaced: str = "",
    ) -> None:
        self.name = name
        self.check = check
        self.default = default
        self.required = required
        self.shapes = shapes
        self.hint = hint
        self.misplaced = misplaced

    def __repr__(self) -> str:
        return f"Key({self.name!r})"

    def belongs(self, shape: str) -> bool:
        return self.shapes is None or shape in self.shapes

    def needed(self, shape: str) -> bool:
        if self.required is True:
            return self.belongs(shape)
        return bool(self.required) and shape in self.required


class Table:
    """The keys of one kind of mapping, in checking order, and how its errors read.

    A plain class, not a dataclass, as ``Key``: never compared or copied, and a frozen dataclass's
    generated methods cost every run's start-up about half a millisecond (perf22).
    """

    __slots__ = ("keys", "not_mapping", "unknown", "misplaced")

    def __init__(
        self, keys: Tuple[Key, ...], not_mapping: str = "must be a mapping, not {type}",
        unknown: str = "unknown key; expected one of: {names}",
        misplaced: Mapping[str, str] = None,  # type: ignore[assignment]  # shape -> error for a misplaced key
    ) -> None:
        self.keys = keys
        self.not_mapping = not_mapping
        self.unknown = unknown
        self.misplaced = misplaced

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(key.name for key in self.keys)


def check_mapping(
    data: Any,
    table: Table,
    source: str,
    where: str,
    shape: Union[str, Callable[[Dict[str, Any]], str]] = "",
    prefix: Optional[str] = None,
) -> Dict[str, Any]:
    """Every key of ``table`` checked in ``data``: the values to use (defaults filled in).

    ``where`` names ``data`` itself (``rules[3]``, ``document``); keys are named ``prefix + name``
    (default ``where + "."``). ``shape`` selects which keys belong and which are required; a callable
    works it out from ``data`` once the keys are known to be the table's (it may raise ``ConfigError``).
    Raises ``ConfigError`` for the first problem, in table order after unknown keys.
    """
    if prefix is None:
        prefix = f"{where}."
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, where, table.not_mapping.format(type=type_name(data)))
    names = table.names
    for name in data:
        if not isinstance(name, str) or name not in names:
            raise ConfigError(source, prefix + key_part(name), table.unknown.format(names=", ".join(names)))
    if callable(shape):
        shape = shape(data)
    values: Dict[str, Any] = {}
    for key in table.keys:
        given = data.get(key.name)
        if given is not None and not key.belongs(shape):
            misplaced = key.misplaced or (table.misplaced or {}).get(shape, "does not belong here")
            raise ConfigError(source, prefix + key.name, misplaced.format(name=key.name))
        if given is None:
            if key.needed(shape):
                hint = f"; {key.hint}" if key.hint else ""
                raise ConfigError(source, prefix + key.name, "missing" + hint)
            values[key.name] = key.default
            continue
        values[key.name] = key.check(given, source, prefix + key.name)
    return values


# ---- value types, each written once ----------------------------------------------------------------


def text(value: Any, source: str, key: str) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(source, key, f"must be a non-empty string, not {show(value)}")
    return value


def one_line(value: Any, source: str, key: str) -> str:
    """A non-empty string without line breaks (a message)."""
    value = text(value, source, key)
    if "\n" in value or "\r" in value:
        raise ConfigError(source, key, "must be one line")
    return value


def kebab(value: Any, source: str, key: str) -> str:
    """A kebab-case name: lowercase words joined by ``-``."""
    value = text(value, source, key)
    if not _KEBAB.match(value):
        raise ConfigError(source, key, f"{show(value)} is not kebab-case (lowercase words joined by -)")
    return value


def flag(value: Any, source: str, key: str) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise ConfigError(source, key, f"must be true or false, not {show(value)}")
    return value


def choice(values: Sequence[str], convert: Callable[[str], Any] = str) -> Checker:
    """One of ``values`` (converted, e.g. to an enum)."""

    def check(value: Any, source: str, key: str) -> Any:
        if not isinstance(value, str) or value not in values:
            raise ConfigError(source, key, f"{show(value)} is not one of: {', '.join(values)}")
        return convert(value)

    return check


def signal_name(value: Any, source: str, key: str) -> str:
    """A POSIX signal's name, ``SIGABRT`` (or ``ABRT``), as ``SIGABRT``."""
    value = text(value, source, key)
    number = signal_number(value)
    name = _signal_name(number) if number is not None else None
    if name is None:
        raise ConfigError(source, key, f"{show(value)} is not a signal name such as SIGABRT")
    return name


def count(minimum: int, unit: str) -> Checker:
    """A whole number ``>= minimum`` of ``unit``."""

    def check(value: Any, source: str, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            problem = f"must be a whole number of {unit} >= {minimum}, not {show(value)}"
            raise ConfigError(source, key, problem)
        return value

    return check


def strings(item: Checker = text, accept_one: bool = False) -> Checker:
    """A list whose items pass ``item`` (each named ``key[i]``); ``accept_one``: a lone string is a list."""

    def check(value: Any, source: str, key: str) -> Tuple[Any, ...]:
        if accept_one and isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(source, key, f"must be a list of strings, not {type_name(value)}")
        for index, one in enumerate(value):
            if not isinstance(one, str) or not one:
                raise ConfigError(source, f"{key}[{index}]", f"must be a non-empty string, not {show(one)}")
        return tuple(item(one, source, f"{key}[{index}]") for index, one in enumerate(value))

    return check


def rule_list(value: Any, source: str, key: str) -> List[Any]:
    """A list of rule mappings (each one is checked against the loader's ``RULE`` table)."""
    if not isinstance(value, list):
        raise ConfigError(source, key, f"must be a list of rules, not {type_name(value)}")
    return value


def duration(value: Any, source: str, key: str) -> float:
    """Positive seconds: a number, or a duration such as ``500ms`` or ``2s``."""
    seconds: Optional[float] = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value, key)
        except UsageError:
            seconds = None
    if seconds is None or not (0 < seconds < float("inf")):
        raise ConfigError(source, key, f"{show(value)} is not a positive duration; write 0.5, 500ms or 2s")
    return seconds


class LazyPattern:
    """A shipped rule's pattern, compiled with ``regex`` the first time anything of it is used; from
    then on its methods are the compiled pattern's own (no wrapper call on the hot path)."""

    _FORWARDED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "groupindex",
                  "groups", "flags")

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        import regex  # here: a run whose log has no candidate line imports no regex (about 6 ms)

        compiled = regex.compile(self.pattern, regex.IGNORECASE if self.ignore_case else 0)
        for attr in self._FORWARDED:
            self.__dict__[attr] = getattr(compiled, attr)
        return getattr(compiled, name)

    def __reduce__(self) -> Any:
        return (LazyPattern, (self.pattern, self.ignore_case))


def compile_pattern(pattern: str, source: str, key: str, ignore_case: bool = False, label: str = "") -> Any:
    """``pattern`` compiled with ``regex``, refused first when its counted repeats expand too far.

    ``label`` prefixes the problem (``"rule mine: "``). Raises ``ConfigError`` naming ``source`` and ``key``.
    """
    import regex

    size = expanded_pattern_size(pattern)
    if size > MAX_PATTERN_SIZE:
        raise ConfigError(
            source,
            key,
            f"{label}invalid regex: its counted repeats ({{n}}) expand it to about {size:,} items, more "
            f"than {MAX_PATTERN_SIZE:,}; use a smaller count, or * or +",
        )
    try:
        return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except (regex.error, *_COMPILE_ERRORS) as err:
        raise ConfigError(source, key, f"{label}invalid regex: {problem_text(err)}") from None


_QUANTIFIER = lazy_regex(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")
_BRACED_ESCAPES = "pPNxuUg"


def expanded_pattern_size(pattern: str) -> int:
    """An upper bound on the size of ``pattern`` once every ``{n}``/``{n,m}`` repeat is unrolled.

    ``regex`` unrolls counted repeats when it compiles (``x{1000000}`` is a million-item program), and
    nested ones multiply. This reads the pattern like the parser does, but only for sizes: an escape or
    a character class is one item, a group is the sum of its items, a counted repeat multiplies the
    item before it by its larger bound. Overestimates (alternatives are summed), never underestimates.
    """
    stack = [[0, 0]]  # per open group: [size so far, size of the last item]
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        item = 1
        if c == "\\":
            i += 2
            if i - 1 < n and pattern[i - 1] in _BRACED_ESCAPES and i < n and pattern[i] in "{<":
                close = pattern.find("}" if pattern[i] == "{" else ">", i)
                i = n if close == -1 else close + 1
        elif c == "[":
            i = _class_end(pattern, i)
        elif c == "(":
            stack.append([0, 0])
            i += 1
            continue
        elif c == ")" and len(stack) > 1:
            size, _ = stack.pop()
            item = size + 2
            i += 1
        elif c == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m is not None and (m.group(1) or m.group(2)):
                top = stack[-1]
                bound = max(int(m.group(1) or 0), int(m.group(2) or 0))
                top[0] += top[1] * (max(bound, 1) - 1) + len(m.group(0))
                top[1] *= max(bound, 1)
                i = m.end()
                continue
            i += 1
        else:
            i += 1
        top = stack[-1]
        top[0] += item
        top[1] = item
    return sum(frame[0] for frame in stack)


def _class_end(pattern: str, i: int) -> int:
    """The index after the ``]`` that closes the class opened at ``i`` (nested ``[`` counted)."""
    depth = 0
    j = i
    n = len(pattern)
    while j < n:
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            depth += 1
            j += 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            continue
        if c == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return n


# ---- error text, bounded -------------------------------------------------------------------------

_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = SHOW_CHARS
_REPR.maxother = SHOW_CHARS
for _name in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
    setattr(_REPR, _name, 4)
_REPR.maxlong = 40


def show(value: Any, limit: int = SHOW_CHARS) -> str:
    """A user's value quoted for an error message: ``repr`` with size limits, cut to ``limit`` characters."""
    try:
        shown = _REPR.repr(value) if not isinstance(value, str) else repr(value[: limit + 1])
    except (RecursionError, ValueError):
        return f"{type_name(value)} nested too deep"
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def key_part(name: Any) -> str:
    """A key the user wrote, fit to name in a one-line error (quoted when it holds odd characters)."""
    if isinstance(name, str) and name and name.isprintable() and len(name) <= SHOW_CHARS:
        return name
    return show(name)


def problem_text(err: BaseException) -> str:
    """An exception's message as one bounded line (its type name when it says nothing)."""
    shown = " ".join(str(err).split()) or type(err).__name__
    return shown if len(shown) <= MAX_PROBLEM_CHARS else shown[: MAX_PROBLEM_CHARS - 3] + "..."


def type_name(value: Any) -> str:
    """What a value is, in the words of an error message: ``a mapping``, ``a list``, ``empty``..."""
    names = (
        (bool, "a boolean"),
        (dict, "a mapping"),
        (list, "a list"),
        (str, "a string"),
        (type(None), "empty"),
        (int, "a number"),
        (float, "a number"),
    )
    for kind, name in names:
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"
