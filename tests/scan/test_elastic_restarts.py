"""A failure torch elastic restarted away is handled only when the same run then succeeds.

The logs are real captures (fixtures/regenerate.py, torch 2.13.0 CPU, LOGLEVEL=INFO): a 2-rank
``torchrun --max-restarts 1`` job whose rank 1 raises on the first attempt and whose second attempt
finishes (exit 0), and the same job whose rank 1 raises on both attempts (exit 1). The variations below
cut or join those real logs the way a window of a log or one shell step running two jobs does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HEALTHY = FIXTURES / "negative" / "torchrun-elastic-restart-healthy.log"
EXHAUSTED = FIXTURES / "crash" / "torchrun-elastic-restarts-exhausted.log"
SUCCESS_LINE = "worker group successfully finished"


def _worker_failures(path: Path, engine: str):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.rule == "torchrun-worker-failed"]


def _lines(path: Path):
    return path.read_text().splitlines(keepends=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failure_the_agent_restarted_away_is_a_notice_once_the_run_succeeds(engine):
    findings = scan_paths([str(HEALTHY)], BUILTIN, engine=engine)
    assert [f.severity for f in findings if f.severity is not Severity.NOTICE] == []
    (failure,) = _worker_failures(HEALTHY, engine)
    restart = next(n for n, line in enumerate(_lines(HEALTHY), 1) if "will restart worker group" in line)
    success = next(n for n, line in enumerate(_lines(HEALTHY), 1) if SUCCESS_LINE in line)
    assert failure.severity is Severity.NOTICE
    restarted = f"restarted its worker group: Worker group FAILED. 1/1 attempts left (line {restart})"
    assert restarted in failure.message
    assert f"the run then succeeded (line {success})" in failure.message


@pytest.mark.parametrize("engine", ENGINES)
def test_a_restart_whose_success_the_log_does_not_show_keeps_the_failure_an_error(engine, tmp_path):
    lines = _lines(HEALTHY)
    cut = next(n for n, line in enumerate(lines) if SUCCESS_LINE in line)
    window = tmp_path / "restarted-then-cut.log"
    window.write_text("".join(lines[:cut]))
    (failure,) = _worker_failures(window, engine)
    assert failure.severity is Severity.ERROR, failure.message


@pytest.mark.parametrize("engine", ENGINES)
def test_restarts_that_ran_out_are_not_cleared_by_the_next_runs_success(engine, tmp_path):
    step = tmp_path / "two-runs.log"
    step.write_text("".join(_lines(EXHAUSTED) + _lines(HEALTHY)))
    first_run_lines = len(_lines(EXHAUSTED))
    by_run = sorted({(f.line <= first_run_lines, f.severity.value) for f in _worker_failures(step, engine)})
    assert by_run == [(False, "notice"), (True, "error")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_handled_failure_told_again_in_a_run_that_was_not_restarted_is_an_error(engine, tmp_path):
    # The same step runs the job again, and this time the log ends at the same failure: one event,
    # seen twice, and its second time no restart handled.
    lines = _lines(HEALTHY)
    start = next(n for n, line in enumerate(lines) if "starting workers for entrypoint" in line)
    failed = next(n for n, line in enumerate(lines) if "failed (exitcode: 1)" in line)
    step = tmp_path / "again.log"
    step.write_text("".join(lines + lines[start:failed + 1]))
    (failure,) = _worker_failures(step, engine)
    assert failure.severity is Severity.ERROR, failure.message
    assert "seen 2 times" in failure.message
