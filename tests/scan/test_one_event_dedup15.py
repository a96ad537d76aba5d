"""One event, one finding, leftovers: a rank that torch.multiprocessing.spawn stopped prints its lost peer;
torchrun's root cause of a plain exit code names the rank of its report row.

fixtures/torch/lightning-ddp-spawn-raise-peer-closed.log (Lightning 2.6.6 ddp_spawn, torch 2.13 CPU gloo):
rank 1 raises ValueError, spawn logs "Terminating process N via signal SIGTERM" for rank 0, whose
all_reduce then fails with gloo's "Connection closed by peer" (no rank prefix, under "Process
SpawnProcess-1:"). fixtures/torch/torchrun-rank-exit3.log: torchrun, 2 ranks, rank 1 calls sys.exit(3).
"""

from __future__ import annotations

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
