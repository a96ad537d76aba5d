"""Find every process of the guarded tree and describe each one as the kernel sees it.

The tree is the union of: the members of the run's cgroup when the kernel holds it (see
``containment``); the command and its descendants; every process whose environment holds the run's
token (descendants that ``setsid()`` or double-fork away keep it); and the guard's own children
adopted after the command started (orphans re-parented to the subreaper, found even if they cleared
their environment), with their descendants.

One walk reads ``/proc`` once and builds one parent map, so it costs O(processes) however many
orphans and zombies there are (psutil's ``children()`` rebuilds that map on every call, which made
a walk of 2,000 adopted orphans quadratic). A process is named by its pid *and* its start time, so a
recycled pid is never mistaken for the process it replaced.
"""

from __future__ import annotations

import collections
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ..model import ProcessInfo
from ..redact import redact

_MAX_CMDLINE = 300
_MAX_KERNEL_STACK = 2000
_PRINTABLE = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})  # one process, one line
_GONE_STATES = ("Z", "X", "x")


@dataclass(frozen=True)
class Proc:
    """One process: its pid and its start time in clock ticks after boot (``/proc/PID/stat`` field 22)."""

    pid: int
    start: int


@dataclass(frozen=True)
class Stat:
    """The fields of ``/proc/PID/stat`` the guard uses."""

    state: str
    ppid: int
    start: int


def _read(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "backslashreplace").strip()
    except OSError:
        return ""


def read_stat(pid: int) -> Optional[Stat]:
    """State, parent and start time of ``pid``, or None when it is gone.

    A process whose main thread exited while others run on shows its leader as a zombie; its state is
    then that of a thread still running (see ``proc_dir``).
    """
    parsed = _parse_stat_and_threads(f"/proc/{pid}/stat")
    if parsed is None:
        return None
    stat, threads = parsed
    # A real zombie counts one thread (its own): only a leader with threads left is worth a look, and
    # the look (a listdir) per zombie made every walk of a tree of thousands of zombies slow.
    if stat.state != "Z" or threads <= 1:
        return stat
    thread = _live_thread(pid)
    if thread is None:
        return stat
    running = _parse_stat(f"{thread}/stat")
    return Stat(running.state, stat.ppid, stat.start) if running is not None else stat


def _parse_stat(path: str) -> Optional[Stat]:
    """Fields 3, 4 and 22 of a stat file; the command name (field 2) may hold spaces and parentheses, so
    fields are counted after its last ``)``."""
    parsed = _parse_stat_and_threads(path)
    return parsed[0] if parsed is not None else None


def _parse_stat_and_threads(path: str) -> Optional[Tuple[Stat, int]]:
    """``_parse_stat`` and field 20, the number of threads (proc(5))."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(4096)
    except OSError:
        return None
    _, paren, rest = text.rpartition(b")")
    fields = rest.split()
    if not paren or len(fields) < 20:
        return None
    try:
        return Stat(fields[0].decode("ascii", "replace"), int(fields[1]), int(fields[19])), int(fields[17])
    except ValueError:
        return None


def _live_thread(pid: int) -> Optional[str]:
    """``/proc/PID/task/TID`` of a thread still running in ``pid`` whose leader is a zombie, else None.

    A main thread that calls ``pthread_exit`` leaves the process running in its other threads while the
    kernel shows the leader as a zombie without command line, wait channel or memory: read as gone,
    such a command was never signalled by the process scan (it outlived the guard) and was said to have
    been "gone before it could be inspected". A real zombie has no other thread.
    """
    try:
        tids = sorted(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None
    for tid in tids:
        stat = _parse_stat(f"/proc/{pid}/task/{tid}/stat") if tid != str(pid) else None
        if stat is not None and stat.state not in _GONE_STATES:
            return f"/proc/{pid}/task/{tid}"
    return None


def proc_dir(pid: int) -> str:
    """Where ``/proc`` shows what ``pid`` runs: its own entry, or a running thread's if its leader exited."""
    stat = _parse_stat(f"/proc/{pid}/stat")
    return (_live_thread(pid) if stat is not None and stat.state == "Z" else None) or f"/proc/{pid}"


def proc_of(pid: int) -> Optional[Proc]:
    """The process now running as ``pid`` (None when there is none or it already exited)."""
    stat = read_stat(pid)
    if stat is None or stat.state in _GONE_STATES:
        return None
    return Proc(pid, stat.start)


def is_alive(proc: Proc) -> bool:
    """Running (same process, not a zombie): what "still alive" means for teardown and leak checks."""
    stat = read_stat(proc.pid)
    return stat is not None and stat.start == proc.start and stat.state not in _GONE_STATES


def all_stats() -> Dict[int, Stat]:
    """One pass over ``/proc``: every process's state, parent and start time."""
    table: Dict[int, Stat] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            stat = read_stat(int(entry))
            if stat is not None:
                table[int(entry)] = stat
    return table


def _has_token(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return needle in b"\0" + data


def carries_token(pid: int, token_env: str, token: str) -> bool:
    """Whether ``pid`` started with ``token_env=token`` in its environment (the tree's mark)."""
    return _has_token(pid, f"\0{token_env}={token}\0".encode())


def find_tree(
    root: Proc,
    token_env: str,
    token: str,
    exclude: Iterable[int] = (),
    members: Iterable[int] = (),
) -> List[Proc]:
    """Living processes of the tree, parents before their descendants; the guard itself never.

    Processes started before ``root`` (the command) are not its, except ``members`` (the kernel's
    cgroup membership, authoritative). ``exclude`` holds the guard's helpers (py-spy, nvidia-smi),
    which are left out with their descendants.
    """
    guard_pid = os.getpid()
    skip = set(exclude) | {guard_pid}
    table = all_stats()
    children: Dict[int, List[int]] = {}
    for pid, stat in table.items():
        children.setdefault(stat.ppid, []).append(pid)
    needle = f"\0{token_env}={token}\0".encode()
    roots: List[int] = [root.pid] if root.pid in table and table[root.pid].start == root.start else []
    roots.extend(sorted(set(members)))
    for pid, stat in sorted(table.items()):
        if pid in skip or stat.state in _GONE_STATES or stat.start < root.start:
            continue
        if stat.ppid == guard_pid or _has_token(pid, needle):
            roots.append(pid)
    found: Dict[int, Proc] = {}
    queue = collections.deque(roots)
    while queue:
        pid = queue.popleft()
        stat = table.get(pid)
        if pid in skip or pid in found or stat is None:
            continue
        if stat.state not in _GONE_STATES:
            found[pid] = Proc(pid, stat.start)
        queue.extend(sorted(children.get(pid, ())))
    return _parents_first(found, table)


def _parents_first(found: Dict[int, Proc], table: Dict[int, Stat]) -> List[Proc]:
    """``found`` ordered so each process comes after its parent when its parent is in ``found`` too."""

    def depth(pid: int) -> int:
        seen: Set[int] = set()
        steps = 0
        while pid in found and pid not in seen:
            seen.add(pid)
            pid = table[pid].ppid
            steps += 1
        return steps

    return [found[pid] for pid in sorted(found, key=lambda pid: (depth(pid), table[pid].start, pid))]


def _uptime() -> Optional[float]:
    try:
        return float(_read("/proc/uptime", 100).split()[0])
    except (IndexError, ValueError):
        return None


def _age_s(start_ticks: int, uptime: Optional[float]) -> Optional[float]:
    """Seconds since the process started (more precise than psutil's whole-second boot time)."""
    if uptime is None:
        return None
    return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))


def cmdline(pid: int) -> str:
    """The command line of ``pid`` on one line, credentials redacted; ``[comm]`` for a kernel-ish one."""
    where = proc_dir(pid)
    try:
        with open(f"{where}/cmdline", "rb") as handle:
            raw = handle.read(64 * 1024)
    except OSError:
        return "?"
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "backslashreplace")
    if not text:
        comm = _read(f"{where}/comm", 100)
        return f"[{comm}]" if comm else "?"
    return redact(text.translate(_PRINTABLE))


def describe(proc: Proc, uptime: Optional[float] = None) -> ProcessInfo:
    """Pid, parent, state letter, command line (redacted), kernel wait channel and stack of one process.

    ``uptime`` (seconds since boot, read once for many processes) defaults to now.
    """
    pid = proc.pid
    stat = read_stat(pid)
    age = _age_s(stat.start if stat else proc.start, _uptime() if uptime is None else uptime)
    where = proc_dir(pid)
    wchan = _read(f"{where}/wchan", 200)
    return ProcessInfo(
        pid=pid,
        ppid=stat.ppid if stat else 0,
        state=stat.state if stat else "?",
        cmdline=cmdline(pid)[:_MAX_CMDLINE],
        wchan="" if wchan == "0" else wchan,
        kernel_stack=_read(f"{where}/stack", _MAX_KERNEL_STACK),
        started_s_ago=max(0.0, age if age is not None else 0.0),
    )


def describe_all(procs: Sequence[Proc]) -> List[ProcessInfo]:
    uptime = _uptime()
    return [describe(proc, uptime) for proc in procs]


def is_python(pid: int) -> bool:
    """Whether ``pid`` runs a Python interpreter (worth a ``py-spy dump``)."""
    names = []
    where = proc_dir(pid)
    try:
        names.append(os.path.basename(os.readlink(f"{where}/exe")))
    except OSError:
        pass
    try:
        with open(f"{where}/cmdline", "rb") as handle:
            first = handle.read(4096).split(b"\0", 1)[0]
        names.append(os.path.basename(first.decode("utf-8", "replace")))
    except OSError:
        pass
    return any(name.startswith(("python", "pypy")) for name in names)


def format_table(infos: Iterable[ProcessInfo]) -> str:
    """The process table of ``processes.txt``: one block per process, kernel stack indented under it."""
    lines = ["PID     PPID    STATE  AGE_S    WCHAN                     COMMAND"]
    for info in infos:
        lines.append(
            f"{info.pid:<7} {info.ppid:<7} {info.state:<6} {info.started_s_ago:<8.1f} "
            f"{(info.wchan or '-'):<25} {redact(info.cmdline)}"
        )
        if info.kernel_stack:
            lines.extend("        " + row for row in info.kernel_stack.splitlines())
    return "\n".join(lines) + "\n"
