"""One log at a time: ``LogScan`` streams a source through the engine into bounded per-log state;
``combine`` ranks the per-log results together (see ``analyzer.scan`` for the contract)."""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Mapping, Optional, Sequence, Union

from ..model import Finding
from ..rules.model import Catalogue
from .engine import Prepared, prepare, scan_source
from .match import Match
from .sources import Source

EventCallback = Callable[[Finding], None]


def engine_for(catalogue: Catalogue, engine: Union[str, Prepared] = "auto") -> Prepared:
    """The compiled engine for ``catalogue`` (build it once, share it between ``LogScan`` objects)."""
    if isinstance(engine, Prepared):
        return engine
    return prepare(catalogue, engine)


@dataclasses.dataclass(frozen=True)
class LogFindings:
    """What one log left for ranking: its path and its matches (bounded state comes next)."""

    path: str
    matches: Sequence[Match]


class LogScan:
    """Scan one log in bounded memory; ``run`` may be called from any thread (once).

    ``engine`` is an engine name (``"auto"``, ``"hyperscan"``, ``"python"``) or a ``Prepared`` engine
    from ``engine_for``. ``on_event(finding)`` is called from the scanning thread the first time each
    non-marker event is seen: a preliminary Finding (kind, severity before any handled-demotion, path,
    line, message), meant for ``--abort-on``. Raises ``InputError`` from ``run`` when the source cannot
    be read, ``UsageError`` from ``__init__`` for a bad engine.
    """

    def __init__(
        self,
        source: Source,
        catalogue: Catalogue,
        engine: Union[str, Prepared] = "auto",
        on_event: Optional[EventCallback] = None,
    ) -> None:
        self.source = source
        self.catalogue = catalogue
        self.prepared = engine_for(catalogue, engine)
        self.on_event = on_event
        self._matches: List[Match] = []
        self._done = False

    def run(self) -> None:
        """Read the source to EOF (its stream may block, as a live log's does)."""
        from .rank import preliminary_finding

        for match in scan_source(self.source, self.prepared):
            self._matches.append(match)
            if self.on_event is not None and not match.rule.marker:
                self.on_event(preliminary_finding(match))
        self._done = True

    def result(self) -> LogFindings:
        """The log's state for ``combine`` (call after ``run`` returned)."""
        return LogFindings(self.source.display_path, tuple(self._matches))


def combine(
    results: Sequence[LogFindings],
    catalogue: Catalogue,
    guard_findings: Sequence[Finding] = (),
    line_clocks: Optional[Mapping[str, Callable[[int], float]]] = None,
) -> List[Finding]:
    """Ranked findings (root cause first) of several logs' results and the guard's own findings.

    ``line_clocks`` maps a log's display path to ``line -> time.monotonic()`` of that line's arrival;
    when given, findings of different logs of the same rank are ordered by arrival time (stdout and
    stderr of one command), otherwise each log is ranked on its own and logs follow in the given order.
    """
    from .rank import rank_findings

    matches: List[Match] = []
    for result in results:
        for match in result.matches:
            matches.append(dataclasses.replace(match, seq=len(matches)))
    return rank_findings(matches, catalogue, guard_findings=guard_findings)
