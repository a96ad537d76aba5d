"""One event, one finding: the leftovers of issue 7, section 3 that dedup21 took.

- In one test, what the test printed live and what its report says are one event however far apart:
  pytest-timeout's dump under -s and the "Failed: Timeout" of the test's report after a deep stack
  (``same_event_in_test`` on pytest-timeout), the raylet's "A worker died" and the caller's
  WorkerCrashedError a traceback later (on ray-worker-died and ray-actor-died). Outside a test the rules'
  line limits hold.
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
MILABENCH = FIXTURES / "quoted" / "nccl-watchdog-wrapped-after-timeout-milabench.log"

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
