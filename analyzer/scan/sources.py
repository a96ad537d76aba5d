"""Where log bytes come from: files, directories, standard input, ``.gz`` files and GitHub run-log zips.

A ``Source`` is a name to report (``display_path``) and a way to open a binary stream; nothing is read
until the engine reads it, in bounded windows. Every problem the user can cause (a missing path, an
unreadable file, a corrupt archive) becomes an ``InputError`` naming the path.

GitHub's "Download log archive" zip holds one ``N_<job>.txt`` per job at the top level (the whole job
log) and, for runs recorded by the newer results service, a ``<job>/`` folder with one ``N_<step>.txt``
per step. The step files together repeat the job file, so when a job has step files its top-level
file is skipped and each event is reported once, from the step file that names where it happened.
Older archives have no step files (``gh`` falls back to the job file for the same reason; cli/cli#10740).
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import sys
import zipfile
from dataclasses import dataclass
from typing import IO, Callable, Iterator, List, Sequence, Set, Tuple

from ..errors import InputError

STDIN_PATH = "-"
_JOB_FILE = re.compile(r"^(\d+)_(.+)\.txt$")
_NUMBERED = re.compile(r"^(\d+)_")


@dataclass(frozen=True)
class Source:
    """One log to scan: ``display_path`` is what findings report; ``open()`` gives a binary stream."""

    display_path: str
    opener: Callable[[], IO[bytes]]

    def open(self) -> IO[bytes]:
        """Open the log for binary reading; raises ``InputError`` naming ``display_path``."""
        try:
            return self.opener()
        except (OSError, EOFError, zipfile.BadZipFile, RuntimeError) as err:
            raise InputError(f"{self.display_path}: cannot read: {_reason(err)}") from None


def iter_sources(paths: Sequence[str]) -> Iterator[Source]:
    """Expand command-line paths into sources, in the given order (directories recursed, sorted).

    ``-`` is standard input (binary). ``.gz`` files are decompressed while streaming; ``.zip`` files are
    read member by member (GitHub's layout understood, see the module docstring). Raises
    ``InputError`` for a missing or unreadable path, a directory without files, or a corrupt zip.
    """
    for path in paths:
        if path == STDIN_PATH:
            yield Source(STDIN_PATH, _open_stdin)
            continue
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise InputError(f"{path}: no such file or directory") from None
        except OSError as err:
            raise InputError(f"{path}: cannot read: {_reason(err)}") from None
        if stat.S_ISDIR(st.st_mode):
            found = False
            for file_path in _walk_sorted(path):
                found = True
                yield from _file_sources(file_path)
            if not found:
                raise InputError(f"{path}: directory holds no log files")
        else:
            yield from _file_sources(path)


def _file_sources(path: str) -> Iterator[Source]:
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: cannot read: permission denied")
    lower = path.lower()
    if lower.endswith(".zip"):
        yield from _zip_sources(path)
    elif lower.endswith(".gz"):
        yield Source(path, lambda: gzip.open(path, "rb"))
    else:
        yield Source(path, lambda: open(path, "rb"))


def _walk_sorted(root: str) -> Iterator[str]:
    def fail(err: OSError) -> None:
        raise InputError(f"{err.filename or root}: cannot read: {_reason(err)}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=fail):
        dirnames.sort(key=_natural_key)
        for name in sorted(filenames, key=_natural_key):
            full = os.path.join(dirpath, name)
            if os.path.isfile(full):
                yield full


def _zip_sources(path: str) -> Iterator[Source]:
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [info for info in archive.infolist() if not info.is_dir()]
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        raise InputError(f"{path}: not a readable zip archive: {_reason(err)}") from None
    names = [info.filename for info in infos]
    skipped = _job_files_with_steps(names)
    for name in sorted(names, key=_member_key):
        if name in skipped:
            continue
        yield Source(f"{path}!{name}", _member_opener(path, name))


def _member_opener(path: str, name: str) -> Callable[[], IO[bytes]]:
    def opener() -> IO[bytes]:
        # The archive handle lives as long as the member stream: ZipExtFile keeps a reference to
        # the underlying file, and closing the member closes it.
        archive = zipfile.ZipFile(path)
        try:
            return _ClosingMember(archive, archive.open(name))
        except BaseException:
            archive.close()
            raise

    return opener


class _ClosingMember:
    """A zip member stream that also closes its archive when closed."""

    def __init__(self, archive: zipfile.ZipFile, member: IO[bytes]) -> None:
        self._archive = archive
        self._member = member

    def read(self, n: int = -1) -> bytes:
        return self._member.read(n)

    def close(self) -> None:
        try:
            self._member.close()
        finally:
            self._archive.close()

    def __enter__(self) -> "_ClosingMember":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _job_files_with_steps(names: Sequence[str]) -> Set[str]:
    """Top-level ``N_job.txt`` files whose job also has a folder of numbered step files."""
    step_dirs: Set[str] = set()
    for name in names:
        parts = name.split("/")
        if len(parts) == 2 and _NUMBERED.match(parts[1]) and parts[1].endswith(".txt"):
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


__all__: List[str] = ["Source", "iter_sources", "STDIN_PATH"]
