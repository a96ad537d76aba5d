"""pytest-rerunfailures' "RERUN" as an engine probe (perf29): the test tracker reads a window for RERUN lines
only where the engine's pass over that window saw the word on a line, which must be every window holding it,
on both engines and at any window size."""

from __future__ import annotations

import glob
import os

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import engine as engine_module
from analyzer.scan.engine import iter_matches
from analyzer.scan.sources import iter_sources
from tests.scan.test_engine_helpers import ENGINES, record_rerun_told

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATALOGUE = load_catalogue()
# Real pytest-rerunfailures runs (-v, -q, xdist workers, a re-run summary) captured by regenerate.py.
RERUN_LOGS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "*rerun*.log")))


def test_there_are_real_rerun_logs_to_test_on():
    assert len(RERUN_LOGS) >= 8


@pytest.mark.parametrize("size", [97, 4096, 1 << 20])
@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_says_rerun_for_every_window_that_holds_it(engine, size, monkeypatch):
    told = record_rerun_told(monkeypatch)
    monkeypatch.setattr(engine_module, "READ_SIZE", size)
    list(iter_matches(iter_sources(RERUN_LOGS), CATALOGUE, engine))
    # A wrapped view is searched by the tracker itself (None); every other window is told.
    assert any(seen for _, seen in told)
    assert [(rerun, seen) for rerun, seen in told if rerun is not None and rerun != seen] == []
