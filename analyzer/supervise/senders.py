"""Who sent the guard a cancel signal: the runner, from outside the tree, or the command itself.

A Python signal handler is not told the sender, so a test that SIGTERMs its parent (the guard) or the
guard's process group read as the runner's cancel: the run was ended and reported "cancelled (SIGTERM)"
(issue 8 item 6, guard23). While the command runs the guard blocks its cancel signals in its threads and
one thread takes them with sigtimedwait(2), whose siginfo names the sending process (``si_pid``).

The signal mask is inherited across fork and kept across execve (signal(7)), and the command and every
helper must see the signals: the command empties its mask in the child (``unblock_then``: its
`kill $PPID` can come before Popen returns), each helper is started inside ``unblocked()``. A signal
that comes while a thread is inside it goes the old way, to the Python handler: a cancel, sender unknown.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Callable, Iterator, Optional, Sequence

_WAIT_S = 1.0  # a bound only: ``stop`` wakes the thread with a signal of its own


@contextlib.contextmanager
def unblocked() -> Iterator[None]:
    """No signal blocked in the calling thread while a child is started in it (then as before)."""
    before = signal.pthread_sigmask(signal.SIG_SETMASK, ())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def unblock_then(before_exec: Optional[Callable[[], None]]) -> Callable[[], None]:
    """A ``preexec_fn``: no signal blocked in the child, then ``before_exec`` (system calls only)."""

    def child() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if before_exec is not None:
            before_exec()

    return child


class SenderWatch:
    """Takes ``signals`` with their sender and hands ``take(signum, sender_pid)`` each one.

    ``start`` (main thread only) blocks them in the calling thread, so in every thread started after it,
    and starts the taking thread; ``stop`` ends the thread and unblocks them again, after which a signal
    pending or new goes to the Python handlers. Where no thread can be started nothing is blocked.
    """

    def __init__(self, signals: Sequence[int], take: Callable[[int, int], None]) -> None:
        self.signals = tuple(signals)
        self._take = take
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._before: Optional[set] = None

    def start(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        self._before = signal.pthread_sigmask(signal.SIG_BLOCK, self.signals)
        self._thread = threading.Thread(target=self._loop, name="guard-signal-senders", daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # "can't start new thread": the handlers take them, sender unknown
            self._thread = None
            signal.pthread_sigmask(signal.SIG_SETMASK, self._before)
            self._before = None
            return False
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            info = signal.sigtimedwait(self.signals, _WAIT_S)
            if info is None:
                continue
            if self._stop.is_set() and info.si_pid == os.getpid() and info.si_signo == self.signals[-1]:
                return  # the wake-up from ``stop`` (its si_code reads SI_USER, as a kill(2) of its own)
            self._take(info.si_signo, info.si_pid)

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        if self._thread.ident is not None:
            # Waiting out the poll cost the exit up to its length (issue 8 item 6: every 0.1 s counts).
            signal.pthread_kill(self._thread.ident, self.signals[-1])
        self._thread.join()
        self._thread = None
        if self._before is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._before)
            self._before = None
