"""Whether the kernel's OOM killer struck while the command ran: its kill counters before and after.

A process the OOM killer ends dies of SIGKILL and prints nothing: the job shows "Killed", exit 137 or
a DataLoader worker "killed by signal: Killed", and only the kernel knows why. The kernel counts each
kill before it sends the SIGKILL (mm/oom_kill.c, ``__oom_kill_process``: ``count_vm_event(OOM_KILL)``
then ``memcg_memory_event_mm(mm, MEMCG_OOM_KILL)``, "task reaper must see this"), so once the command
is reaped its kills are counted:

- host-wide, ``oom_kill`` in /proc/vmstat (Linux 4.13+, readable by any user); another job on the
  same host moves it too, so it only confirms a command that failed;
- for the victim's memory cgroup: cgroup v2 ``memory.events`` (``oom_kill``, hierarchical: a kill in a
  child cgroup counts in every parent), cgroup v1 ``memory.oom_control`` (``oom_kill``, that cgroup's
  own kills only). The cgroup the command runs in is the job's own: a kill there is the command's.

The kernel log also names the victim ("Memory cgroup out of memory: Killed process 15923 (python3)
total-vm:..."): /dev/kmsg, read from where it stood at the start, where this user may read it (root,
or ``kernel.dmesg_restrict=0``; hosted runners' Ubuntu restricts it).
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

VMSTAT = "/proc/vmstat"
KMSG = "/dev/kmsg"
_CGROUP2_MOUNTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
_CGROUP1_MEMORY = "/sys/fs/cgroup/memory"
# /dev/kmsg hands out one record per read (Documentation/ABI/testing/dev-kmsg): "prio,seq,usec,flags;text".
# A host that logs a flood while the command runs costs at most this many reads at the end.
_KMSG_RECORDS = 4096
_KMSG_RECORD_BYTES = 8192
_KILLED = re.compile(rb";(?:[^;\n]*: )?Killed process (\d+) \(([^)\n]{0,64})\)")
_VICTIMS_NAMED = 8
CGROUP_SCOPE = "in the job's memory cgroup"
HOST_SCOPE = "on this host"
KERNEL_LOG_SCOPE = "as the kernel log says"


@dataclass(frozen=True)
class OomKills:
    """The OOM kills counted while the command ran. ``scope`` says where: ``CGROUP_SCOPE`` (the job's
    processes only), ``HOST_SCOPE`` (anyone's) or ``KERNEL_LOG_SCOPE`` (no counter moved or could be
    read, but the kernel logged the kills)."""

    count: int
    scope: str
    victims: Tuple[Tuple[int, str], ...] = ()  # (pid, command name) from the kernel log, when readable


def read_oom_kill(path: str) -> Optional[int]:
    """The ``oom_kill`` count in a vmstat, memory.events or memory.oom_control file; None if unreadable."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 16)
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(b" ")
        if name == b"oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def cgroup_counter_paths(proc_cgroup: str, cgroup_dirs: Sequence[str] = ()) -> List[str]:
    """The memory-cgroup counter files for a command in ``cgroup_dirs`` (the guard's own cgroups, v2
    first) or else in the cgroups ``proc_cgroup`` (the text of /proc/self/cgroup) names."""
    paths = [os.path.join(d, "memory.events") for d in cgroup_dirs]
    for line in proc_cgroup.splitlines():
        _hierarchy, _, rest = line.partition(":")
        controllers, _, where = rest.partition(":")
        if not where.startswith("/"):
            continue
        where = where.rstrip("/")
        if controllers == "":  # cgroup v2 (also the unified mount of a hybrid host)
            paths.extend(os.path.join(mount + where, "memory.events") for mount in _CGROUP2_MOUNTS)
        elif "memory" in controllers.split(","):
            paths.append(os.path.join(_CGROUP1_MEMORY + where, "memory.oom_control"))
    return paths


def _own_cgroup() -> str:
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 16)
    except OSError:
        return ""


class OomWatch:
    """Read the OOM kill counters when the command starts (``__init__``) and once it ended (``kills``).

    The root cgroup has no counter files, so a container that sees only its own root (cgroup
    namespaces) falls back to the host's count."""

    def __init__(self, cgroup_dirs: Sequence[str] = ()) -> None:
        self._counters: List[Tuple[str, str, int]] = []  # (counter file, its scope, its count at the start)
        for path in cgroup_counter_paths(_own_cgroup(), cgroup_dirs):
            before = read_oom_kill(path)
            if before is not None:
                self._counters.append((path, CGROUP_SCOPE, before))
                break
        host_before = read_oom_kill(VMSTAT)
        if host_before is not None:
            self._counters.append((VMSTAT, HOST_SCOPE, host_before))
        self._kmsg = _open_kmsg()

    def kills(self) -> Optional[OomKills]:
        """The kills counted since the start by the narrowest counter that moved; None if none moved."""
        victims = tuple(self._victims())
        for path, scope, before in self._counters:
            after = read_oom_kill(path)
            if after is not None and after > before:
                return OomKills(after - before, scope, victims)
        if victims:
            return OomKills(len(victims), KERNEL_LOG_SCOPE, victims)
        return None

    def close(self) -> None:
        if self._kmsg is not None:
            os.close(self._kmsg)
            self._kmsg = None

    def _victims(self) -> Iterable[Tuple[int, str]]:
        if self._kmsg is None:
            return
        named = 0
        for record in _read_records(self._kmsg):
            m = _KILLED.search(record)
            if m is not None and named < _VICTIMS_NAMED:
                named += 1
                yield int(m.group(1)), m.group(2).decode("utf-8", "replace")


def _open_kmsg() -> Optional[int]:
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # EPERM under dmesg_restrict, ENOENT in some containers
        return None
    try:
        os.lseek(fd, 0, os.SEEK_END)  # only what the kernel logs from now on
    except OSError:
        os.close(fd)
        return None
    return fd


def _read_records(fd: int) -> Iterable[bytes]:
    for _ in range(_KMSG_RECORDS):
        try:
            record = os.read(fd, _KMSG_RECORD_BYTES)
        except OSError as err:
            if err.errno == errno.EPIPE:  # records overwritten before read: go on from the oldest left
                continue
            return  # EAGAIN: nothing more
        if not record:
            return
        yield record
