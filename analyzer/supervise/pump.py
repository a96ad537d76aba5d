"""Copy the command's stdout and stderr, live and byte-exact, to the saved logs and then to the console.

One thread per stream does ``os.read`` of up to 1 MiB (the pipe's size: one system call drains a
full pipe), writes the bytes to the log file and only then to the console: no decoding, no per-line
work (a per-line timestamp made a Python pump 24x slower than ``tee``, which would stall the very
test being watched). The log is the evidence and must be complete whatever the console does; the
console may lag (a slow reader slows the command, as with ``tee``) or be cut, never the log. The
pipe is read non-blocking, so the guard can stop a pump whose pipe is held open by a process that
will never exit instead of waiting for EOF; stopping first drains what is already in the pipe into
the log, within a bound, without echoing it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import stat
import struct
import termios
import threading
import time
from typing import Callable, Optional

CHUNK_BYTES = 1 << 20
# A write of at most PIPE_BUF bytes to a pipe that poll(2) calls writable does not block (pipe(7)),
# so the console is written in such pieces when it is a pipe: a stuck reader cannot hold the pump.
_PIPE_PIECE = select.PIPE_BUF if hasattr(select, "PIPE_BUF") else 4096
_F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)  # fcntl(2); Python names it from 3.10
_PAGE = 4096
_POLL_MS = 100
_CONSOLE_WAIT_S = 0.05
# How long one of the guard's own console writes waits for a console that takes no byte at all (its
# reader is stopped or hung: a command can SIGSTOP the guard's parent). After one such stall the console
# is given up for good: no later line of the guard, and no more of the command's echo, waits for it.
CONSOLE_STALL_S = 2.0

OnOutput = Callable[[str, int, float], None]


# Bytes that start a terminal mode change: ESC; the 8-bit CSI, OSC and DCS (0x9B, 0x9D, 0x90, also the
# second byte of their UTF-8 form U+009B..., which VTE and xterm obey); SO, which shifts to the G1 set
# (line graphics on the Linux console). Each is one memchr per chunk until the first is seen.
_MODE_BYTES = (b"\x1b", b"\x9b", b"\x9d", b"\x90", b"\x0e")


class Activity:
    """When either stream last produced a byte (``time.monotonic()``); the idle clock reads it.

    Written by the pump threads and read by the guard; a float attribute store is atomic in CPython.
    """

    def __init__(self) -> None:
        self.last = time.monotonic()


class Console:
    """One console file descriptor shared by the pumps that echo to it, and the guard's own lines.

    Every write goes through ``lock``; once ``cut`` is called no byte of the command reaches the
    console any more, so a line the guard writes after it (the resume line) is the last word.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.last_byte = b""
        self.wrote = False
        self.escaped = False  # the command's echo held a control that sets terminal modes (_MODE_BYTES)
        # Called with each run of the command's bytes that reached this console, under ``lock``.
        self.follow: Optional[Callable[[bytes], None]] = None
        self.lock = threading.Lock()
        self._cut = False
        self._broken = False
        self._stalled = False
        self._pipe_bytes = 0
        try:
            mode = os.fstat(fd).st_mode
            self._blocking_pieces = not (stat.S_ISREG(mode) or stat.S_ISCHR(mode))
            if stat.S_ISFIFO(mode):
                self._pipe_bytes = fcntl.fcntl(fd, _F_GETPIPE_SZ)
        except OSError:
            self._broken = True
            self._blocking_pieces = False

    @property
    def is_cut(self) -> bool:
        return self._cut or self._broken or self._stalled

    @property
    def broken(self) -> bool:
        """The console went away (closed pipe, bad descriptor): nothing more can be said on it."""
        return self._broken

    def cut(self, timeout_s: float) -> bool:
        """Stop the command's echo; True when no command write was in progress after ``timeout_s``."""
        got = self.lock.acquire(timeout=max(0.0, timeout_s))
        self._cut = True
        if got:
            self.lock.release()
        return got

    def echo(self, data: bytes) -> int:
        """Write the command's ``data``, piece by piece, until done or the console is cut or gone.

        Returns how many bytes reached the console.
        """
        if not self.escaped:
            self.escaped = any(byte in data for byte in _MODE_BYTES)
        view = memoryview(data)
        while view and not self.is_cut:
            if self._blocking_pieces:
                try:
                    _, ready, _ = select.select([], [self.fd], [], _CONSOLE_WAIT_S)
                except (OSError, ValueError):
                    self._broken = True
                    return len(data) - len(view)
                if not ready:
                    continue
            piece = view[: self._piece_bytes()] if self._blocking_pieces else view
            with self.lock:
                if self._cut:
                    return len(data) - len(view)
                written = _write_some(self.fd, piece)
                if written < 0:
                    self._broken = True  # the console went away; the log still gets every byte
                    return len(data) - len(view)
                if written:
                    self.wrote = True
                    self.last_byte = bytes(piece[written - 1: written])
                    if self.follow is not None:
                        self.follow(bytes(piece[:written]))
            if not written:  # a non-blocking console that is full
                try:
                    select.select([], [self.fd], [], _CONSOLE_WAIT_S)
                except (OSError, ValueError):
                    self._broken = True
                    return len(data) - len(view)
            view = view[written:]
        return len(data) - len(view)

    def _piece_bytes(self) -> int:
        """How much one write may carry without blocking: PIPE_BUF, or what a pipe surely has free.

        A pipe holds ``size / PAGE`` page slots; a write that does not fit the last slot's room
        starts a new one, so two neighbouring slots hold more than a page between them and the
        unread bytes (FIONREAD, either end) fill at most ``2 * unread / PAGE + 2`` slots. What is
        surely free beyond that may go in one write; otherwise PIPE_BUF, which never blocks once
        poll(2) says writable (pipe(7); fs/pipe.c pipe_write). Big writes when the reader keeps up
        cost a Python pump far fewer system calls than PIPE_BUF pieces.
        """
        if not self._pipe_bytes:
            return _PIPE_PIECE
        try:
            unread = struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        except OSError:
            return _PIPE_PIECE
        return max(_PIPE_PIECE, self._pipe_bytes - 2 * unread - 3 * _PAGE)

    def write_own(self, data: bytes, stall_s: float = CONSOLE_STALL_S) -> bool:
        """Write one of the guard's own lines: a bounded wait for the lock, then for the console.

        False when the console took no byte for ``stall_s`` (it is then given up: see
        ``CONSOLE_STALL_S``), went away, or was given up before.
        """
        got = self.lock.acquire(timeout=1.0)
        try:
            view = memoryview(data)
            since = time.monotonic()
            while view and not (self._broken or self._stalled):
                left = stall_s - (time.monotonic() - since)
                if left <= 0:
                    self._stalled = True
                    break
                if self._blocking_pieces:
                    try:
                        _, ready, _ = select.select([], [self.fd], [], left)
                    except (OSError, ValueError):
                        self._broken = True
                        break
                    if not ready:
                        continue
                piece = view[: self._piece_bytes()] if self._blocking_pieces else view
                written = _write_some(self.fd, piece)
                if written < 0:
                    self._broken = True
                elif written == 0:  # a non-blocking console that is full
                    select.select([], [self.fd], [], min(left, _CONSOLE_WAIT_S))
                else:
                    self.last_byte = bytes(piece[written - 1: written])
                    view = view[written:]
                    since = time.monotonic()
            return not view
        finally:
            if got:
                self.lock.release()


class StreamPump:
    """Pump ``src_fd`` into ``log_fd`` (owned and closed by the pump), then echo it to ``console``.

    ``copy_fd`` (owned and closed too), when given, gets every chunk first: the guard's private copy,
    an unlinked file the command cannot open by any path, so it stays what the command printed even
    if the command rewrites the visible log in place.
    """

    def __init__(
        self,
        name: str,
        src_fd: int,
        log_fd: int,
        console: Optional[Console],
        activity: Activity,
        on_output: Optional[OnOutput] = None,
        copy_fd: int = -1,
    ):
        self.name = name
        self.bytes = 0  # read from the pipe
        self.logged = 0  # of those, in the log (less only after a write error)
        self.log_error = ""  # why the log stopped growing ("No space left on device"), if it did
        self.echoed = 0
        self.last_byte = b""
        self.eof = threading.Event()
        self._fd = src_fd
        self._log_fd = log_fd
        self._copy_fd = copy_fd
        self._console = console
        self._activity = activity
        self._on_output = on_output
        self._stop_by: Optional[float] = None
        self._stop_now = False
        self._thread = threading.Thread(target=self._run, name=f"guard-pump-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, drain_s: float = 0.0, now: bool = False) -> None:
        """Stop echoing; copy what is already in the pipe into the log for up to ``drain_s``, then end.

        With ``now``, end after the current chunk without draining.
        """
        if self._stop_by is None:
            self._stop_by = time.monotonic() + max(0.0, drain_s)
        self._stop_now = self._stop_now or now

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the thread; True when it has finished."""
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    @property
    def finished(self) -> bool:
        return not self._thread.is_alive()

    @property
    def console(self) -> Optional[Console]:
        return self._console

    def _run(self) -> None:
        try:
            os.set_blocking(self._fd, False)
            poller = select.poll()
            poller.register(self._fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            while not self._stop_now:
                stop_by = self._stop_by
                if stop_by is not None and time.monotonic() >= stop_by:
                    break
                try:
                    chunk = os.read(self._fd, CHUNK_BYTES)
                except BlockingIOError:
                    if stop_by is not None:
                        break  # stopping, and the pipe is dry
                    poller.poll(_POLL_MS)
                    continue
                except OSError:
                    break
                if not chunk:
                    self.eof.set()
                    break
                arrived = time.monotonic()
                self._activity.last = arrived
                if not self.log_error:
                    self._log(chunk)
                self.bytes += len(chunk)
                self.last_byte = chunk[-1:]
                self._tell(arrived)
                if self._console is not None and self._stop_by is None:
                    self.echoed += self._console.echo(chunk)
        finally:
            os.close(self._log_fd)
            if self._copy_fd >= 0:
                os.close(self._copy_fd)
            self._tell(time.monotonic())

    def _log(self, chunk: bytes) -> None:
        # The copy first: ``logged`` counts bytes in both, the copy being what the scan reads.
        for fd in (self._copy_fd, self._log_fd):
            if fd >= 0 and not _write_all(fd, chunk, self):
                return
        self.logged += len(chunk)

    def _tell(self, arrived: float) -> None:
        """Call ``on_output``; one that fails is dropped, the log must not stop for it."""
        if self._on_output is None:
            return
        try:
            self._on_output(self.name, self.logged, arrived)
        except Exception:  # noqa: BLE001 - the caller's hook; the pump's job is the log
            self._on_output = None


def _write_all(fd: int, chunk: bytes, pump: StreamPump) -> bool:
    view = memoryview(chunk)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError as err:
            # A full disk: the command keeps running (and echoing); the guard says the log is short.
            pump.log_error = err.strerror or str(err)
            return False
        view = view[written:]
    return True


def _write_some(fd: int, data: memoryview, wait_s: float = 0.0) -> int:
    """One write of ``data`` to ``fd``: bytes written, 0 when it would block, -1 when ``fd`` is unusable."""
    while True:
        try:
            return os.write(fd, data)
        except BlockingIOError:
            if wait_s <= 0:
                return 0
            select.select([], [fd], [], wait_s)
            wait_s = 0.0
        except InterruptedError:
            continue
        except OSError as err:
            if err.errno in (errno.EPIPE, errno.EBADF, errno.EIO, errno.ENOSPC, errno.EINVAL):
                return -1
            raise
