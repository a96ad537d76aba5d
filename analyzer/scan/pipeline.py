"""One log at a time: ``LogScan`` streams a source through the engine into bounded per-log state;
``combine`` ranks the per-log results together (see ``analyzer.scan`` for the contract)."""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Optional, Sequence, Union

from ..model import Finding
from ..rules.model import Catalogue
from .engine import Prepared, prepare, source_scanner
from .rank import LineClocks, path_kept, preliminary_finding, rank
from .same_event import ChainReader
from .sources import Source
from .state import Across, LogFindings, LogState, OnRun

EventCallback = Callable[[Finding], None]
# The tracker remembers the outcome of every test a match happened in; past this many, only those
# of the events the log keeps are kept.
_PRUNE_OUTCOMES = 4096

__all__ = ["EventCallback", "LogFindings", "LogScan", "combine", "engine_for"]


def engine_for(catalogue: Catalogue, engine: Union[str, Prepared] = "auto") -> Prepared:
    """The compiled engine for ``catalogue`` (build it once, share it between ``LogScan`` objects)."""
    if isinstance(engine, Prepared):
        return engine
    return prepare(catalogue, engine)


class LogScan:
    """Scan one log in bounded memory; ``run`` may be called from any thread (once).

    ``engine`` is an engine name (``"auto"``, ``"hyperscan"``, ``"python"``) or a ``Prepared`` engine
    from ``engine_for``. ``on_event(finding)`` is called from the scanning thread the first time each
    non-marker event is seen: a preliminary Finding (kind, severity before any handled-demotion, path,
    line, message, the test it happened in), meant for ``--abort-on``. ``across`` (``state.Across``)
    names the test of an event on no test's lines from another log of the same command; ``on_run``
    (``state.OnRun``) is told when each of this log's test runs starts and prints its verdict. Raises
    ``InputError`` from ``run`` when the source cannot be read, ``UsageError`` from ``__init__`` for a
    bad engine.
    """

    def __init__(
        self,
        source: Source,
        catalogue: Catalogue,
        engine: Union[str, Prepared] = "auto",
        on_event: Optional[EventCallback] = None,
        across: Optional[Across] = None,
        on_run: Optional[OnRun] = None,
    ) -> None:
        self.source = source
        self.across = across
        self.on_run = on_run
        self.catalogue = catalogue
        self.prepared = engine_for(catalogue, engine)
        self.on_event = on_event
        self._result: Optional[LogFindings] = None

    def run(self) -> None:
        """Read the source to EOF (its stream may block, as a live log's does)."""
        path = self.source.display_path
        if not path_kept(path, self.catalogue):
            self._result = LogFindings(path, ignored=True)
            return
        scanner = source_scanner(self.source, self.prepared)
        tracker = scanner.tracker
        state = LogState(
            path, self.catalogue, self.on_event, preliminary_finding, tracker.want, self.across, self.on_run
        )
        chains = ChainReader()
        for match in scanner.run(self.source):
            state.feed(match)
            chains.feed(match)
            if len(tracker.outcomes) > _PRUNE_OUTCOMES:
                wanted = state.progress_lines()
                tracker.outcomes = {k: v for k, v in tracker.outcomes.items() if k in wanted}
        result = chains.findings(state.finish(
            tracker.carry, tracker.outcomes, tracker.found_ids(), scanner.next_line - 1,
            progress_row=tracker.row,
            letters=tracker.letters,
        ))
        if tracker.reruns:
            result = dataclasses.replace(result, events=tuple(
                dataclasses.replace(event, test_rerun=True) if event.test in tracker.reruns else event
                for event in result.events
            ))
        self._result = dataclasses.replace(
            result, last_content=scanner.last_content, ranks_gone_on=scanner.ranks.result(),
            headless_traceback=scanner.headless,
        )

    def result(self) -> LogFindings:
        """The log's state for ``combine``; raises ``RuntimeError`` before ``run`` returned."""
        if self._result is None:
            raise RuntimeError(f"{self.source.display_path}: LogScan.result() before run() finished")
        return self._result


def combine(
    results: Sequence[LogFindings],
    catalogue: Catalogue,
    guard_findings: Sequence[Finding] = (),
    line_clocks: Optional[LineClocks] = None,
    guard_ended_at: Optional[float] = None,
) -> List[Finding]:
    """Ranked findings (root cause first) of several logs' results and the guard's own findings.

    ``line_clocks`` maps a log's display path to ``line -> time.monotonic()`` of that line's arrival;
    when given, findings of different logs of the same rank are ordered by arrival time (stdout and
    stderr of one command), otherwise each log is ranked on its own and logs follow in the given order.
    ``guard_ended_at``: when the guard's clock ran out, by the same clock (what came later is the
    command's answer to being ended).
    """
    return rank(results, catalogue, guard_findings=guard_findings, line_clocks=line_clocks,
                guard_ended_at=guard_ended_at)
