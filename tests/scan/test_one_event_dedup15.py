"""One event, one finding, leftovers: a rank that torch.multiprocessing.spawn stopped prints its lost peer;
torchrun's root cause of a plain exit code names the rank of its report row.

fixtures/torch/lightning-ddp-spawn-raise-peer-closed.log (Lightning 2.6.6 ddp_spawn, torch 2.13 CPU gloo):
rank 1 raises ValueError, spawn logs "Terminating process N via signal SIGTERM" for rank 0, whose
all_reduce then fails with gloo's "Connection closed by peer" (no rank prefix, under "Process
SpawnProcess-1:"). fixtures/torch/torchrun-rank-exit3.log: torchrun, 2 ranks, rank 1 calls sys.exit(3).
fixtures/crash/torchrun-elastic-restarts-exhausted.log: torchrun --max-restarts 1, rank 1 raises on both
attempts; attempt 0's "failed (exitcode: 1) local_rank: 1 (pid: N)" names another pid than the root cause.
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
SPAWN = TORCH / "lightning-ddp-spawn-raise-peer-closed.log"
EXIT3 = TORCH / "torchrun-rank-exit3.log"
RESTART = TORCH.parent / "crash" / "torchrun-elastic-restarts-exhausted.log"


def _errors(findings):
    return [f for f in findings if f.severity is Severity.ERROR]


def _body(path: Path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if not line.startswith("#!")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_lost_peer_after_spawns_termination_is_collateral_of_the_raise(engine):
    findings = scan_paths([str(SPAWN)], BUILTIN, engine=engine)
    (raised,) = _errors(findings)
    assert raised.rule == "torch-spawn-raised" and "process 1 raised ValueError" in raised.message
    (peer,) = [f for f in findings if f.rule == "gloo-peer-closed"]
    assert peer.severity is Severity.WARNING and "collateral" in peer.message
    assert "torch.multiprocessing.spawn sent SIGTERM" in peer.message  # the shutdown it followed


def test_a_lost_peer_before_any_termination_stays_an_error(tmp_path):
    # without spawn's termination line nobody stopped the rank on purpose: its lost peer is no collateral
    log = tmp_path / "no-termination.log"
    log.write_text("\n".join(line for line in _body(SPAWN) if "Terminating process" not in line),
                   encoding="utf-8")
    (peer,) = [f for f in scan_paths([str(log)], BUILTIN) if f.rule == "gloo-peer-closed"]
    assert peer.severity is Severity.ERROR


@pytest.mark.parametrize("engine", ENGINES)
def test_a_plain_exit_codes_root_cause_names_its_rank(engine):
    (root,) = _errors(scan_paths([str(EXIT3)], BUILTIN, engine=engine))
    assert root.rule == "torchrun-root-cause"
    assert "exit code 3 (rank 1)" in root.message


def test_a_root_cause_row_without_its_rank_line_names_no_rank(tmp_path):
    text = _body(EXIT3)
    first = next(i for i, line in enumerate(text) if line.endswith("Root Cause (first observed failure):"))
    log = tmp_path / "no-rank-row.log"
    log.write_text("\n".join(line for i, line in enumerate(text) if not (first < i < first + 8
                                                                         and "local_rank" in line)),
                   encoding="utf-8")
    (root,) = [f for f in scan_paths([str(log)], BUILTIN) if f.rule == "torchrun-root-cause"]
    assert "exit code 3" in root.message and "(rank" not in root.message


@pytest.mark.parametrize("engine", ENGINES)
def test_an_earlier_attempts_failed_line_of_the_root_cause_rank_is_told_by_it(engine):
    text = RESTART.read_text(encoding="utf-8")
    first = re.search(r"failed \(exitcode: 1\) local_rank: 1 \(pid: (\d+)\)", text).group(1)
    findings = scan_paths([str(RESTART)], BUILTIN, engine=engine)
    (root,) = _errors(findings)
    assert root.rule == "torchrun-root-cause" and first not in root.message  # the last attempt's pid
    assert f"local_rank: 1 (pid: {first})" in root.excerpt  # attempt 0's line, told with it
    assert not [f for f in findings if f.rule == "torchrun-worker-failed"]


def test_an_attempts_failed_line_with_no_report_row_of_its_local_rank_stays_its_own(tmp_path):
    # no "rank : 1 (local_rank: 1)" row says whose the local rank is: nothing ties the line to the root cause
    log = tmp_path / "no-rows.log"
    kept = [line for line in _body(RESTART) if "(local_rank: " not in line]
    log.write_text("\n".join(kept), encoding="utf-8")
    rules = [f.rule for f in _errors(scan_paths([str(log)], BUILTIN))]
    assert "torchrun-worker-failed" in rules
