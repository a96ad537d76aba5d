"""Copy the command's stdout and stderr, live and byte-exact, to the console and to the saved logs.

One thread per stream does ``os.read`` of up to 64 KiB and writes the same bytes to the console and to
the log file: no decoding, no per-line work (a per-line timestamp made a Python pump 24x slower than
``tee``, which would stall the very test being watched). The pipe is read non-blocking, so the guard
can stop a pump whose pipe is held open by a process that will never exit instead of waiting for EOF.
"""

from __future__ import annotations

import errno
import os
import select
import threading
import time
from typing import Optional

CHUNK_BYTES = 64 * 1024
_POLL_MS = 100


class Activity:
    """When either stream last produced a byte (``time.monotonic()``); the idle clock reads it.

    Written by the pump threads and read by the guard; a float attribute store is atomic in CPython.
    """

    def __init__(self) -> None:
        self.last = time.monotonic()


class StreamPump:
    """Pump ``src_fd`` into ``log_path`` (created here, so errors surface in the caller) and ``echo_fd``."""

    def __init__(self, name: str, src_fd: int, log_path: str, echo_fd: Optional[int], activity: Activity):
        self.name = name
        self.bytes = 0
        self.last_byte = b""
        self.eof = threading.Event()
        self._fd = src_fd
        self._echo_fd = echo_fd
        self._activity = activity
        self._stop_when_dry = False
        self._stop_now = False
        self._log = open(log_path, "ab", buffering=0)  # noqa: SIM115 - closed by the thread
        self._thread = threading.Thread(target=self._run, name=f"guard-pump-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, now: bool = False) -> None:
        """Stop at the next moment the pipe is empty (or, with ``now``, after the current chunk)."""
        self._stop_when_dry = True
        self._stop_now = self._stop_now or now

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the thread; True when it has finished."""
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            os.set_blocking(self._fd, False)
            poller = select.poll()
            poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            while not self._stop_now:
                try:
                    chunk = os.read(self._fd, CHUNK_BYTES)
                except BlockingIOError:
                    if self._stop_when_dry:
                        break
                    poller.poll(_POLL_MS)
                    continue
                except OSError:
                    break
                if not chunk:
                    self.eof.set()
                    break
                self._activity.last = time.monotonic()
                if self._echo_fd is not None and not _write_all(self._echo_fd, chunk):
                    self._echo_fd = None  # the console went away; the log still gets every byte
                _write_all(self._log.fileno(), chunk)
                self.bytes += len(chunk)
                self.last_byte = chunk[-1:]
        finally:
            self._log.close()


def _write_all(fd: int, data: bytes) -> bool:
    """Write every byte of ``data`` to ``fd`` (which may be non-blocking); False if ``fd`` is unusable."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        except InterruptedError:
            continue
        except OSError as err:
            if err.errno in (errno.EPIPE, errno.EBADF, errno.EIO, errno.ENOSPC, errno.EINVAL):
                return False
            raise
        view = view[written:]
    return True
