"""One event, one finding: a crash told by faulthandler, torchrun's report, the shell and the step.

``logs/torchrun-rank-segv.log`` is real: ``torchrun --nproc-per-node 2 logs/rank_segv.py`` with torch
2.13.0+cpu (rank 1 dereferences NULL under ``faulthandler.enable()``; torchrun then SIGTERMs rank 0),
run on this project's CI image, with GitHub's closing status line appended. ``segfault-three-reports``
is the same crash seen the way a GitHub step log shows a plain script's: faulthandler, bash's job
report and the step's exit status 139.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from analyzer.model import GUARD_TIMEOUT_RULE, Finding, Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

import pytest

LOGS = Path(__file__).resolve().parent / "logs"
BUILTIN = load_catalogue()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rank_killed_by_a_segfault_is_one_finding_naming_rank_signal_and_crash_site(engine):
    findings = scan_paths([str(LOGS / "torchrun-rank-segv.log")], BUILTIN, engine=engine)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    (root,) = errors
    assert root.message == (
        "rank 1 (pid 28801) was killed by SIGSEGV: Fatal Python error: Segmentation fault at rank_segv.py:12"
    )
    assert root.line == 42 and root.kind is Kind.SIGNAL_EXIT  # killed, not failed: finding_kind
    report, crash = root.excerpt.split("\n--- the crash (line 5) ---\n")
    assert "exitcode  : -11 (pid: 28801)" in report
    assert crash.splitlines() == [
        "Fatal Python error: Segmentation fault",
        "Current thread 0x00007f1bfd9c6b80 (most recent call first):",
        '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/ctypes/__init__.py", line 519 in string_at',
        '  File "/tmp/segv/rank_segv.py", line 12 in main',
        '  File "/tmp/segv/rank_segv.py", line 16 in <module>',
    ]


def test_the_killed_ranks_own_row_is_not_collateral_of_itself_the_sigtermed_one_is():
    findings = scan_paths([str(LOGS / "torchrun-rank-segv.log")], BUILTIN, engine="python")
    root, collateral = findings
    assert "pid 28801" in root.message
    assert collateral.message.startswith("torchrun: worker pid 28799 died with exit code -15")
    assert collateral.severity is Severity.WARNING and "collateral" in collateral.message


@pytest.mark.parametrize("engine", ENGINES)
def test_faulthandler_the_shell_and_the_step_status_telling_one_segfault_are_one_finding(engine):
    (finding,) = scan_paths([str(LOGS / "segfault-three-reports.log")], BUILTIN, engine=engine)
    assert (finding.rule, finding.line, finding.severity) == ("fatal-python-error", 1, Severity.ERROR)
    # faulthandler names no process: the shell's report of the same crash does (dedup9)
    assert finding.message == "Fatal Python error: Segmentation fault at native.py:10 (pid 4242)"
    # the stack, then each other layer that told the crash (dedup9): the shell's report, the step's status
    lines = finding.excerpt.splitlines()
    assert lines[3].endswith('File "/w/native.py", line 14 in <module>')
    assert lines[4:] == [
        "--- the same event, told again (line 8) ---",
        "2024-01-09T18:41:23.2000000Z bash: line 1:  4242 Segmentation fault      (core dumped)"
        " python native.py",
        "--- the same event, told again (line 9) ---",
        "2024-01-09T18:41:23.3000000Z ##[error]Process completed with exit code 139.",
    ]


def test_two_different_crashes_stay_two_findings(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "Fatal Python error: Segmentation fault\n"
        + "some output\n" * 5
        + "Fatal Python error: Aborted\n"
        "bash: line 1:  4242 Aborted                 (core dumped) python x.py\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.line) for f in findings] == [("fatal-python-error", 1), ("fatal-python-error", 7)]


def test_a_closing_signal_to_one_pid_does_not_make_another_pids_exit_collateral(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "W1130 22:34:12.089000 11122 torch/distributed/elastic/multiprocessing/api.py:1028] "
        "Sending process 11161 closing signal SIGTERM\n"
        "  exitcode  : -9 (pid: 11162)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 11162\n"
        "  exitcode  : -15 (pid: 11161)\n"
        "  error_file: <N/A>\n"
        "  traceback : Signal 15 (SIGTERM) received by PID 11161\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.line, f.severity) for f in findings] == [(2, Severity.ERROR), (5, Severity.WARNING)]


def test_two_processes_killed_by_the_same_signal_are_two_findings(tmp_path):
    # glog's failure signal handler, one line per process (PaddlePaddle's SignalInfo shape).
    log = tmp_path / "job.log"
    log.write_text(
        "  [SignalInfo: *** SIGSEGV (@0x15e6) received by PID 5606 (TID 0x7fe7d4604700) from PID 5606 ***]\n"
        "  [SignalInfo: *** SIGSEGV (@0x15e7) received by PID 5607 (TID 0x7fe7d4604701) from PID 5607 ***]\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [f.line for f in findings] == [1, 2]


DOUBLE_FREE = """\
import ctypes, faulthandler
faulthandler.enable()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
block = libc.malloc(64)
print("freeing the batch buffer", flush=True)
libc.free(block)
libc.free(block)
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_glibc_faulthandler_and_the_shell_telling_one_abort_are_one_finding_that_says_why(tmp_path, engine):
    # A real double free (glibc's tcache check aborts the process), run by bash as a CI step does.
    (tmp_path / "double_free.py").write_text(DOUBLE_FREE)
    step = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} double_free.py; exit $?"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
    )
    assert step.returncode == 134
    log = tmp_path / "step.log"
    log.write_bytes(step.stdout)
    text = step.stdout.decode()
    assert "free(): double free detected in tcache 2" in text and "Fatal Python error: Aborted" in text
    assert " Aborted " in text.splitlines()[-1]  # bash's report of the job
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert (finding.rule, finding.line, finding.severity) == ("glibc-heap-corruption", 2, Severity.ERROR)
    assert "free(): double free detected in tcache 2 at double_free.py:9 (pid " in finding.message
    assert "--- the crash (line 3) ---\nFatal Python error: Aborted" in finding.excerpt


def test_a_windows_fatal_exception_and_its_exit_status_are_one_crash(tmp_path):
    # Mocked: this machine cannot crash a Windows process. The two lines are real ones, faulthandler's
    # from fixtures/quoted/windows-fatal-exception-gha-pytest.log and the status PyCharm printed in
    # fixtures/quoted/pycharm-windows-access-violation.log (0xC0000005 is STATUS_ACCESS_VIOLATION).
    log = tmp_path / "job.log"
    log.write_text(
        "Windows fatal exception: access violation\n"
        "\n"
        "Current thread 0x00000cb4 (most recent call first):\n"
        '  File "C:\\w\\test_native.py", line 12 in test_native\n'
        "\n"
        "Process finished with exit code -1073741819 (0xC0000005)\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.line) for f in findings] == [("windows-fatal-exception", 1)]


def test_a_windows_status_without_its_0x_prefix_is_the_same_crash(tmp_path):
    # mxnet's CI printed the status bare (https://github.com/apache/mxnet/issues/15975); mocked as above.
    log = tmp_path / "job.log"
    log.write_text(
        "Windows fatal exception: access violation\n"
        "\n"
        "python exited with status code C0000005\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.line) for f in findings] == [("windows-fatal-exception", 1)]


def test_a_windows_exit_status_of_another_crash_is_its_own_finding(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(
        "Windows fatal exception: access violation\n"
        "Process finished with exit code -1073741571 (0xC00000FD)\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    crashes = [("windows-fatal-exception", 1), ("windows-crash-exit-code", 2)]
    assert [(f.rule, f.line) for f in findings] == crashes


@pytest.mark.parametrize("engine", ENGINES)
def test_a_kernels_assertion_printed_by_each_thread_and_its_cuda_error_are_one_finding(engine):
    # MOCKED GPU: a real log quoted from a public issue (fixtures/regenerate.py names it); this machine
    # has no GPU to trip a device-side assert. Five threads print the assertion, a traceback later
    # torch raises "CUDA error: device-side assert triggered": one event, told by the first line.
    path = Path(__file__).resolve().parents[2] / "fixtures" / "quoted" / "cuda-device-assert-reid-thcunn.log"
    findings = scan_paths([str(path)], BUILTIN, engine=engine)
    (only,) = [f for f in findings if f.severity is Severity.ERROR]
    assert only.rule == "cuda-device-assert" and only.line == 7
    assert only.message == (
        "a CUDA kernel assertion failed: `t >= 0 && t < n_classes`; CUDA error: device-side assert "
        "triggered (line 17) (seen 5 times)"
    )
    assert "RuntimeError: CUDA error: device-side assert triggered" in only.excerpt


def test_a_teller_told_again_hands_on_what_it_told(tmp_path):
    # Real wordings (the catalogue's examples): the raylet's death report, the cause on the next line
    # (which the report tells again), then the owner's retry, which handled that death: one notice.
    log = tmp_path / "retried.log"
    log.write_text(
        "(raylet) A worker died or was killed while executing a task by an unexpected system error.\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
        "detail: Worker unexpectedly exits with a connection error code 2.\n"
        "(raylet) Task flaky failed. There are 2 retries remaining, so the task will be retried. Error: \n"
    )
    findings = scan_paths([str(log)], BUILTIN)
    assert [(f.rule, f.severity, f.line) for f in findings] == [("ray-task-retried", Severity.NOTICE, 3)]
    assert "Worker exit type: SYSTEM_ERROR (line 2)" in findings[0].message


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _guard_timeout() -> Finding:
    return Finding(Kind.HANG, GUARD_TIMEOUT_RULE, Severity.ERROR, "logs/stacks.txt", 0,
                   "hung in train_sleep.py:12 for 30m", "Thread 0x1 (most recent call first):")


def test_torchruns_agent_killed_by_the_guard_is_told_by_the_guards_finding():
    # Real capture: torchrun's agent logs "Received 15 death signal" and raises SignalException when
    # SIGTERMed; under a guard that timed the command out, that SIGTERM is the guard's.
    path = FIXTURES / "torch" / "torchrun-agent-signal.log"
    (only,) = scan_paths([str(path)], BUILTIN, guard_findings=[_guard_timeout()], engine="python")
    assert only.rule == GUARD_TIMEOUT_RULE and only.severity is Severity.ERROR
    assert only.message.startswith("hung in train_sleep.py:12 for 30m; the log tells the guard's kill: "
                                   "torchrun's agent got signal 15 and shut its workers down (")
    assert "Received 15 death signal, shutting down workers" in only.excerpt


def test_the_same_log_alone_keeps_the_agents_signal():
    path = FIXTURES / "torch" / "torchrun-agent-signal.log"
    findings = scan_paths([str(path)], BUILTIN, engine="python")
    assert [(f.rule, f.severity) for f in findings] == [("torchrun-agent-signal", Severity.ERROR)]


def test_a_sigterm_before_the_commands_own_later_failure_is_not_the_guards_kill(tmp_path):
    # The agent was signalled, then the run went on to fail by itself: both stay its own events.
    log = tmp_path / "job.log"
    log.write_text(
        "W0109 18:41:23.123000 4242 torch/distributed/elastic/agent/server/api.py:704] "
        "Received 15 death signal, shutting down workers\n"
        + "restarting\n" * 80
        + "Fatal Python error: Segmentation fault\n"
    )
    findings = scan_paths([str(log)], BUILTIN, guard_findings=[_guard_timeout()], engine="python")
    assert {f.rule for f in findings if f.severity is Severity.ERROR} == {
        "torchrun-agent-signal", "fatal-python-error", GUARD_TIMEOUT_RULE}


def test_each_gpus_xid_79_tells_its_own_fallen_off_the_bus_line(tmp_path):
    # The wordings of fixtures/quoted/nvrm-xid-79-two-gpus-journal.log, the two GPUs' lines interleaved.
    log = tmp_path / "kern.log"
    log.write_text(
        "NVRM: Xid (PCI:0000:05:00): 79, pid=1173, GPU has fallen off the bus.\n"
        "NVRM: Xid (PCI:0000:06:00): 79, pid=1173, GPU has fallen off the bus.\n"
        "NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.\n"
        "NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.\n"
    )
    findings = scan_paths([str(log)], BUILTIN, engine="python")
    assert [(f.rule, f.line) for f in findings] == [("gpu-xid-error", 1), ("gpu-xid-error", 2)]
    assert findings[0].message.endswith("fallen off the bus (line 4)")
    assert findings[1].message.endswith("fallen off the bus (line 3)")


def test_a_worker_the_oom_killer_killed_before_the_hang_is_not_the_guards_kill(tmp_path):
    # SIGKILL is the OOM killer's signal as well as the guard's last resort: the worker's death stays
    # its own finding, the likely root cause of the hang the guard then ended.
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: DataLoader worker (pid 56811) is killed by signal: Killed. \n")
    findings = scan_paths([str(log)], BUILTIN, guard_findings=[_guard_timeout()], engine="python")
    errors = {f.rule for f in findings if f.severity is Severity.ERROR}
    assert errors == {"dataloader-worker-killed", GUARD_TIMEOUT_RULE}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_terminate_with_its_what_says_it_once(tmp_path, engine):
    # The output of a real g++ 12 program throwing std::runtime_error out of main, run by a bash script
    # (dedup9's set, case 07): the terminate's first line alone also reads as "its what() is not in the
    # log", which must not be said beside the what() that follows it.
    log = tmp_path / "job.log"
    log.write_text(
        "loading shard\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  shard 3 checksum mismatch\n"
        "/w/run.sh: line 2: 15821 Aborted                 ./term\n"
    )
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert (finding.rule, finding.line) == ("cpp-terminate", 2)
    assert finding.message == (
        "C++ terminate: uncaught std::runtime_error: shard 3 checksum mismatch (pid 15821)"
    )
