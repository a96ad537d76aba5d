"""Hold the guarded tree the way the kernel can: a cgroup of its own, or else the process scan.

A process that forks, ``setsid()``s and exits every few milliseconds (a pid hopper) is never where a
``/proc`` scan looks for it: by the time the scan reads a pid, the process has moved to a new one.
The kernel's cgroup membership follows every fork, so where the guard may create a cgroup (root, or
a delegated subtree) the command starts inside one of its own, and the tree is ended as systemd
ends a unit: freeze the cgroup (no member can fork or exit meanwhile), signal every member, thaw;
at the end ``cgroup.kill`` (cgroup v2, Linux 5.14+) or, on v1, freeze + SIGKILL every member + thaw
until it is empty.

``open_containment`` picks cgroup v2 where a cgroup2 hierarchy is mounted (also the ``unified``
mount of a hybrid host) and has the freezer, else v1 ``freezer`` + ``pids``, else the fallback
``Containment`` (session, subreaper and environment token: ``tree.find_tree``). The report says
which one held the run (``CommandResult.containment``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set

PROCESS_SCAN = "process-scan"
CGROUP_V2 = "cgroup-v2"
CGROUP_V1 = "cgroup-v1"
CHOICES = ("auto", CGROUP_V2, CGROUP_V1, PROCESS_SCAN)
NAME_PREFIX = "gpu-hang-guard-"
FREEZE_WAIT_S = 0.2  # a member in D state may never report frozen; the signals go out regardless
_POLL_S = 0.005
_V1_CONTROLLERS = ("freezer", "pids")


class Containment:
    """The process-scan fallback, and the interface every containment offers the guard."""

    name = PROCESS_SCAN
    kernel = False

    def before_exec(self) -> Optional[Callable[[], None]]:
        """What the child runs between fork and exec to join the containment (None: nothing)."""
        return None

    def members(self) -> List[int]:
        """Pids the kernel counts in the containment (empty for the scan: ``tree`` finds them)."""
        return []

    def signal(self, *signums: int) -> Set[int]:
        """Send each of ``signums``, in order, to every member at one frozen instant; the pids signalled."""
        return set()

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Hold every member still (no fork, no exit) for the duration, so a walk sees them all."""
        yield

    def kill(self, deadline_s: float) -> None:
        """SIGKILL every member, for up to ``deadline_s`` seconds against members that keep forking."""

    def close(self) -> None:
        """Release what the containment holds (remove an empty cgroup); idempotent."""

    def cgroup_dirs(self) -> Sequence[str]:
        """The cgroup directories the command runs in (none for the scan)."""
        return ()


class _Cgroup(Containment):
    kernel = True

    def __init__(self, dirs: Sequence[str]) -> None:
        self.dirs = list(dirs)
        self.primary = dirs[0]
        self._procs_fds = [os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for d in dirs]
        self._closed = False

    def cgroup_dirs(self) -> Sequence[str]:
        return self.dirs

    def before_exec(self) -> Optional[Callable[[], None]]:
        fds = tuple(self._procs_fds)

        def join() -> None:  # in the forked child: system calls only
            for fd in fds:
                os.write(fd, b"0")

        return join

    def members(self) -> List[int]:
        try:
            with open(os.path.join(self.primary, "cgroup.procs"), "rb") as handle:
                return [int(pid) for pid in handle.read().split()]
        except (OSError, ValueError):
            return []

    def freeze(self, frozen: bool) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        if not self.members():
            yield
            return
        self.freeze(True)
        try:
            yield
        finally:
            self.freeze(False)

    def signal(self, *signums: int) -> Set[int]:
        # One freeze for all of them (SIGCONT and SIGTERM): each freeze and thaw kicks every thread of
        # the tree out of its wait and back; with 16 processes of 300 threads on 2 CPUs a pair took
        # 0.05-0.1 s, paid before the kill grace starts (bench/guard_stages.py --threads 300).
        self.freeze(True)
        reached: Set[int] = set()
        try:
            for pid in self.members():
                for signum in signums:
                    try:
                        os.kill(pid, signum)
                        reached.add(pid)
                    except OSError:
                        break
        finally:
            self.freeze(False)
        return reached

    def kill(self, deadline_s: float) -> None:
        deadline = time.monotonic() + max(0.0, deadline_s)
        while self.members() and time.monotonic() < deadline:
            self.signal(signal.SIGKILL)
            time.sleep(_POLL_S)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in self._procs_fds:
            os.close(fd)
        for path in reversed(self.dirs):
            _remove_cgroup(path)


class CgroupV2(_Cgroup):
    """A cgroup v2 of the run's own: ``cgroup.freeze`` and ``cgroup.kill``."""

    name = CGROUP_V2

    def freeze(self, frozen: bool) -> None:
        if not _write(os.path.join(self.primary, "cgroup.freeze"), "1" if frozen else "0"):
            return
        want = "frozen 1" if frozen else "frozen 0"
        deadline = time.monotonic() + FREEZE_WAIT_S
        while time.monotonic() < deadline:
            if want in _read(os.path.join(self.primary, "cgroup.events")).splitlines():
                return
            time.sleep(_POLL_S)

    def kill(self, deadline_s: float) -> None:
        if _write(os.path.join(self.primary, "cgroup.kill"), "1"):
            # cgroup.kill also reaches members forked while it runs (Linux 5.14, cgroup_kill()).
            deadline = time.monotonic() + max(0.0, deadline_s)
            while self.members() and time.monotonic() < deadline:
                time.sleep(_POLL_S)
            return
        super().kill(deadline_s)


class CgroupV1(_Cgroup):
    """A ``freezer`` (and ``pids``) cgroup v1 of the run's own: ``freezer.state``."""

    name = CGROUP_V1

    def freeze(self, frozen: bool) -> None:
        state = os.path.join(self.primary, "freezer.state")
        if not _write(state, "FROZEN" if frozen else "THAWED"):
            return
        want = "FROZEN" if frozen else "THAWED"
        deadline = time.monotonic() + FREEZE_WAIT_S
        while time.monotonic() < deadline and _read(state).strip() != want:
            time.sleep(_POLL_S)


def open_containment(token: str, preference: str = "auto") -> Containment:
    """The strongest containment this process may create, or the one named by ``preference``.

    Falls back (v2 -> v1 -> process scan) when a cgroup cannot be made here; never raises.
    """
    order = {"auto": (CGROUP_V2, CGROUP_V1), CGROUP_V2: (CGROUP_V2,), CGROUP_V1: (CGROUP_V1,)}.get(
        preference, ()
    )
    own = _own_cgroups()
    mounts = _cgroup_mounts()
    for kind in order:
        try:
            if kind == CGROUP_V2 and "" in own and "cgroup2" in mounts:
                made = _make(mounts["cgroup2"], own[""], token, ("cgroup.freeze",))
                if made:
                    return CgroupV2([made])
            if kind == CGROUP_V1 and all(c in own and c in mounts for c in _V1_CONTROLLERS):
                dirs = []
                for controller in _V1_CONTROLLERS:
                    need = ("freezer.state",) if controller == "freezer" else ()
                    made = _make(mounts[controller], own[controller], token, need)
                    if made is None:
                        break
                    dirs.append(made)
                if len(dirs) == len(_V1_CONTROLLERS):
                    return CgroupV1(dirs)
                for path in dirs:
                    _remove_cgroup(path)
        except OSError:
            continue
    return Containment()


def _make(mount: str, own_path: str, token: str, need: Sequence[str]) -> Optional[str]:
    parent = os.path.join(mount, own_path.lstrip("/"))
    _remove_stale(parent)
    path = os.path.join(parent, f"{NAME_PREFIX}{os.getpid()}-{token}")
    try:
        os.mkdir(path)
    except OSError:
        return None
    if not all(os.path.exists(os.path.join(path, name)) for name in ("cgroup.procs", *need)) or not os.access(
        os.path.join(path, "cgroup.procs"), os.W_OK
    ):
        _remove_cgroup(path)
        return None
    return path


def _remove_stale(parent: str) -> None:
    """Remove empty cgroups earlier runs left behind (one whose member SIGKILL could not end).

    The name carries the guard's pid: only this process's own earlier runs (one run at a time per
    process) and those of guards that are gone are touched, never another running guard's.
    """
    try:
        names = os.listdir(parent)
    except OSError:
        return
    me = str(os.getpid())
    for name in names:
        owner = name[len(NAME_PREFIX):].split("-", 1)[0]
        if not name.startswith(NAME_PREFIX) or not owner.isdigit():
            continue
        if owner == me or not os.path.exists(f"/proc/{owner}"):
            _remove_cgroup(os.path.join(parent, name))


def _remove_cgroup(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError as err:
        if err.errno not in (errno.ENOENT, errno.EBUSY, errno.ENOTEMPTY, errno.EACCES, errno.EPERM):
            raise


def _own_cgroups() -> Dict[str, str]:
    """This process's cgroup per v1 controller, and its v2 cgroup under the key ``""`` (cgroups(7))."""
    found: Dict[str, str] = {}
    for row in _read("/proc/self/cgroup").splitlines():
        parts = row.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if not controllers:
            found[""] = path
        for controller in controllers.split(","):
            if controller:
                found[controller] = path
    return found


def _cgroup_mounts() -> Dict[str, str]:
    """Mount points: ``"cgroup2"`` for the v2 hierarchy, and each v1 controller's own."""
    found: Dict[str, str] = {}
    for row in _read("/proc/self/mountinfo").splitlines():
        # proc(5): ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
        left, sep, right = row.partition(" - ")
        if not sep:
            continue
        fields, after = left.split(), right.split()
        if len(fields) < 5 or len(after) < 3 or fields[3] != "/":
            continue
        mount = fields[4].replace("\\040", " ")
        if after[0] == "cgroup2":
            found.setdefault("cgroup2", mount)
        elif after[0] == "cgroup":
            for option in after[2].split(","):
                if option in _V1_CONTROLLERS:
                    found.setdefault(option, mount)
    return found


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, text.encode("ascii"))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
