"""A blind pass of misbehaving programs under the guard (misbehave7): a same-user command that reads the
environment of the helpers the guard starts at a timeout. Real processes through the real CLI."""

from __future__ import annotations

import os
import subprocess
import time
import sys
from pathlib import Path

from .test_guarded_redteam import _as_a_plain_user

BIN = Path(__file__).resolve().parent / "bin"


def test_the_helpers_started_at_a_timeout_do_not_show_the_command_the_real_workflow_files(tmp_path):
    # py-spy (and nvidia-smi) ran with the guard's own environment: dumpable processes of the same user,
    # their /proc/PID/environ handed the hung command the runner's real GITHUB_OUTPUT path.
    real = {name: tmp_path / name.lower() for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")}
    for path in real.values():
        path.write_text("")
    env = dict(os.environ, GITHUB_ACTIONS="true", **{name: str(path) for name, path in real.items()})
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--timeout", "1s", "--kill-grace", "1s",
         "--log-dir", str(tmp_path / "logs"), "--json", str(tmp_path / "report.json"), "--",
         sys.executable, str(BIN / "read_the_helpers_environment.py")],
        capture_output=True, env=env, timeout=60, preexec_fn=_as_a_plain_user,
    )
    assert proc.returncode == 124, (proc.stdout, proc.stderr)
    log = (tmp_path / "logs" / "stdout.log").read_text()
    assert log.startswith("looking\n"), log  # the program ran, and looked while the helpers ran
    stacks = (tmp_path / "logs" / "stacks.txt").read_text()
    assert "read_the_helpers_environment.py" in stacks, stacks  # py-spy did run beside it
    secret = str(real["GITHUB_OUTPUT"])
    read = [line for line in log.splitlines() if line.startswith("read ") and secret in line]
    if os.geteuid() == 0:
        # Root without CAP_SYS_PTRACE still opens the guard's own (non-dumpable) environ and its forks'
        # here (see test_a_same_user_command_cannot_open_the_guards_environment_or_descriptors): only a
        # real non-root user is turned away from those, so here only the helpers are checked.
        read = [line for line in read if " -m analyzer run " not in line]
    assert read == [], log


def test_a_scan_behind_a_command_that_ended_by_itself_is_cut_when_its_timeout_would_have_been(
    tmp_path, monkeypatch
):
    # 100 MB of CUDA error lines printed in a second, then exit 0, under --timeout 20s: the guard waited
    # 62 s more for its scan (no clock was thought to run once the command had ended), far past its
    # timeout + kill grace. The bound after a timeout (30 s) is made small here.
    from analyzer import guarded
    from analyzer.model import Kind, Severity
    from analyzer.rules.loader import load_catalogue
    from analyzer.supervise.guard import GuardOptions

    monkeypatch.setattr(guarded, "TIMED_OUT_SCAN_WAIT_S", 0.2)
    blocks = 600
    options = GuardOptions(argv=(sys.executable, str(BIN / "spam_crash_lines.py"), str(blocks)),
                           log_dir=str(tmp_path / "logs"), echo=False, timeout_s=2.0, kill_grace_s=0.5)
    run = guarded.GuardedRun(options, load_catalogue(), engine="python", environ={})
    try:
        supervision = run.supervise()
        started = time.monotonic()
        report = run.report(supervision)
        took = time.monotonic() - started
    finally:
        run.close()
    assert supervision.command.timeout_reason is None and supervision.command.exit_code == 0
    written = (tmp_path / "logs" / "stdout.log").stat().st_size
    assert written == len(b"Fatal Python error: Segmentation fault in a worker\n") * 2000 * blocks
    cut = [f for f in report.findings if f.kind is Kind.SCAN_INCOMPLETE and f.path.endswith("stdout.log")]
    assert len(cut) == 1 and f"{written:,} bytes" in cut[0].message, report.findings
    # The command exited 0 and the part read holds no finished event (a fatal error's block never ended):
    # only the cut can fail the run, and it must, or the unread crashes would pass.
    assert cut[0].severity is Severity.ERROR and report.verdict == "fail", report.findings
    # What the clock had left (at most 2 s) + 0.2 s, and the cut scanner's time to hand in what it read.
    assert took < 2.0 + 0.2 + 3.0, took
