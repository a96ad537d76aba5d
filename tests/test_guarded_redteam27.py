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


def test_a_stop_token_past_what_the_follower_keeps_of_a_line_is_said_to_be_unknown():
    from analyzer.supervise.workflow import LINE_HEAD_BYTES, CommandFollower

    follower = CommandFollower()
    follower.feed("stdout", b"::stop-commands::" + b"t" * LINE_HEAD_BYTES + b"\n")
    assert follower.closing_lines()[1] is False
    legacy = CommandFollower()
    legacy.feed("stdout", b"x" * LINE_HEAD_BYTES + b"##[group]late\n")
    assert legacy.closing_lines()[1] is False
