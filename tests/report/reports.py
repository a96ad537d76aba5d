"""Hand-built reports for the renderer tests: what the scanner and the guard produce, written out.

The excerpts and the stack dump are real output captured on this machine (CPython 3.12 atexit
traceback, ``py-spy dump --nonblocking`` of a process hung in an atexit handler, ``ps``). The GPU
snapshot is MOCKED: this machine has no GPU, so its ``nvidia-smi`` text is written by hand in the
format ``nvidia-smi --query-compute-apps`` prints.
"""

from __future__ import annotations

from typing import Dict

from analyzer.model import CommandResult, Diagnostic, Finding, Kind, Report, Severity, Verdict

ATEXIT_TRACEBACK = """\
============================= 812 passed in 41.20s =============================
Exception ignored in atexit callback: <function _prepare_to_exit at 0x7fa05ef82520>
Traceback (most recent call last):
  File "/home/runner/work/proj/proj/tests/conftest.py", line 41, in _prepare_to_exit
    raise RuntimeError("boom")
RuntimeError: boom"""

MP_WORKER_EXCERPT = """\
Sending process 1799 closing signal SIGTERM
Process SpawnProcess-2:
worker 1 exited with exitcode -15"""


def scan_atexit() -> Report:
    """``python -m analyzer logs/``: an atexit exception that exited 0, plus a collateral worker death."""
    return Report(
        verdict=Verdict.FAIL,
        exit_status=1,
        findings=(
            Finding(
                kind=Kind.ATEXIT_EXCEPTION,
                rule="atexit-exception-3-10",
                severity=Severity.ERROR,
                path="logs/2_Run tests.txt",
                line=1642,
                message=(
                    "RuntimeError: boom raised in atexit callback `_prepare_to_exit`; Python exits 0 anyway"
                ),
                excerpt=ATEXIT_TRACEBACK,
            ),
            Finding(
                kind=Kind.SIGNAL_EXIT,
                rule="worker-exitcode-signal",
                severity=Severity.WARNING,
                path="logs/2_Run tests.txt",
                line=1597,
                message="worker 1 ended by exit -15 (SIGTERM) after its parent sent SIGTERM (collateral)",
                excerpt=MP_WORKER_EXCERPT,
            ),
        ),
    )


PY_SPY_DUMP = """\
Process 12675: /usr/bin/python3 -m pytest -x tests/
Python v3.11.7 (/usr/bin/python3.11)

Thread 12675 (idle): "MainThread"
    _prepare_to_exit (tests/conftest.py:44)
Thread 12690 (idle): "pin_memory"
    wait (threading.py:327)
    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:52)"""

PROCESS_TABLE = """\
  PID  PPID STAT WCHAN                CMD
12675 12672 S    hrtimer_nanosleep    /usr/bin/python3 -m pytest -x tests/
12701 12675 D    nvidia_wait          /usr/bin/python3 -c from multiprocessing.spawn import spawn_main"""

# MOCKED: no GPU on this machine; this is the shape of `nvidia-smi --query-compute-apps=pid,used_memory`.
GPU_SNAPSHOT = """\
pid, used_gpu_memory [MiB]
12675, 30514 MiB
12701, 2048 MiB
GPU 0: NVIDIA A100-SXM4-80GB, utilization 0 %, memory 32562 MiB / 81920 MiB"""


def guard_hang() -> Report:
    """``python -m analyzer run --timeout 10m -- pytest``: hung in an atexit handler after the verdict."""
    return Report(
        verdict=Verdict.FAIL,
        exit_status=124,
        findings=(
            Finding(
                kind=Kind.HANG,
                rule="guard-timeout",
                severity=Severity.ERROR,
                path="",
                line=0,
                message=(
                    "hung in `_prepare_to_exit` (tests/conftest.py:44) for 10m after the test run printed "
                    "its verdict (812 passed)"
                ),
                excerpt='Thread 12675 (idle): "MainThread"\n    _prepare_to_exit (tests/conftest.py:44)',
            ),
            Finding(
                kind=Kind.LEAKED_PROCESS,
                rule="guard-leaked-process",
                severity=Severity.WARNING,
                path="",
                line=0,
                message=(
                    "pid 12701 (`python3 -c from multiprocessing.spawn import spawn_main`) was still running"
                ),
            ),
        ),
        command=CommandResult(
            argv=("python3", "-m", "pytest", "-x", "tests/"),
            exit_code=143,
            signal="SIGTERM",
            timed_out=True,
            timeout_reason="wall",
            duration_s=600.41,
            leftover_pids=(12701,),
            log_dir="/home/runner/work/_temp/gpu-hang-guard/logs",
        ),
        diagnostics=(
            Diagnostic("Stack dumps (py-spy dump --nonblocking)", PY_SPY_DUMP),
            Diagnostic("Process table", PROCESS_TABLE),
            Diagnostic("GPU snapshot (nvidia-smi)", GPU_SNAPSHOT),
        ),
    )


def guard_pass() -> Report:
    """A clean guarded run: exit 0, nothing found."""
    return Report(
        verdict=Verdict.PASS,
        exit_status=0,
        command=CommandResult(argv=("pytest", "tests/"), exit_code=0, duration_s=4.213, log_dir="guard-logs"),
    )


def flood(errors: int = 18, warnings: int = 22, notices: int = 10) -> Report:
    """Many findings (a whole torchrun job's ranks failing), with hostile text from the log in them."""
    findings = []
    for i in range(errors):
        findings.append(
            Finding(
                kind=Kind.WORKER_FAILURE,
                rule="torchrun-child-failed",
                severity=Severity.ERROR,
                path="logs/job.txt",
                line=100 + i,
                message=f"rank {i} failed: exitcode -6 (SIGABRT) | 100% done, `a|b` <script>",
                excerpt=f"[rank{i}]: Traceback (most recent call last):\n```\n</details><script>x</script>\n",
            )
        )
    for i in range(warnings):
        findings.append(
            Finding(
                kind=Kind.SIGNAL_EXIT,
                rule="collateral-sigterm",
                severity=Severity.WARNING,
                path="logs/job.txt",
                line=500 + i,
                message=f"rank {i} exit -15 (SIGTERM), collateral: 50% of ranks, a:b",
                excerpt=f"exitcode  : -15 (pid: {1800 + i})",
            )
        )
    for i in range(notices):
        findings.append(
            Finding(
                kind=Kind.TIMEOUT,
                rule="nccl-timeout-notice",
                severity=Severity.NOTICE,
                path="logs/job.txt",
                line=900 + i,
                message=f"store timeout mentioned on rank {i}",
            )
        )
    return Report(verdict=Verdict.FAIL, exit_status=1, findings=tuple(findings))


GOLDEN_REPORTS: Dict[str, Report] = {
    "scan_atexit": scan_atexit(),
    "guard_hang": guard_hang(),
    "guard_pass": guard_pass(),
    "flood": flood(),
}
