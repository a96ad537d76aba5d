"""Where log bytes come from: files, directories, standard input, ``.gz`` files and GitHub run-log zips.

A ``Source`` is a name to report (``display_path``) and a way to open a binary stream; nothing is read
until the engine reads it, in bounded windows. A problem with a path named on the command line (missing,
unreadable, a corrupt archive) is an ``InputError`` naming the path (one line, exit 2).

What cannot be scanned is skipped with a warning instead, and the rest is scanned: a file or folder
inside a scanned directory that cannot be read (permissions, a broken or looping symlink), and any
device, FIFO or socket, named on the command line or found in a directory (``/dev/zero`` would never
end; a FIFO may never be written). Standard input is read only as ``-``. Such a ``Source`` has a
``skipped`` reason: its ``open()`` raises ``Unscannable``, which the engine turns into a
``scan-incomplete`` finding at line 0 of that path. Display paths are ``str`` as ``os.fsdecode`` gives
them (undecodable bytes of a file name kept as surrogate escapes), so any name the file system allows
is carried through; the renderers make it safe to print.

Zip members are opened by their entry, not their name: an archive may hold two members of the same name
(a job re-run, a hand-made zip), and both are scanned, the second reported as ``name#2``.

GitHub's "Download log archive" zip holds one ``N_<job>.txt`` per job at the top level (the whole job
log) and, for runs recorded by the newer results service, a ``<job>/`` folder with one ``N_<step>.txt``
per step. The step files together repeat the job file, so when a job has step files its top-level
file is skipped and each event is reported once, from the step file that names where it happened.
Older archives have no step files (``gh`` falls back to the job file for the same reason; cli/cli#10740).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import IO, TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:
    import zipfile

from ..errors import InputError

STDIN_PATH = "-"
_JOB_FILE = re.compile(r"^(\d+)_(.+)\.txt$")
_NUMBERED = re.compile(r"^(\d+)_")


class Unscannable(Exception):
    """``Source.open()`` of a log that is skipped, not scanned; ``str(err)`` says why (one line).

    Deliberately not an ``InputError``: the engine reports it as a scan-incomplete finding and goes on.
    """


class Source:
    """One log to scan: ``display_path`` is what findings report; ``open()`` gives a binary stream.

    ``skipped``: why this log is not scanned (``open()`` raises ``Unscannable``). ``in_directory``: it
    was found by walking a directory, so failing to open it is ``Unscannable`` too, not an ``InputError``.
    ``may_be_wrapped``: it may be a terminal's copy, with long lines cut into rows (``_engine_wrap``);
    the engine then reads its first 64 KiB before matching any, which a live log cannot wait for.

    A plain class, not a dataclass: sources are never compared or copied, and a frozen dataclass's
    generated methods cost every run's start-up about half a millisecond (perf22).
    """

    __slots__ = ("display_path", "opener", "skipped", "in_directory", "may_be_wrapped")

    def __init__(
        self, display_path: str, opener: Callable[[], IO[bytes]], skipped: Optional[str] = None,
        in_directory: bool = False, may_be_wrapped: bool = True,
    ) -> None:
        self.display_path = display_path
        self.opener = opener
        self.skipped = skipped
        self.in_directory = in_directory
        self.may_be_wrapped = may_be_wrapped

    def __repr__(self) -> str:
        return f"Source({self.display_path!r})"

    def open(self) -> IO[bytes]:
        """Open the log for binary reading; raises ``InputError`` naming ``display_path``, or
        ``Unscannable`` for a log that is skipped."""
        if self.skipped is not None:
            raise Unscannable(self.skipped)
        try:
            return self.opener()
        except _open_errors() as err:
            if self.in_directory and isinstance(err, OSError):
                raise Unscannable(f"cannot read: {_reason(err)}") from None
            raise InputError(f"{self.display_path}: cannot read: {_reason(err)}") from None


def iter_sources(paths: Sequence[str]) -> Iterator[Source]:
    """Expand command-line paths into sources, in the given order (directories recursed, sorted).

    ``-`` is standard input (binary). ``.gz`` files are decompressed while streaming; ``.zip`` files are
    read member by member (GitHub's layout understood, see the module docstring). Devices, FIFOs and
    what cannot be read inside a directory come as skipped sources. Raises ``InputError`` for a
    missing or unreadable path named here, a directory without readable files, or a corrupt zip.
    """
    for path in paths:
        if path == STDIN_PATH:
            yield Source(STDIN_PATH, _open_stdin)
            continue
        path = os.fsdecode(path)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise InputError(f"{path}: no such file or directory") from None
        except OSError as err:
            raise InputError(f"{path}: cannot read: {_reason(err)}") from None
        if stat.S_ISDIR(st.st_mode):
            yield from _directory_sources(path)
        elif not stat.S_ISREG(st.st_mode):
            yield _skipped(path, st.st_mode)
        else:
            if not os.access(path, os.R_OK):
                raise InputError(f"{path}: cannot read: permission denied")
            yield from _file_sources(path)


def _directory_sources(path: str) -> Iterator[Source]:
    """The sources under a directory named on the command line; ``InputError`` when none is readable."""
    found = skipped = 0
    for source in _walk_sorted(path):
        if source.skipped is None:
            found += 1
        else:
            skipped += 1
        yield source
    if not found:
        detail = f" ({skipped} skipped, see above)" if skipped else ""
        raise InputError(f"{path}: directory holds no readable log files{detail}")


def _file_sources(path: str, in_directory: bool = False) -> Iterator[Source]:
    lower = path.lower()
    if lower.endswith(".zip"):
        yield from _zip_sources(path, in_directory)
    elif lower.endswith(".gz"):
        yield Source(path, lambda: _gzip_open(path), in_directory=in_directory)
    else:
        yield Source(path, lambda: open(path, "rb"), in_directory=in_directory)


def zip_errors() -> Tuple[type, ...]:
    """``zipfile.BadZipFile`` once a zip was read, else nothing: ``zipfile`` and ``gzip`` are imported
    for the first such file, not by every scan (about 3 ms of start-up), and only they raise it."""
    zipfile = sys.modules.get("zipfile")
    return (zipfile.BadZipFile,) if zipfile is not None else ()


def _open_errors() -> Tuple[type, ...]:
    return (OSError, EOFError, RuntimeError) + zip_errors()


def _gzip_open(path: str) -> IO[bytes]:
    import gzip

    return gzip.open(path, "rb")


def _skipped(path: str, mode: int) -> Source:
    """A source for a device, FIFO or socket: reading it may never end, so it is not read."""
    what = _FILE_TYPES.get(stat.S_IFMT(mode), "not a regular file")
    reason = f"{path} is {what}, not a log file; skipped (standard input is read as -)"
    return Source(path, _not_opened, skipped=reason)


_FILE_TYPES = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
}


def _walk_sorted(root: str) -> Iterator[Source]:
    """The logs under ``root`` in natural order; what cannot be read or is no file comes skipped."""
    problems: List[OSError] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=problems.append):
        yield from _folder_problems(root, problems)
        dirnames.sort(key=_natural_key)
        for name in sorted(filenames, key=_natural_key):
            yield from _entry_sources(os.path.join(dirpath, name))
    yield from _folder_problems(root, problems)  # the last folder's problem comes after its walk ends


def _folder_problems(root: str, problems: List[OSError]) -> Iterator[Source]:
    """Skipped sources for the folders ``os.walk`` could not list; ``root`` itself is an ``InputError``."""
    while problems:
        err = problems.pop(0)
        where = os.fsdecode(err.filename) if err.filename else root
        if where == root:
            raise InputError(f"{root}: cannot read: {_reason(err)}")
        yield _unreadable(where, err)


def _entry_sources(full: str) -> Iterator[Source]:
    """The sources of one directory entry: a log (or a zip's members), or why it is skipped."""
    try:
        st = os.stat(full)
    except OSError as err:
        yield _unreadable(full, err)
        return
    if stat.S_ISDIR(st.st_mode):
        return  # a symlink to a folder: os.walk does not follow them, nor do we
    if not stat.S_ISREG(st.st_mode):
        yield _skipped(full, st.st_mode)
    elif not os.access(full, os.R_OK):
        yield Source(full, _not_opened, skipped=f"{full}: cannot read: permission denied; skipped")
    else:
        yield from _file_sources(full, in_directory=True)


def _unreadable(path: str, err: OSError) -> Source:
    return Source(path, _not_opened, skipped=f"{path}: cannot read: {_reason(err)}; skipped")


def _zip_sources(path: str, in_directory: bool = False) -> Iterator[Source]:
    import zipfile

    try:
        with zipfile.ZipFile(path) as listing:
            infos = listing.infolist()
        entries = [(index, info.filename) for index, info in enumerate(infos) if not info.is_dir()]
    except (OSError, zipfile.BadZipFile, EOFError, ValueError, RuntimeError) as err:
        if in_directory and isinstance(err, OSError):
            yield _unreadable(path, err)
            return
        raise InputError(f"{path}: not a readable zip archive: {_reason(err)}") from None
    skipped = _job_files_with_steps([name for _, name in entries])
    ordered = sorted(entries, key=lambda entry: (_member_key(entry[1]), entry[0]))
    chosen = [entry for entry in ordered if entry[1] not in skipped]
    archive = _Archive(path, len(chosen))
    seen: Dict[str, int] = {}
    for index, name in chosen:
        seen[name] = seen.get(name, 0) + 1
        shown = name if seen[name] == 1 else f"{name}#{seen[name]}"
        yield Source(f"{path}!{shown}", archive.opener(index), in_directory=in_directory,
                     may_be_wrapped=not _runner_written(name))


class _Archive:
    """One open handle on a zip for all its members: reading the central directory again for each
    of a 200-job run archive's thousand entries cost more than scanning them. The handle opens with
    the first member and closes when the last one listed has been read (or with the object)."""

    def __init__(self, path: str, members: int) -> None:
        self.path = path
        self.left = members
        self.zip: Optional[zipfile.ZipFile] = None

    def opener(self, index: int) -> Callable[[], IO[bytes]]:
        """Open the ``index``-th entry of the central directory (names may repeat)."""

        def opener() -> IO[bytes]:
            if self.zip is None:
                import zipfile

                self.zip = zipfile.ZipFile(self.path)
            return _ClosingMember(self, self.zip.open(self.zip.infolist()[index]))

        return opener

    def member_closed(self) -> None:
        self.left -= 1
        if self.left <= 0 and self.zip is not None:
            self.zip.close()
            self.zip = None


class _ClosingMember:
    """A zip member stream that tells its archive when it is closed."""

    def __init__(self, archive: _Archive, member: IO[bytes]) -> None:
        self._archive = archive
        self._member = member

    def read(self, n: int = -1) -> bytes:
        return self._member.read(n)

    def close(self) -> None:
        try:
            self._member.close()
        finally:
            self._archive.member_closed()

    def __enter__(self) -> "_ClosingMember":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _step_file(parts: Sequence[str]) -> bool:
    """Whether a member's path parts name a step file of a job folder (``job/N_step.txt``)."""
    return len(parts) == 2 and _NUMBERED.match(parts[1]) is not None and parts[1].endswith(".txt")


def _runner_written(name: str) -> bool:
    """Whether a member is a job or step log of a run archive: the runner wrote what the steps printed,
    so no terminal cut its lines and no paste indented it (the engine need not read it as a copy)."""
    parts = name.split("/")
    return _step_file(parts) or (len(parts) == 1 and _JOB_FILE.match(name) is not None)


def _job_files_with_steps(names: Sequence[str]) -> Set[str]:
    """Top-level ``N_job.txt`` files whose job also has a folder of numbered step files."""
    step_dirs: Set[str] = set()
    for name in names:
        parts = name.split("/")
        if _step_file(parts):
            step_dirs.add(_normal(parts[0]))
    skipped = set()
    for name in names:
        if "/" in name:
            continue
        m = _JOB_FILE.match(name)
        if m is not None and _normal(m.group(2)) in step_dirs:
            skipped.add(name)
    return skipped


def _normal(job: str) -> str:
    # GitHub sanitises characters it cannot put in a folder name (cli/cli#11118), so compare job
    # names by their letters and digits only.
    return re.sub(r"[^0-9A-Za-z]+", "", job).lower()


def _natural_key(name: str) -> Tuple[object, ...]:
    """Sort ``2_x`` before ``10_x`` (step order), otherwise by name."""
    m = _NUMBERED.match(name)
    if m is not None:
        return (0, int(m.group(1)), name)
    return (1, 0, name)


def _member_key(name: str) -> Tuple[Tuple[object, ...], ...]:
    return tuple(_natural_key(part) for part in name.split("/"))


def _not_opened() -> IO[bytes]:
    raise Unscannable("skipped")  # a skipped source's open() raises before it gets here


def _open_stdin() -> IO[bytes]:
    return _NoClose(sys.stdin.buffer)


class _NoClose:
    """Standard input for the engine: closing it must not close the process's stdin."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        return self._stream.read(n)

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoClose":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror.lower()
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


__all__: List[str] = ["Source", "Unscannable", "iter_sources", "STDIN_PATH"]
