"""A kernel containment sends several signals at one frozen instant (guard24, issue 8 item 6).

``escalate.send`` gives the cgroup SIGCONT and SIGTERM together: each freeze and thaw kicks every
thread of the tree out of its wait and back, which with 16 processes of 300 threads cost 0.05-0.1 s a
pair on 2 CPUs before the kill grace could start. A real process in a real cgroup, real signals.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from analyzer.supervise import containment

# Writes each signal it gets, by name, to stdout; ready once its handlers are in.
RECORDER = (
    "import os, signal, sys, time\n"
    "def note(signum, _frame):\n"
    "    os.write(1, signal.Signals(signum).name.encode() + b'\\n')\n"
    "for signum in (signal.SIGUSR1, signal.SIGUSR2):\n"
    "    signal.signal(signum, note)\n"
    "os.write(1, b'ready\\n')\n"
    "time.sleep(30)\n"
)


@pytest.fixture
def held():
    made = containment.open_containment("signals24")
    if not made.kernel:
        made.close()
        pytest.skip("a cgroup of the guard's own needs root or a delegated cgroup")
    yield made
    made.close()


def test_every_signal_reaches_every_member_in_order_under_one_freeze(held, monkeypatch):
    freezes = []
    thaw_and_freeze = held.freeze
    monkeypatch.setattr(held, "freeze", lambda frozen: (freezes.append(frozen), thaw_and_freeze(frozen)))
    member = subprocess.Popen([sys.executable, "-c", RECORDER], stdout=subprocess.PIPE,
                              preexec_fn=held.before_exec())
    try:
        assert member.stdout.readline() == b"ready\n"
        reached = held.signal(signal.SIGUSR1, signal.SIGUSR2)
        assert reached == {member.pid}
        got = [member.stdout.readline().strip() for _ in range(2)]
        assert got == [b"SIGUSR1", b"SIGUSR2"]
        assert freezes == [True, False], "one freeze and one thaw for both signals"
    finally:
        member.kill()
        member.wait()
    held.kill(1.0)
    deadline = time.monotonic() + 5
    while held.members() and time.monotonic() < deadline:
        time.sleep(0.01)
