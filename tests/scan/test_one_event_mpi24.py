"""One event, one finding, for NCCL's "Duplicate GPU detected" told by every rank on the shared device.

NCCL's init checks that no two ranks of one host use the same GPU (src/init.cc, "Duplicate GPU detected :
rank %d and rank %d both on CUDA device %lx", returns ncclInvalidUsage). Each rank that finds the clash
prints it naming itself first: horovod/horovod#3929 shows ranks 0, 2, 1 and 5 under mpirun --tag-output's
"[1,N]<stdout>:", one launcher that gave every process device 1000. That is one misconfiguration:
``across_ranks: [device]`` folds the ranks' lines into the first, which names the others. A clash on
another device is a second one. The rank comes from NCCL's own words, so plain NCCL output (no launcher
prefix) folds the same way.
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
FOUR_RANKS = FIXTURES / "quoted" / "nccl-duplicate-gpu-four-ranks-mpi-tagged.log"
# One rank's lines as horovod/horovod#3929 shows them (host:pid:tid [cudaDev], then the warning).
PLAIN = ("smc-gpu-03:2988{rank}:3040{rank} [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank {rank} and"
         " rank 0 both on CUDA device {device}\n"
         "smc-gpu-03:2988{rank}:3040{rank} [0] NCCL INFO init.cc:867 -> 5\n")
DUPLICATE = "".join("[1,{rank}]<stdout>:" + line for line in PLAIN.splitlines(keepends=True))


def _errors(path: Path, engine: str):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_four_ranks_on_one_device_are_one_finding_naming_the_other_ranks(engine):
    found = _errors(FOUR_RANKS, engine)
    assert [(f.rule, f.line) for f in found] == [("nccl-duplicate-gpu", 4)]
    assert "ranks 1, 2, 5 reported it too (lines 7, 10, 13)" in found[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_ranks_without_a_launcher_prefix_fold_by_nccls_own_words(tmp_path, engine):
    log = tmp_path / "plain.log"
    log.write_text("".join(PLAIN.format(rank=rank, device="1000") for rank in (2, 3)))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [("nccl-duplicate-gpu", 1)]
    assert "rank 3 reported it too (line 3)" in found[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_clashes_on_two_devices_far_apart_are_two_findings(tmp_path, engine):
    # Printed together they are one init's sweep (``_one_sweep``, as the watchdog's lines); a clash on
    # another device a hundred lines of training later is a second launch's.
    log = tmp_path / "two-devices.log"
    steps = "".join("[1,2]<stdout>:step %d ok\n" % step for step in range(100))
    log.write_text(DUPLICATE.format(rank=2, device="1000") + steps + DUPLICATE.format(rank=3, device="3b000"))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [("nccl-duplicate-gpu", 1), ("nccl-duplicate-gpu", 103)]
