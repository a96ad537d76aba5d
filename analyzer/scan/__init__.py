"""The scanner: saved logs in, ranked findings out (sources -> cleaning and matching -> ranking)."""

from __future__ import annotations

from typing import List, Sequence

from ..model import Finding
from ..rules.model import Catalogue


def scan_paths(
    paths: Sequence[str],
    catalogue: Catalogue,
    guard_findings: Sequence[Finding] = (),
    engine: str = "auto",
) -> List[Finding]:
    """Ranked findings for the logs at ``paths`` (root cause first); raises ``InputError`` on bad input."""
    from .engine import iter_matches
    from .rank import rank_findings
    from .sources import iter_sources

    matches = iter_matches(iter_sources(paths), catalogue, engine=engine)
    return rank_findings(matches, catalogue, guard_findings=guard_findings)
