"""A command that fails on its own says what went wrong: the guard points at the last traceback it printed.

The commonest failure of all is a plain uncaught exception: the command exits 1 and the only words about
it are Python's traceback. The guard reports the failed status as a finding of its own
(``guard-command-failed``) that names the traceback's exception and where it is, unless another finding
already explains the failure; the same holds in a CI log for the step's "Process completed with exit
code 1." line (``ci-step-failed``). Real programs throughout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()

UNCAUGHT = """
    def load_shard(index):
        raise RuntimeError(f"shard {index} is corrupt")

    print("loading shards", flush=True)
    load_shard(3)
"""


def guard(tmp_path: Path, body: str) -> Tuple[int, dict]:
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(body))
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json",
         str(report), "--", sys.executable, str(program)],
        cwd=str(tmp_path), capture_output=True, timeout=120,
    )
    return proc.returncode, json.loads(report.read_text())


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _rules(report: dict) -> List[str]:
    return [f["rule"] for f in report["findings"]]


def test_an_uncaught_exception_is_named_with_its_place_in_the_log(tmp_path):
    status, report = guard(tmp_path, UNCAUGHT)
    assert status == 1
    (finding,) = report["findings"]
    assert (finding["rule"], finding["severity"]) == ("guard-command-failed", "error")
    stderr = (tmp_path / "logs" / "stderr.log").read_text().splitlines()
    traceback_line = stderr.index("Traceback (most recent call last):") + 1
    assert finding["path"].endswith("stderr.log") and finding["line"] == traceback_line
    assert finding["message"].startswith("the command failed with exit 1; the last Python traceback")
    raised = _line_of(tmp_path / "prog.py", "raise RuntimeError")
    ending = f"ends in RuntimeError: shard 3 is corrupt (raised at prog.py:{raised})"
    assert finding["message"].endswith(ending)
    assert 'in load_shard' in finding["excerpt"]


def test_a_failure_another_finding_explains_gets_no_second_finding(tmp_path):
    status, report = guard(tmp_path, """
        import ctypes
        import faulthandler
        faulthandler.enable()
        ctypes.string_at(0)
    """)
    assert status == 139
    assert "guard-command-failed" not in _rules(report)
    assert "fatal-python-error" in _rules(report)


def test_a_traceback_the_command_printed_and_lived_past_is_no_failure(tmp_path):
    status, report = guard(tmp_path, """
        import traceback
        try:
            raise RuntimeError("retrying the download")
        except RuntimeError:
            traceback.print_exc()
        print("downloaded on the second try")
    """)
    assert (status, report["findings"]) == (0, [])


def test_a_failed_command_that_printed_no_traceback_still_says_its_status(tmp_path):
    status, report = guard(tmp_path, "import os\nprint('done?', flush=True)\nos._exit(3)\n")
    assert status == 3
    (finding,) = report["findings"]
    assert (finding["rule"], finding["message"]) == ("guard-command-failed", "the command failed with exit 3")


def _step_log(tmp_path: Path, body: str) -> Path:
    """A GitHub step's log around a real program's output: its lines, then the runner's status line
    (actions/runner writes "##[error]Process completed with exit code N." for a failed `run:` step)."""
    program = tmp_path / "step.py"
    program.write_text(textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(program)], capture_output=True, timeout=60, text=True)
    assert proc.returncode != 0
    log = tmp_path / "job.log"
    status_line = f"##[error]Process completed with exit code {proc.returncode}.\n"
    log.write_text(proc.stdout + proc.stderr + status_line)
    return log


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_step_in_a_ci_log_names_the_last_traceback(tmp_path, engine):
    log = _step_log(tmp_path, UNCAUGHT)
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert finding.rule == "ci-step-failed" and finding.severity.value == "error"
    lines = log.read_text().splitlines()
    assert finding.line == len(lines)
    where = f"line {lines.index('Traceback (most recent call last):') + 1}"
    raised = _line_of(tmp_path / "step.py", "raise RuntimeError")
    assert finding.message == (
        f"the step failed with exit code 1; the last Python traceback before it ({where}) ends in"
        f" RuntimeError: shard 3 is corrupt (raised at step.py:{raised})"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_step_that_another_finding_explains_is_not_told_again(tmp_path, engine):
    log = _step_log(tmp_path, """
        import subprocess, sys
        subprocess.run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.5)
    """)
    rules = [f.rule for f in scan_paths([str(log)], BUILTIN, engine=engine)]
    assert rules == ["subprocess-timeout-uncaught"]


SELF_KILLING_SUITE = """
    import os
    import signal


    def test_before():
        pass


    def test_kills_its_runner():
        os.kill(os.getpid(), signal.SIGKILL)


    def test_after():
        pass
"""


def test_a_test_that_killed_its_runner_is_named(tmp_path):
    # Before: "the command failed with exit 137 (SIGKILL)" alone, though stdout ends in the test's -v line.
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SELF_KILLING_SUITE))
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"), "--json", str(report),
         "--", sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_suite.py"],
        cwd=str(tmp_path), capture_output=True, timeout=120,
    )
    assert proc.returncode == 137
    (finding,) = json.loads(report.read_text())["findings"]
    killer = "test_suite.py::test_kills_its_runner"
    assert (finding["rule"], finding["test"]) == ("guard-command-failed", killer)
    line = _line_of(tmp_path / "logs" / "stdout.log", killer)
    said = f"the command failed with exit 137 (SIGKILL); while test {killer} was running"
    assert finding["message"].startswith(said), finding["message"]
    assert f"stdout.log:{line};" in finding["message"], finding["message"]
