"""One event, one finding (issue 7, section 3): the layers that tell one sanitizer report or one OOM kill
are one finding, and two failures stay two.

The log lines are real, cut from runs on this project's machine: gcc 12.2's AddressSanitizer (a build
with -fsanitize-recover=address under halt_on_error=0 reports each bug and goes on), bash's report of
the aborted pid, and the kernel's line of a memory cgroup's OOM kill as dmesg printed it.
"""

from __future__ import annotations

from analyzer.model import GUARD_OOM_KILL_RULE, Finding, Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

import pytest

BUILTIN = load_catalogue()

OVERFLOW = [
    "==30626==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000018 at pc 0x55b94121e20b"
    " bp 0x7ffec7341270 sp 0x7ffec7341268",
    "WRITE of size 1 at 0x602000000018 thread T0",
    "    #0 0x55b94121e20a in main /tmp/dedup9/src/two.c:5",
    "",
    "SUMMARY: AddressSanitizer: heap-buffer-overflow /tmp/dedup9/src/two.c:5 in main",
]
USE_AFTER_FREE = [
    "==30626==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000034 at pc 0x55b94121e266"
    " bp 0x7ffec7341270 sp 0x7ffec7341268",
    "READ of size 4 at 0x602000000034 thread T0",
    "    #0 0x55b94121e265 in main /tmp/dedup9/src/two.c:8",
    "",
    "SUMMARY: AddressSanitizer: heap-use-after-free /tmp/dedup9/src/two.c:8 in main",
]
ABORTED = "/home/runner/work/_temp/9b2e4c71.sh: line 1: {pid} Aborted                 ./two"
KERNEL_KILL = (
    "[12083.013940] Memory cgroup out of memory: Killed process {pid} (python) total-vm:423644kB,"
    " anon-rss:369664kB, file-rss:6100kB, shmem-rss:0kB, UID:0 pgtables:792kB oom_score_adj:0"
)


def _scan(tmp_path, lines, engine="python", guard=()):
    log = tmp_path / "step.log"
    log.write_text("\n".join(lines) + "\n")
    return [f for f in scan_paths([str(log)], BUILTIN, guard_findings=list(guard), engine=engine)
            if f.severity in (Severity.ERROR, Severity.WARNING)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sanitizer_report_and_its_summary_and_the_shells_abort_are_one_finding(tmp_path, engine):
    # Before: three errors (the ERROR line, the SUMMARY line, bash's "Aborted").
    lines = ["staging", *OVERFLOW, "==30626==ABORTING", ABORTED.format(pid=30626)]
    (finding,) = _scan(tmp_path, lines, engine)
    assert (finding.rule, finding.line) == ("sanitizer-error", 2)
    assert finding.message == (
        "AddressSanitizer found a memory error: heap-buffer-overflow on address 0x602000000018"
        " at /tmp/dedup9/src/two.c:5 in main (pid 30626)"
    )
    assert "SUMMARY: AddressSanitizer: heap-buffer-overflow" in finding.excerpt
    assert "Aborted" in finding.excerpt


def test_two_bugs_one_process_reported_are_two_findings(tmp_path):
    findings = _scan(tmp_path, [*OVERFLOW, "", *USE_AFTER_FREE])
    assert [(f.rule, f.line) for f in findings] == [("sanitizer-error", 1), ("sanitizer-error", 7)]
    assert "two.c:5" in findings[0].message and "two.c:8" in findings[1].message


def test_another_pids_abort_after_a_report_is_its_own_crash(tmp_path):
    findings = _scan(tmp_path, [*OVERFLOW, "==30626==ABORTING", ABORTED.format(pid=30991)])
    assert [f.rule for f in findings] == ["sanitizer-error", "shell-crash-report"]


def _guard_oom(victim: str) -> Finding:
    # as analyzer/supervise/diagnosis.py oom_kills words it
    return Finding(
        Kind.SIGNAL_EXIT, GUARD_OOM_KILL_RULE, Severity.ERROR, "", 0,
        f"the kernel's OOM killer killed 1 process in the job's memory cgroup while the command ran (python,"
        f" pid {victim}): the host or the job's memory limit ran out of RAM (not GPU memory), and a process"
        " killed so prints nothing",
    )


def test_the_kernels_line_of_the_kill_the_guard_counted_is_the_guards_finding(tmp_path):
    # Before: two errors, the guard's OOM kill and the kernel's "Killed process" line the step printed.
    lines = ["building cache", KERNEL_KILL.format(pid=19953)]
    (finding,) = _scan(tmp_path, lines, guard=[_guard_oom("19953")])
    assert finding.rule == GUARD_OOM_KILL_RULE
    assert "the log tells it: the kernel's OOM killer killed python (pid 19953)" in finding.message
    assert "Memory cgroup out of memory: Killed process 19953" in finding.excerpt


def test_the_kernels_line_of_another_kill_stays_its_own_finding(tmp_path):
    lines = ["building cache", KERNEL_KILL.format(pid=18211)]
    findings = _scan(tmp_path, lines, guard=[_guard_oom("19953")])
    assert sorted(f.rule for f in findings) == [GUARD_OOM_KILL_RULE, "kernel-oom-kill"]


PEER_VIEW = (
    "[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read"
    " error [127.0.0.1]:55526: Connection reset by peer. This is typically caused by a remote worker hanging"
)
ROOT_CAUSE = [
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-12-05_21:53:40",
    "  host      : localhost",
    "  rank      : {rank} (local_rank: {rank})",
    "  exitcode  : -11 (pid: 9388)  (SIGSEGV)",
    "  error_file: <N/A>",
    "  traceback : Signal 11 (SIGSEGV) received by PID 9388",
    "=======================================================",
]


def _torchrun_tail(view_rank: int, dead_rank: int):
    return [PEER_VIEW.format(rank=view_rank)] + [line.format(rank=dead_rank) for line in ROOT_CAUSE]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_survivors_view_of_the_dead_rank_is_told_by_that_death(tmp_path, engine):
    # Before: two errors, torchrun's Root Cause row of rank 1 and rank 0's gloo "Connection reset by peer".
    (finding,) = _scan(tmp_path, _torchrun_tail(view_rank=0, dead_rank=1), engine)
    assert finding.rule == "torchrun-root-cause"
    assert "rank 1 (pid 9388) was killed by SIGSEGV" in finding.message
    assert "Connection reset by peer" in finding.excerpt


def test_a_rank_whose_own_connection_broke_is_not_told_by_its_own_death(tmp_path):
    findings = _scan(tmp_path, _torchrun_tail(view_rank=1, dead_rank=1))
    assert sorted(f.rule for f in findings) == ["gloo-peer-closed", "torchrun-root-cause"]


def test_a_peer_view_with_no_death_in_the_log_is_the_only_trace_and_an_error(tmp_path):
    (finding,) = _scan(tmp_path, ["rank 0 pid 9387 started", PEER_VIEW.format(rank=0)])
    assert (finding.rule, finding.severity) == ("gloo-peer-closed", Severity.ERROR)
