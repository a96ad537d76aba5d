"""The runner's cancel during the guard's own start-up (issue 8 item 6; red41's q02 first try).

A SIGTERM 7 s after the guard's start at load 14 met a guard still loading its catalogue: it died with
143 and left no report, and SIGINT there was a ``KeyboardInterrupt`` (130, no report). The cancel can
come at any moment: now ``python -m analyzer run`` records it from its first line (``early_cancel``),
starts nothing after it, and writes the report of a cancelled run (exit 124, ``guard-cancelled``).
The signal is sent by the guard process to itself at a known point, so no test depends on timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The guard's program up to the CLI, with the cancel arriving in between (as while the catalogue loads).
CANCELLED_IN_START_UP = textwrap.dedent("""
    import os, signal, sys
    from analyzer.supervise import early_cancel
    early_cancel.hold()
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    from analyzer.cli import main
    sys.exit(main(sys.argv[2:]))
""")

# The cancel after the CLI's last look and before ``supervise`` installs its handlers.
CANCELLED_BEFORE_SUPERVISE = textwrap.dedent("""
    import json, os, signal, sys
    from analyzer.supervise import early_cancel
    from analyzer.supervise.guard import GuardOptions, supervise
    early_cancel.hold()
    os.kill(os.getpid(), signal.SIGTERM)
    result = supervise(GuardOptions(argv=("sleep", "30"), log_dir=sys.argv[1], kill_grace_s=1.0))
    print(json.dumps(result.command.to_dict()))
""")


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_cancel_during_start_up_starts_nothing_and_leaves_a_report(tmp_path: Path, signame: str):
    started = tmp_path / "started"
    done = subprocess.run(
        [sys.executable, "-c", CANCELLED_IN_START_UP, signame, "run", "--log-dir", str(tmp_path / "logs"),
         "--json", str(tmp_path / "report.json"), "--summary", str(tmp_path / "summary.md"),
         "--github-output", str(tmp_path / "outputs"), "--", "touch", str(started)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 124, done.stderr  # as every cancel (README "Exit status")
    assert not started.exists(), "the command was started after the cancel"
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "fail"
    assert report["command"]["timeout_reason"] == "cancelled" and report["command"]["exit_code"] is None
    [finding] = report["findings"]
    assert finding["rule"] == "guard-cancelled"
    assert f"cancelled ({signame})" in finding["message"]
    assert "before the command started: nothing ran" in finding["message"]
    summary = (tmp_path / "summary.md").read_text()
    assert "never started (the run was cancelled first)" in summary
    assert "the guard killed it" not in summary
    assert "timed-out=true" in (tmp_path / "outputs").read_text()


def test_a_cancel_just_before_the_guards_handlers_still_cancels_the_run(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", CANCELLED_BEFORE_SUPERVISE, str(tmp_path / "logs")],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    command = json.loads(done.stdout.splitlines()[-1])
    # Without the hand-over the cancel was lost: the command ran its 30 s (or the guard died).
    assert command["timeout_reason"] == "cancelled"
    assert command["duration_s"] < 25

