"""One event, one finding: the leftovers of issue 7, section 3 that dedup21 took.

- In one test, what the test printed live and what its report says are one event however far apart:
  pytest-timeout's dump under -s and the "Failed: Timeout" of the test's report after a deep stack
  (``same_event_in_test`` on pytest-timeout), the raylet's "A worker died" and the caller's
  WorkerCrashedError a traceback later (on ray-worker-died and ray-actor-died). Outside a test the rules'
  line limits hold.
- The collectives of one hang are one finding: the watchdog reports every work of every rank past the
  timeout in the same seconds (rank 0 at SeqNum 96117, 96120 and 96125, rank 7 at 64088 in
  pytorch/pytorch#118369); lines far apart, or stamped far apart, are two hangs.
- ProcessGroupNCCL's watchdog line wrapped at the space after "timeout:" (milabench#269) is the timeout.

The runs these stand for are measured in /tmp/dedup21 (set/ and held/, each NAME.log with NAME.expect).
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
TIMEOUT_DUMP = FIXTURES / "pytest" / "dedup21-timeout-dump-s-deep-stack.log"
RAY_DEATH = FIXTURES / "pytest" / "dedup21-ray-worker-died-sys-exit-v.log"
LIGHTNING = FIXTURES / "quoted" / "nccl-watchdog-after-lightning-bar.log"
MILABENCH = FIXTURES / "quoted" / "nccl-watchdog-wrapped-after-timeout-milabench.log"
# pytorch/pytorch#118369 (pengzhangzhi's comment): torch 1.x/2.0's watchdog line, no stamp, no prefix.
WATCHDOG_118369 = (
    "[E ProcessGroupNCCL.cpp:458] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL("
    "SeqNum={seq}, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for {ms} milliseconds before timing out.\n"
)
# NVIDIA/nccl#1409: torch 2.4's line under its "[rankN]:" prefix and glog stamp.
WATCHDOG_STAMPED = (
    "[rank{rank}]:[E816 {clock}.183009389 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective"
    " operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=5056, NumelOut=5056, Timeout(ms)=600000)"
    " ran for 600012 milliseconds before timing out.\n"
)


def _errors(path: Path, engine: str = "auto"):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if text in line)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_timeout_dump_under_s_and_its_failed_line_far_below_are_one_timeout(engine):
    found = _errors(TIMEOUT_DUMP, engine)
    assert [f.rule for f in found] == ["pytest-timeout", "pytest-test-outcome"]
    failed = _line_of(TIMEOUT_DUMP, "E           Failed: Timeout (>3.0s) from pytest-timeout.")
    banner = _line_of(TIMEOUT_DUMP, "test_many_threads_hang +++")
    assert failed - banner > 100  # the dump and the test's deep stack lie between them
    assert found[0].line == failed
    assert found[0].test == "test_deep.py::test_many_threads_hang"
    assert "dumped the threads' stacks" in found[0].message


def test_outside_a_test_the_line_limit_still_holds(tmp_path):
    # the same two wordings with no pytest run around them: 60 unrelated lines apart, two events
    dump = ["+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++",
            "~~~~~~~~~~~~~~~~~~~~~ Stack of loader-5 (140378590148288) ~~~~~~~~~~~~~~~~~~~~~~",
            '  File "/w/loader.py", line 12, in run',
            "    stop.wait()",
            "+++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++"]
    filler = ["step %d: loss 0.5" % n for n in range(60)]
    log = tmp_path / "no-test.log"
    log.write_text("\n".join(dump + filler + ["E   Failed: Timeout (>3.0s) from pytest-timeout."]) + "\n",
                   encoding="utf-8")
    assert sorted(f.rule for f in _errors(log)) == ["pytest-timeout", "pytest-timeout-dump"]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_raylets_report_and_the_callers_error_in_one_test_are_one_death(engine):
    found = _errors(RAY_DEATH, engine)
    assert [f.rule for f in found] == ["ray-worker-died", "pytest-test-outcome"]
    crashed = _line_of(RAY_DEATH, "ray.exceptions.WorkerCrashedError: The worker died unexpectedly")
    assert crashed - found[0].line > 100
    assert f"WorkerCrashedError: The worker died unexpectedly while executing this task (line {crashed})" in (
        found[0].message)
    assert found[1].test == found[0].test == "test_dedup21_ray.py::test_task_sys_exit"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_collectives_of_one_hang_are_one_finding(engine):
    found = _errors(LIGHTNING, engine)
    assert [f.rule for f in found] == ["nccl-watchdog-timeout"]
    assert "SeqNum=96120" in found[0].message
    for other in ("SeqNum=96117", "SeqNum=64088"):
        assert f"{other}, OpType=ALLREDUCE, Timeout(ms)=1800000 ran for" in found[0].message
        assert other in found[0].excerpt


def test_a_hang_far_below_another_is_another_finding(tmp_path):
    first = WATCHDOG_118369.format(rank=0, seq=96120, ms=25624887)
    again = WATCHDOG_118369.format(rank=7, seq=64088, ms=25625251)
    log = tmp_path / "two-hangs.log"
    log.write_text(first + again, encoding="utf-8")
    assert len(_errors(log)) == 1
    # a restarted job's own output between them: 65 lines, more than one sweep prints between two ranks
    log.write_text(first + "".join("step %d: loss 0.5\n" % n for n in range(65)) + again, encoding="utf-8")
    assert [f.line for f in _errors(log)] == [1, 67]


def test_a_hang_stamped_an_hour_after_another_is_another_finding(tmp_path):
    rank7 = WATCHDOG_STAMPED.format(rank=7, clock="01:45:40", seq=80078, op="BROADCAST")
    log = tmp_path / "stamped.log"
    log.write_text(rank7 + WATCHDOG_STAMPED.format(rank=3, clock="01:45:41", seq=80078, op="ALLREDUCE"),
                   encoding="utf-8")
    assert len(_errors(log)) == 1
    log.write_text(rank7 + WATCHDOG_STAMPED.format(rank=3, clock="02:45:40", seq=90112, op="ALLREDUCE"),
                   encoding="utf-8")
    assert [f.line for f in _errors(log)] == [1, 2]
    # the same time of day on the next day is another hang; a second past midnight is the same sweep
    next_day = WATCHDOG_STAMPED.format(rank=3, clock="01:45:40", seq=90112, op="ALLREDUCE")
    log.write_text(rank7 + next_day.replace("[E816 ", "[E817 "), encoding="utf-8")
    assert [f.line for f in _errors(log)] == [1, 2]
    late = WATCHDOG_STAMPED.format(rank=7, clock="23:59:59", seq=80078, op="BROADCAST")
    early = WATCHDOG_STAMPED.format(rank=3, clock="00:00:01", seq=80078, op="ALLREDUCE")
    log.write_text(late + early.replace("[E816 ", "[E817 "), encoding="utf-8")
    assert [f.line for f in _errors(log)] == [1]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_watchdog_line_wrapped_after_timeout_is_the_timeout_of_every_rank(engine):
    found = _errors(MILABENCH, engine)
    assert [(f.rule, f.line) for f in found] == [
        ("nccl-watchdog-timeout-wrapped", _line_of(MILABENCH, "[Rank 14] Watchdog caught"))]
    assert found[0].message.startswith("NCCL watchdog: collective SeqNum=2070, OpType=REDUCE,")
    assert "ranks 11, 12, 15 reported it too" in found[0].message


def test_a_line_ending_in_timeout_before_another_line_is_not_the_wrapped_wording(tmp_path):
    log = tmp_path / "not-wrapped.log"
    log.write_text("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation"
                   " timeout:\n"
                   "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f15b276c1b6 in"
                   " libc10.so)\n", encoding="utf-8")
    assert not [f for f in _errors(log) if f.rule == "nccl-watchdog-timeout-wrapped"]
