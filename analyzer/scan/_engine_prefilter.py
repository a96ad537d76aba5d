"""Find candidate lines in a window of log bytes: Hyperscan when it is installed, ``bytes.find`` if not.

Both finders take the same ``Plan`` and return the same thing for a window: a map from the offset where
each candidate line starts to the indices of the literals found in it. The window has already been
through ``strip_controls``, so an ANSI colour code inside a literal cannot hide it.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Set

from ._engine_literals import Plan

Candidates = Dict[int, Set[int]]  # line start offset -> literal indices found in that line
Finder = Callable[[bytes], Candidates]


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


def python_finder(plan: Plan) -> Finder:
    """A finder built on ``bytes.find``: one pass over the window per distinct literal."""
    exact = [(i, lit.needle) for i, lit in enumerate(plan.literals) if not lit.caseless]
    caseless = [(i, lit.needle) for i, lit in enumerate(plan.literals) if lit.caseless]

    def find(window: bytes) -> Candidates:
        out: Candidates = {}
        _scan(window, exact, out)
        if caseless:
            _scan(window.lower(), caseless, out)
        return out

    return find


def _scan(window: bytes, needles: List[tuple], out: Candidates) -> None:
    find = window.find
    rfind = window.rfind
    for index, needle in needles:
        at = find(needle)
        while at != -1:
            start = rfind(b"\n", 0, at) + 1
            hit = out.get(start)
            if hit is None:
                out[start] = {index}
            else:
                hit.add(index)
            end = find(b"\n", at)
            if end == -1:
                break
            at = find(needle, end + 1)


def hyperscan_finder(plan: Plan) -> Finder:
    """A finder that matches every literal of the plan in one Hyperscan pass over the window."""
    import hyperscan

    if not plan.literals:
        return lambda window: {}
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[lit.needle for lit in plan.literals],
        ids=list(range(len(plan.literals))),
        flags=[hyperscan.HS_FLAG_CASELESS if lit.caseless else 0 for lit in plan.literals],
        literal=True,
    )

    def find(window: bytes) -> Candidates:
        ends: List[tuple] = []
        append = ends.append

        def on_match(index: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            append((end, index))

        db.scan(window, match_event_handler=on_match)
        out: Candidates = {}
        rfind = window.rfind
        last_line = -1
        last_end = -1
        for end, index in ends:
            # A literal never holds b"\n", so the line starts after the last one before its end.
            if last_line < end <= last_end:
                start = last_line
            else:
                start = rfind(b"\n", 0, end) + 1
                nl = window.find(b"\n", end)
                last_line, last_end = start, (nl if nl != -1 else len(window))
            hit = out.get(start)
            if hit is None:
                out[start] = {index}
            else:
                hit.add(index)
        return out

    return find
