"""A cancel signal is the runner's only when it comes from outside the command's tree (issue 8 item 6).

A test that SIGTERMs its parent (the guard) or the guard's process group read as the runner's cancel:
the run was ended, exit 124, "cancelled (SIGTERM)". The guard now takes its cancel signals with their
sender (sigtimedwait's si_pid, analyzer/supervise/senders.py): from the command's own tree, the run goes
on and the report says which process sent what; from anywhere else (the runner), it is a cancel.
Real programs: tests/bin/signal_the_guard.py, and a real guard signalled by this test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "tests" / "bin"


def run_guard(tmp_path: Path, *command: str) -> subprocess.Popen:
    # Its own session: the command's killpg of the guard's group must not reach pytest.
    return subprocess.Popen(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json",
         str(tmp_path / "report.json"), "--timeout", "60s", "--kill-grace", "1s", "--", *command],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


@pytest.mark.parametrize("target", ["parent", "group"])
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_cancel_signal_from_the_commands_own_tree_is_not_the_runners_cancel(tmp_path, signame, target):
    guard = run_guard(tmp_path, sys.executable, str(BIN / "signal_the_guard.py"), signame, target)
    out, err = guard.communicate(timeout=60)
    assert guard.returncode == 0, (out, err)
    assert (tmp_path / "logs" / "stdout.log").read_text() == "sent\nwent on\n"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "pass" and report["command"]["timeout_reason"] is None, report["command"]
    assert report["command"]["exit_code"] == 0 and report["findings"] == []
    title = "The command signalled the guard; not a cancel"
    [said] = [d for d in report["diagnostics"] if d["title"] == title]
    assert f"{signame} from pid " in said["text"] and "signal_the_guard.py" in said["text"], said
    assert "came from the command's own tree, not the runner" in said["text"]


def test_the_same_signal_from_outside_the_tree_is_still_the_runners_cancel(tmp_path):
    guard = run_guard(tmp_path, "sh", "-c", "echo up; exec sleep 30")
    log = tmp_path / "logs" / "stdout.log"
    bound = time.monotonic() + 30
    while not (log.exists() and log.read_text()) and time.monotonic() < bound:  # the command runs
        time.sleep(0.05)
    os.kill(guard.pid, signal.SIGTERM)  # from this test: outside the tree, as the runner
    out, err = guard.communicate(timeout=60)
    assert guard.returncode == 124, (out, err)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["command"]["timeout_reason"] == "cancelled"
    assert "cancelled (SIGTERM)" in report["findings"][0]["message"]
    assert not any(d["title"].startswith("The command signalled") for d in report["diagnostics"])


def test_a_loop_of_signals_from_the_tree_names_the_first_ten_and_counts_the_rest(tmp_path):
    # Real-time signals queue (signal(7)): each of the 30 arrives, where 30 SIGTERMs could merge. The
    # report stays bounded however many the command sends.
    rt = int(signal.SIGRTMIN) + 2
    guard = run_guard(tmp_path, "sh", "-c", f"for i in $(seq 30); do kill -{rt} $PPID; done; sleep 0.5")
    out, err = guard.communicate(timeout=60)
    assert guard.returncode == 0, (out, err)
    report = json.loads((tmp_path / "report.json").read_text())
    [said] = [d for d in report["diagnostics"] if d["title"].startswith("The command signalled the guard")]
    lines = said["text"].splitlines()
    assert len(lines) == 11 and all("SIGRTMIN+2 from pid " in line for line in lines[:10]), lines
    assert lines[10] == "and 20 more signals from the command's tree"
