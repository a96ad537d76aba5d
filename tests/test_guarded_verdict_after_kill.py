"""A verdict the run printed only because the guard ended it is no verdict.

A suite whose conftest turns SIGTERM into KeyboardInterrupt (``signal.default_int_handler``, as training
harnesses do for a graceful stop) makes pytest print "1 passed in 5.21s" when the guard's timeout sends
SIGTERM. Read as the run's verdict, the hang became "a hang at interpreter exit" and the stuck test was
dropped. Real pytest runs under the real guard; the control hangs in atexit after a real verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from analyzer.model import Kind

SIGTERM_RAISES = """
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)
"""

STUCK = """
    import time


    def test_fast():
        pass


    def test_stuck():
        time.sleep(120)
"""

HANGS_AT_EXIT = """
    import atexit
    import time

    atexit.register(time.sleep, 120)


    def test_fast():
        pass
"""


def _guarded_pytest(tmp_path: Path, files: dict) -> dict:
    for name, body in files.items():
        (tmp_path / name).write_text(textwrap.dedent(body))
    report = tmp_path / "report.json"
    guard = [sys.executable, "-m", "analyzer", "run", "--timeout", "4", "--kill-grace", "2",
             "--json", str(report), "--log-dir", str(tmp_path / "logs")]
    tests = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(tmp_path)]
    subprocess.run([*guard, "--", *tests], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=str(tmp_path), timeout=120)
    return json.loads(report.read_text())


def _hang(report: dict) -> dict:
    (hang,) = [f for f in report["findings"] if f["kind"] == Kind.HANG.value]
    return hang


def test_a_verdict_printed_on_the_guards_sigterm_leaves_the_stuck_test_named(tmp_path):
    report = _guarded_pytest(tmp_path, {"conftest.py": SIGTERM_RAISES, "test_stuck.py": STUCK})
    assert "passed in" in (tmp_path / "logs" / "stdout.log").read_text()  # what this test is about
    hang = _hang(report)
    assert hang["test"].endswith("test_stuck.py::test_stuck")
    assert "it never reported an outcome" in hang["message"]
    assert "after the test run printed its verdict" not in hang["message"]


def test_a_verdict_printed_before_the_clock_ran_out_still_makes_a_hang_at_exit(tmp_path):
    report = _guarded_pytest(tmp_path, {"test_exit.py": HANGS_AT_EXIT})
    assert "after the test run printed its verdict (1 passed in" in _hang(report)["message"]
