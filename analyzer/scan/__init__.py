"""The scanner: saved or live logs in, ranked findings out (sources -> matching -> per-log state -> ranking).

Two ways in:
- ``scan_paths`` / ``scan_sources``: scan logs one after another and rank what they hold.
- ``LogScan`` + ``combine``: scan each log on its own (any thread; a live log whose stream blocks until
  more output arrives is fine), then rank the per-log results together. This is what the guard uses to
  scan a command's output while it runs.

Memory is bounded per log whatever its size: a ``LogScan`` keeps folded findings (capped per rule), the
marker state later findings need, and nothing else, so ``combine`` sees only small ``LogFindings``.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Mapping, Optional, Sequence

from ..model import Finding
from ..rules.model import Catalogue
from .sources import Source

# display_path -> (line number -> time.monotonic() when that line arrived)
LineClocks = Mapping[str, Callable[[int], float]]


def scan_paths(
    paths: Sequence[str],
    catalogue: Catalogue,
    guard_findings: Sequence[Finding] = (),
    engine: str = "auto",
) -> List[Finding]:
    """Ranked findings for the logs at ``paths`` (root cause first); raises ``InputError`` on bad input."""
    from .sources import iter_sources

    return scan_sources(iter_sources(paths), catalogue, guard_findings=guard_findings, engine=engine)


def scan_sources(
    sources: Iterable[Source],
    catalogue: Catalogue,
    guard_findings: Sequence[Finding] = (),
    engine: str = "auto",
    line_clocks: Optional[LineClocks] = None,
) -> List[Finding]:
    """Ranked findings for ``sources``, each scanned on its own, in order, then combined.

    ``line_clocks`` (see ``combine``) orders findings of different logs by when their line arrived.
    Raises ``InputError`` when a source cannot be read and ``UsageError`` for a bad ``engine``.
    """
    from .pipeline import LogScan, combine, engine_for

    prepared = engine_for(catalogue, engine)
    results = []
    for source in sources:
        scan = LogScan(source, catalogue, engine=prepared)
        scan.run()
        results.append(scan.result())
    return combine(results, catalogue, guard_findings=guard_findings, line_clocks=line_clocks)


def __getattr__(name: str):
    # LogScan, LogFindings and combine live in .pipeline; importing them lazily keeps
    # ``import analyzer.scan`` cheap for the CLI's error paths.
    if name in ("LogScan", "LogFindings", "combine"):
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(name)


__all__ = ["LineClocks", "LogFindings", "LogScan", "combine", "scan_paths", "scan_sources"]
