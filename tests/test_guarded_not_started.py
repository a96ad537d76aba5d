"""Exit statuses a CI user reads (README "Exit status"): a command that cannot start, and a command whose
own status is one the guard also uses.

red40's p24/p25: a missing or non-executable command was the guard's usage error, exit 2 with no report
and no summary, where a shell step fails with 127 or 126 and the job page says "command not found".
p19/p20: a command's own exit 124 or 2 read like the guard's timeout and usage statuses.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def guard(tmp_path: Path, *command: str) -> subprocess.CompletedProcess:
    """``python -m analyzer run`` with every report file, as the action runs it."""
    return subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--kill-grace", "1", "--log-dir", str(tmp_path / "logs"),
         "--json", str(tmp_path / "report.json"), "--summary", str(tmp_path / "summary.md"),
         "--github-output", str(tmp_path / "outputs"), "--", *command],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )


def outputs(tmp_path: Path) -> dict:
    return dict(line.split("=", 1) for line in (tmp_path / "outputs").read_text().splitlines())


def _not_executable(tmp_path: Path) -> str:
    script = tmp_path / "run_tests.sh"
    script.write_text("#!/bin/sh\necho never\n")
    script.chmod(0o644)
    return str(script)


def _missing_interpreter(tmp_path: Path) -> str:
    script = tmp_path / "train.py"
    script.write_text("#!/opt/no-such-venv/bin/python\nprint('never')\n")
    script.chmod(0o755)
    return str(script)


# What bash 5.2 exits with for the same command, and what the one line says (execve(2) wants an x bit
# from root too).
NOT_STARTED = {
    "not-found": (lambda tmp: "no-such-command-ghg", 127, "No such file or directory"),
    "not-executable": (_not_executable, 126, "Permission denied"),
    "missing-interpreter": (_missing_interpreter, 127, "its interpreter '/opt/no-such-venv/bin/python'"),
    "a-directory": (lambda tmp: str(tmp), 126, "Permission denied"),
}


@pytest.mark.parametrize("case", NOT_STARTED, ids=list(NOT_STARTED))
def test_a_command_that_cannot_start_fails_as_in_a_shell_with_a_report(tmp_path, case):
    make, status, why = NOT_STARTED[case]
    program = make(tmp_path)
    done = guard(tmp_path, program, "--some-arg")
    assert done.returncode == status, done.stderr
    # One clear line on stderr, never a traceback.
    assert done.stderr.splitlines() == [done.stderr.strip()] and why in done.stderr, done.stderr
    assert f"cannot start {program!r}" in done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "fail"
    (finding,) = report["findings"]
    what = (finding["rule"], finding["kind"], finding["severity"])
    assert what == ("guard-command-not-started", "crash", "error")
    assert why in finding["message"] and f"exit {status}" in finding["message"]
    assert report["command"]["argv"] == [program, "--some-arg"]
    assert (report["command"]["exit_code"], report["command"]["timed_out"]) == (status, False)
    assert "guard-command-not-started" in (tmp_path / "summary.md").read_text()
    said = outputs(tmp_path)
    assert (said["verdict"], said["exit-code"], said["timed-out"]) == ("fail", str(status), "false")
    # Nothing ran: the logs are there, empty.
    assert (tmp_path / "logs" / "stdout.log").read_bytes() == b""


@pytest.mark.parametrize(
    "status, words",
    [(124, "the command's own status, not the guard's timeout"),
     (2, "the command's own status, not a usage error of the guard")],
)
def test_a_commands_own_124_or_2_is_told_apart_from_the_guards(tmp_path, status, words):
    done = guard(tmp_path, sys.executable, "-c", f"print('exiting'); raise SystemExit({status})")
    assert done.returncode == status, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["command"]["exit_code"], report["command"]["timed_out"]) == (status, False)
    assert report["command"]["timeout_reason"] is None
    assert outputs(tmp_path)["timed-out"] == "false"
    assert f"- Ended: exit {status} ({words})" in (tmp_path / "summary.md").read_text()
    assert f"outcome: exit {status} ({words})" in done.stdout
    (finding,) = report["findings"]
    assert finding["message"] == f"the command failed with exit {status} ({words})"


def test_the_guards_own_timeout_is_not_called_the_commands(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--timeout", "1", "--kill-grace", "1",
         "--log-dir", str(tmp_path / "logs"), "--summary", str(tmp_path / "summary.md"),
         "--", sys.executable, "-c", "import time; time.sleep(60)"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 124, done.stderr
    summary = (tmp_path / "summary.md").read_text()
    assert "- Timed out: yes" in summary and "the command's own status" not in summary


def test_a_guard_out_of_descriptors_does_not_blame_the_command(tmp_path):
    # Found while checking: under `ulimit -n 20` Popen's own pipes fail with EMFILE, which is no
    # "not executable" 126 of the command but the guard's limit (cli.main's one line, exit 2).
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(
            """
            import os, resource
            from analyzer.errors import UsageError
            from analyzer.supervise import spawn
            used = len(os.listdir("/proc/self/fd"))
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (used + 2, hard))
            try:
                spawn.start(["true"], dict(os.environ))
            except UsageError as err:
                print("usage", err)
            except OSError as err:
                print("oserror", err.errno)
            """
        )],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert done.stdout.split() == ["oserror", str(errno.EMFILE)], (done.stdout, done.stderr)
