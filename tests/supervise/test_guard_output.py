"""Output: byte-exact logs, live echo, and untrusted output fenced off from workflow commands."""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analyzer.errors import UsageError
from analyzer.supervise.guard import GuardOptions, supervise

from .conftest import BIN, DRIVER, program

FLOOD = runpy.run_path(str(BIN / "flood.py"))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_flood_of_200_mb_on_both_streams_is_saved_byte_exact(guard):
    size = 100_000_000  # per stream
    result, took = guard(program("flood.py", str(size)))
    assert result.command.exit_code == 0 and result.findings == ()
    for path, stream in ((result.stdout_path, "out"), (result.stderr_path, "err")):
        assert os.path.getsize(path) == size
        assert _sha(Path(path).read_bytes()) == _sha(FLOOD["expected"](stream, size))
    assert took < 60


def test_flood_killed_mid_stream_keeps_every_byte_written(guard):
    # The command is killed while flooding; whatever it wrote before dying is in the log, in order.
    result, _ = guard(program("flood.py", str(10**12)), timeout_s=1.0, kill_grace_s=1.0)
    assert result.command.timed_out
    data = Path(result.stdout_path).read_bytes()
    assert len(data) > 0
    assert data == FLOOD["expected"]("out", len(data))


def test_invalid_utf8_nul_and_no_final_newline_are_kept(guard):
    result, _ = guard(program("binary_output.py"))
    assert result.command.exit_code == 3
    assert Path(result.stdout_path).read_bytes() == (
        b"ok line\n\xff\xfe not utf-8 \xc3\x28\n\x00nul\x00 inside\nno newline at end \xe2\x82"
    )
    assert Path(result.stderr_path).read_bytes() == b"err \x80\x81\r\n"


def test_child_environment_defaults_and_user_values(guard, monkeypatch):
    show = "import os\nfor k in ('PYTHONFAULTHANDLER','PYTHONUNBUFFERED'): print(k, os.environ.get(k))\n" \
           "print('token' if os.environ.get('GPU_HANG_GUARD_TOKEN') else 'no token')"
    monkeypatch.delenv("PYTHONFAULTHANDLER", raising=False)
    monkeypatch.setenv("PYTHONUNBUFFERED", "")
    result, _ = guard((sys.executable, "-c", show))
    assert Path(result.stdout_path).read_text() == "PYTHONFAULTHANDLER 1\nPYTHONUNBUFFERED \ntoken\n"


def _drive(tmp_path, options, env):
    result_path = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(DRIVER), json.dumps(options), str(result_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60,
    )
    return proc, json.loads(result_path.read_text())


def _env(**extra):
    env = dict(os.environ)
    env.pop("GITHUB_ACTIONS", None)
    env.update(extra)
    return env


def test_under_github_actions_output_is_fenced_by_stop_commands(tmp_path):
    options = {"argv": list(program("workflow_commands.py")), "log_dir": str(tmp_path / "logs")}
    proc, result = _drive(tmp_path, options, _env(GITHUB_ACTIONS="true"))
    saved = Path(result["stdout_path"]).read_bytes()
    assert saved.startswith(b"::error file=x.py,line=1::fake annotation from the test\n::add-mask::hunter2\n")
    lines = proc.stdout.split(b"\n")
    # Each fence line after a line break of its own (workflow.stop_line: a partial line before it).
    assert lines[0] == b"" and lines[1].startswith(b"::stop-commands::ghg-")
    token = lines[1][len(b"::stop-commands::"):]
    assert len(token) >= 32
    assert proc.stdout == b"\n::stop-commands::" + token + b"\n" + saved + b"\n::" + token + b"::\n"
    assert token not in saved  # the command never sees the token
    assert b"stop-commands" not in saved.replace(b"::stop-commands::silence-the-guard", b"")


def test_resume_line_starts_on_its_own_line_after_a_partial_line(tmp_path):
    options = {"argv": list(program("binary_output.py")), "log_dir": str(tmp_path / "logs")}
    proc, result = _drive(tmp_path, options, _env(GITHUB_ACTIONS="true"))
    saved = Path(result["stdout_path"]).read_bytes()
    assert not saved.endswith(b"\n")
    assert proc.stdout.startswith(b"\n")
    head, _, rest = proc.stdout[1:].partition(b"\n")
    token = head[len(b"::stop-commands::"):]
    # Inside the fence the command's stderr comes on stdout too (the runner would read it first).
    saved_err = Path(result["stderr_path"]).read_bytes()
    assert proc.stderr == b""
    assert rest.endswith(b"\n::" + token + b"::\n")
    # The resume line's own leading line break is not the body's.
    body = rest[: -len(b"\n::" + token + b"::\n")]
    # Every byte once, in chunks of either stream; the guard ends the console's line if it is open.
    both = saved + saved_err
    assert sorted(body.replace(b"\n", b"")) == sorted(both.replace(b"\n", b"")), body
    assert body.count(b"\n") - both.count(b"\n") in (0, 1) and body.endswith(b"\n")


def test_outside_github_a_partial_last_line_is_ended_on_the_console_only(tmp_path):
    # The report comes next on the console; the saved log keeps exactly the bytes the command wrote.
    options = {"argv": list(program("binary_output.py")), "log_dir": str(tmp_path / "logs")}
    proc, result = _drive(tmp_path, options, _env())
    saved = Path(result["stdout_path"]).read_bytes()
    assert not saved.endswith(b"\n")
    assert proc.stdout == saved + b"\n"


@pytest.mark.parametrize(
    "env, allow",
    [({"GITHUB_ACTIONS": "true"}, True), ({}, False)],
    ids=["allowed-by-option", "not-on-github"],
)
def test_no_fence_when_allowed_or_not_on_github(tmp_path, env, allow):
    options = {
        "argv": list(program("workflow_commands.py")), "log_dir": str(tmp_path / "logs"),
        "allow_workflow_commands": allow,
    }
    proc, result = _drive(tmp_path, options, _env(**env))
    saved = Path(result["stdout_path"]).read_bytes()
    if allow:
        # The command's own "::stop-commands::silence-the-guard" is still open at its end: the guard
        # resumes it, or the runner would read the guard's annotations as plain text.
        assert proc.stdout == saved + b"\n::silence-the-guard::\n"
    else:
        assert proc.stdout == saved
    assert b"::stop-commands::ghg-" not in proc.stdout


def test_output_is_live_partial_lines_included(tmp_path):
    # The guard must pass on a partial line (a progress bar) at once, not at the next newline or exit.
    options = {"argv": list(program("partial_then_silent.py")), "log_dir": str(tmp_path / "logs"),
               "idle_timeout_s": 5.0, "kill_grace_s": 1.0}
    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), json.dumps(options), str(tmp_path / "result.json")],
        stdout=subprocess.PIPE, env=_env(),
    )
    try:
        started = time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], 4.0)
        first = os.read(proc.stdout.fileno(), 100) if ready else b""
        arrived = time.monotonic() - started
        assert first == b"downloading weights 50%"
        assert arrived < 4.0 and proc.poll() is None  # before the idle timeout ended the command
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_options_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no command"):
        supervise(GuardOptions(argv=(), log_dir=str(tmp_path)))
    with pytest.raises(UsageError, match="--timeout"):
        supervise(GuardOptions(argv=("true",), log_dir=str(tmp_path), timeout_s=0))
    with pytest.raises(UsageError, match="cannot start 'no-such-command-ghg'"):
        supervise(GuardOptions(argv=("no-such-command-ghg",), log_dir=str(tmp_path), echo=False))
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UsageError, match="--log-dir"):
        supervise(GuardOptions(argv=("true",), log_dir=str(blocker / "logs")))


def test_resume_line_is_printed_even_when_the_command_cannot_start(tmp_path):
    options = {"argv": ["no-such-command-ghg"], "log_dir": str(tmp_path / "logs")}
    proc = subprocess.run(
        [sys.executable, str(DRIVER), json.dumps(options), str(tmp_path / "result.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(GITHUB_ACTIONS="true"), timeout=60,
    )
    assert proc.returncode != 0 and b"cannot start 'no-such-command-ghg'" in proc.stderr
    assert proc.stdout.startswith(b"\n")
    head, _, rest = proc.stdout[1:].partition(b"\n")
    assert head.startswith(b"::stop-commands::ghg-")
    assert rest == b"\n::" + head[len(b"::stop-commands::"):] + b"::\n"


def test_a_failing_guard_still_ends_the_tree(tmp_path, monkeypatch):
    # The one injected fault in this suite: the watch loop breaks after a real tree has started.
    from analyzer.supervise import guard as guard_module

    def broken_watch(self, wake_fd):
        time.sleep(0.5)  # let the command start its background child
        raise RuntimeError("guard bug")

    monkeypatch.setattr(guard_module._Run, "watch", broken_watch)
    with pytest.raises(RuntimeError, match="guard bug"):
        supervise(GuardOptions(argv=program("background_child.py"), log_dir=str(tmp_path), echo=False))
    # no_process_left_behind (autouse) fails this test if the command or its child survived.


@pytest.mark.parametrize("merged", [True, False], ids=["stderr-merged-into-stdout", "separate-streams"])
def test_a_partial_last_stderr_line_cannot_swallow_the_resume_token(tmp_path, merged):
    # The pause keeps the two streams' order fixed: the guard keeps order within a stream, not across.
    script = (
        "import os, time\nos.write(1, b'out line\\n')\ntime.sleep(0.3)\n"
        "os.write(2, b'::error::injected partial stderr line')\n"
    )
    options = {"argv": [sys.executable, "-c", script], "log_dir": str(tmp_path / "logs")}
    proc = subprocess.run(
        [sys.executable, str(DRIVER), json.dumps(options), str(tmp_path / "result.json")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        env=_env(GITHUB_ACTIONS="true"), timeout=60,
    )
    lines = proc.stdout.split(b"\n")
    assert lines[0] == b""
    token = lines[1][len(b"::stop-commands::"):]
    assert lines[-2:] == [b"::" + token + b"::", b""]  # the resume line stands on a line of its own
    # Inside the fence the command's stderr is echoed on the guard's stdout, merged or not.
    assert b"::error::injected partial stderr line\n" in proc.stdout
    if not merged:
        assert proc.stderr == b""
    saved = Path(json.loads((tmp_path / "result.json").read_text())["stderr_path"]).read_bytes()
    assert saved == b"::error::injected partial stderr line"  # the log keeps the bytes as written


def test_command_pipes_get_a_larger_buffer():
    import fcntl

    from analyzer.supervise import spawn

    proc = spawn.start((sys.executable, "-c", "pass"), os.environ)
    try:
        get_size = getattr(fcntl, "F_GETPIPE_SZ", 1032)
        sizes = [fcntl.fcntl(stream.fileno(), get_size) for stream in (proc.stdout, proc.stderr)]
        assert sizes == [spawn.PIPE_BYTES] * 2
    finally:
        proc.communicate(timeout=30)


def test_a_full_disk_is_said_in_a_diagnostic_and_the_command_is_not_blocked(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a real full file system needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)],
                             stderr=subprocess.PIPE)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        script = "import os\nfor i in range(100):\n    os.write(1, b'y' * 10_000)\nprint('done')\n"
        result = supervise(GuardOptions(argv=(sys.executable, "-c", script), log_dir=str(small / "logs"),
                                        echo=False))
        assert result.command.exit_code == 0
        [note] = [d for d in result.diagnostics if d.title.startswith("stdout.log is incomplete")]
        assert "No space left on device" in note.title
        assert "of the 1000005 bytes" in note.text
    finally:
        subprocess.run(["umount", "-l", str(small)])
