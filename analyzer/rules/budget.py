"""Time budgets for the user's patterns: seconds each one may spend over a whole scan, not per file.

A user's regex can be slow without ever timing out: a search just under ``match_timeout`` on each of
100 lines costs 100 times that, and a per-file allowance starts again in every file. ``MatchBudget``
charges every search of a pattern to one account for the whole scan; a pattern whose account is spent
is switched off for the rest of the scan, and the caller reports that once (a ``scan-incomplete``
warning naming the rule) and goes on.

API (used by the engine for user rules and by ranking for ``ignore.lines``; one budget per scan)::

    budget = MatchBudget(per_search_s=catalogue.match_timeout_s, total_s=catalogue.match_budget_s)
    found = budget.search(key, compiled, text)  # regex match or None; never raises TimeoutError
    budget.is_off(key)         # True once the key's account is spent: skip it, report it once
    budget.spent_s(key)        # seconds charged so far
    budget.off_keys()          # keys switched off, in the order it happened

``key`` is anything hashable that names the pattern (a rule index, ``("ignore.lines", 3)``). Each search
runs under ``min(per_search_s, what is left)``, so the total per key stays below ``total_s`` plus one
clock tick; a search that runs out of time finds nothing. The budget is mutable state that belongs to
one scan; it is never shared between scans.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Hashable, List, Optional


class MatchBudget:
    """Per-key time accounts for searches with a ``regex`` compiled pattern (see the module docstring)."""

    def __init__(
        self, per_search_s: float, total_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_search_s = per_search_s
        self.total_s = total_s
        self._clock = clock
        self._spent: Dict[Hashable, float] = {}
        self._off: Dict[Hashable, None] = {}  # insertion-ordered set

    def search(self, key: Hashable, compiled: Any, text: str) -> Optional[Any]:
        """``compiled.search(text)`` charged to ``key``; ``None`` when off, not found or out of time."""
        if key in self._off:
            return None
        spent = self._spent.get(key, 0.0)
        left = self.total_s - spent
        if left <= 0:
            self._off[key] = None
            return None
        started = self._clock()
        try:
            found = compiled.search(text, timeout=min(self.per_search_s, left))
        except TimeoutError:
            found = None
        spent += self._clock() - started
        self._spent[key] = spent
        if spent >= self.total_s:
            self._off[key] = None
        return found

    def is_off(self, key: Hashable) -> bool:
        """Whether ``key`` spent its budget (its searches now find nothing without running)."""
        return key in self._off

    def spent_s(self, key: Hashable) -> float:
        """Seconds charged to ``key`` so far."""
        return self._spent.get(key, 0.0)

    def off_keys(self) -> List[Hashable]:
        """The keys switched off, in the order they ran out."""
        return list(self._off)
