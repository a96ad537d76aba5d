"""One event, one finding, leftovers of torchrun's restarts and reports (issue 7, section 3).

fixtures/torch/torchrun-restart-segv-then-raise.log (torch 2.13 CPU gloo): torchrun --max-restarts 1, rank 1
segfaults on attempt 0 ("failed (exitcode: -11) local_rank: 1 (pid: N)", a local rank only) and raises on
attempt 1, whose report's row maps local rank 1 to rank 1. fixtures/torch/torchrun-ranks-fail-differently.log:
rank 1 raises ValueError, rank 2 calls os._exit(4) in the same monitor interval (two report rows, two
failures). fixtures/torch/torchrun-every-rank-exit2.log: every rank exits 2 (one failure). The restart whose
gloo init fails is checked on the measured runs (/tmp/dedup16/README.txt); its log is a race to capture.
"""

from __future__ import annotations

import re

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
TORCH = Path(__file__).resolve().parents[2] / "fixtures" / "torch"
RESTART = TORCH / "torchrun-restart-segv-then-raise.log"
DIFFER = TORCH / "torchrun-ranks-fail-differently.log"
EXIT2 = TORCH / "torchrun-every-rank-exit2.log"


def _errors(findings):
    return [f for f in findings if f.severity is Severity.ERROR]


def _body(path: Path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if not line.startswith("#!")]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_earlier_attempts_crash_names_the_rank_of_its_local_rank(engine):
    errors = _errors(scan_paths([str(RESTART)], BUILTIN, engine=engine))
    (crash,) = [f for f in errors if f.rule == "torchrun-worker-failed"]
    pid = re.search(r"local_rank: 1 \(pid: (\d+)\)", RESTART.read_text(encoding="utf-8")).group(1)
    assert crash.message.startswith(f"rank 1 (pid {pid}) was killed by SIGSEGV")
    assert "restart_rank.py:8" in crash.message
    (root,) = [f for f in errors if f.rule == "torchrun-root-cause"]
    assert pid not in root.message  # the root cause is the restart's worker, another pid
    assert len(errors) == 2


def test_without_the_reports_row_the_local_rank_stays_unnamed(tmp_path):
    log = tmp_path / "no-row.log"
    log.write_text("\n".join(line for line in _body(RESTART) if "(local_rank: 1)" not in line),
                   encoding="utf-8")
    (crash,) = [f for f in scan_paths([str(log)], BUILTIN) if f.rule == "torchrun-worker-failed"]
    assert crash.message.startswith("worker (pid ")


@pytest.mark.parametrize("engine", ENGINES)
def test_two_ranks_failing_differently_are_two_errors(engine):
    errors = _errors(scan_paths([str(DIFFER)], BUILTIN, engine=engine))
    assert sorted(f.rule for f in errors) == ["torchrun-failure-exit", "torchrun-root-cause"]
    (row,) = [f for f in errors if f.rule == "torchrun-failure-exit"]
    assert re.match(r"torchrun: rank 2 \(pid \d+\) failed with exit code 4\b", row.message)
    (root,) = [f for f in errors if f.rule == "torchrun-root-cause"]
    assert "rank 1 raised ValueError" in root.message


def test_a_row_after_the_closing_signal_to_its_pid_is_collateral(tmp_path):
    # the same row, as if torchrun had sent its closing signal to rank 2's worker first
    lines = _body(DIFFER)
    pid = re.search(r"exitcode\s*: 4 \(pid: (\d+)\)", "\n".join(lines)).group(1)
    at = next(i for i, line in enumerate(lines) if "closing signal SIGTERM" in line)
    lines.insert(at + 1, lines[at].replace(re.search(r"Sending process (\d+)", lines[at]).group(1), pid))
    log = tmp_path / "row-stopped.log"
    log.write_text("\n".join(lines), encoding="utf-8")
    (row,) = [f for f in scan_paths([str(log)], BUILTIN) if f.rule == "torchrun-failure-exit"]
    assert row.severity is Severity.WARNING and "collateral" in row.message


@pytest.mark.parametrize("engine", ENGINES)
def test_rows_of_the_root_causes_own_exit_code_are_told_by_it(engine):
    errors = _errors(scan_paths([str(EXIT2)], BUILTIN, engine=engine))
    (root,) = errors
    assert root.rule == "torchrun-root-cause" and "exit code 2" in root.message
    assert re.search(r"pids \d+, \d+ exited with that code too \(lines \d+, \d+\)", root.message)
