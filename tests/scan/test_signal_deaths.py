"""A worker killed by a signal no crash line explains: the root cause names the rank, the pid and the signal.

``fixtures/torch/torchrun-sigkill`` is a real capture (fixtures/regenerate.py): torchrun with two ranks,
rank 1 SIGKILLed as the OOM killer does, without a word in the log.
"""

from __future__ import annotations

import re
from pathlib import Path

from analyzer.model import Kind, Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BUILTIN = load_catalogue()


def _errors(path: Path, engine: str = "python"):
    return [f for f in scan_paths([str(path)], BUILTIN, engine=engine) if f.severity is Severity.ERROR]


def _pid_of_rank_1(text: str) -> str:
    found = re.search(r"failed \(exitcode: -9\) local_rank: 1 \(pid: (\d+)\)", text)
    assert found is not None
    return found.group(1)


def test_a_rank_killed_by_sigkill_is_named_with_its_rank_pid_and_signal_and_no_guess_at_why():
    path = FIXTURES / "torch/torchrun-sigkill.log"
    pid = _pid_of_rank_1(path.read_text(encoding="utf-8"))
    root = _errors(path)[0]
    assert (root.rule, root.message) == ("torchrun-root-cause", f"rank 1 (pid {pid}) was killed by SIGKILL")
    assert root.kind is Kind.SIGNAL_EXIT  # killed, not failed, as torchrun's -15 rows are


def test_a_worker_failure_with_a_negative_exit_code_is_a_signal_exit_and_one_with_a_status_is_not(tmp_path):
    # torchrun's agent line (torch/distributed/elastic/agent/server/api.py) and DeepSpeed's launcher line
    # (deepspeed/launcher/launch.py), each for a rank killed by SIGKILL and for one that exited 1.
    log = tmp_path / "launchers.log"
    log.write_text(
        "[2024-01-09 18:41:23,123] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
        "(exitcode: -9) local_rank: 0 (pid: 4121) of binary: /usr/bin/python\n"
        "[2024-01-09 18:41:24,123] [INFO] [launch.py:315:sigkill_handler] ['/usr/bin/python', '-u', "
        "'train.py', '--local_rank=1'] exits with return code = 1\n"
    )
    kinds = {f.rule: f.kind for f in scan_paths([str(log)], BUILTIN, engine="python")}
    assert kinds == {
        "torchrun-worker-failed": Kind.SIGNAL_EXIT,
        "deepspeed-launcher-exit": Kind.WORKER_FAILURE,
    }


def _with_oom_kill(log: Path, tmp_path: Path) -> Path:
    """``log`` with the kernel's real dmesg line of an OOM kill after it (equinor/ert#7797, quoted in
    fixtures/quoted/kernel-oom-kill.log), as a job that dumps dmesg on failure shows it."""
    kernel = (FIXTURES / "quoted/kernel-oom-kill.log").read_text(encoding="utf-8").splitlines()
    oom_line = next(line for line in kernel if "Out of memory: Killed process" in line)
    joined = tmp_path / log.name
    joined.write_text(log.read_text(encoding="utf-8") + oom_line + "\n", encoding="utf-8")
    return joined


def test_a_sigkill_is_likely_the_oom_killers_only_when_the_log_shows_the_oom_killer(tmp_path):
    run = (FIXTURES / "torch/torchrun-sigkill.log").read_text(encoding="utf-8")
    log = _with_oom_kill(FIXTURES / "torch/torchrun-sigkill.log", tmp_path)
    pid = _pid_of_rank_1(run)
    errors = _errors(log)
    assert errors[0].message == (
        f"rank 1 (pid {pid}) was killed by SIGKILL; likely the OOM killer: the kernel's OOM killer killed"
        f" perl (pid 1440763): the host or its cgroup ran out of memory (line {len(run.splitlines()) + 1})"
    )
    assert "kernel-oom-kill" in {f.rule for f in errors}


def test_a_root_cause_that_exited_with_a_status_keeps_its_wording():
    root = _errors(FIXTURES / "torch/torchrun-failing-rank.log")[0]
    assert root.rule == "torchrun-root-cause"
    assert "killed by" not in root.message and "exit code 1" in root.message


def test_deepspeeds_failed_rank_is_named_by_the_local_rank_of_its_command():
    (finding,) = _errors(FIXTURES / "quoted/deepspeed-return-code.log")
    assert finding.message == "DeepSpeed launcher: local rank 0 exited with exit -9 (SIGKILL)"


def test_deepspeeds_sigkilled_rank_names_the_oom_killer_only_when_the_log_shows_it(tmp_path):
    log = _with_oom_kill(FIXTURES / "quoted/deepspeed-return-code.log", tmp_path)
    finding = next(f for f in _errors(log) if f.rule == "deepspeed-launcher-exit")
    assert finding.message.startswith(
        "DeepSpeed launcher: local rank 0 exited with exit -9 (SIGKILL); likely the OOM killer: the kernel's"
        " OOM killer killed perl (pid 1440763)")


def test_a_launched_command_that_died_of_a_signal_is_a_signal_exit_and_one_that_failed_is_not(tmp_path):
    # Real tracebacks of subprocess.run(check=True): Python names a death by signal ("died with
    # <Signals.SIGKILL: 9>") where a failure has its status ("returned non-zero exit status 3").
    import subprocess
    import sys

    kinds = {}
    for name, child in (("killed", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
                        ("failed", "raise SystemExit(3)")):
        parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}], check=True)"
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            subprocess.run([sys.executable, "-c", parent], stdout=out, stderr=subprocess.STDOUT, timeout=60)
        errors = [f for f in _errors(log) if f.rule == "subprocess-called-process-error"]
        assert len(errors) == 1, [(f.rule, f.message) for f in _errors(log)]
        kinds[name] = errors[0].kind
    assert kinds == {"killed": Kind.SIGNAL_EXIT, "failed": Kind.WORKER_FAILURE}
