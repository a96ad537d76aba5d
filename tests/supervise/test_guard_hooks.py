"""The hooks a caller follows a run by: log descriptors, output progress, environment, abort."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from analyzer.model import Kind, TimeoutReason

from .conftest import program


def test_on_log_ready_gives_a_descriptor_on_the_guards_file_even_after_the_path_is_swapped(guard, tmp_path):
    fds = {}
    script = (
        "import os, sys\nprint('secret segfault line', flush=True)\n"
        "os.unlink('stdout.log'); os.symlink('/dev/null', 'stdout.log')\nprint('after swap', flush=True)\n"
    )
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    cwd = os.getcwd()
    os.chdir(log_dir)
    try:
        result, _ = guard((sys.executable, "-c", script), log_dir=str(log_dir),
                          on_log_ready=lambda stream, fd: fds.__setitem__(stream, fd))
    finally:
        os.chdir(cwd)
    assert sorted(fds) == ["stderr", "stdout"]
    try:
        with os.fdopen(os.dup(fds["stdout"]), "rb") as handle:
            assert handle.read() == b"secret segfault line\nafter swap\n"
        import fcntl

        assert fcntl.fcntl(fds["stdout"], fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    finally:
        for fd in fds.values():
            os.close(fd)
    # And the path the scan reads names the guard's file again, not the command's symlink.
    assert not os.path.islink(result.stdout_path)
    assert Path(result.stdout_path).read_bytes() == b"secret segfault line\nafter swap\n"
    assert any("stdout.log was replaced" in d.title for d in result.diagnostics)


def test_on_output_reports_running_totals_and_a_final_call(guard):
    calls = []
    lock = threading.Lock()

    def on_output(stream, total, arrived):
        with lock:
            calls.append((stream, total, arrived))

    script = (
        "import os, time\nos.write(1, b'a' * 10)\ntime.sleep(0.2)\nos.write(1, b'b' * 5)\nos.write(2, b'e')\n"
    )
    before = time.monotonic()
    result, _ = guard((sys.executable, "-c", script), on_output=on_output)
    out = [(total, arrived) for stream, total, arrived in calls if stream == "stdout"]
    err = [total for stream, total, _ in calls if stream == "stderr"]
    assert [total for total, _ in out][-1] == 15 and out[0][0] == 10
    assert [total for total, _ in out] == sorted(total for total, _ in out)  # running totals
    assert all(arrived >= before for _, arrived in out)
    assert err[-1] == 1 and len(err) >= 2  # the chunk, then the final total when the pump stopped
    assert os.path.getsize(result.stdout_path) == 15


def test_extra_and_removed_environment(guard, monkeypatch):
    monkeypatch.setenv("GHG_DROP_ME", "1")
    show = "import os\nprint(os.environ.get('GHG_DROP_ME'), os.environ.get('GHG_ADDED'))"
    result, _ = guard(
        (sys.executable, "-c", show), extra_env=(("GHG_ADDED", "yes"),), remove_env=("GHG_DROP_ME",)
    )
    assert Path(result.stdout_path).read_text() == "None yes\n"


def test_abort_requested_ends_the_tree_as_for_a_timeout_naming_the_event(guard):
    started = time.monotonic()

    def abort_requested():
        if time.monotonic() - started > 1.0:
            return "NCCL watchdog timeout at stderr.log:812"
        return None

    result, took = guard(program("hang_main.py"), abort_requested=abort_requested, kill_grace_s=2.0)
    command = result.command
    assert command.timed_out and command.timeout_reason == TimeoutReason.ABORTED
    assert command.to_dict()["timeout_reason"] == "aborted"
    hang = result.findings[0]
    assert (hang.kind, hang.rule) == (Kind.HANG, "guard-aborted")
    assert "NCCL watchdog timeout at stderr.log:812" in hang.message
    assert took < 30


def test_a_failing_on_output_hook_costs_the_log_nothing(guard):
    def broken(stream, total, arrived):
        raise RuntimeError("hook bug")

    script = "import os\nfor i in range(100):\n    os.write(1, b'x' * 1000)\n"
    result, _ = guard((sys.executable, "-c", script), on_output=broken)
    assert os.path.getsize(result.stdout_path) == 100_000 and result.command.exit_code == 0


def test_a_command_that_moves_the_log_dir_and_plants_a_decoy_does_not_hide_its_output(guard, tmp_path):
    logs = tmp_path / "logs"
    script = (
        "import os, sys\nprint('real segfault line', flush=True)\n"
        f"os.rename({str(logs)!r}, {str(tmp_path / 'hidden')!r})\nos.mkdir({str(logs)!r})\n"
        f"open(os.path.join({str(logs)!r}, 'stdout.log'), 'w').write('all tests passed\\n')\n"
    )
    result, _ = guard((sys.executable, "-c", script), log_dir=str(logs))
    # The real directory is moved back to its path (which the action uploads), the decoy aside.
    assert result.stdout_path == str(logs / "stdout.log") and result.command.log_dir == str(logs)
    assert Path(result.stdout_path).read_bytes() == b"real segfault line\n"
    assert not (tmp_path / "hidden").exists()
    (decoy,) = tmp_path.glob("logs.put-there-by-the-command-*")
    assert (decoy / "stdout.log").read_text() == "all tests passed\n"
    assert any(d.title == "The log dir was moved during the run; the guard moved it back"
               for d in result.diagnostics)
