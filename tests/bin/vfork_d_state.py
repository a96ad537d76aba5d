"""A parent in state D: clone(CLONE_VFORK) blocks it until the child execs or exits, and the child stops.

Plain clone(CLONE_VFORK) without CLONE_VM gives the child its own copy of memory, so the child can
safely keep running Python (a real vfork() child would share and trample the parent's stack).
The parent's wait is killable (SIGKILL ends it) but SIGTERM stays pending while it waits.
Prints ``parent pid=N`` first.
"""

import ctypes
import os
import platform
import signal

CLONE_VFORK = 0x00004000
SYS_CLONE = {"x86_64": 56, "aarch64": 220}[platform.machine()]

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print(f"parent pid={os.getpid()}", flush=True)
pid = libc.syscall(SYS_CLONE, ctypes.c_ulong(CLONE_VFORK | signal.SIGCHLD), None, None, None, None)
if pid == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
os.waitpid(pid, 0)
