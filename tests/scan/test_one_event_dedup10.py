"""One event, one finding, and two failures two findings (issue 7, section 3; dedup10).

fixtures/torch/torchrun-twin-raise-segv.log is a real torchrun run (torch 2.13 CPU, gloo) where rank 0
raised ValueError and rank 1 then segfaulted: torchrun names rank 1 as the root cause and shows rank 0 only
as the SIGTERM it sent afterwards. fixtures/quoted/torchrun-rows-sigabrt-picotron.log is a report whose
every row died of SIGABRT (a collective that timed out aborts each rank's NCCL watchdog at once).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES, error_findings

BUILTIN = load_catalogue()
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TWIN = FIXTURES / "torch" / "torchrun-twin-raise-segv.log"
ROWS = FIXTURES / "quoted" / "torchrun-rows-sigabrt-picotron.log"
THREAD_DUMP = FIXTURES / "pytest" / "timeout-thread.log"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rank_that_raised_while_another_segfaulted_is_a_failure_of_its_own(engine):
    findings = scan_paths([str(TWIN)], BUILTIN, engine=engine)
    root, raised = error_findings(findings)
    assert root.rule == "torchrun-root-cause" and "rank 1" in root.message and "SIGSEGV" in root.message
    assert raised.rule == "rank-raised"
    line = TWIN.read_text().split("\n")[raised.line - 1]
    assert line.endswith("[rank0]: ValueError: rank 0 got an empty batch from shard 0")
    # with its pid from its report row (dedup12): "rank : 0 (local_rank: 0)", "exitcode : -15 (pid: 1058)"
    assert raised.message.startswith("rank 0 (pid 1058) raised ValueError: rank 0 got an empty batch from"
                                     " shard 0 (at twin_raise_segv.py:12)")


SHUTDOWN = ("W1206 00:27:11.035000 9641 torch/distributed/elastic/multiprocessing/api.py:1028]"
            " Sending process 9656 closing signal SIGTERM")


def _report(root_exit: str, other_exit: str, shutdown: str = "") -> str:
    """A ChildFailedError report of two rows, in torch 2.13's words (see the fixture above); ``shutdown``:
    where torchrun's closing signal comes, "first" or "last" (before or after rank 0's traceback)."""
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/w/train.py", line 9, in <module>',
        '[rank0]:     raise KeyError("vocab")',
        "[rank0]: KeyError: 'vocab'",
    ]
    if shutdown:
        lines.insert(0 if shutdown == "first" else len(lines), SHUTDOWN)
    lines += [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "======================================================",
        "train.py FAILED",
        "------------------------------------------------------",
        "Failures:",
        "[1]:",
        "  time      : 2026-12-06_00:27:11",
        "  host      : localhost",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : %s (pid: 9656)" % other_exit,
        "  error_file: <N/A>",
        "  traceback : Signal %s received by PID 9656" % other_exit.lstrip("-"),
        "------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-06_00:27:11",
        "  host      : localhost",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : %s (pid: 9658)" % root_exit,
        "  error_file: <N/A>",
        "  traceback : Signal %s received by PID 9658" % root_exit.lstrip("-"),
        "======================================================",
    ]
    return "\n".join(lines) + "\n"


def test_a_ranks_traceback_printed_after_the_launchers_sigterm_is_that_kill_not_a_failure(tmp_path):
    log = tmp_path / "after-shutdown.log"
    log.write_text(_report("-11", "-15", shutdown="first"))
    rules = [f.rule for f in error_findings(scan_paths([str(log)], BUILTIN, engine="python"))]
    assert rules == ["torchrun-root-cause"]
    log.write_text(_report("-11", "-15", shutdown="last"))
    rules = [f.rule for f in error_findings(scan_paths([str(log)], BUILTIN, engine="python"))]
    assert rules == ["torchrun-root-cause", "rank-raised"]


@pytest.mark.parametrize("engine", ENGINES)
def test_rows_of_the_root_causes_signal_are_its_event(engine):
    findings = scan_paths([str(ROWS)], BUILTIN, engine=engine)
    (finding,) = [f for f in findings if f.severity is not Severity.NOTICE]
    assert finding.rule == "torchrun-root-cause" and finding.severity is Severity.ERROR
    assert finding.message == ("rank 0 (pid 3431) was killed by SIGABRT; pids 3437, 3438 died of it too"
                               " (lines 4, 11)")
    assert "received by PID 3438" in finding.excerpt


def test_a_row_of_another_signal_is_a_death_of_its_own(tmp_path):
    log = tmp_path / "two-signals.log"
    log.write_text(_report("-11", "-6").replace("[rank0]: ", "").replace("Traceback", "Trace"))
    signals = sorted(f.rule for f in error_findings(scan_paths([str(log)], BUILTIN, engine="python")))
    assert signals == ["torchrun-root-cause", "torchrun-signal-exit"]
    log.write_text(_report("-11", "-11").replace("[rank0]: ", "").replace("Traceback", "Trace"))
    (one,) = error_findings(scan_paths([str(log)], BUILTIN, engine="python"))
    assert one.rule == "torchrun-root-cause" and "pid 9656 died of it too" in one.message


@pytest.mark.parametrize("engine", ENGINES)
def test_pytest_timeouts_dump_and_its_stack_titles_are_one_finding(engine):
    (finding,) = error_findings(scan_paths([str(THREAD_DUMP)], BUILTIN, engine=engine))
    assert finding.rule == "pytest-timeout-dump" and "Stack of MainThread" in finding.excerpt


def test_a_spawned_process_that_raised_names_where_it_raised(tmp_path):
    log = tmp_path / "spawn.log"
    log.write_text("\n".join([
        "torch.multiprocessing.spawn.ProcessRaisedException: ",
        "",
        "-- Process 1 terminated with the following error:",
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", line 87, in _wrap',
        "    fn(i, *args)",
        '  File "/src/sp_raise.py", line 12, in worker',
        "    n = load_table(rank)",
        '  File "/src/sp_raise.py", line 7, in load_table',
        '    return tables["query" if rank == 1 else "user"]',
        "KeyError: 'query'",
        "",
    ]))
    (finding,) = error_findings(scan_paths([str(log)], BUILTIN, engine="python"))
    assert finding.message == ("torch.multiprocessing.spawn: process 1 raised KeyError: 'query'"
                               " (raised at sp_raise.py:7)")
