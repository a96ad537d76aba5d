"""A FUSE file system whose server answers INIT and then never answers anything else.

A process that touches it sleeps in ``request_wait_answer`` once the server has read its request;
after a fatal signal it waits uninterruptibly (state D), so SIGKILL cannot end it: a real unkillable
process, like one wedged in a GPU driver. ``release()`` closes the device, which aborts the connection
and lets the process die, and detaches the mount. Needs root and ``/dev/fuse``.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading

FUSE_INIT = 26
_IN_HEADER = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
_OUT_HEADER = struct.Struct("<IiQ")  # len, error, unique
# fuse_init_out: major, minor, max_readahead, flags, max_background, congestion_threshold, max_write,
# time_gran, max_pages, map_alignment, flags2, max_stack_depth, unused[6]
_INIT_OUT = struct.Struct("<IIIIHHIIHHII24x")
_MNT_DETACH = 2


class StalledFuse:
    def __init__(self, mountpoint: str) -> None:
        self.mountpoint = mountpoint
        self.requests = []
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = os.open("/dev/fuse", os.O_RDWR | os.O_NONBLOCK)
        self._stop = threading.Event()
        options = f"fd={self._fd},rootmode=40000,user_id=0,group_id=0".encode()
        if self._libc.mount(b"ghg-stall", mountpoint.encode(), b"fuse", 0, options) != 0:
            err = ctypes.get_errno()
            os.close(self._fd)
            raise OSError(err, f"mount fuse on {mountpoint}: {os.strerror(err)}")
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        while not self._stop.is_set():
            poller.poll(50)
            try:
                request = os.read(self._fd, 1 << 17)
            except BlockingIOError:
                continue
            except OSError:
                return
            _, opcode, unique, *_ = _IN_HEADER.unpack_from(request)
            self.requests.append(opcode)
            if opcode == FUSE_INIT:
                major, minor, max_readahead = struct.unpack_from("<III", request, _IN_HEADER.size)
                body = _INIT_OUT.pack(7, min(minor, 31), max_readahead, 0, 16, 12, 4096, 1, 0, 0, 0, 0)
                os.write(self._fd, _OUT_HEADER.pack(_OUT_HEADER.size + len(body), 0, unique) + body)
            # Anything else is read and never answered: that is the point.

    def release(self) -> None:
        """Abort the connection (closing the device does it) and detach the mount; idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(5)
        os.close(self._fd)
        self._libc.umount2(self.mountpoint.encode(), _MNT_DETACH)
