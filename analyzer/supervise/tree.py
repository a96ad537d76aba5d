"""Find every process of the guarded tree and describe each one as the kernel sees it.

The tree is the union of: the command and its descendants; every process whose environment holds
the run's token (descendants that ``setsid()`` or double-fork away keep it); and the guard's own
children adopted after the command started (orphans re-parented to the subreaper, found even if they
cleared their environment), with their descendants.
"""

from __future__ import annotations

import os
import time
from typing import Dict, Iterable, List, Optional, Set

import psutil

from ..model import ProcessInfo

_MAX_CMDLINE = 300
_MAX_KERNEL_STACK = 2000
_PRINTABLE = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})  # one process, one line


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return needle in b"\0" + data


def _token_pids(token_env: str, token: str) -> Set[int]:
    needle = f"\0{token_env}={token}\0".encode()
    pids = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return pids
    for entry in entries:
        if entry.isdigit() and _has_token(int(entry), needle):
            pids.add(int(entry))
    return pids


def find_tree(
    root_pid: int,
    token_env: str,
    token: str,
    started_at: float,
    exclude: Iterable[int] = (),
) -> List[psutil.Process]:
    """Living processes of the tree, parents before their descendants; the guard itself never.

    ``started_at`` is the command's start in ``time.time()`` seconds: guard children created before it
    are not the command's. ``exclude`` holds the guard's helpers (py-spy, nvidia-smi).
    """
    skip = set(exclude) | {os.getpid()}
    found: Dict[int, psutil.Process] = {}

    def add_with_descendants(proc: psutil.Process) -> None:
        if proc.pid in skip or proc.pid in found:
            return
        found[proc.pid] = proc
        try:
            for child in proc.children(recursive=True):
                if child.pid not in skip:
                    found.setdefault(child.pid, child)
        except psutil.Error:
            pass

    for pid in [root_pid, *sorted(_token_pids(token_env, token))]:
        try:
            add_with_descendants(psutil.Process(pid))
        except psutil.Error:
            continue
    try:
        for child in psutil.Process().children():
            try:
                if child.create_time() >= started_at - 1.0:
                    add_with_descendants(child)
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return [proc for proc in found.values() if is_alive(proc)]


def is_alive(proc: psutil.Process) -> bool:
    """Running (same process, not a zombie): what "still alive" means for teardown and leak checks."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _read(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "backslashreplace").strip()
    except OSError:
        return ""


def _stat_fields(pid: int) -> Optional[List[str]]:
    """Fields of ``/proc/PID/stat`` after the command name (which may hold spaces and parentheses)."""
    text = _read(f"/proc/{pid}/stat", 4096)
    if ")" not in text:
        return None
    return text.rsplit(")", 1)[1].split()


def _age_s(fields: Optional[List[str]]) -> Optional[float]:
    """Seconds since the process started, from its start time in clock ticks after boot.

    More precise than ``psutil.create_time()``, whose boot time is rounded to whole seconds.
    """
    try:
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of /proc/PID/stat
        uptime = float(_read("/proc/uptime", 100).split()[0])
    except (TypeError, IndexError, ValueError, OSError):
        return None
    return max(0.0, uptime - started)


def describe(proc: psutil.Process, now: Optional[float] = None) -> ProcessInfo:
    """Pid, parent, state letter, command line, kernel wait channel and stack of one process."""
    pid = proc.pid
    fields = _stat_fields(pid)
    state = fields[0] if fields else "?"
    ppid = int(fields[1]) if fields else 0
    try:
        cmdline = " ".join(proc.cmdline()).translate(_PRINTABLE) or f"[{proc.name()}]"
    except psutil.Error:
        cmdline = "?"
    age = _age_s(fields)
    if age is None:
        try:
            age = (now or time.time()) - proc.create_time()
        except psutil.Error:
            age = 0.0
    wchan = _read(f"/proc/{pid}/wchan", 200)
    return ProcessInfo(
        pid=pid,
        ppid=ppid,
        state=state,
        cmdline=cmdline[:_MAX_CMDLINE],
        wchan="" if wchan == "0" else wchan,
        kernel_stack=_read(f"/proc/{pid}/stack", _MAX_KERNEL_STACK),
        started_s_ago=max(0.0, age),
    )


def is_python(proc: psutil.Process) -> bool:
    """Whether ``proc`` runs a Python interpreter (worth a ``py-spy dump``)."""
    try:
        names = [os.path.basename(proc.exe())]
    except psutil.Error:
        names = []
    try:
        cmdline = proc.cmdline()
        if cmdline:
            names.append(os.path.basename(cmdline[0]))
    except psutil.Error:
        pass
    return any(name.startswith(("python", "pypy")) for name in names)


def format_table(infos: Iterable[ProcessInfo]) -> str:
    """The process table of ``processes.txt``: one block per process, kernel stack indented under it."""
    lines = ["PID     PPID    STATE  AGE_S    WCHAN                     COMMAND"]
    for info in infos:
        lines.append(
            f"{info.pid:<7} {info.ppid:<7} {info.state:<6} {info.started_s_ago:<8.1f} "
            f"{(info.wchan or '-'):<25} {info.cmdline}"
        )
        if info.kernel_stack:
            lines.extend("        " + row for row in info.kernel_stack.splitlines())
    return "\n".join(lines) + "\n"
