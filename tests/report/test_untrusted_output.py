"""Untrusted text through the real CLI: the runner acts on none of it, and nothing fails to print.

Every log here is the real output of a real program, and every file name a real file's. The hostile
lines are the ones issue 9 found executed: ``      ::add-mask::X`` in an excerpt (the runner trims
leading whitespace before ``::``) and ``##[set-output name=x]y`` in a message (legacy commands match
anywhere in a line). ``runner_view`` reads the output the way actions/runner does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Optional, Tuple

import pytest

from .runner_view import every_order, runner_commands

REPO = Path(__file__).resolve().parents[2]
MASK_LINE = "::add-mask::X"
LEGACY = "##[set-output name=y]z"

# The frame's source line in a traceback is the text of the file the code claims to come from, so a
# real traceback can carry any line; the exception message carries a legacy command and Markdown.
HOSTILE_PROGRAM = textwrap.dedent(
    """
    import atexit, sys

    def _prepare_to_exit():
        code = "\\n\\nraise RuntimeError(sys.argv[2])"
        exec(compile(code, sys.argv[1], "exec"))

    atexit.register(_prepare_to_exit)
    print("=== 3 passed in 0.01s ===")
    """
)
HOSTILE_MESSAGE = f"`![ok](https://evil/p.svg) [re-run](https://evil/login)` @team {LEGACY}"
# Bytes the file system allows in a name: not UTF-8, a line break, an escape, a command.
HOSTILE_NAME = b"bad\xff\n" + MASK_LINE.encode() + b"\x1b[31m " + LEGACY.encode() + b".log"


def run_cli(
    *args: str, env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None
) -> Tuple[int, bytes, bytes]:
    full_env = dict(os.environ)
    full_env.pop("GITHUB_ACTIONS", None)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        input=b"",
        capture_output=True,
        cwd=str(cwd or REPO),
        env=full_env,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


ON_GITHUB = {"GITHUB_ACTIONS": "true"}


def _hostile_log(tmp_path: Path, name: str = "job.log") -> Path:
    source = tmp_path / "source.txt"
    source.write_text(f"a\nb\n      {MASK_LINE}\n")
    program = tmp_path / "prog.py"
    program.write_text(HOSTILE_PROGRAM)
    proc = subprocess.run(
        [sys.executable, str(program), str(source), HOSTILE_MESSAGE], capture_output=True, timeout=60
    )
    assert proc.returncode == 0
    log = tmp_path / name
    log.write_bytes(proc.stdout + proc.stderr)
    assert MASK_LINE in log.read_text() and LEGACY in log.read_text()
    return log


@pytest.fixture()
def hostile_log(tmp_path: Path) -> Path:
    return _hostile_log(tmp_path)


def _without_fences(out: bytes) -> bytes:
    fence = (b"stop-commands", b"::ghg-")
    return b"\n".join(line for line in out.split(b"\n") if not any(mark in line for mark in fence))


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_scan_output_runs_no_command_under_github_actions(hostile_log: Path, fmt: str):
    code, out, err = run_cli("scan", "--format", fmt, str(hostile_log), env=ON_GITHUB)
    assert (code, err) == (1, b"")
    assert b"RuntimeError" in out
    assert every_order(out, err) == [(), ()]
    if fmt != "json":
        # The fence is what holds: without it the runner would add the mask (so this test can fail).
        assert MASK_LINE.encode() in out
        assert {c.name for c in runner_commands(_without_fences(out))} >= {"add-mask"}
    else:
        assert json.loads(out)["findings"][0]["message"].startswith("RuntimeError: `![ok]")
        assert LEGACY in json.loads(out)["findings"][0]["message"]


def test_outside_github_actions_the_report_is_not_fenced(hostile_log: Path):
    code, out, err = run_cli("scan", str(hostile_log))
    assert code == 1 and b"stop-commands" not in out


def test_github_format_runs_only_our_annotations_with_the_message_intact(hostile_log: Path, tmp_path: Path):
    report = tmp_path / "r.json"
    code, out, err = run_cli(
        "scan", "--format", "github", "--json", str(report), str(hostile_log), env=ON_GITHUB
    )
    assert (code, err) == (1, b"")
    for commands in every_order(out, err):
        assert [c.name for c in commands] == ["error"]
        finding = json.loads(report.read_text())["findings"][0]
        # Escaped exactly (toolkit command.ts): the runner unescapes the very message we made.
        assert commands[0].data == finding["message"]
        assert commands[0].prop("file") == str(hostile_log) and commands[0].prop("line") == "2"


def test_a_path_with_a_line_break_is_a_one_line_error_that_runs_nothing(tmp_path: Path):
    missing = str(tmp_path / f"gone\n{MASK_LINE}\r{LEGACY}.log")
    for fmt in ("text", "github"):
        code, out, err = run_cli("scan", "--format", fmt, missing, env=ON_GITHUB)
        assert code == 2 and b"Traceback" not in err
        assert err.count(b"\n") == 1 and err.startswith(b"python -m analyzer: error: ")
        assert b"gone\\n::add-mask::X\\r#\\x23[set-output" in err
        commands = [c.name for order in every_order(out, err) for c in order]
        assert commands == ([] if fmt == "text" else ["error", "error"])


def test_a_zip_member_named_with_a_line_break_stays_on_one_line(tmp_path: Path):
    import zipfile

    archive = tmp_path / "logs.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"1_job/evil\n{MASK_LINE}.txt", "RuntimeError: x\n" * 100)
    data = bytearray(archive.read_bytes())
    data[60:70] = b"\xff" * 10  # the member's deflate stream: reading it fails, naming the member
    archive.write_bytes(bytes(data))
    code, out, err = run_cli("scan", str(archive), env=ON_GITHUB)
    assert code == 2 and err.count(b"\n") == 1 and b"Traceback" not in err
    assert b"evil\\n::add-mask::X.txt" in err
    assert every_order(out, err) == [(), ()]


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "utf-8", "LANG": "C", "LC_ALL": "C"},
        {"LANG": "C", "LC_ALL": "C"},
        {"PYTHONIOENCODING": "ascii"},
        {"GITHUB_ACTIONS": "true", "PYTHONIOENCODING": "utf-8"},
    ],
    ids=["utf8-io-C-locale", "C-locale", "ascii-io", "github"],
)
@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "github"])
def test_any_file_name_is_reported_safely_in_every_format(tmp_path: Path, fmt: str, env: Dict[str, str]):
    logs = tmp_path / "logs"
    logs.mkdir()
    log = _hostile_log(tmp_path)
    hostile = os.path.join(os.fsencode(logs), HOSTILE_NAME)
    os.rename(log, hostile)
    report, summary, outputs = tmp_path / "r.json", tmp_path / "s.md", tmp_path / "o.txt"
    code, out, err = run_cli(
        "scan", "--format", fmt, "--json", str(report), "--summary", str(summary),
        "--github-output", str(outputs), str(logs), env=env,
    )
    assert (code, err) == (1, b""), err.decode("utf-8", "replace")
    shown = b"bad\\xff\\n::add-mask::X"
    if fmt == "github":
        assert b"file=" + os.fsencode(logs) + b"/bad\\xff\\n%3A%3Aadd-mask%3A%3AX\\x1b[31m " in out
    elif fmt != "json":
        assert shown in out
    # One line per finding location: the name's line break is shown, never made.
    assert not any(line.startswith(MASK_LINE.encode()) for line in out.split(b"\n"))
    if env.get("GITHUB_ACTIONS"):
        assert all(not order or fmt == "github" for order in every_order(out, err))
    data = json.loads(report.read_text(encoding="utf-8"))
    # JSON keeps the name's characters (escaped as JSON does); only its undecodable byte is shown as \\xff.
    name = "bad\\xff\n::add-mask::X\x1b[31m ##[set-output name=y]z.log"
    assert data["findings"][0]["path"] == f"{logs}/{name}"
    assert shown.decode() in summary.read_text(encoding="utf-8")
    assert "verdict=fail" in outputs.read_text(encoding="utf-8")


def test_the_json_path_of_a_name_that_is_not_utf8_is_its_escaped_form(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    os.rename(_hostile_log(tmp_path), os.path.join(os.fsencode(logs), b"bad\xff.log"))
    code, out, err = run_cli("scan", "--format", "json", str(logs), env={"PYTHONIOENCODING": "utf-8"})
    assert (code, err) == (1, b"")
    assert json.loads(out)["findings"][0]["path"] == str(logs / "bad\\xff.log")


def test_a_report_file_that_cannot_be_written_warns_and_keeps_the_verdict(hostile_log: Path):
    for option in ("--json", "--summary", "--github-output"):
        code, out, err = run_cli("scan", option, "/dev/full", str(hostile_log))
        assert code == 1, (option, err)
        assert out.startswith(b"Failed: RuntimeError")
        assert err.count(b"\n") == 1
        assert err.startswith(f"python -m analyzer: warning: {option} /dev/full: cannot write".encode())


def test_a_report_path_that_cannot_be_written_is_a_usage_error_before_the_scan(hostile_log, tmp_path):
    code, out, err = run_cli("scan", "--json", str(tmp_path / "no" / "r.json"), str(hostile_log))
    assert (code, out) == (2, b"") and err.count(b"\n") == 1 and b"--json" in err
