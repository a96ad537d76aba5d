"""Red-team pass 27 of the guard: real misbehaving programs run through the real CLI, each test failing
before its fix. ``no_process_left_behind`` (autouse, from tests/supervise) proves that nothing a test
started is left alive afterwards. What the runner makes of the console is read with the parser of
tests/action/harness.py (``runner_commands``), which follows actions/runner's ActionCommandManager.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

from tests.action.harness import CommandParser, split_lines
from tests.report.runner_view import runner_commands
from tests.supervise.conftest import BIN, no_process_left_behind  # noqa: F401 - autouse in this module too

ROOT = Path(__file__).resolve().parents[1]


def guard_under_github(tmp_path: Path, *args: str) -> Tuple[int, bytes, bytes, Dict[str, Any]]:
    """The action's guard step with ``allow-workflow-commands: true`` (action.yml keeps stderr apart
    then): (exit status, stdout, stderr, report)."""
    env = dict(os.environ, GITHUB_ACTIONS="true", RUNNER_TEMP=str(tmp_path), PYTHONPATH=str(ROOT))
    summary = tmp_path / "summary.md"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--format", "github", "--summary", str(summary),
         "--json", str(tmp_path / "report.json"), "--log-dir", str(tmp_path / "logs"),
         "--allow-workflow-commands", *args],
        cwd=str(tmp_path), env=env, capture_output=True, timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr, json.loads((tmp_path / "report.json").read_text())


# -- 1. a command's own stop-commands and group, left open, no longer hide the guard's annotations -----

@pytest.mark.parametrize("stream", ["stdout", "stderr"])
@pytest.mark.parametrize("token", ["shard-3-fence", "ends-with-colon:"])
def test_a_fence_and_group_the_killed_command_left_open_are_closed_before_the_report(tmp_path, stream, token):
    # Before: the runner read the guard's "hung ... timeout" error annotation as text inside the
    # command's ::stop-commands:: (never resumed: the guard killed it), folded in its group.
    status, out, err, report = guard_under_github(
        tmp_path, "--timeout", "2s", "--kill-grace", "1s", "--",
        sys.executable, str(BIN / "dangling_workflow_commands.py"), token, stream,
    )
    assert status == 124 and report["verdict"] == "fail", (out, err)
    # The runner reads a batch's stderr lines first: the command's lines are all before the guard's.
    commands = runner_commands(err, out)
    names = [command.name for command in commands]
    assert names[0] == "group" and "endgroup" in names, names
    errors = [command for command in commands if command.name == "error"]
    assert errors and all("gpu-hang-guard" in command.prop("title") for command in errors), names
    assert names.index("endgroup") < names.index("error")
    parser = CommandParser()
    for line in split_lines(err) + split_lines(out):
        parser.feed(line)
    assert not parser.stopped
    assert not [d for d in report["diagnostics"] if "workflow commands" in d["title"]], report["diagnostics"]


def test_a_fence_no_line_can_resume_is_said_in_the_report(tmp_path):
    # A token with a space registers a name no command line can carry (ActionCommand.TryParseV2 ends
    # the name at the first space): nothing the guard prints can resume it, so the report says why the
    # step shows no annotation.
    status, out, err, report = guard_under_github(
        tmp_path, "--", sys.executable, "-c",
        "print('::stop-commands::two words', flush=True); raise SystemExit(3)",
    )
    assert status == 3
    assert not [command for command in runner_commands(err, out) if command.name == "error"]
    titles = [diagnostic["title"] for diagnostic in report["diagnostics"]]
    assert any("workflow commands stopped" in title for title in titles), titles
    assert "workflow commands stopped" in (tmp_path / "summary.md").read_text()


def test_the_follower_reads_lines_as_the_runner_does():
    from analyzer.supervise.workflow import CommandFollower

    follower = CommandFollower()
    # Split across writes, ended by \r (a .NET ReadLine line end), in capitals, then resumed in the
    # legacy form: the state follows the runner's, and nothing is left to undo.
    for piece in (b"::STOP-COMM", b"ANDS::tok\r##[tok]", b"\n::group::g\n::endgroup::\n"):
        follower.feed("stdout", piece)
    assert follower.closing_lines() == (b"", True)
    # A command line split over two streams is no command: each stream has its own lines.
    follower.feed("stdout", b"::group")
    follower.feed("stderr", b"::x\n")
    assert follower.closing_lines() == (b"", True)
    # An unfinished last line still counts: the runner reads a stream's last line without its end.
    follower.feed("stderr", b"::stop-commands::last")
    assert follower.closing_lines() == (b"\n::last::\n", True)


def test_the_follower_reads_a_chunk_of_many_lines_as_it_reads_them_one_by_one():
    # A chunk's whole lines are searched for candidates only (the echo of a flood goes through it):
    # whatever the cuts, the state is the one the line-by-line reading gives.
    import random
    import re

    from analyzer.supervise.workflow import CommandFollower

    def state(pieces):
        follower = CommandFollower()
        for piece in pieces:
            follower.feed("stdout", piece)
        return follower.closing_lines(), follower.stop_token, follower.group_open

    atoms = [b"::group::g", b"::endgroup::", b"::stop-commands::tok", b"::tok::", b"##[tok]", b"x ##[group]y",
             b"  ::group::z", b"\xc2\xa0::endgroup::", b"a::b", b"::stop-commands::a b", b"##[group]", b"",
             b"\t::STOP-COMMANDS::T2", b"::t2::", b"t.py::test_x PASSED"]
    chooser = random.Random(27)
    for _ in range(2000):
        lines = [chooser.choice(atoms) for _ in range(chooser.randint(1, 14))]
        data = b"".join(line + chooser.choice([b"\n", b"\r", b"\r\n"]) for line in lines)
        cuts = sorted(chooser.sample(range(1, len(data)), min(len(data) - 1, chooser.randint(0, 4))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        one_by_one = [piece for piece in re.split(rb"([\r\n])", data) if piece]
        assert state(chunks) == state(one_by_one), (data, cuts)


def test_a_stop_token_past_what_the_follower_keeps_of_a_line_is_said_to_be_unknown():
    from analyzer.supervise.workflow import LINE_HEAD_BYTES, CommandFollower

    follower = CommandFollower()
    follower.feed("stdout", b"::stop-commands::" + b"t" * LINE_HEAD_BYTES + b"\n")
    assert follower.closing_lines()[1] is False
    legacy = CommandFollower()
    legacy.feed("stdout", b"x" * LINE_HEAD_BYTES + b"##[group]late\n")
    assert legacy.closing_lines()[1] is False


# -- 2. the tools the guard runs at a timeout are the ones it found before the command ran ------------

def _a_venv_of_our_own(tmp_path: Path) -> Path:
    """A virtualenv like the action's private one, with this interpreter's packages and a real py-spy
    beside its python: files the command may write, as the action's venv under $RUNNER_TEMP is."""
    import sysconfig

    from analyzer.supervise.snapshot import PY_SPY_NAME, find_tool

    py_spy = find_tool(PY_SPY_NAME)
    if py_spy is None:
        pytest.skip("py-spy is not installed")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(venv / "bin" / "python"), "-c", where],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (venv / "bin" / PY_SPY_NAME).write_bytes(Path(py_spy).read_bytes())
    (venv / "bin" / PY_SPY_NAME).chmod(0o755)
    return venv / "bin" / "python"


def test_tools_the_command_replaced_are_not_run_as_the_guards_helpers(tmp_path):
    # Before: at the timeout the guard ran the command's script as its py-spy (and would have run its
    # nvidia-smi from a PATH directory), with the guard's environment: the real GITHUB_OUTPUT, outside
    # the command's cgroup; the stacks it parsed were the script's.
    python = _a_venv_of_our_own(tmp_path)
    writable_on_path = tmp_path / "local-bin"  # as ~/.local/bin on a hosted runner's PATH
    writable_on_path.mkdir()
    output, marker = tmp_path / "github_output", tmp_path / "planted-ran"
    output.write_bytes(b"")
    env = dict(os.environ, GITHUB_ACTIONS="true", RUNNER_TEMP=str(tmp_path), GITHUB_OUTPUT=str(output),
               PYTHONPATH=str(ROOT), PATH=f"{writable_on_path}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [str(python), "-m", "analyzer", "run", "--format", "github", "--github-output", str(output),
         "--json", str(tmp_path / "report.json"), "--log-dir", str(tmp_path / "logs"),
         "--timeout", "3s", "--kill-grace", "1s", "--",
         sys.executable, str(BIN / "plant_the_guards_helpers.py"), str(marker)],
        cwd=str(tmp_path), env=env, capture_output=True, timeout=120,
    )
    log = (tmp_path / "logs" / "stdout.log").read_text()
    assert "planted" in log and (writable_on_path / "nvidia-smi").exists(), log
    assert proc.returncode == 124, proc.stdout[-2000:]
    assert not marker.exists(), marker.read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    [hang] = [finding for finding in report["findings"] if finding["rule"] == "guard-timeout"]
    assert "plant_the_guards_helpers.py" in hang["message"], hang["message"]  # the real py-spy's stack
    assert not (tmp_path / "logs" / "gpu.txt").exists()  # no nvidia-smi when the guard started
    assert b"verdict=pass" not in output.read_bytes()


def test_a_kept_tool_is_the_file_as_it_was_found(tmp_path):
    from analyzer.supervise.snapshot import keep_tool

    binary = tmp_path / "tool"
    binary.write_bytes(Path("/bin/true").read_bytes())
    binary.chmod(0o755)
    kept = keep_tool(str(binary))
    try:
        binary.write_bytes(b"#!/bin/sh\nexit 7\n")  # rewritten in place: the same inode
        assert subprocess.run([kept.argv0(through_sudo=False)], pass_fds=kept.pass_fds).returncode == 0
        assert kept.argv0(through_sudo=True) == f"/proc/{os.getpid()}/fd/{kept.fd}"
    finally:
        kept.close()
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(0o755)
    kept = keep_tool(str(script))
    try:
        os.replace(binary, script)  # replaced by another file: the kept one still runs
        assert subprocess.run([kept.argv0(through_sudo=False)], pass_fds=kept.pass_fds).returncode == 3
    finally:
        kept.close()


# -- 3. a terminal the killed command left without echo, or non-blocking, is put back ------------------

SHOW_THE_TERMINAL = (
    "import fcntl, os, termios; mode = termios.tcgetattr(0); "
    "print('after the guard: echo', bool(mode[3] & termios.ECHO),"
    " 'canonical', bool(mode[3] & termios.ICANON),"
    " 'nonblocking', bool(fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK))"
)


@pytest.mark.parametrize("how", ["echo-off", "nonblocking"])
def test_a_prompt_killed_at_the_timeout_does_not_leave_the_terminal_broken(tmp_path, how):
    # Before: the guard killed the command at its prompt and returned 124 with the user's terminal
    # still without echo (getpass), or non-blocking (the open file description the shell shares), so
    # the shell after it showed nothing typed, or its next reader failed with EAGAIN.
    import pty
    import shlex

    guard = [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--timeout", "2s",
             "--kill-grace", "1s", "--", sys.executable, str(BIN / "password_prompt.py"), how]
    # As an interactive shell runs it: the pty is the shell's terminal and stdin, and the program after
    # the guard reads the same open file description of it.
    show = f"{shlex.quote(sys.executable)} -c {shlex.quote(SHOW_THE_TERMINAL)}"
    line = f"{shlex.join(guard)}; echo status=$?; {show}"
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["PYTHONPATH"] = str(ROOT)
        os.execv("/bin/sh", ["sh", "-c", line])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the last holder of the pty closed it
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    os.waitpid(pid, 0)
    assert b"Enter your token" in out and b"status=124" in out, out  # it did wait at its prompt
    assert b"after the guard: echo True canonical True nonblocking False" in out, out[-600:]
