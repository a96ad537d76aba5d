"""The report written first and refined (issue 8 item 6): a guard killed while it ends the tree still
leaves a whole report.json that says it hung and in which test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from analyzer.guarded import EARLY_REPORT_TITLE, GuardedRun
from analyzer.rules.loader import load_catalogue
from analyzer.supervise.diagnosis import PLACE_NOT_YET_KNOWN
from analyzer.supervise.guard import GuardOptions, supervise

REPO = Path(__file__).resolve().parents[1]

# A pytest test that ignores SIGTERM: the guard sits in its kill grace, where a runner's cancel
# window closes on it.
STUCK_TEST = """
    import os, signal, time

    def test_quick():
        pass

    def test_waits_forever():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open(os.environ["STUCK_PID_FILE"], "w") as handle:
            handle.write(str(os.getpid()))
        while True:
            time.sleep(0.05)
"""


def _env(**extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), **extra)
    env.pop("GITHUB_ACTIONS", None)
    return env


def _read_report(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _stacks_read(data: dict) -> bool:
    """Whether the report on disk is the one written once the stacks were read: its hang has a place."""
    return any(finding.get("kind") == "hang" and PLACE_NOT_YET_KNOWN not in finding.get("message", "")
               for finding in data.get("findings", ()))


def _kill_pid_in(path: Path) -> None:
    try:
        os.kill(int(path.read_text()), signal.SIGKILL)
    except (OSError, ValueError):
        pass


def test_a_guard_killed_in_its_kill_grace_leaves_a_report_that_names_the_hung_test(tmp_path: Path):
    (tmp_path / "test_stuck.py").write_text(textwrap.dedent(STUCK_TEST))
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    pid_file = tmp_path / "stuck.pid"
    guard = subprocess.Popen(
        [sys.executable, "-m", "analyzer", "run", "--timeout", "3", "--kill-grace", "60",
         "--log-dir", str(tmp_path / "out" / "logs"), "--json", str(report), "--",
         sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_stuck.py"],
        cwd=str(tmp_path), env=_env(STUCK_PID_FILE=str(pid_file)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        # The deadline is 3 s after pytest starts; the grace 60 s: the guard is still ending the tree
        # for a minute after the stacks are read.
        bound = time.monotonic() + 45
        while time.monotonic() < bound and not _stacks_read(_read_report(report)):
            assert guard.poll() is None, "the guard ended inside a 60 s kill grace"
            time.sleep(0.05)
        guard.send_signal(signal.SIGKILL)  # as a runner's cancel does once its window is over
        guard.wait(30)
        data = json.loads(report.read_text())  # a whole JSON document, not one cut by the kill
    finally:
        if guard.poll() is None:
            guard.kill()
            guard.wait(30)
        _kill_pid_in(pid_file)
    assert data["verdict"] == "fail"
    assert data["command"]["timed_out"] is True and data["command"]["timeout_reason"] == "wall"
    assert data["command"]["exit_code"] is None  # the tree was still being ended
    hangs = [f for f in data["findings"] if f["kind"] == "hang"]
    assert [f["test"] for f in hangs] == ["test_stuck.py::test_waits_forever"]
    assert "test_waits_forever" in hangs[0]["message"]
    assert EARLY_REPORT_TITLE in [d["title"] for d in data["diagnostics"]]
    assert [p.name for p in report.parent.iterdir() if p.name != "logs"] == ["report.json"]


def test_the_full_report_replaces_the_early_one(tmp_path: Path):
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--timeout", "1", "--kill-grace", "1",
         "--log-dir", str(tmp_path / "logs"), "--json", str(report), "--",
         sys.executable, "-c", "import time; time.sleep(100)"],
        cwd=str(tmp_path), env=_env(), capture_output=True, timeout=120,
    )
    assert proc.returncode == 124, proc.stderr
    data = json.loads(report.read_text())
    assert data["command"]["exit_code"] is not None  # the tree was ended
    assert EARLY_REPORT_TITLE not in [d["title"] for d in data["diagnostics"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "report.json"]  # no .part left


def test_the_guard_tells_its_findings_before_the_stacks_and_again_before_any_signal(tmp_path: Path):
    marker = tmp_path / "got-sigterm"
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(f"""
        import signal, time

        def on_term(signum, frame):
            open({str(marker)!r}, "w").close()
            raise SystemExit(1)

        def wait_here():
            while True:
                time.sleep(0.05)

        signal.signal(signal.SIGTERM, on_term)
        wait_here()
    """))
    told = []

    def on_findings(command, findings):
        told.append((command, findings, marker.exists()))

    supervise(GuardOptions(
        argv=(sys.executable, str(program)), log_dir=str(tmp_path / "logs"), timeout_s=1.5,
        kill_grace_s=5, echo=False, on_findings=on_findings,
    ))
    assert marker.exists()  # the command did get its SIGTERM, after what was told
    assert len(told) == 2
    (first_command, first, first_signalled), (second_command, second, second_signalled) = told
    assert not first_signalled and not second_signalled
    assert first_command.exit_code is None and second_command.exit_code is None
    assert first_command.timed_out and second_command.timed_out
    assert [f.kind.value for f in first] == ["hang"] and PLACE_NOT_YET_KNOWN in first[0].message
    assert [f.kind.value for f in second] == ["hang"] and "wait_here" in second[0].message


@pytest.mark.parametrize("ln", ["ln -s", "ln"])
def test_a_link_planted_at_the_report_path_is_neither_written_through_early_nor_kept(tmp_path: Path, ln: str):
    # The early writes leave what the command planted for the final write, which removes it and says so
    # (file_commands.ReportPath), as when the command ends by itself.
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me\n")
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--timeout", "2", "--kill-grace", "1",
         "--log-dir", str(tmp_path / "logs"), "--json", str(report), "--",
         "sh", "-c", f'{ln} "{victim}" "{report}"; exec sleep 100'],
        cwd=str(tmp_path), env=_env(), capture_output=True, timeout=120,
    )
    assert proc.returncode == 124, proc
    assert victim.read_bytes() == b"keep me\n"
    assert report.is_file() and not report.is_symlink() and report.stat().st_nlink == 1
    data = json.loads(report.read_text())
    assert data["command"]["exit_code"] is not None  # the final report
    kind = "hard link" if ln == "ln" else "symlink"
    assert f"--json {report}: was replaced with a {kind} during the run" in proc.stderr.decode()


def test_the_first_early_report_names_the_test_the_log_shows_running(tmp_path: Path, monkeypatch):
    # Before any stack is read, only the log can say which test runs: pytest -v prints a test's id when
    # it starts. A runner's SIGKILL that comes while the 16 ranks' stacks are taken leaves this report.
    (tmp_path / "test_stuck.py").write_text(textwrap.dedent(STUCK_TEST))
    pid_file = tmp_path / "stuck.pid"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STUCK_PID_FILE", str(pid_file))
    options = GuardOptions(
        argv=(sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_stuck.py"),
        log_dir=str(tmp_path / "logs"), timeout_s=4, kill_grace_s=0.5, echo=False,
    )
    reports = []
    run = GuardedRun(options, load_catalogue(), engine="python", environ={}, on_early_report=reports.append)
    try:
        run.supervise()
    finally:
        run.close()
        _kill_pid_in(pid_file)
    assert len(reports) == 2
    [first] = reports[0].findings
    assert PLACE_NOT_YET_KNOWN in first.message
    assert first.test == "test_stuck.py::test_waits_forever"
    assert first.message.endswith(" test_stuck.py::test_waits_forever (the test the log shows running)")
    [second] = reports[1].findings
    # Named by the stack from Python 3.11 (co_qualname, diagnosis._QUALIFIED_FROM), by the log before.
    assert second.test == "test_stuck.py::test_waits_forever" and second.test in second.message
    assert PLACE_NOT_YET_KNOWN not in second.message
