"""The thread that takes the guard's cancel signals with their sender (analyzer/supervise/senders.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from analyzer.supervise import senders


def test_a_signal_is_handed_over_with_its_sender_and_stop_unblocks_as_before():
    taken = []
    arrived = threading.Event()
    watch = senders.SenderWatch((signal.SIGUSR1, signal.SIGUSR2),
                                lambda signum, pid: (taken.append((signum, pid)), arrived.set()))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert watch.start()
    try:
        assert {signal.SIGUSR1, signal.SIGUSR2} <= signal.pthread_sigmask(signal.SIG_BLOCK, [])
        with senders.unblocked():
            send = f"import os; os.kill({os.getpid()}, {int(signal.SIGUSR1)})"
            child = subprocess.Popen([sys.executable, "-c", send])
        assert child.wait(60) == 0
        assert arrived.wait(30)
    finally:
        watch.stop()
    assert taken == [(signal.SIGUSR1, child.pid)]
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # the wake-up of stop was not handed over
    assert not any(t.name == "guard-signal-senders" for t in threading.enumerate())


def test_a_child_started_inside_unblocked_has_no_signal_blocked():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
    try:
        with senders.unblocked():
            mask = subprocess.run(["grep", "SigBlk", "/proc/self/status"], capture_output=True, text=True)
        assert signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    assert mask.stdout.split() == ["SigBlk:", "0000000000000000"], mask.stdout
