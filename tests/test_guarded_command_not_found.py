"""A shell's "command not found" under the guard: a notice that names the program, never what fails a run.

A test script that calls a tool the image lacks either stops there (`set -e`, exit 127: the non-zero
exit already fails the run, guard-command-failed) or goes on and passes (a `command -v` probe, an
optional `nvidia-smi` on a CPU runner): then the job stays green and the report carries a notice.
Real bash and dash runs, as the shell step runs a script.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def guard(tmp_path: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--kill-grace", "1", "--log-dir", str(tmp_path / "logs"),
         "--json", str(tmp_path / "report.json"), "--", *command],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "run_tests.sh"
    path.write_text(body)
    return str(path)


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_a_missing_tool_in_a_script_that_goes_on_is_a_notice_in_a_green_run(tmp_path: Path, shell: str):
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    done = guard(tmp_path, shell, script(tmp_path, "echo start\nnosuch-profiler-ghg --x\necho done\n"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "pass"
    [finding] = report["findings"]
    assert (finding["rule"], finding["severity"]) == ("shell-command-not-found", "notice")
    assert finding["message"] == "the shell did not find a command: nosuch-profiler-ghg"
    assert finding["line"] == 1 and finding["path"].endswith("stderr.log")


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_a_missing_tool_ending_a_set_e_script_fails_with_127_and_is_named(tmp_path: Path, shell: str):
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    done = guard(tmp_path, shell, "-e", script(tmp_path, "echo start\nnosuch-profiler-ghg --x\necho never\n"))
    assert done.returncode == 127, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "fail"
    rules = {finding["rule"]: finding["severity"] for finding in report["findings"]}
    assert rules == {"guard-command-failed": "error", "shell-command-not-found": "notice"}
    assert "never" not in (tmp_path / "logs" / "stdout.log").read_text()
