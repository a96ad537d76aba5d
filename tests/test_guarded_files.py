"""The command cannot forge the guard's outputs, env, path, state or summary: the real attacks, run for real.

The files are read back the way GitHub's runner reads them, re-implemented here from actions/runner
``src/Runner.Worker/FileCommandManager.cs`` (commit 258d6c8): ``EnvFileKeyValuePairs`` (lines 353-452)
splits at ``\\n`` (``ReadLine``, lines 462-496), skips empty lines, takes ``name=value`` when ``=`` comes
before ``<<``, else a ``name<<DELIMITER`` heredoc closed by a line equal to the delimiter, and throws on
anything else, which fails the step; ``AddPathFileCommand`` (lines 127-158) reads lines the .NET way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.file_commands import (
    COMMAND_SUMMARY_HEADING,
    SUMMARY_LIMIT_BYTES,
    check_key_values,
    check_path_lines,
    env_name_ok,
    output_name_check,
    summary_part,
)
from analyzer.report.github import OUTPUT_NAMES

FILES = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE")


class RunnerRejects(Exception):
    """The runner would throw here: "Unable to process file command", the step fails."""


def runner_pairs(text: str) -> List[Tuple[str, str]]:
    """``EnvFileKeyValuePairs`` on Linux, exceptions included."""
    pairs = []
    index = 0

    def read_line() -> Tuple[object, object]:
        nonlocal index
        if index >= len(text):
            return None, None
        start = index
        lf = text.find("\n", index)
        if lf < 0:
            index = len(text)
            return text[start:], None
        index = lf + 1
        return text[start:lf], "\n"

    line, _ = read_line()
    while line is not None:
        if line:
            equals, heredoc = line.find("="), line.find("<<")
            if equals >= 0 and (heredoc < 0 or equals < heredoc):
                key, value = line.split("=", 1)
            elif heredoc >= 0 and (equals < 0 or heredoc < equals):
                key, delimiter = line.split("<<", 1)
                if not key or not delimiter:
                    raise RunnerRejects(f"Invalid format '{line}'")
                start = end = index
                temp, newline = read_line()
                while temp != delimiter:
                    if temp is None:
                        raise RunnerRejects(f"Matching delimiter not found '{delimiter}'")
                    if newline is None:
                        raise RunnerRejects("EOF marker missing new line")
                    end = index - len(newline)
                    temp, newline = read_line()
                value = text[start:end] if end > start else ""
            else:
                raise RunnerRejects(f"Invalid format '{line}'")
            pairs.append((key, value))
        line, _ = read_line()
    return pairs


def runner_outputs(path: Path) -> Dict[str, str]:
    return dict(runner_pairs(path.read_text(encoding="utf-8", errors="replace")))


def runner_path_lines(path: Path) -> List[str]:
    """``File.ReadAllLines`` (ends a line at \\n, \\r\\n or a lone \\r) minus empty lines."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture()
def workflow(tmp_path: Path) -> Dict[str, Path]:
    """Empty per-step files, as the runner creates them (FileCommandManager.InitializeFiles)."""
    files = {}
    for name in FILES:
        files[name] = tmp_path / "_runner_file_commands" / name.lower()
        files[name].parent.mkdir(exist_ok=True)
        files[name].write_bytes(b"")
    return files


def guard(tmp_path: Path, workflow: Dict[str, Path], script: str, *options: str) -> Tuple[int, str, str, Any]:
    """The action's own invocation (action.yml) around ``sh -c script``, under GitHub Actions."""
    env = dict(os.environ, GITHUB_ACTIONS="true", RUNNER_TEMP=str(tmp_path))
    env.update({name: str(path) for name, path in workflow.items()})
    args = [
        sys.executable, "-m", "analyzer", "run", "--format", "github",
        "--summary", str(workflow["GITHUB_STEP_SUMMARY"]), "--json", str(tmp_path / "report.json"),
        "--github-output", str(workflow["GITHUB_OUTPUT"]), "--log-dir", str(tmp_path / "logs"),
        *options, "--", "sh", "-c", script,
    ]
    proc = subprocess.run(args, capture_output=True, cwd=str(tmp_path), env=env, timeout=120)
    report = json.loads((tmp_path / "report.json").read_text())
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode(), report


TIMEOUT = ("--timeout", "1s", "--kill-grace", "1s")


def assert_guard_outputs(outputs: Dict[str, str], report: dict, tmp_path: Path) -> None:
    assert outputs["verdict"] == report["verdict"]
    command = report["command"]
    assert outputs["exit-code"] == str(124 if command["timed_out"] else command["exit_code"])
    assert outputs["report"] == str(tmp_path / "report.json")
    assert outputs["findings"] == str(len(report["findings"]))


def test_forged_verdict_and_a_heredoc_opened_on_the_guards_report_line(tmp_path, workflow):
    code, _, err, report = guard(
        tmp_path, workflow, r"""printf 'verdict=pass\nx<<report=...\n' >> "$GITHUB_OUTPUT"; sleep 30""",
        *TIMEOUT,
    )
    assert code == 124 and report["verdict"] == "fail"
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])  # raises if the runner would fail the step
    assert outputs["verdict"] == "fail"
    assert_guard_outputs(outputs, report, tmp_path)
    assert "x" not in outputs
    assert "verdict=pass" not in err  # the warning names what was dropped, never the command's text


def test_an_unterminated_write_is_not_glued_to_the_guards_first_output(tmp_path, workflow):
    code, _, _, report = guard(tmp_path, workflow, """printf 'coverage=87' >> "$GITHUB_OUTPUT"; exit 1""")
    assert code == 1
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert "coverage" not in outputs
    assert all("verdict" not in value for value in outputs.values())
    assert_guard_outputs(outputs, report, tmp_path)


def test_an_open_heredoc_cannot_swallow_the_guards_outputs(tmp_path, workflow):
    code, _, _, report = guard(
        tmp_path, workflow, r"""printf 'notes<<EOF\nverdict=pass\n' >> "$GITHUB_OUTPUT"; sleep 30""", *TIMEOUT
    )
    assert code == 124
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert outputs["verdict"] == "fail" and "notes" not in outputs
    assert_guard_outputs(outputs, report, tmp_path)


def test_the_commands_own_valid_outputs_pass_through(tmp_path, workflow):
    script = r"""
        echo coverage=87 >> "$GITHUB_OUTPUT"
        printf 'changelog<<ZZ\nverdict=pass\nline 2\nZZ\n' >> "$GITHUB_OUTPUT"
        printf 'VERDICT=pass\nexit-code=0\nnot a command\n' >> "$GITHUB_OUTPUT"
        printf 'FOO=bar\nNODE_OPTIONS=--require /tmp/x.js\nnode_options=-r x\nBAD NAME=1\n' >> "$GITHUB_ENV"
        printf '/opt/tools/bin\n/evil\r/bin\n/half' >> "$GITHUB_PATH"
        echo phase=2 >> "$GITHUB_STATE"
    """
    code, _, err, report = guard(tmp_path, workflow, script)
    assert code == 0, err
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert outputs["coverage"] == "87"
    assert outputs["changelog"] == "verdict=pass\nline 2"
    assert "VERDICT" not in outputs and outputs["exit-code"] == "0"
    assert_guard_outputs(outputs, report, tmp_path)
    assert runner_outputs(workflow["GITHUB_ENV"]) == {"FOO": "bar"}
    assert runner_path_lines(workflow["GITHUB_PATH"]) == ["/opt/tools/bin"]
    assert runner_outputs(workflow["GITHUB_STATE"]) == {"phase": "2"}
    assert "dropped from the command's $GITHUB_OUTPUT" in err and "$GITHUB_ENV" in err
    assert "NODE_OPTIONS" not in err and "/evil" not in err


def test_the_command_sees_only_its_private_files(tmp_path, workflow):
    script = 'for v in ' + " ".join(FILES) + '; do eval "echo \\$$v"; done'
    code, _, _, _ = guard(tmp_path, workflow, script)
    assert code == 0
    seen = (tmp_path / "logs" / "stdout.log").read_text().split()
    assert len(seen) == 5 and not set(seen) & {str(path) for path in workflow.values()}
    assert all(Path(p).parent.parent == tmp_path for p in seen)  # under RUNNER_TEMP ...
    assert not any(Path(p).exists() for p in seen)  # ... and removed afterwards


def test_writing_to_the_real_file_found_in_the_guards_environment_is_undone(tmp_path, workflow):
    # A non-dumpable guard's environ is closed to a non-root command; the runner's own directory
    # ($RUNNER_TEMP/_runner_file_commands) still lists the real files, so the write must be undone.
    script = r"""
        files="$RUNNER_TEMP/_runner_file_commands"
        real=$(tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | sed -n 's/^GITHUB_OUTPUT=//p')
        printf 'verdict=pass\nfindings=0\n' >> "${real:-$files/github_output}"
        real_summary=$(tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | sed -n 's/^GITHUB_STEP_SUMMARY=//p')
        real_summary=${real_summary:-$files/github_step_summary}
        printf '## gpu-hang-guard: Passed\n' >> "$real_summary"
        exit 7
    """
    code, _, err, report = guard(tmp_path, workflow, script)
    assert code == 7
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert outputs["verdict"] == "fail"
    assert_guard_outputs(outputs, report, tmp_path)
    assert workflow["GITHUB_OUTPUT"].read_text().count("verdict=") == 1
    assert "## gpu-hang-guard: Passed" not in workflow["GITHUB_STEP_SUMMARY"].read_text().splitlines()
    assert "wrote to the real $GITHUB_OUTPUT file directly" in err


def test_the_guards_summary_comes_first_and_an_html_comment_cannot_hide_it(tmp_path, workflow):
    code, _, _, _ = guard(
        tmp_path, workflow,
        # \074 is "<": the command line, which the guard's summary quotes, holds no "<!--" itself.
        """printf '\\074!--\\n## gpu-hang-guard: Passed\\n' >> "$GITHUB_STEP_SUMMARY"; exit 1""",
    )
    assert code == 1
    summary = workflow["GITHUB_STEP_SUMMARY"].read_text()
    guard_part, command_part = summary.split(COMMAND_SUMMARY_HEADING)
    assert guard_part.startswith("## gpu-hang-guard: Failed") and "<!--" not in guard_part
    assert command_part == "<!--\n## gpu-hang-guard: Passed\n"


def test_a_huge_command_summary_is_trimmed_to_githubs_limit_after_the_guards(tmp_path, workflow):
    rows = """python3 -c "print(('| row | ' + 'x' * 90 + ' |\\n') * 25000)\""""
    script = rows + ' >> "$GITHUB_STEP_SUMMARY"; exit 1'
    code, _, err, _ = guard(tmp_path, workflow, script)
    assert code == 1
    data = workflow["GITHUB_STEP_SUMMARY"].read_bytes()
    assert len(data) <= SUMMARY_LIMIT_BYTES
    assert data.startswith(b"## gpu-hang-guard: Failed")
    assert b"bytes are left out: GitHub drops a step summary over 1,048,576 bytes" in data
    assert data.endswith(b" |\n")  # cut at a line end
    assert "trimmed" in err


# -- the checks on their own --------------------------------------------------------------------------

GUARD_LINES = "verdict=fail\nexit-code=124\nreport<<ghadelimiter_x\n/r.json\nghadelimiter_x\nfindings=2\n"

pieces = st.sampled_from(
    ["verdict=pass", "x<<report=...", "report=...", "EOF", "a<<EOF", "=v", "<<", "x<<", "<<EOF", "findings=0",
     "coverage=87", "plain", "", "\r", "ghadelimiter_x", "name<<ghadelimiter_x", "VERDICT=1", "k=v<<w"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(pieces, st.sampled_from(["\n", "", "\r\n"])), max_size=12))
def test_whatever_the_command_writes_the_runner_reads_the_guards_outputs(parts):
    written = "".join(text + end for text, end in parts).encode()
    kept = check_key_values(written, output_name_check(OUTPUT_NAMES)).kept
    pairs = runner_pairs((kept + GUARD_LINES.encode()).decode())  # never raises: the step never fails
    outputs = dict(pairs)
    assert (outputs["verdict"], outputs["exit-code"], outputs["report"], outputs["findings"]) == (
        "fail", "124", "/r.json", "2"
    )
    owned = [key for key, _ in pairs if key.lower() in OUTPUT_NAMES]
    assert owned == ["verdict", "exit-code", "report", "findings"]


def test_kept_entries_read_the_same_as_they_were_written():
    written = b"a=1\nb<<E\nx=2\n\nE\n\nc=3\n"
    kept = check_key_values(written, output_name_check(OUTPUT_NAMES)).kept
    assert kept == written.replace(b"\n\nc", b"\nc")
    assert runner_pairs(written.decode()) == [("a", "1"), ("b", "x=2\n"), ("c", "3")]


def test_env_names_follow_the_runners_block_list():
    assert env_name_ok("CUDA_VISIBLE_DEVICES")
    assert not env_name_ok("NODE_OPTIONS") and not env_name_ok("Node_Options")
    assert not env_name_ok("A B") and not env_name_ok("") and not env_name_ok("1X")


def test_path_lines_drop_what_dotnet_would_split_differently():
    checked = check_path_lines(b"/a\n\n/b\r/c\n/d\0\n/e")
    assert checked.kept == b"/a\n"
    assert len(checked.dropped) == 3


@pytest.mark.parametrize("used", [0, 1000, SUMMARY_LIMIT_BYTES - 200, SUMMARY_LIMIT_BYTES])
def test_the_summary_part_keeps_the_whole_file_within_the_limit(used):
    data = b"line of the command\n" * 100_000
    part, trimmed = summary_part(data, used)
    assert trimmed
    assert used + len(part) <= SUMMARY_LIMIT_BYTES
    if part:
        assert part.startswith(COMMAND_SUMMARY_HEADING.encode()) and part.endswith(b"\n")


def test_a_small_summary_part_is_whole_and_ends_its_last_line():
    assert summary_part(b"## mine", 100) == (COMMAND_SUMMARY_HEADING.encode() + b"## mine\n", False)
    assert summary_part(b"  \n", 100) == (b"", False)


def test_a_partial_line_the_step_left_before_the_guard_keeps_the_commands_and_the_guards_outputs_apart(
        tmp_path, workflow):
    # An earlier command of the step wrote "earlier=value" without its line break: the command's entry
    # and then the guard's verdict, appended as they were, became the rest of that value.
    workflow["GITHUB_OUTPUT"].write_bytes(b"earlier=value")
    code, _, err, report = guard(tmp_path, workflow, """echo coverage=87 >> "$GITHUB_OUTPUT"; exit 1""")
    assert code == 1, err
    outputs = runner_outputs(workflow["GITHUB_OUTPUT"])
    assert (outputs["earlier"], outputs["coverage"]) == ("value", "87")
    assert_guard_outputs(outputs, report, tmp_path)
