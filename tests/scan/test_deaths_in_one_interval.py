"""Several ranks dying at once, and forked tests that died: one finding per death, naming whom it killed.

torchrun polls its workers once per ``--monitor-interval``; ranks that die within one interval are rows of
one ChildFailedError report, and its Root Cause is whichever torch elastic takes first (the lowest rank
when no error file says). In fixtures/torch/torchrun-four-ranks-one-interval.log (torch 2.13, gloo, four
ranks) rank 1 raised and rank 2 was SIGKILLed at once; ranks 0 and 3 then died of gloo's "Connection
closed by peer", and the report named rank 0 its root cause. fixtures/pytest/forked-signal-and-exit.log is
pytest-forked 1.7.5 under pytest 9.2: each forked test's death is one line in its FAILURES report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES, error_findings

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ONE_INTERVAL = FIXTURES / "torch" / "torchrun-four-ranks-one-interval.log"
RANK_2_ROOT = FIXTURES / "torch" / "torchrun-four-ranks-raise-kill.log"
FORKED = FIXTURES / "pytest" / "forked-signal-and-exit.log"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_root_cause_dead_of_a_lost_peer_is_collateral_of_the_ranks_that_died_of_their_own(engine):
    findings = scan_paths([str(ONE_INTERVAL)], BUILTIN, engine=engine)
    raised, killed = error_findings(findings)
    # its pid is only in its report row ("exitcode  : 1 (pid: 11102)", after "rank      : 1 (local_rank: 1)")
    assert raised.rule == "rank-raised"
    assert raised.message.startswith("rank 1 (pid 11102) raised ValueError: rank 1:")
    assert killed.rule == "torchrun-signal-exit"
    assert killed.message == "rank 2 (pid 11103) was killed by SIGKILL"
    (root,) = [f for f in findings if f.rule == "torchrun-root-cause"]
    assert root.severity is Severity.WARNING
    assert "collateral: rank 0 died of its broken connection to a peer that died" in root.message
    assert f"a failure of its own at line {raised.line}: rank 1 (pid 11102) raised ValueError" in root.message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_root_cause_of_its_own_stays_the_root_cause_and_a_killed_row_names_its_rank(engine):
    # Rerun of the same program where torchrun saw rank 1's exception first: its own cause, an error.
    findings = scan_paths([str(RANK_2_ROOT)], BUILTIN, engine=engine)
    root, killed = error_findings(findings)
    assert root.rule == "torchrun-root-cause" and "rank 1 raised ValueError" in root.message
    assert killed.message == "rank 2 (pid 20134) was killed by SIGKILL"
    # rank 0, still alive at the poll, got torchrun's SIGTERM: collateral, its rank row not named
    (term,) = [f for f in findings if f.severity is Severity.WARNING]
    assert term.message.startswith("torchrun: worker pid 20132 died with exit code -15")


def test_a_row_after_no_rank_line_keeps_the_launchers_words(tmp_path):
    log = tmp_path / "report.log"
    log.write_text("Failures:\n[1]:\n  exitcode  : -9 (pid: 4242)  (SIGKILL)\n  error_file: <N/A>\n"
                   "  traceback : Signal 9 (SIGKILL) received by PID 4242\n")
    (row,) = scan_paths([str(log)], BUILTIN)
    assert row.message.startswith("torchrun: worker pid 4242 died with exit code -9")


@pytest.mark.parametrize("engine", ENGINES)
def test_each_forked_tests_death_is_one_finding_in_that_test(engine):
    findings = scan_paths([str(FORKED)], BUILTIN, engine=engine)
    deaths = {f.test: f.message for f in findings if f.rule == "pytest-forked-crashed"}
    assert deaths == {
        "test_forked.py::test_ok_in_fork": "pytest-forked: the process that ran the test exited with status 3"
                                           " during test_forked.py::test_ok_in_fork",
        "test_forked.py::test_segv_in_fork": deaths.get("test_forked.py::test_segv_in_fork"),
        "test_forked.py::test_killed_in_fork": "pytest-forked: the process that ran the test was killed by"
                                               " SIGKILL during test_forked.py::test_killed_in_fork",
    }
    segv = deaths["test_forked.py::test_segv_in_fork"]
    # faulthandler's dump in the child, 60 lines before the report, is the same death: told, not counted
    assert segv.startswith("pytest-forked: the process that ran the test was killed by SIGSEGV; Fatal Python"
                           " error: Segmentation fault (line ")
    assert segv.endswith("at test_forked.py:15 during test_forked.py::test_segv_in_fork")
    assert not [f for f in findings if f.rule == "fatal-python-error"]
    failed = sorted(f.test for f in findings if f.rule == "pytest-test-outcome")
    tests = ("test_killed_in_fork", "test_ok_in_fork", "test_segv_in_fork")
    assert failed == ["test_forked.py::" + t for t in tests]
