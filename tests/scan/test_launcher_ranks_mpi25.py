"""An MPI or Slurm launcher's label names a rank, unless torch names its ranks behind it.

Open MPI's --tag-output puts "[JOB,RANK]<stderr>:" before each line of a rank (ORTE's and PRRTE's
iof_base_output.c), horovodrun "[RANK]<stderr>:", and srun --label the task's number ("RANK: ", Slurm's
write_labelled_message.c). When the launched program is the worker (``mpirun python train.py``, ``srun
python train.py``) that label is its rank, as torchrun's "[rankN]:" is: the same real torchrun logs with
each rank's prefix written the launchers' way must read as they do under torchrun. When the launched
program is torchrun (``srun -l torchrun``, one task a node), the label is the node's: every worker of the
node and its agent share it, and torch's own "[rankN]:" names the worker. Such a log must read as torch's
prefix alone does, the agent's lines included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.clean import clean_speaking, torch_rank_behind_launcher
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# Real torchrun captures whose ranks print under "[rankN]:" (one of them failing differently from another,
# one raising beside one that segfaults, two aborting): where the rank decides the root cause's words.
RANKED = ("torch/torchrun-ranks-fail-differently.log", "torch/torchrun-twin-raise-segv.log",
          "torch/torchrun-prefixed-two-abort.log")
_TORCH_PREFIX = re.compile(rb"^((?:\d{4}-\d\d-\d\dT\S+Z )?)\[rank(\d+)\]: ?", re.M)
_STAMP = re.compile(rb"^(?:\d{4}-\d\d-\d\dT\S+Z )?")
LAUNCHERS = {
    "mpirun --tag-output": rb"\1[1,\2]<stderr>:",
    "srun --label": rb"\1\2: ",
    "horovodrun": rb"\1[\2]<stderr>:",
}
WORKERS_A_NODE = 4


def _body(name: str) -> bytes:
    lines = (FIXTURES / name).read_bytes().splitlines(True)
    return b"".join(line for line in lines if not line.startswith(b"#!"))


def _srun_label_torchrun(body: bytes) -> bytes:
    """``srun -l torchrun``: every line of node K (ranks 4K to 4K+3, and its agent) behind "K: "."""
    lines = []
    for line in body.splitlines(True):
        rank = _TORCH_PREFIX.match(line)
        node = int(rank.group(2)) // WORKERS_A_NODE if rank else 0
        stamp = _STAMP.match(line).group()
        lines.append(stamp + b"%d: " % node + line[len(stamp):])
    return b"".join(lines)


def _findings(path: Path, engine: str):
    found = scan_paths([str(path)], BUILTIN, engine=engine)
    return [(f.rule, f.line, f.severity.value, f.message) for f in found]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("name", RANKED)
def test_a_launchers_label_before_each_rank_reads_as_torchs_rank_prefix(name, launcher, engine, tmp_path):
    body = _body(name)
    torch_log, launched = tmp_path / "torchrun.log", tmp_path / "launched.log"
    torch_log.write_bytes(body)
    launched.write_bytes(_TORCH_PREFIX.sub(LAUNCHERS[launcher], body))
    assert _findings(launched, engine) == _findings(torch_log, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", RANKED)
def test_srun_label_before_torchrun_names_the_node_and_torchs_prefix_the_rank(name, engine, tmp_path):
    # The agent's ChildFailedError traceback of node 0 comes behind "0: " as rank 0's lines do: read as
    # rank 0's, it became rank 0's cause and two SIGABRT rows merged (mpi24's patch alone).
    body = _body(name)
    torch_log, nested = tmp_path / "torchrun.log", tmp_path / "srun-l-torchrun.log"
    torch_log.write_bytes(body)
    nested.write_bytes(_srun_label_torchrun(body))
    assert _findings(nested, engine) == _findings(torch_log, engine)


def test_the_launchers_label_is_the_rank_until_torch_names_its_own():
    assert clean_speaking(b"[1,3]<stderr>:RuntimeError: boom")[1] == 3
    assert clean_speaking(b"[3]<stderr>:RuntimeError: boom")[1] == 3
    assert clean_speaking(b"03: RuntimeError: boom")[1] == 3
    assert clean_speaking(b"03: RuntimeError: boom", launcher_ranks=False)[1] is None
    text, rank, speaker = clean_speaking(b"1: [rank5]:RuntimeError: boom")
    assert (text, rank) == ("RuntimeError: boom", 5)
    assert torch_rank_behind_launcher(speaker)
    assert torch_rank_behind_launcher(clean_speaking(b"[1,1]<stderr>:[default3]:step 1")[2])
    # torch's prefix alone, torchrun --tee's before it, and Ray's pid before it name no launcher
    for line in (b"[rank5]:step 1", b"[default0]:[rank0]:step 1",
                 b"(RayTrainWorker pid=3211) [rank0]:step 1"):
        assert not torch_rank_behind_launcher(clean_speaking(line)[2]), line


def test_an_mpich_assertion_told_by_every_rank_is_one_finding(tmp_path):
    # MPIR_Assert_fail (src/util/mpir_assert.c) on each rank that reaches the same state, under mpirun's tag
    line = ("[1,{rank}]<stderr>:Assertion failed in file src/mpid/ch4/src/init_comm.c at line 72:"
            " in_use == 0\n")
    log = tmp_path / "ranks.log"
    log.write_text("".join(line.format(rank=rank) for rank in (2, 0, 5)))
    found = scan_paths([str(log)], BUILTIN)
    # identical lines fold before the ranks are read; the folded event keeps its tellers' ranks (ranks26)
    assert [(f.rule, f.line) for f in found] == [("mpich-assertion-failed", 1)]
    assert found[0].message.endswith("(seen 3 times: ranks 0, 2, 5)")


def test_mpds_collective_abort_of_each_rank_of_one_job_is_one_finding():
    found = scan_paths([str(FIXTURES / "quoted" / "mpich-mpd-collective-abort-four-ranks.log")], BUILTIN)
    assert [(f.rule, f.line) for f in found] == [("mpich-mpd-collective-abort", 12)]
    assert found[0].message.startswith("MPICH mpd: rank 3 of job 1958 ended")
    assert "ranks 0, 1, 2 reported it too" in found[0].message


def test_psm_assertion_after_its_rank_label_is_one_finding_naming_the_rank(tmp_path):
    # PSM3's label "host:rankN: " (psm_error.c: "%s%s\n", hfi_get_mylabel()); a source comment is not it
    log = tmp_path / "psm3.log"
    said = "Assertion failure at psm3/ptl_am/ptl.c:210: nbytes == req->req_data.recv_msglen\n"
    log.write_text("DUT7113ATSM:rank1: " + said + "DUT7113ATSM:rank3: " + said
                   + "\t * Assertion failure at psm2_ep.c:1059: ep->mctxt_master == ep\n")
    found = scan_paths([str(log)], BUILTIN)
    assert [(f.rule, f.line) for f in found] == [("psm-assertion-failure", 1)]
    assert "PSM3: internal assertion failed at psm3/ptl_am/ptl.c:210" in found[0].message
    # the label is the line's rank prefix (ranks26): the two ranks' identical lines fold into one event
    assert found[0].message.endswith("(seen 2 times: ranks 1, 3)")
