"""One event, one finding across ranks: the leftover of issue 7, section 3 that dedup20 took.

Every rank waiting on a collective that never finished times out on it, and each rank's ProcessGroupNCCL
watchdog logs the same collective ("WorkNCCL(SeqNum=48490, OpType=ALLREDUCE, ...)"): ranks 2 and 7 in
huggingface/accelerate#2174 (fixtures/quoted/nccl-watchdog-terminate-torch1-what-repeats.log), ranks 1, 3,
2, 6, 7 in OFA-Sys/OFA#271. One hung collective is one finding, told by the first rank's line; another
sequence number, another op or another process group is another collective, and since dedup21 another
finding only when it timed out in another watchdog sweep (tests/scan/test_one_event_dedup21.py): the works
of one sweep are one hang. The runs these stand for are measured in /tmp/dedup20 (measure.py,
cases/EXPECT.md).
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
ACCELERATE = FIXTURES / "quoted" / "nccl-watchdog-terminate-torch1-what-repeats.log"
BROADCAST = FIXTURES / "quoted" / "nccl-watchdog-indented-broadcast.log"
CUT = FIXTURES / "quoted" / "nccl-watchdog-timeout-message-cut.log"
AT_WORK = FIXTURES / "quoted" / "nccl-operations-failed-ranks.log"
# OFA-Sys/OFA#271 (JamesZhutheThird's comment): torch 1.x's watchdog line of five of eight ranks.
OFA = "\n".join(
    f"[E ProcessGroupNCCL.cpp:737] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL("
    f"SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for {ms} milliseconds before timing out."
    for rank, ms in ((1, 1802212), (3, 1802211), (2, 1802212), (6, 1802210), (7, 1802220))
) + "\n"
# XPixelGroup/BasicSR#737: torch 2.x's line with the "[rankN]:" prefix.
BASICSR = (
    "[rank{rank}]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [{pg}Rank {rank}] Watchdog caught"
    " collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523,"
    " Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
)


def _watchdog(path: Path, engine: str = "auto"):
    return [
        f for f in scan_paths([str(path)], BUILTIN, engine=engine)
        if f.severity is Severity.ERROR and f.rule == "nccl-watchdog-timeout"
    ]


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if text in line)


@pytest.mark.parametrize("engine", ENGINES)
def test_two_ranks_timing_out_on_one_collective_are_one_finding(engine):
    found = _watchdog(ACCELERATE, engine)
    assert [f.line for f in found] == [_line_of(ACCELERATE, "[Rank 2] NCCL watchdog thread terminated")]
    rank7 = _line_of(ACCELERATE, "[Rank 7] NCCL watchdog thread terminated")
    assert found[0].message.endswith(f"; rank 7 reported it too (line {rank7}) (seen 2 times)")
    assert "[Rank 7] NCCL watchdog thread terminated" in found[0].excerpt


@pytest.mark.parametrize("engine", ENGINES)
def test_every_rank_of_one_collective_is_named_once(tmp_path, engine):
    log = tmp_path / "ofa.log"
    log.write_text(OFA, encoding="utf-8")
    found = _watchdog(log, engine)
    assert [f.line for f in found] == [1]
    assert "; ranks 2, 3, 6, 7 reported it too (lines 2, 3, 4, 5)" in found[0].message
    # the excerpt quotes two of the other ranks' lines, not all four
    assert found[0].excerpt.count("--- the same event, told again") == 2


# dedup21: the watchdog of every rank reports every work past the timeout in the same seconds: the
# collectives of one sweep are one hang, one finding naming the others (pytorch/pytorch#118369). Another
# collective is another finding when it times out in another sweep: a restart's lines or an hour between.
RESTART_LINES = "".join("step %d: loss 0.5\n" % n for n in range(65))


def _apart(text: str, line: int) -> str:
    """``text`` with a restarted job's 65 lines of output inserted before its ``line`` (1-based)."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[:line - 1]) + RESTART_LINES + "".join(lines[line - 1:])


def test_the_same_sequence_number_with_another_op_is_another_collective(tmp_path):
    found = _watchdog(BROADCAST)  # rank 7 in a BROADCAST, rank 3 in an ALLREDUCE, one second: one hang
    assert len(found) == 1
    assert "OpType=BROADCAST" in found[0].message and "OpType=ALLREDUCE" in found[0].message
    log = tmp_path / "apart.log"
    log.write_text(_apart(BROADCAST.read_text(encoding="utf-8"), _line_of(BROADCAST, "[Rank 3] Watchdog")),
                   encoding="utf-8")
    found = _watchdog(log)
    assert len(found) == 2
    assert {("OpType=ALLREDUCE" in f.message, "OpType=BROADCAST" in f.message) for f in found} == {
        (True, False), (False, True)}


def test_another_sequence_number_stays_its_own_and_a_cut_line_still_folds(tmp_path):
    found = _watchdog(CUT)  # rank 4's SeqNum=1008 timed out in the same sweep: one hang
    assert [f.line for f in found] == [_line_of(CUT, "[Rank 6] Watchdog caught")]
    assert "rank 4 reported it too" in found[0].message and "SeqNum=1008" in found[0].message
    log = tmp_path / "apart.log"
    log.write_text(_apart(CUT.read_text(encoding="utf-8"), _line_of(CUT, "SeqNum=1008, OpType=ALLREDUCE")),
                   encoding="utf-8")
    found = _watchdog(log)
    assert [f.line for f in found] == [
        _line_of(log, "[Rank 6] Watchdog caught"), _line_of(log, "SeqNum=1008, OpType=ALLREDUCE")]
    assert "rank 4 reported it too" in found[0].message


def test_another_process_group_is_another_collective(tmp_path):
    log = tmp_path / "two-groups.log"
    log.write_text(BASICSR.format(rank=1, pg="PG 0 ") + RESTART_LINES + BASICSR.format(rank=0, pg="PG 1 "),
                   encoding="utf-8")
    assert len(_watchdog(log)) == 2
    log.write_text(BASICSR.format(rank=1, pg="PG 1 ") + RESTART_LINES + BASICSR.format(rank=0, pg="PG 1 "),
                   encoding="utf-8")
    assert len(_watchdog(log)) == 1
    log.write_text(BASICSR.format(rank=1, pg="PG 0 ") + BASICSR.format(rank=0, pg="PG 1 "), encoding="utf-8")
    assert len(_watchdog(log)) == 1  # one sweep


def test_a_line_without_a_sequence_number_is_never_folded_across_ranks(tmp_path):
    # torch 1.x before 1.10 named no sequence number: two ranks' broadcasts may be two collectives
    line = ("[E ProcessGroupNCCL.cpp:566] [Rank {rank}] Caught collective operation timeout: WorkNCCL("
            "OpType=BROADCAST, TensorShape=[], Timeout(ms)=1800000) ran for 1800102 milliseconds before"
            " timing out.\n")
    log = tmp_path / "no-seq.log"
    log.write_text(line.format(rank=1) + RESTART_LINES + line.format(rank=0), encoding="utf-8")
    assert len(_watchdog(log)) == 2
    log.write_text(line.format(rank=1) + line.format(rank=0), encoding="utf-8")
    assert len(_watchdog(log)) == 1  # one sweep


@pytest.mark.parametrize("engine", ENGINES)
def test_every_ranks_timeout_at_one_work_of_a_group_is_one_finding(tmp_path, engine):
    # hiyouga/LlamaFactory#6269: "[PG 1 Rank 0] Timeout at NCCL work: 7753", then ranks 2 and 6
    found = [f for f in scan_paths([str(AT_WORK)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    first = _line_of(AT_WORK, "[PG 1 Rank 0] Timeout")
    assert [(f.rule, f.line) for f in found] == [("nccl-work-timeout", first)]
    assert "; ranks 2, 6 reported it too (lines " in found[0].message
    # the same work number of another process group is another collective
    # (a restart's lines before it: in the same sweep it is the same hang, dedup21)
    rank6 = _line_of(AT_WORK, "[PG 1 Rank 6] Timeout")
    text = _apart(AT_WORK.read_text(encoding="utf-8"), rank6).replace("[PG 1 Rank 6]", "[PG 2 Rank 6]")
    log = tmp_path / "other-group.log"
    log.write_text(text, encoding="utf-8")
    found = [f for f in scan_paths([str(log)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]
    assert [f.line for f in found if f.rule == "nccl-work-timeout"] == [first, _line_of(log, "[PG 2 Rank 6]")]
