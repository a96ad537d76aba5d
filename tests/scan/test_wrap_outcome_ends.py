"""A row ending in a test's outcome on its progress line ends a line: it is never a terminal's cut.

The log is a real one, unframed as a local run prints it: a DataLoader fault suite under ``python
test_loader_faults.py -v`` (torch 2.13.0 CPU, CPython 3.11.7; fixtures/regenerate.py's LOADER_TESTS, its
framed capture is fixtures/negative/torch-dataloader-faults-unittest). Three of its unittest rows are 68
columns wide, each ending in ``ok`` before the next ``test_...`` row, and two lines are longer: the wrap
detection read them as rows of a 68-column terminal cut in a word and joined the progress lines, so the
segfault handler's line printed on ``test_worker_segfault``'s row went to ``test_worker_killed``.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_sources
from analyzer.scan._engine_wrap import wrap_width
from analyzer.scan.sources import Source
from tests.scan.test_engine_helpers import ENGINES

REAL = load_catalogue()
LOG = (Path(__file__).parent / "logs" / "dataloader-faults-unittest-v.log").read_bytes()


def test_rows_of_one_width_ending_in_their_outcome_are_no_terminal_copy():
    rows = LOG.split(b"\n")
    assert sorted(len(r) for r in rows if r.endswith(b") ... ok")).count(68) == 3
    assert wrap_width(LOG) is None


@pytest.mark.parametrize("engine", ENGINES)
def test_the_crash_printed_on_a_tests_row_is_that_tests(engine):
    source = Source("log", lambda: io.BytesIO(LOG), may_be_wrapped=True)
    found = [(f.rule, f.line, f.severity, f.test) for f in scan_sources([source], REAL, engine=engine)]
    assert found == [("dataloader-worker-crash", 8, Severity.NOTICE,
                      "test_worker_segfault (__main__.LoaderFaults)")]


def test_an_outcome_inside_a_message_still_lets_a_cut_be_read():
    # "... ok" ends a row only at its end: a cut row that holds it earlier is still a cut.
    row = b"test_m (mod.C) ... ok but the next step of the loader waited for the worker and the queue was em"
    assert wrap_width((row + b"\npty after 30 s\n") * 3) == len(row)
