"""Red-team pass 10 of the guard: real hostile programs (tests/bin/), each a test that failed before its fix."""

from __future__ import annotations

import os
import sys
from pathlib import Path

BIN = Path(__file__).resolve().parent / "bin"


def _on_a_pty(argv):
    """Run ``argv`` with a real pty as its console; (exit status, every byte it wrote there)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: the guard, its console the pty
        os.execv(argv[0], argv)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the guard closed the pty
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def test_a_terminal_left_concealed_without_an_esc_byte_is_reset_before_the_report(tmp_path):
    # The command conceals the terminal and shifts it out with C1 and SO controls only (no ESC): the
    # guard reset the terminal only after an echo that held an ESC, so its "Failed" printed invisibly
    # (or as line graphics) under the forged "Passed".
    status, out = _on_a_pty([sys.executable, "-m", "analyzer", "run", "--log-dir", str(tmp_path / "logs"),
                             "--", sys.executable, str(BIN / "forge_a_pass_c1.py")])
    assert status == 1
    concealed, _, report = out.rpartition("\u009b30;40m\x0e".encode())
    assert concealed, out
    assert b"Failed" in report, report
    before = report[: report.index(b"Failed")]
    assert b"\x1b[0m" in before and b"\x0f" in before, report
