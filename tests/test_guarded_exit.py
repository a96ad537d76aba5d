"""The guard's process ends itself once its report is out (issue 8 item 6: deadline to exit within the
kill grace + 1 s), and only when nothing is lost by skipping the interpreter's shutdown."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )


def test_the_cli_as_a_program_exits_with_the_reports_status_and_everything_written(tmp_path):
    report, summary = tmp_path / "report.json", tmp_path / "summary.md"
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "run", "--timeout", "2", "--kill-grace", "0.5",
         "--log-dir", str(tmp_path / "logs"), "--json", str(report), "--summary", str(summary),
         "--", sys.executable, str(REPO / "tests" / "bin" / "ignore_sigterm.py")],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    written = json.loads(report.read_text())
    assert (done.returncode, written["verdict"]) == (124, "fail"), done.stderr  # README's exit table
    assert any(f["kind"] == "hang" for f in written["findings"])
    assert "ignoring SIGTERM" in (tmp_path / "logs" / "stdout.log").read_text()
    assert summary.read_text().strip() and f"Logs: {tmp_path / 'logs'}" in done.stdout


def test_an_early_exit_runs_the_exit_handlers_and_flushes_every_open_file(tmp_path):
    done = python(
        """
        import atexit, sys
        from analyzer import cli
        kept = open(sys.argv[1], "w")  # never flushed nor closed: the interpreter's shutdown would
        kept.write("written, not flushed")
        atexit.register(lambda: open(sys.argv[2], "w").write("handler ran"))
        print("to stdout, buffered", end="")
        cli._exit_now(7)
        print("not reached")
        """,
        str(tmp_path / "kept.txt"), str(tmp_path / "atexit.txt"),
    )
    assert (done.returncode, done.stdout) == (7, "to stdout, buffered"), done.stderr
    assert (tmp_path / "kept.txt").read_text() == "written, not flushed"
    assert (tmp_path / "atexit.txt").read_text() == "handler ran"


def test_no_early_exit_while_another_thread_still_runs():
    done = python(
        """
        import threading
        from analyzer import cli
        go = threading.Event()
        worker = threading.Thread(target=lambda: (go.wait(), print("worker finished", flush=True)))
        worker.start()
        cli._exit_now(7)
        print("returned", flush=True)
        go.set()
        """
    )
    assert (done.returncode, done.stdout) == (0, "returned\nworker finished\n"), done.stderr
