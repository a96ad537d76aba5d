"""Module-level regular expressions compiled the first time they are used, not when their module loads.

Compiling the package's module-level patterns was about a tenth of a small log's scan, and most of them
never see a line of a given log (a clean log needs almost none). ``lazy(pattern)`` stands for
``re.compile(pattern)``: the first attribute asked of it compiles the pattern and puts the compiled
pattern in its place among the globals of the module that used it, so from then on ``PATTERN.search(text)``
is a call on the compiled pattern itself. Use it only where the pattern's methods and attributes are
used; it is no ``re.Pattern`` to ``isinstance`` or to pass to ``re`` functions.

It is a leaf: it imports nothing of the package.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_FORWARDED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
              "groupindex", "groups", "flags", "pattern")


class _Lazy:
    def __init__(self, pattern: Any, flags: int = 0, compile: Any = None) -> None:
        self._args = (pattern, flags, compile)

    def __repr__(self) -> str:
        return f"lazy({self._args[0]!r})"


class LazyRe(_Lazy):
    """``compile(pattern, flags)`` on first use (``compile``: ``re.compile`` or ``regex.compile``).

    The first use also puts the compiled pattern in its place in the namespace of the module that used
    it (each name there that held this object): a call through this object costs about 40-90 ns more
    than one on the pattern itself (no specialised method call past a ``__getattr__``), tens of ms over
    the candidate lines of a big log. What is left holding it (a tuple of patterns) gets the pattern's
    methods stored on it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_args":
            raise AttributeError(name)
        pattern, flags, compile = self._args
        compiled = (compile or re.compile)(pattern, flags)
        for attr in _FORWARDED:
            self.__dict__[attr] = getattr(compiled, attr)
        self.__dict__["compiled"] = compiled
        self.__class__ = _Compiled  # no __getattr__ any more: plain attribute lookups
        namespace = sys._getframe(1).f_globals  # the module whose code asked
        for key in [key for key, value in namespace.items() if value is self]:
            namespace[key] = compiled
        return getattr(compiled, name)


class _Compiled(_Lazy):
    """A ``LazyRe`` whose pattern is compiled: its methods are the compiled pattern's own."""


def lazy(pattern: Any, flags: int = 0) -> LazyRe:
    """``re.compile(pattern, flags)``, done the first time the result is used."""
    return LazyRe(pattern, flags)


def lazy_regex(pattern: Any, flags: int = 0) -> LazyRe:
    """``regex.compile(pattern, flags)`` (the third-party ``regex`` module, imported then too: about
    6 ms of start-up), done the first time the result is used. ``flags`` are ``regex``'s."""
    return LazyRe(pattern, flags, _regex_compile)


def _regex_compile(pattern: Any, flags: int) -> Any:
    import regex

    return regex.compile(pattern, flags)
