"""A command whose progress display rewrites one line with ``\\r`` and prints no ``\\n`` for a long time:
the live scan matches the line's ``\\r``-ended states once they waited ``EARLY_WAIT_S`` for its end, so
``--abort-on`` sees an NCCL timeout printed between two progress states, and the line's end, when it
comes, adds no repeat and moves no line number. Real processes; ``no_process_left_behind`` (autouse)
proves that nothing is left alive.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

from tests.supervise.conftest import no_process_left_behind  # noqa: F401 - autouse in this module too
from tests.test_guarded import WATCHDOG_LINE

STUCK_IN_A_PROGRESS_LINE = """
    import sys, time
    sys.stdout.write("step 1\\r")
    sys.stdout.flush()
    time.sleep(0.3)
    sys.stdout.write("step 2\\r" + {line!r} + "\\r")  # the rank's watchdog fired; no newline follows
    sys.stdout.flush()
    time.sleep(300)
"""

ENDS_ITS_PROGRESS_LINE = """
    import sys, time
    sys.stdout.write("step 1\\r" + {line!r} + "\\rstep 2\\r")
    sys.stdout.flush()
    time.sleep(1.5)  # past the early look: its states were matched before the line ended
    sys.stdout.write("step 3\\r" + {line!r} + "\\rdone\\n")
    print("epoch 2")
    print("RuntimeError: CUDA error: an illegal memory access was encountered", flush=True)
"""


def guard(cwd: Path, *args: str) -> Tuple[int, Dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", *args], cwd=str(cwd), capture_output=True, timeout=180,
    )
    return proc.returncode, json.loads((cwd / "r.json").read_text())


def write(tmp_path: Path, text: str) -> Path:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(text.format(line=WATCHDOG_LINE)))
    return prog


def placed(report: Dict[str, Any]) -> List[Tuple[str, int, str]]:
    return [(f["rule"], f["line"], f["message"]) for f in report["findings"]]


def test_abort_on_fires_on_an_event_in_a_line_that_only_carriage_returns_end(tmp_path):
    # Before: the watchdog's text waited in the scan's carry for a "\n" that never came, and the run
    # went on to its 100 s --timeout (exit 124, timeout_reason "wall", no guard-aborted).
    prog = write(tmp_path, STUCK_IN_A_PROGRESS_LINE)
    started = time.monotonic()
    code, report = guard(
        tmp_path, "run", "--log-dir", "logs", "--json", "r.json", "--abort-on", "timeout",
        "--abort-grace", "1s", "--timeout", "100s", "--kill-grace", "2s", "--", sys.executable, str(prog),
    )
    took = time.monotonic() - started
    assert code == 124, report["findings"]
    assert report["command"]["timeout_reason"] == "aborted", report["findings"]
    hang = next(f for f in report["findings"] if f["kind"] == "hang")
    assert hang["rule"] == "guard-aborted" and "stdout.log:1" in hang["message"], hang
    watchdog = [f for f in report["findings"] if f["rule"] == "nccl-watchdog-timeout"]
    assert [(f["line"], "seen" in f["message"]) for f in watchdog] == [(1, False)], watchdog
    assert took < 60, took  # the abort ended it, not the 100 s timeout (generous bound)


def test_a_line_matched_before_it_ended_is_reported_as_a_scan_after_the_run_reports_it(tmp_path):
    # The same watchdog text on the line's two states, once before the early look and once after it:
    # one finding on line 1 (one per rule and line, as when the whole line is read at once), and the
    # lines after it keep their numbers.
    prog = write(tmp_path, ENDS_ITS_PROGRESS_LINE)
    code, live = guard(
        tmp_path, "run", "--log-dir", "logs", "--json", "r.json", "--", sys.executable, str(prog)
    )
    assert code == 1, live["findings"]
    code, after = guard(tmp_path, "scan", "--json", "r.json", str(tmp_path / "logs" / "stdout.log"))
    assert placed(live) == placed(after), (live["findings"], after["findings"])
    expected = [("nccl-watchdog-timeout", 1), ("cuda-error", 3)]
    assert [(rule, line) for rule, line, _ in placed(live)] == expected
    assert not any("seen" in message for _, _, message in placed(live)), live["findings"]


# red40: a bar redrawn for half an hour passes the scan's LINE_CAP (1 MiB); the states in the middle of such a
# line were dropped unread by the head-and-tail cut, so the watchdog between two of them never ended the run.
STUCK_IN_A_GIANT_PROGRESS_LINE = """
    import os, time
    def bar(first, last):
        os.write(1, b"".join(b"\\rEpoch 1: %7d/9999999 [00:01<00:02, 4.2it/s, loss=0.31]" % i
                             for i in range(first, last)))
    bar(0, 40000)  # 2.3 MB of states, no newline
    os.write(1, b"\\r" + {line!r}.encode())
    bar(40000, 80000)
    time.sleep(300)
"""


def test_abort_on_fires_on_an_event_in_the_middle_of_a_giant_progress_line(tmp_path):
    # Before: no finding until the 30 s --timeout, and then none either (exit 124, timeout_reason "wall").
    prog = write(tmp_path, STUCK_IN_A_GIANT_PROGRESS_LINE)
    code, report = guard(
        tmp_path, "run", "--log-dir", "logs", "--json", "r.json", "--abort-on", "timeout",
        "--abort-grace", "1s", "--timeout", "30s", "--kill-grace", "2s", "--", sys.executable, str(prog),
    )
    assert code == 124, report["findings"]
    assert report["command"]["timeout_reason"] == "aborted", report["findings"]
    watchdog = [f for f in report["findings"] if f["rule"] == "nccl-watchdog-timeout"]
    assert [f["line"] for f in watchdog] == [1], report["findings"]
