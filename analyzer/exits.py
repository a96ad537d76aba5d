"""One vocabulary for how a process ended, shared by the supervisor, the rules and every renderer.

Python reports death by signal N as ``-N``; shells and CI runners report ``128 + N``. Both describe
the same event, so both are described the same way: ``"exit 143 (SIGTERM)"``.
"""

from __future__ import annotations

import signal
from typing import Optional

SIGNAL_EXIT_BASE = 128
TIMEOUT_EXIT_STATUS = 124  # what coreutils timeout returns; CI users already read it as "timed out"


# NTSTATUS codes a crashed Windows process exits with (printed as 3221225477, -1073741819 or
# 0xC0000005); the names are Microsoft's (ntstatus.h).
WINDOWS_CRASH_STATUS = {
    0xC0000005: "STATUS_ACCESS_VIOLATION",
    0xC0000006: "STATUS_IN_PAGE_ERROR",
    0xC000008E: "STATUS_FLOAT_DIVIDE_BY_ZERO",
    0xC0000091: "STATUS_FLOAT_OVERFLOW",
    0xC0000094: "STATUS_INTEGER_DIVIDE_BY_ZERO",
    0xC00000FD: "STATUS_STACK_OVERFLOW",
    0xC0000374: "STATUS_HEAP_CORRUPTION",
    0xC0000409: "STATUS_STACK_BUFFER_OVERRUN",
}


def windows_status_name(status: int) -> Optional[str]:
    """``-1073741819``, ``3221225477`` (both 0xC0000005) -> ``"STATUS_ACCESS_VIOLATION"``."""
    return WINDOWS_CRASH_STATUS.get(status & 0xFFFFFFFF)


_RTMIN = int(getattr(signal, "SIGRTMIN", 0))
_RTMAX = int(getattr(signal, "SIGRTMAX", -1))
REAL_TIME_SIGNALS = range(_RTMIN, _RTMAX + 1)  # empty where the platform has none
# Python before 3.11 has no signal.SIGSTKFLT, which Linux has (16 on x86 and ARM; strsignal says where).
_UNNAMED_BY_PYTHON = (
    {"SIGSTKFLT": 16}
    if not hasattr(signal, "SIGSTKFLT") and getattr(signal, "strsignal", str)(16) == "Stack fault"
    else {}
)


def signal_name(signum: int) -> Optional[str]:
    """``15 -> "SIGTERM"``, ``35 -> "SIGRTMIN+1"`` (as bash's ``kill -l``); ``None`` for a number that is
    no signal on this platform."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        pass
    for name, number in _UNNAMED_BY_PYTHON.items():
        if number == signum:
            return name
    if _RTMIN < signum < _RTMAX:
        return f"SIGRTMIN+{signum - _RTMIN}"
    return None


def signal_number(name: str) -> Optional[int]:
    """``"SIGTERM"`` or ``"TERM"`` -> 15, ``"SIGRTMIN+1"`` -> 35; ``None`` when unknown."""
    key = name.upper()
    if not key.startswith("SIG"):
        key = "SIG" + key
    base, plus, offset = key.partition("+")
    if plus and base == "SIGRTMIN" and offset.isdigit() and _RTMIN + int(offset) <= _RTMAX:
        return _RTMIN + int(offset)
    try:
        return int(signal.Signals[key])
    except KeyError:
        return _UNNAMED_BY_PYTHON.get(key)


def signal_of_status(status: int) -> Optional[int]:
    """The signal a status stands for: ``-15`` (Python) and ``143`` (shell) both give 15."""
    if status < 0:
        return -status
    if SIGNAL_EXIT_BASE < status < SIGNAL_EXIT_BASE + 65 and signal_name(status - SIGNAL_EXIT_BASE):
        return status - SIGNAL_EXIT_BASE
    return None


def shell_status(returncode: int) -> int:
    """Python's ``returncode`` (``-N`` for a signal) as the shell's exit status (``128 + N``)."""
    return SIGNAL_EXIT_BASE - returncode if returncode < 0 else returncode


def describe_wait_status(status: int) -> str:
    """A raw wait(2) status of a process a signal ended, as MPICH's hydra prints it ("EXIT CODE: 134"
    for SIGABRT with a core): ``9 -> "signal 9 (SIGKILL)"``, ``134 -> "signal 6 (SIGABRT), core
    dumped"``; a status that names no signal reads ``"status N"``."""
    signum = status & 0x7F
    name = signal_name(signum) if signum else None
    if name is None:
        return f"status {status}"
    return f"signal {signum} ({name})" + (", core dumped" if status & 0x80 else "")


def describe_exit(status: Optional[int]) -> str:
    """A status as people read it: ``"exit 143 (SIGTERM)"``, ``"exit -9 (SIGKILL)"``, ``"exit 1"``."""
    if status is None:
        return "no exit (still running)"
    signum = signal_of_status(status)
    name = signal_name(signum) if signum is not None else None
    return f"exit {status} ({name})" if name else f"exit {status}"


# Statuses the guard gives for its own reasons (the timeout, a usage error: analyzer.verdict): a command
# that exits with one itself (coreutils' ``timeout`` inside it, argparse's usage error) is told apart in
# the report by ``timed_out`` and by the report being there at all; renderers say it in words too.
_GUARD_MEANINGS = {TIMEOUT_EXIT_STATUS: "the guard's timeout", 2: "a usage error of the guard"}


def describe_command_exit(status: Optional[int], timed_out: bool) -> str:
    """``describe_exit`` of a guarded command's status, saying so when the command itself exited with a
    status the guard also uses: ``"exit 124 (the command's own status, not the guard's timeout)"``."""
    meaning = None if timed_out or status is None else _GUARD_MEANINGS.get(status)
    if meaning is None:
        return describe_exit(status)
    return f"{describe_exit(status)} (the command's own status, not {meaning})"


# exit(3) keeps a status's low byte: a wrapper that passes its child's negative return code on
# (``sys.exit(proc.returncode)`` after a SIGKILL: ``exit(-9)``) exits 256 - 9 = 247, which Horovod's
# launcher then prints as "Process 10 exit with status code 247" (determined-ai/determined#5787).
# Only the classic signals 3-15 (SIGQUIT to SIGTERM) are read so: 255 and 254 are ``exit(-1)`` and
# ``exit(-2)``, errors programs report on purpose, and a status such as 200 is more likely a program's own.
_BYTE_SIGNALS = range(3, 16)


def signal_of_exit_byte(status: int) -> Optional[int]:
    """The signal an exit status that a wrapper passed on stands for: ``137`` (128 + 9, the shell's) or
    ``247`` (256 - 9, ``exit(-9)``) both give 9; ``255`` (``exit(-1)``) and plain failures give ``None``."""
    signum = signal_of_status(status)
    if signum is None and 256 - max(_BYTE_SIGNALS) <= status <= 256 - min(_BYTE_SIGNALS):
        signum = 256 - status if signal_name(256 - status) else None
    return signum if signum is not None and signum > 0 else None


def describe_exit_byte(status: int) -> str:
    """An exit status read as ``signal_of_exit_byte`` reads it: ``"exit 247 (SIGKILL, as 256 - 9)"``,
    ``"exit 137 (SIGKILL)"``, ``"exit 1"``."""
    signum = signal_of_exit_byte(status)
    if signum is None or status < 0:
        return describe_exit(status)
    name = signal_name(signum)
    if status > SIGNAL_EXIT_BASE + 64:
        return f"exit {status} ({name}, as 256 - {signum})"
    return f"exit {status} ({name})"
