"""The command stops the guard with SIGSTOP (uncatchable); the guard's watcher resumes it (guard14).

Run through the real CLI, in a process of its own, as the action runs it. ``no_process_left_behind``
(autouse) proves the command's tree and the watcher are gone afterwards.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.supervise import keepalive
from analyzer.supervise.guard import RESUMED_TITLE

from .conftest import BIN

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("program, timeout", [
    ("sigstop_the_guard.py", "2"),
    # The watcher killed first: the guard starts a new one at its next look (at most 1 s later).
    ("kill_the_watcher_then_stop_the_guard.py", "5"),
])
def test_a_command_that_sigstops_the_guard_is_still_timed_out_and_reported(tmp_path, program, timeout):
    # Before: the guard stayed stopped for good, no clock fired, no report; the job hung until the
    # runner's own timeout with the command's tree alive.
    guard = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json",
         str(tmp_path / "r.json"), "--timeout", timeout, "--kill-grace", "1", "--",
         sys.executable, str(BIN / program)],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        console, _ = guard.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.kill(guard.pid, signal.SIGCONT)  # the stopped guard, woken to end its tree
        os.kill(guard.pid, signal.SIGTERM)
        guard.communicate(timeout=30)
        pytest.fail("the guard stayed stopped after its command sent it SIGSTOP")
    assert guard.returncode == 124, console
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["command"]["timeout_reason"] == "wall", report["command"]
    assert RESUMED_TITLE in [d["title"] for d in report["diagnostics"]], report["diagnostics"]
    logged = (tmp_path / "logs" / "stdout.log").read_text()
    assert "the guard is stopped\n" in logged, logged


def test_a_sigcont_sent_to_a_running_guard_is_no_stop(tmp_path):
    # Only the watcher's own resumes count: a SIGCONT to a guard that was never stopped (a shell's job
    # control, a command's stray `kill -CONT $PPID`) said the guard had been stopped.
    status = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json",
         str(tmp_path / "r.json"), "--", "sh", "-c", "kill -CONT $PPID; kill -CONT $PPID"],
        cwd=str(tmp_path), capture_output=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).returncode
    report = json.loads((tmp_path / "r.json").read_text())
    assert status == 0 and report["diagnostics"] == [], report


def test_the_watcher_resumes_its_stopped_parent_and_ends_with_it():
    # The watcher watches its parent; here that is a child of this test standing in for the guard,
    # which says on a pipe when a SIGCONT resumed it.
    read_end, write_end = os.pipe()
    stand_in = os.fork()
    if stand_in == 0:
        os.close(read_end)
        signal.signal(signal.SIGCONT, lambda *_: os.write(write_end, b"c"))
        watcher = keepalive.KeepAlive()
        os.write(write_end, b"%d\n" % watcher.start())
        while True:
            signal.pause()
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            watcher_pid = int(pipe.read(20).split(b"\n")[0])
            os.kill(stand_in, signal.SIGSTOP)
            ready, _, _ = select.select([pipe], [], [], 20)  # the watcher looks every 0.1 s
            assert ready and pipe.read(1) == b"c"
            assert keepalive.state_of(stand_in) != "T"
    finally:
        os.kill(stand_in, signal.SIGKILL)
        os.waitpid(stand_in, 0)
    for _ in range(100):  # its parent gone, the watcher ends by itself
        if keepalive.state_of(watcher_pid) in ("", "Z"):
            break
        select.select([], [], [], 0.1)
    assert keepalive.state_of(watcher_pid) in ("", "Z")
