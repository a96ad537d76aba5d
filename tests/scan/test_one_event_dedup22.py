"""One event, one finding: the leftovers of issue 7, section 3 that dedup22 took.

- Every rank's "Exception (either an error or timeout) detected by watchdog at work: N" line of one
  collective (torch 2.4 to 2.7; hiyouga/LlamaFactory#7396, ranks 0 and 3 at work 1580) is one event, as
  the ranks' "Watchdog caught collective operation timeout" lines are (``across_ranks``); a line of another
  work far below is another hang.
- MPICH prints "application called MPI_Abort(MPI_COMM_WORLD, 0) - process N" for each process that took the
  same error path (pw.x in pmodels/mpich#270): one abort per communicator and error code.
- A launcher ends the other ranks once one died: PALS's "rank 4 died from signal 9" after "rank 0 died from
  signal 11 and dumped core" (saforem2/ezpz#210) is that death's teardown, not a second root cause; a rank
  that died of another signal, or a SIGKILL that came first, is a death of its own.
- NCCL's warning of why a call failed and the caller's error for it are one failure: Horovod's rank 1 in
  horovod/horovod#3752 warns "NCCL WARN Broadcast : invalid root 0 (root should be in the 0..-1 range)" on
  its stdout and raises "RuntimeError: ncclCommInitRank failed: invalid usage" on its stderr.

The runs these stand for are measured in /tmp/dedup22 (set/, dev-* fixed against, held-* held out, each
NAME.log with NAME.expect written before scanning).
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
LLAMAFACTORY = FIXTURES / "quoted" / "nccl-watchdog-numbered-lines-llamafactory.log"
MPICH_270 = FIXTURES / "quoted" / "mpich-application-called-mpi-abort.log"
EZPZ = FIXTURES / "quoted" / "pals-rank-died-from-signal-ezpz.log"
PALS_DIED = "x4006c0s6b0n0.hsn.cm.aurora.alcf.anl.gov: rank {rank} died from signal {signum}\n"
# horovod/horovod#3752: rank 1's NCCL warning (a comment's paste) and its traceback (the description's).
HOROVOD_3752_WARN = (
    "[1,1]<stdout>:slave1:126624:126758 [1] misc/argcheck.cc:39 NCCL WARN Broadcast : invalid root 0 (root"
    " should be in the 0..-1 range)\n"
    "[1,1]<stdout>:slave1:126624:126758 [1] NCCL INFO enqueue.cc:1450 -> 4\n"
    "[1,1]<stdout>:slave1:126624:126758 [1] NCCL INFO comm 0x7f7258228580 rank -1 nranks -1 cudaDev -1 busId"
    " ffffffffffffffff - Abort COMPLETE\n"
)
HOROVOD_3752_RAISE = (
    "[1,1]<stderr>:Traceback (most recent call last):\n"
    '[1,1]<stderr>:  File "/home/xxx/anaconda3/envs/mg/lib/python3.8/site-packages/horovod/torch/mpi_ops.py",'
    " line 1253, in synchronize\n"
    "[1,1]<stderr>:    mpi_lib.horovod_torch_wait_and_clear(handle)\n"
    "[1,1]<stderr>:RuntimeError: ncclCommInitRank failed: invalid usage\n"
)
# hiyouga/LlamaFactory#7396: torch 2.4-2.7's watchdog line under its "[rankN]:" prefix and glog stamp.
FAILURE_DETECTED = (
    "[rank{rank}]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank {rank}] Exception (either an"
    " error or timeout) detected by watchdog at work: {work}, last enqueued NCCL work: 1582, last completed"
    " NCCL work: 1579.\n"
)
# pmodels/mpich#270: MPICH's src/mpi/init/abort.c line, "application called MPI_Abort(%s, %d) - process %d".
MPI_ABORT = "application called MPI_Abort(MPI_COMM_WORLD, {code}) - process {rank}\n"


def _errors(path: Path, engine: str = "auto"):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_watchdog_failure_line_of_another_rank_in_the_timeouts_sweep_is_that_timeout(engine):
    found = _errors(LLAMAFACTORY, engine)
    assert [f.rule for f in found] == ["nccl-watchdog-timeout"]
    assert "rank 4 reported it too" in found[0].message  # rank 3's failure line is no finding of its own


@pytest.mark.parametrize("engine", ENGINES)
def test_two_ranks_failure_lines_of_one_work_are_one_event_naming_the_other_rank(tmp_path, engine):
    log = tmp_path / "ranks.log"
    log.write_text(FAILURE_DETECTED.format(rank=0, work=1580) + FAILURE_DETECTED.format(rank=3, work=1580))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [("nccl-watchdog-failure-detected", 1)]
    assert "rank 3 reported it too (line 2)" in found[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_failure_lines_of_two_works_a_hundred_lines_apart_are_two_hangs(tmp_path, engine):
    log = tmp_path / "two.log"
    log.write_text(FAILURE_DETECTED.format(rank=0, work=1580) + "step\n" * 100
                   + FAILURE_DETECTED.format(rank=3, work=2000))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [
        ("nccl-watchdog-failure-detected", 1), ("nccl-watchdog-failure-detected", 102)]


@pytest.mark.parametrize("engine", ENGINES)
def test_mpich_aborts_of_two_processes_with_one_code_are_one_abort(engine):
    found = _errors(MPICH_270, engine)
    assert [f.rule for f in found] == ["mpi-abort-invoked"]
    assert found[0].message.startswith("MPI: rank 1 called MPI_Abort on MPI_COMM_WORLD")


@pytest.mark.parametrize("engine", ENGINES)
def test_mpich_aborts_with_two_error_codes_are_two_aborts(tmp_path, engine):
    log = tmp_path / "codes.log"
    log.write_text(MPI_ABORT.format(code=1, rank=0) + MPI_ABORT.format(code=2, rank=1))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [("mpi-abort-invoked", 1), ("mpi-abort-invoked", 2)]


@pytest.mark.parametrize("engine", ENGINES)
def test_nccls_warning_and_horovods_error_for_that_call_are_one_failure_the_warning_tells(tmp_path, engine):
    log = tmp_path / "horovod.log"
    log.write_text(HOROVOD_3752_WARN + HOROVOD_3752_RAISE)
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [("nccl-invalid-argument-warn", 1)]
    assert "ncclCommInitRank failed: invalid usage (line 7)" in found[0].message


@pytest.mark.parametrize("engine", ENGINES)
def test_horovods_error_far_below_an_earlier_warning_is_its_own_finding(tmp_path, engine):
    log = tmp_path / "far.log"
    log.write_text(HOROVOD_3752_WARN + "[1,0]<stdout>:step\n" * 300 + HOROVOD_3752_RAISE)
    found = _errors(log, engine)
    assert [f.rule for f in found] == ["nccl-invalid-argument-warn", "nccl-call-failed"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_ranks_sigkill_after_another_ranks_segfault_under_pals_is_the_teardown(engine):
    found = _errors(EZPZ, engine)
    assert [f.rule for f in found] == ["pals-rank-died-from-signal"]
    assert found[0].message.startswith("PALS mpiexec: rank 0 died from signal 11")
    assert "rank 4 died from signal 9" in found[0].excerpt


@pytest.mark.parametrize("engine", ENGINES)
def test_two_ranks_dying_of_two_signals_other_than_sigkill_under_pals_are_two_deaths(tmp_path, engine):
    log = tmp_path / "two.log"
    log.write_text(PALS_DIED.format(rank=256, signum=11) + PALS_DIED.format(rank=27, signum=6))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [
        ("pals-rank-died-from-signal", 1), ("pals-rank-died-from-signal", 2)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sigkill_that_came_first_under_pals_is_a_death_of_its_own(tmp_path, engine):
    log = tmp_path / "killed-first.log"
    log.write_text(PALS_DIED.format(rank=4, signum=9) + PALS_DIED.format(rank=0, signum=11))
    found = _errors(log, engine)
    assert [(f.rule, f.line) for f in found] == [
        ("pals-rank-died-from-signal", 1), ("pals-rank-died-from-signal", 2)]
