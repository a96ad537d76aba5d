"""The scanner's Hyperscan databases, compiled in one place and kept between runs.

Compiling the catalogue's literals is about 12 ms of every scan's start-up and the progress letters'
hints about 5 ms more, the same work each run of one install. ``database`` serialises what it compiles
(``hyperscan.dumpb``) into the cache the shipped catalogue's parsed YAML uses (``analyzer.rules.cache``:
``__pycache__`` beside the catalogue, written only where Python writes bytecode), under the SHA-256 of
everything the database is built from: the expressions, their ids and flags, the mode, the hyperscan
module's version and extension file, and this CPU's feature flags (a database is compiled for the CPU
it is built on: a package directory shared by machines of two kinds must not hand one's database to the
other). A cached database that fails to load or to allocate its scratch space is compiled again.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, List, Optional, Sequence, Tuple

from ..rules.cache import cached_value, value_key

_FORMAT = b"gpu-hang-guard hyperscan database 1"  # change when what is cached changes meaning
_PREFIX = "hyperscan-"
_LOAD_ERRORS = (TypeError, ValueError)  # cached data of another shape (hyperscan.error is added at use)


def database(
    name: str, expressions: Sequence[bytes], ids: Sequence[int], flags: Sequence[int], literal: bool = False,
    dirs: Optional[List[str]] = None,
) -> Any:
    """A compiled ``HS_MODE_BLOCK`` database of ``expressions`` (reported as ``ids``, each with its
    ``flags``; ``literal``: the expressions are literals, not regexes), loaded from the cache when a run
    compiled the same one before. ``name`` (kebab-case) names it in the cache, which keeps the latest
    database of each name; ``dirs``: where the cache may be (default: the shipped catalogue's). Raises
    ``hyperscan.error`` when it cannot compile, or cannot run here."""
    import hyperscan

    def compile_it() -> Any:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=list(expressions), ids=list(ids), flags=list(flags), literal=literal)
        return db

    ids = list(ids)
    parts = [hyperscan_library(), b"literal" if literal else b"regex", b"%d" % hyperscan.HS_MODE_BLOCK]
    parts += [b"%d %d %s" % (i, f, e) for e, i, f in zip(expressions, ids, flags)]
    key = value_key(_FORMAT, parts)
    compiled: List[Any] = []

    def build() -> bytes:
        compiled.append(compile_it())
        return hyperscan.dumpb(compiled[0])

    data = cached_value(_PREFIX + name + "-", key, build, dirs)
    if compiled:
        return compiled[0]
    try:
        db = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        hyperscan.Scratch(db)  # checks the database against this CPU and library
    except (hyperscan.error, *_LOAD_ERRORS):
        return compile_it()
    return db


def hyperscan_library() -> bytes:
    """The installed hyperscan module (its version and its extension file's name, size and time) and
    this CPU's feature flags, as bytes for a cache key."""
    import hyperscan

    ext = getattr(hyperscan, "_hs_ext", None)
    path = getattr(ext, "__file__", None) or ""
    try:
        info = os.stat(path)
        stamp = b"%d %d" % (info.st_size, info.st_mtime_ns)
    except OSError:
        stamp = b""
    version = str(getattr(hyperscan, "__version__", "")).encode("ascii", "backslashreplace")
    return b"\0".join((version, os.fsencode(path), stamp, cpu_flags()))


def cpu_flags() -> bytes:
    """This CPU's feature flags as Linux lists them (``/proc/cpuinfo``), else the machine's name."""
    try:
        with open("/proc/cpuinfo", "rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        head = b""
    for line in head.splitlines():
        if line.startswith((b"flags", b"Features")):  # x86; arm64
            return line
    import platform

    return (platform.machine() + " " + sys.platform).encode("ascii", "backslashreplace")


def match_ends(database: Any, local: threading.local, window: bytes) -> List[Tuple[int, int]]:
    """(end offset, id) of every match of ``database`` in ``window``. One scratch space per thread:
    the guard scans stdout and stderr in two threads with one compiled database, and a scratch in use
    by another scan fails with ScratchInUseError."""
    import hyperscan

    ends: List[Tuple[int, int]] = []
    append = ends.append

    def on_match(index: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
        append((end, index))

    scratch: Optional[Any] = getattr(local, "scratch", None)
    if scratch is None:
        scratch = local.scratch = hyperscan.Scratch(database)
    database.scan(window, match_event_handler=on_match, scratch=scratch)
    return ends
