"""Keep the guard running when the command stops it: a watcher that sends SIGCONT to a stopped guard.

The command runs as the guard's user, so it may send the guard (its parent, ``kill -STOP $PPID``)
SIGSTOP, which no process can catch, block or ignore (signal(7)). Stopped, the guard's clocks,
pumps and teardown all stand still and the job hangs until the runner's own timeout, hours later,
with no report. SIGCONT resumes a stopped process whatever sent the stop, and only another process
can send it: the watcher, a small process the guard starts before the command (so it is one of the
guard's helpers, never part of the command's tree), reads the guard's state every
``WATCH_INTERVAL_S`` and sends SIGCONT when it is ``T`` (stopped; ``t``, stopped by a debugger, is
left alone). The guard in turn resumes a stopped watcher on each wake-up, and starts a new one (up to
``MAX_RESTARTS``) when something ended it. A command that stops or kills the watcher and stops the
guard before the guard's next look still wins; that needs a deliberate race, not a stray ``kill``.

The watcher writes one byte on its stdout, a pipe to the guard, for each SIGCONT it sent, so the
report counts real stops only (a SIGCONT anyone sends a running guard is none); it makes itself
non-dumpable, so the same-user command can open neither that pipe nor its environment (empty anyway).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Optional

WATCH_INTERVAL_S = 0.1
MAX_RESTARTS = 10  # a command that kills the watcher in a loop must not make the guard fork in one

WATCHER_FILE = "analyzer/supervise/keepalive.py"  # its code's file name: how diagnosis tells it apart
WATCHER_BOOT = "<string>"  # the file name of its ``python -c`` boot's frame, below the file's own
_PR_SET_DUMPABLE = 4  # prctl(2), <linux/prctl.h>
# The watcher runs this file's code as read now, when the guard imports it before any command runs: a
# watcher started again after the command ended the first one must not run a file the command could have
# rewritten since (the package's directory is often the step's to write). Its frames keep the file's name.
_BOOT = ("import sys; path, source = sys.argv[1:3]; del sys.argv[1:3]; "
         "exec(compile(source, path, 'exec'), {'__name__': '__main__', '__file__': path})")


def _own_source() -> Optional[str]:
    try:
        with open(os.path.abspath(__file__), encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None  # a sourceless install: no watcher


_SOURCE = _own_source()


def state_of(pid: int) -> str:
    """The one-letter state of ``pid`` from ``/proc/PID/stat``; "" when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""


class KeepAlive:
    """The watcher process for this guard; ``start`` before the command, ``close`` after the run."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self._restarts = 0
        self._resumed = 0  # by watchers that ended before ``close``

    def start(self) -> Optional[int]:
        """Start the watcher; returns its pid, or None where it could not start (the run goes on)."""
        if _SOURCE is None:
            return None
        # No signal blocked in the watcher (the guard blocks its cancel signals while it runs, see
        # senders.py); not imported from there: this file also runs alone as the watcher.
        before = signal.pthread_sigmask(signal.SIG_SETMASK, ())
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, os.path.abspath(__file__), _SOURCE,
                 str(os.getpid()), str(WATCH_INTERVAL_S)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                close_fds=True, env={},  # dumpable after exec: the guard's environment stays the guard's
            )
        except OSError:
            self.proc = None
            return None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        return self.proc.pid

    def resume(self) -> Optional[int]:
        """SIGCONT the watcher if something stopped it, or start a new one if something ended it.

        Returns the new watcher's pid (one more of the guard's helpers), else None.
        """
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            if self._restarts >= MAX_RESTARTS:
                return None
            self._restarts += 1
            self._resumed += self._end(self.proc)
            return self.start()
        if state_of(self.proc.pid) == "T":
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except OSError:
                pass
        return None

    def close(self) -> int:
        """End the watcher and reap it; returns how many times watchers resumed the guard."""
        proc, self.proc = self.proc, None
        resumed, self._resumed = self._resumed + (self._end(proc) if proc is not None else 0), 0
        return resumed

    @staticmethod
    def _end(proc: subprocess.Popen) -> int:
        """Kill and reap ``proc`` (silent when it is gone); the resumes it wrote on its pipe."""
        try:
            proc.kill()
            proc.wait(1.0)
        except (OSError, subprocess.TimeoutExpired):
            pass
        with proc.stdout:
            os.set_blocking(proc.stdout.fileno(), False)
            try:
                return len(proc.stdout.read() or b"")
            except OSError:
                return 0


def watch_the_guard(guard: int, interval_s: float) -> None:
    """The watcher's loop (its process's main): SIGCONT ``guard`` when stopped, until it is gone."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(signum, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: no /proc to open either
    os.set_blocking(1, False)  # a full pipe (a guard stopped for hours) must not stop the watching
    while os.getppid() == guard:
        state = state_of(guard)
        if not state:
            return
        if state == "T":
            try:
                os.kill(guard, signal.SIGCONT)
            except OSError:
                return
            try:
                os.write(1, b"T")
            except OSError:
                pass
        time.sleep(interval_s)


if __name__ == "__main__":
    watch_the_guard(int(sys.argv[1]), float(sys.argv[2]))
