"""A rank's traceback is its death only when it ended the rank; two ranks that hit one signal for two
reasons are two deaths; a spawn worker's exception is reported on its own line; a test's inner run that
stopped at collection is not the log's own stop (issue 7, section 3; dedup11).

fixtures/torch/torchrun-prefixed-caught-segv.log is a real torchrun run (torch 2.13 CPU, gloo, a
``[rank${rank}]:`` prefix on every line) where rank 0 logged a KeyError it caught and went on, and rank 1
then segfaulted. fixtures/torch/torchrun-prefixed-two-abort.log: each rank printed its own exception, then
aborted. fixtures/torch/spawn-raise.log: torch.multiprocessing.spawn re-raised worker 1's ValueError.
fixtures/pytest/instafail-suite-quiet-broken.log: a failing test whose pytester run stopped at collection.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.engine import READ_SIZE
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CAUGHT = FIXTURES / "torch" / "torchrun-prefixed-caught-segv.log"
TWO_ABORT = FIXTURES / "torch" / "torchrun-prefixed-two-abort.log"
SPAWN = FIXTURES / "torch" / "spawn-raise.log"
KEY_ERROR = "[rank0]:KeyError: 'vocab_size'"


def _errors(path, engine):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _with_chatter(tmp_path, keep_going: bool) -> Path:
    """The caught fixture with more than a read window of rank 1's chatter after rank 0's traceback, so
    rank 0's next line comes in another window; without ``keep_going`` rank 0 prints nothing after it."""
    lines = CAUGHT.read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.endswith(KEY_ERROR))
    stamp = lines[at].split(" ", 1)[0]
    chatter = ["%s [rank1]:loading shard %d of 9000" % (stamp, n) for n in range(READ_SIZE // 40)]
    rest = [line for line in lines[at + 1:] if keep_going or "[rank0]:rank 0 step" not in line]
    path = tmp_path / "chatter.log"
    path.write_text("\n".join(lines[:at + 1] + chatter + rest))
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_a_traceback_a_rank_caught_and_went_on_from_is_not_its_failure(engine):
    (root,) = _errors(CAUGHT, engine)
    assert root.rule == "torchrun-root-cause"
    assert root.message.startswith("rank 1 (pid ") and "SIGSEGV" in root.message


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("keep_going", [True, False])
def test_going_on_is_read_across_windows_and_its_absence_keeps_the_failure(tmp_path, engine, keep_going):
    errors = _errors(_with_chatter(tmp_path, keep_going), engine)
    raised = [f for f in errors if f.rule == "rank-raised"]
    if keep_going:
        assert not raised
    else:
        (one,) = raised
        assert one.message.startswith("rank 0 (pid ") and " raised KeyError: 'vocab_size'" in one.message
    assert errors[0].rule == "torchrun-root-cause"


@pytest.mark.parametrize("engine", ENGINES)
def test_two_ranks_aborting_each_for_its_own_exception_are_two_deaths(engine):
    root, row = _errors(TWO_ABORT, engine)
    assert root.rule == "torchrun-root-cause" and "died of it too" not in root.message
    assert "SIGABRT" in root.message and "rank 0 raised RuntimeError" in root.message
    # the row's rank is on its line before "exitcode" (dedup12): the rank, its pid and the signal by name
    assert row.rule == "torchrun-signal-exit" and row.message.startswith("rank 1 (pid ")
    assert "was killed by SIGABRT" in row.message
    assert "rank 1 raised KeyError" in row.message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_spawn_workers_exception_is_reported_on_its_exception_line(engine):
    (raised,) = _errors(SPAWN, engine)
    line = SPAWN.read_text().split("\n")[raised.line - 1]
    assert line.endswith("ValueError: rank 1: checkpoint shard missing")
    assert raised.message.startswith("torch.multiprocessing.spawn: process 1 raised ValueError")


@pytest.mark.parametrize("engine", ENGINES)
def test_an_inner_runs_stop_in_a_failed_test_says_it_was_not_the_logs_own(engine):
    # pytest-instafail's own suite (healthy11's twin): the outer run ran 4 tests; a failing test's pytester
    # run stopped at a collection error.
    path = FIXTURES / "pytest" / "instafail-suite-quiet-broken.log"
    (stop,) = _errors(path, engine)
    assert stop.rule == "pytest-collection-interrupted"
    assert stop.message.startswith("a test's inner pytest run (pytester, a subprocess) stopped at collection")
    assert "test_collect_error[quiet-normal] FAILED" in stop.message
    assert "before running any test" not in stop.message


@pytest.mark.parametrize("engine", ENGINES)
def test_the_logs_own_stop_at_collection_keeps_its_message(engine):
    path = FIXTURES / "crash" / "pytest-collection-errors-interrupted.log"
    stop = next(f for f in _errors(path, engine) if f.rule == "pytest-collection-interrupted")
    assert stop.message.startswith("pytest stopped before running any test: 2 errors during collection")
