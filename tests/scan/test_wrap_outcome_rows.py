"""A test runner's passing outcome alone on its row ends a line: it is never the rest of a terminal's cut.

The log is a real one: pytorch's test_distributed_spawn.py under ``unittest -v`` (gloo, two ranks,
torch 2.13.0 CPU; fixtures/negative/torch-dist-spawn-gloo-unittest is the whole capture). Rank 0 logs
the monitored barrier the test makes fail, then unittest prints ``ok`` on a row of its own. Two of those
error lines happen to be the widest rows (118 and 117 columns) and ``ok`` starts with a letter, so the
wrap detection read them as rows of a 118-column terminal cut in a word ("... 2000 ms" / "ok"), joined
``ok`` to the error line, and the passing tests' events were left without an outcome: errors.
"""

from __future__ import annotations

import io

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_sources
from analyzer.scan._engine_wrap import wrap_width
from analyzer.scan.sources import Source
from tests.scan.test_engine_helpers import ENGINES

REAL = load_catalogue()
_STARTED = (b"I1205 18:47:%s 26583 torch/testing/_internal/common_distributed.py:982] Started process %d"
            b" with pid 2%d\n")
_BARRIER = (b"[rank0]:[E1205 18:4%s ProcessGroupGloo.cpp:67] [Rank 0]: Rank 1 failed to pass monitoredBarrier"
            b" in %s\n")


def _test(name: str, n: int, stamp: bytes, ms: bytes, outcome: bytes, before: bytes = b"") -> bytes:
    head = b"%s (__main__.TestDistBackendWithSpawn.%s) ... " % (name.encode(), name.encode())
    return (head + _STARTED % (b"07.848000", 0, n) + _STARTED % (b"07.864000", 1, n + 1) + before
            + _BARRIER % (stamp, ms) + outcome + b"\n")


def _log(first: bytes = b"ok", last: bytes = b"ok", verdict: bytes = b"OK") -> bytes:
    warning = (b"/tmp/healthy8/torchvenv/lib/python3.11/site-packages/torch/testing/_internal/distributed/"
               b"distributed_test.py:8870: UserWarning: Please specify timeout arg as a timedelta."
               b" Converting current value of 0.1 assuming it represents seconds\n"
               b"  dist.monitored_barrier(subgroup, timeout)\n")
    rank_0 = (b"[rank0]:[E1205 18:47:34.728862109 ProcessGroupGloo.cpp:67] Rank 0 timed out in"
              b" monitoredBarrier after 0 ms.\nNo ranks successfully processed in monitoredBarrier.\n")
    return (_test("test_monitored_barrier_gloo", 6848, b"7:19.965136314", b"2000 ms", first)
            + _test("test_monitored_barrier_gloo_rank_0_timeout", 7092, b"7:34.750650191", b"0 ms", b"ok",
                    before=rank_0)
            + _test("test_monitored_barrier_gloo_subgroup", 7413, b"8:01.260345377", b"100 ms", last,
                    before=warning)
            + b"\n" + b"-" * 70 + b"\nRan 3 tests in 72.607s\n\n" + verdict + b"\n")


def _findings(data: bytes, engine: str):
    source = Source("log", lambda: io.BytesIO(data), may_be_wrapped=True)
    return [(f.rule, f.severity) for f in scan_sources([source], REAL, engine=engine)]


def test_the_real_rows_are_the_widest_and_read_as_cut_in_a_word():
    rows = _log().split(b"\n")
    widest = max(len(r) for r in rows if r.startswith(b"[rank0]"))
    assert widest == 118 and len([r for r in rows if len(r) > widest]) <= 5


def test_a_unittest_run_whose_widest_rows_end_before_ok_is_no_terminal_copy():
    assert wrap_width(_log()) is None


@pytest.mark.parametrize("engine", ENGINES)
def test_the_events_of_the_passing_tests_are_notices(engine):
    found = _findings(_log(), engine)
    assert [rule for rule, _ in found] == ["monitored-barrier-timeout"] * 3
    assert {severity for _, severity in found} == {Severity.NOTICE}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_event_in_a_failing_test_is_an_error(engine):
    # The twin: the first test fails after the same line (unittest prints FAIL on its own row).
    data = _log(first=b"FAIL", verdict=b"FAILED (failures=1)")
    errors = [rule for rule, severity in _findings(data, engine) if severity is Severity.ERROR]
    assert "monitored-barrier-timeout" in errors


@pytest.mark.parametrize("word", [b"ok", b"PASSED", b"skipped 'needs 4 ranks'", b"FAIL", b"ERROR"])
def test_a_terminal_copy_is_still_one_when_a_cut_row_precedes_an_outcome(word):
    # A real terminal cut elsewhere ("... in 2000" / " ms") keeps the copy wrapped; only the outcome row
    # itself is a line of its own.
    line = b"[rank0]:[E1205 18:47:19.965136314 ProcessGroupGloo.cpp:67] [Rank 0]: Rank 1 failed to pass monit"
    data = (line + b"\noredBarrier in 2000 ms\n" + word + b"\n") * 3
    assert wrap_width(data) == len(line)
