"""Owning the tree: leaked descendants, grandchildren holding the pipes, unkillable processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from analyzer.model import Kind, Severity
from analyzer.supervise import escalate, tree
from analyzer.supervise.escalate import KILL_WAIT_S

from .conftest import CONTAINMENTS, alive, in_containment, program

@pytest.fixture(params=CONTAINMENTS)
def guard(request, guard):
    """Each tree test twice: in the strongest containment here (a cgroup, as root) and in the scan
    that unprivileged runners get, so the fallback stays tested on a machine that has cgroups."""
    return in_containment(guard, request.param)


SLACK_S = 6.0
FREEZER = Path("/sys/fs/cgroup/freezer")
# A process SIGKILL cannot end needs privileges; on this project's dev machine both tests run (as
# root). A CI runner without them skips with this reason rather than faking the kernel.
UNKILLABLE_NEEDS = "a truly unkillable process needs"


def test_setsid_grandchild_holding_stdout_is_reported_and_ended(guard):
    result, took = guard(program("setsid_grandchild.py"), leak_grace_s=0.5, kill_grace_s=2.0)
    out = Path(result.stdout_path).read_bytes()
    grandchild = int(re.search(rb"grandchild pid=(\d+)", out).group(1))
    assert out.endswith(b"command done\n")
    command = result.command
    assert (command.exit_code, command.timed_out, command.leftover_pids) == (0, False, (grandchild,))
    [leak] = result.findings
    assert (leak.kind, leak.severity) == (Kind.LEAKED_PROCESS, Severity.WARNING)
    assert leak.rule == "guard-leaked-process"
    assert leak.message.startswith(f"pid {grandchild} `")
    assert "setsid_grandchild.py` was still running" in leak.message
    assert not alive(grandchild)
    # Never waits for the pipe's EOF: the grandchild held it until the guard ended it.
    assert took < 0.5 + SLACK_S


def test_background_child_that_outlives_its_parent(guard):
    result, took = guard(program("background_child.py"), leak_grace_s=0.5)
    child = int(re.search(rb"background pid=(\d+)", Path(result.stdout_path).read_bytes()).group(1))
    assert result.command.exit_code == 0
    assert [f.kind for f in result.findings] == [Kind.LEAKED_PROCESS]
    assert result.command.leftover_pids == (child,)
    assert "Processes still running after the command exited" in [d.title for d in result.diagnostics]
    assert not alive(child)
    assert took < 0.5 + SLACK_S


def test_a_child_that_finishes_within_the_leak_grace_is_no_leak(guard):
    script = (
        "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.3)'])\n"
    )
    result, _ = guard((sys.executable, "-c", script), leak_grace_s=3.0)
    assert result.command.exit_code == 0
    assert result.findings == () and result.command.leftover_pids == ()


def test_multiprocessing_workers_terminated_by_their_parent(guard):
    result, took = guard(program("mp_terminate.py"))
    out = Path(result.stdout_path).read_bytes()
    assert out.count(b"exitcode=-15\n") == 2
    assert result.command.exit_code == 0 and result.findings == ()
    assert took < SLACK_S


def test_exit_statuses_pass_through(guard):
    result, _ = guard(("sh", "-c", "echo bye; exit 7"))
    assert (result.command.exit_code, result.command.signal, result.command.timed_out) == (7, None, False)
    assert result.findings == ()
    result, _ = guard((sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    command = result.command
    assert (command.exit_code, command.signal, command.timed_out) == (137, "SIGKILL", False)


@pytest.fixture
def frozen_cgroup():
    """A fresh cgroup-v1 freezer cgroup; thawed, emptied and removed afterwards whatever happened."""
    if os.geteuid() != 0 or not FREEZER.is_dir():
        pytest.skip(f"{UNKILLABLE_NEEDS}: root and the cgroup-v1 freezer at {FREEZER}")
    path = FREEZER / f"ghg-test-{uuid.uuid4().hex[:12]}"
    try:
        path.mkdir()
    except OSError as err:
        pytest.skip(f"{UNKILLABLE_NEEDS}: a writable cgroup-v1 freezer ({err})")
    try:
        yield path
    finally:
        (path / "freezer.state").write_text("THAWED")
        deadline = time.monotonic() + 5
        while (path / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            for pid in (path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.05)
        path.rmdir()


def test_process_in_a_frozen_cgroup_is_reported_unkillable_not_waited_on(guard, frozen_cgroup):
    grace = 0.5
    result, took = guard(program("freeze_child.py", str(frozen_cgroup)), timeout_s=1.0, kill_grace_s=grace)
    frozen = int(re.search(rb"frozen pid=(\d+)", Path(result.stdout_path).read_bytes()).group(1))
    command = result.command
    assert command.unkillable_pids == (frozen,)
    assert command.exit_code == 143  # the command itself died; its frozen child did not
    assert [f.kind for f in result.findings] == [Kind.HANG, Kind.UNKILLABLE_PROCESS]
    unkillable = result.findings[1]
    assert unkillable.severity == Severity.ERROR
    assert unkillable.message.startswith(f"pid {frozen} survived SIGKILL (state D, wchan ")
    # The wait channel is where the task was frozen: __refrigerator when the freezer woke it, or the
    # sleep it was in (Linux 6.1+ freezes a sleeping task in place), so only its presence is certain.
    assert re.search(r"wchan \w+\)", unkillable.message), unkillable.message
    assert unkillable.message.endswith("the host may need recycling")
    assert f"pid {frozen} in `" in result.findings[0].message  # its stack was dumped before any signal
    assert alive(frozen)  # really unkillable: still there, and the guard returned anyway
    assert took < 1.0 + grace + 2 * KILL_WAIT_S + SLACK_S


def test_send_never_signals_the_guards_own_group():
    # A child left in our own process group: the group must be skipped, the pid still reached.
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        escalate.send([tree.proc_of(child.pid)], (signal.SIGUSR1,), os.getpgrp())
        assert child.wait(timeout=10) == -signal.SIGUSR1
        time.sleep(0.1)
        assert received == []
    finally:
        signal.signal(signal.SIGUSR1, previous)
        if child.poll() is None:
            child.kill()
            child.wait()


def test_ending_a_tree_that_is_already_gone_is_silent():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    proc = tree.proc_of(child.pid)
    child.wait()
    ending = escalate.end_tree([proc], 1.0, os.getpgrp())
    assert ending.survivors == ()


@pytest.fixture
def stalled_fuse(tmp_path):
    """A mounted FUSE file system that never answers; released (aborted, detached) whatever happened."""
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip(f"{UNKILLABLE_NEEDS}: root and /dev/fuse")
    from .fuse_stall import StalledFuse

    mountpoint = tmp_path / "stalled"
    mountpoint.mkdir()
    try:
        fs = StalledFuse(str(mountpoint))
    except OSError as err:
        pytest.skip(f"{UNKILLABLE_NEEDS}: a FUSE mount ({err})")
    try:
        yield fs
    finally:
        fs.release()


def test_command_blocked_on_a_dead_fuse_server_is_unkillable_and_the_guard_returns(guard, stalled_fuse):
    touch = f"print('touching', flush=True)\nimport os\nos.stat({stalled_fuse.mountpoint!r} + '/x')\n"
    grace = 0.5
    result, took = guard((sys.executable, "-c", touch), timeout_s=1.0, kill_grace_s=grace)
    command = result.command
    assert Path(result.stdout_path).read_bytes() == b"touching\n"
    # The command itself never ended: no exit status, and the guard did not wait for one.
    assert command.exit_code is None and command.signal is None and command.timed_out
    [pid] = command.unkillable_pids
    assert [f.kind for f in result.findings] == [Kind.HANG, Kind.UNKILLABLE_PROCESS]
    unkillable = result.findings[1].message
    assert unkillable.startswith(f"pid {pid} survived SIGKILL (state D, wchan request_wait_answer)")
    assert "request_wait_answer" in (Path(command.log_dir) / "processes.txt").read_text()
    assert alive(pid)
    assert took < 1.0 + grace + 2 * KILL_WAIT_S + SLACK_S
    stalled_fuse.release()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_orphan_without_the_token_is_found_because_the_guard_is_a_subreaper(guard):
    result, took = guard(program("env_cleared_orphan.py"), leak_grace_s=0.3)
    orphan = int(re.search(rb"orphan pid=(\d+)", Path(result.stdout_path).read_bytes()).group(1))
    assert result.command.leftover_pids == (orphan,)
    assert [f.kind for f in result.findings] == [Kind.LEAKED_PROCESS]
    assert not alive(orphan)
    assert took < 0.3 + SLACK_S
