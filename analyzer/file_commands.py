"""GitHub's file commands under the guard: private files for the command, the valid part passed on after.

The runner gives each step five files through the environment (``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``,
``GITHUB_ENV``, ``GITHUB_PATH``, ``GITHUB_STATE``) and reads them when the step ends. Handed on as they
are, the command under the guard could forge the guard's own outputs (``verdict=pass`` after a real
timeout), glue an unterminated line onto the guard's first output (``coverage=87verdict=fail``), open a
heredoc that swallows every later line (the runner then fails the step and drops all its outputs), or
hide the guard's summary (``<!--``). So the command gets private files instead; when it has ended, only
what the runner would read as complete entries, minus the names the guard owns, is appended to the
real files, and the guard's summary goes before the command's.

The runner's rules, from actions/runner ``src/Runner.Worker/FileCommandManager.cs`` (commit 258d6c8):
- ``EnvFileKeyValuePairs`` (lines 353-452) parses ``GITHUB_OUTPUT``, ``GITHUB_ENV`` and ``GITHUB_STATE``
  as text (``File.ReadAllText``, line 369: UTF-8 unless a byte order mark says otherwise, each invalid
  byte a U+FFFD; names and delimiters are compared as such text, lines 395-420): the text is split at
  ``\\n`` only (``ReadLine``, lines 462-496, ``\\r\\n`` on Windows alone); empty lines are skipped; a
  line whose first ``=`` comes before its first ``<<`` is ``name=value``; otherwise ``name<<DELIMITER``
  starts a heredoc whose value runs to the first line equal to ``DELIMITER``; no closing line, an empty
  name or delimiter, or a line with neither form throws, which fails the step after the entries before
  it were applied (``ProcessFiles``, lines 73-89).
- ``SetEnvFileCommand`` refuses ``NODE_OPTIONS``, compared ignoring case (lines 171-191, 215-218).
- ``AddPathFileCommand`` (lines 127-158) reads ``GITHUB_PATH`` with ``File.ReadAllLines``, which also
  ends a line at a lone ``\\r``, and prepends every non-empty line to ``PATH``.
- ``CreateStepSummaryCommand`` (lines 221-293) drops the whole summary, with an error, when the file is
  over ``AttachmentSizeLimit`` = 1024 * 1024 bytes.

A command that finds the real files anyway (they are in the guard's own environment) and writes to them
directly is undone: each real file is put back as it was before the command started.

The command can also swap any of these files for a FIFO, a directory, a link (to a file of the user's,
or to /dev/zero) or an 8 GiB sparse file. The runner creates each file afresh for a step (delete, then
``File.Create``: ``FileCommandManager.InitializeFiles``, lines 43-56) and then reads whatever the path
names, following links (``File.ReadAllText``, line 369; ``new StreamReader(filePath)``, line 259). So
every access here is ``_open_plain``'s: never through a link, never blocking on a FIFO, regular files
only, and reads bounded; and what the command planted at a real file's path is replaced by an empty
regular file again (``PrivateFiles.make_plain``) before the guard restores or appends to it.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

OUTPUT = "GITHUB_OUTPUT"
SUMMARY = "GITHUB_STEP_SUMMARY"
ENV = "GITHUB_ENV"
PATH = "GITHUB_PATH"
STATE = "GITHUB_STATE"
FILE_VARIABLES = (OUTPUT, SUMMARY, ENV, PATH, STATE)
SUMMARY_LIMIT_BYTES = 1024 * 1024  # CreateStepSummaryCommand.AttachmentSizeLimit
_ENV_REFUSED = ("NODE_OPTIONS",)  # SetEnvFileCommand._setEnvBlockList
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z", re.ASCII)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z", re.ASCII)
# File.ReadAllText's StreamReader detects these (longest first: FF FE 00 00 is UTF-32 LE, not UTF-16).
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_SAVED_MAX_BYTES = 4 * SUMMARY_LIMIT_BYTES  # a real file bigger than this at start is only truncated back
COMMAND_SUMMARY_HEADING = "\n---\n\n#### Written by the guarded command, not by gpu-hang-guard\n\n"
# The runner keeps a job's outputs to 1 MB and a step summary to 1 MiB; 64 MiB of file commands is far
# past anything real and still reads into memory at once.
PRIVATE_FILE_MAX_BYTES = 64 << 20
SUMMARY_TRIMMED = (
    "_{left_out:,} of its {total:,} bytes are left out: GitHub drops a step summary over "
    f"{SUMMARY_LIMIT_BYTES:,} bytes._\n\n"
)


@dataclass(frozen=True)
class Checked:
    """What passes from one private file: the bytes to append, and what was dropped (the guard's words)."""

    kept: bytes
    dropped: Tuple[str, ...] = ()


def runner_text(data: bytes) -> str:
    """``data`` as the runner reads a file command: ``File.ReadAllText`` (FileCommandManager.cs:369).

    That is a ``StreamReader`` that picks UTF-8, UTF-16 or UTF-32 by a byte order mark (dropping it)
    and otherwise reads UTF-8, every invalid byte becoming U+FFFD: two different bytes (0xFE, 0xFF)
    then read as the same character, so the check must compare what the runner compares.
    """
    for bom, encoding in _BYTE_ORDER_MARKS:
        if data.startswith(bom):
            return data[len(bom):].decode(encoding, errors="replace")
    return data.decode("utf-8", errors="replace")


def check_key_values(data: bytes, name_ok: Callable[[str], bool]) -> Checked:
    """The complete, well-formed ``name=value`` lines and closed ``name<<DELIMITER`` heredocs of ``data``.

    Follows the runner's ``EnvFileKeyValuePairs`` (see the module docstring) on the text the runner
    decodes (``runner_text``); additionally drops an unterminated last line (the guard's own lines come
    next and would be glued to it) and every entry whose name ``name_ok`` refuses. An unclosed heredoc
    drops everything from its first line on, as the runner would have read all of it as the heredoc's
    value. What is kept is that text in UTF-8 (a U+FFFD stays one), so the runner reads the entries
    the check saw, whatever bytes the command wrote.
    """
    lines = runner_text(data).split("\n")
    tail = lines.pop()  # "" when data ends with \n
    kept: List[str] = []
    dropped: List[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            name = line[:equals]
            if name_ok(name):
                kept.append(line + "\n")
            else:
                dropped.append(_refused(name))
            continue
        if heredoc < 0:
            dropped.append("a line that is neither name=value nor name<<DELIMITER")
            continue
        name, delimiter = line[:heredoc], line[heredoc + 2:]
        if not name or not delimiter:
            dropped.append("a heredoc without a name or a delimiter")
            continue
        try:
            close = lines.index(delimiter, index)
        except ValueError:
            dropped.append(f"an unclosed heredoc and the {len(lines) - index:,} lines after it")
            tail = ""
            break
        if name_ok(name):
            kept.extend(part + "\n" for part in lines[index - 1: close + 1])
        else:
            dropped.append(_refused(name))
        index = close + 1
    if tail:
        dropped.append("an unterminated last line")
    return Checked("".join(kept).encode("utf-8"), tuple(dropped))


def entry_names(data: bytes) -> Tuple[str, ...]:
    """The names of the entries the runner reads in ``data`` (``check_key_values``'s parse)."""
    names: List[str] = []
    check_key_values(data, lambda name: names.append(name) is None)
    return tuple(names)


def _refused(name: str) -> str:
    # The name itself is the command's text: it never reaches the console, only its length does.
    if not name:
        return "an entry without a name"
    return (f"an entry whose name ({len(name)} characters) is malformed, belongs to the guard or was set "
            "before it")


def output_name_check(owned: Sequence[str]) -> Callable[[str], bool]:
    """Names for ``GITHUB_OUTPUT`` and ``GITHUB_STATE``: identifiers, none of ``owned`` (any case)."""
    refused = {name.lower() for name in owned}
    return lambda name: bool(_OUTPUT_NAME.match(name)) and name.lower() not in refused


def env_name_ok(name: str) -> bool:
    """Names for ``GITHUB_ENV``: POSIX variable names, not one the runner refuses (``NODE_OPTIONS``)."""
    return bool(_ENV_NAME.match(name)) and name.upper() not in _ENV_REFUSED


def check_path_lines(data: bytes) -> Checked:
    """The complete, non-empty ``GITHUB_PATH`` lines holding no ``\\r`` or NUL (each one directory)."""
    lines = data.split(b"\n")
    tail = lines.pop()
    kept = [line + b"\n" for line in lines if line and b"\r" not in line and b"\0" not in line]
    dropped = ["a line holding a carriage return or NUL"] * sum(
        1 for line in lines if line and (b"\r" in line or b"\0" in line)
    )
    if tail:
        dropped.append("an unterminated last line")
    return Checked(b"".join(kept), tuple(dropped))


def summary_part(data: bytes, used_bytes: int) -> Tuple[bytes, bool]:
    """The command's summary to append after ``used_bytes`` already in the real file, and if it was trimmed.

    Starts with the guard's heading (so nothing in the command's Markdown can hide that the rest is
    the command's), ends with ``\\n``, and is cut at a line end to keep the whole file at most
    ``SUMMARY_LIMIT_BYTES``, saying so in the heading. Empty when the command wrote nothing.
    """
    if not data.strip():
        return b"", False
    if not data.endswith(b"\n"):
        data += b"\n"
    heading = COMMAND_SUMMARY_HEADING.encode("utf-8")
    room = SUMMARY_LIMIT_BYTES - used_bytes - len(heading)
    if len(data) <= room:
        return heading + data, False
    longest_note = len(SUMMARY_TRIMMED.format(left_out=len(data), total=len(data)).encode("utf-8"))
    keep_room = room - longest_note
    kept = data.rfind(b"\n", 0, keep_room) + 1 if keep_room > 0 else 0
    note = SUMMARY_TRIMMED.format(left_out=len(data) - kept, total=len(data)).encode("utf-8")
    if used_bytes + len(heading) + len(note) + kept > SUMMARY_LIMIT_BYTES:
        return b"", True  # not even the note fits
    return heading + note + data[:kept], True


@dataclass(frozen=True)
class _Saved:
    """A real file as it was before the command started: its size and, when small enough, its bytes."""

    size: int
    content: Optional[bytes]


class PrivateFiles:
    """Private stand-ins for the real file-command files in ``environ``; ``close`` removes them."""

    def __init__(self, environ: Mapping[str, str], temp_root: Optional[str] = None) -> None:
        self.real: Dict[str, str] = {
            name: environ[name] for name in FILE_VARIABLES if environ.get(name)
        }
        self.private: Dict[str, str] = {}
        self._saved: Dict[str, Optional[_Saved]] = {}
        self._dir: Optional[str] = None
        self._set_before: Dict[str, Tuple[str, ...]] = {}
        if not self.real:
            return
        self._dir = tempfile.mkdtemp(prefix="gpu-hang-guard-files-", dir=temp_root)
        for name, real in self.real.items():
            private = os.path.join(self._dir, name.lower())
            with open(private, "xb"):
                pass
            self.private[name] = private
            self._saved[name] = _save(real)
        # What the step set before the guard is the step's (action.yml's guard step sets pid,
        # summary-file and output-file, which its stop step trusts): the command may not override it.
        for name in (OUTPUT, STATE):
            saved = self._saved.get(name)
            if saved is not None and saved.content:
                self._set_before[name] = entry_names(saved.content)

    @property
    def extra_env(self) -> Tuple[Tuple[str, str], ...]:
        """``(variable, private path)`` for the command's environment."""
        return tuple(self.private.items())

    def make_plain(self) -> List[str]:
        """Make each real file a plain one again if the command swapped it (see the module doc); warnings.

        Called by ``restore`` and ``pass_summary``; its tree is ended by then, so nothing plants again.
        """
        warnings = []
        for name, path in sorted(self.real.items()):
            problem = _make_plain(path)
            if problem:
                warnings.append(f"the real ${name} file was {problem}; the guard made it a plain file again")
        return warnings

    def restore(self) -> List[str]:
        """Put each real file back as it was before the command (which could find their paths); warnings."""
        warnings = self.make_plain()
        for name, real in self.real.items():
            saved = self._saved.get(name)
            if saved is not None and _restore(real, saved):
                warnings.append(
                    f"the command wrote to the real ${name} file directly instead of its private one; "
                    "the guard put the file back as it was before the command started"
                )
        return warnings

    def pass_through(self, owned_outputs: Sequence[str]) -> List[str]:
        """Append the valid part of the command's outputs, env, path and state files; warnings.

        Call after ``restore`` and before the guard writes its own outputs (a name the guard owns is
        dropped anyway; the guard's lines coming last makes sure). Names of ``owned_outputs`` and those
        the real file already held when the guard started are refused to the command: the runner keeps
        the last value of a name (``SetOutputFileCommand``, FileCommandManager.cs:335-347).
        """
        owned = tuple(owned_outputs) + self._set_before.get(OUTPUT, ())
        checks = {
            OUTPUT: lambda data: check_key_values(data, output_name_check(owned)),
            STATE: lambda data: check_key_values(data, output_name_check(self._set_before.get(STATE, ()))),
            ENV: lambda data: check_key_values(data, env_name_ok),
            PATH: check_path_lines,
        }
        warnings = []
        for name, check in checks.items():
            if name not in self.private:
                continue
            data, unread = _read(self.private[name], PRIVATE_FILE_MAX_BYTES)
            if unread:
                warnings.append(f"the command's ${name} file was {unread}; its entries are ignored")
            checked = check(data)
            problem = _append(self.real[name], checked.kept)
            if problem:
                warnings.append(f"cannot pass the command's ${name} entries on: {problem}")
            if checked.dropped:
                warnings.append(_dropped_warning(name, checked.dropped))
        return warnings

    def pass_summary(self) -> List[str]:
        """Append the command's summary after the guard's own, within GitHub's limit; warnings."""
        if SUMMARY not in self.private:
            return []
        warnings = self.make_plain()
        real = self.real[SUMMARY]
        data, unread = _read(self.private[SUMMARY], PRIVATE_FILE_MAX_BYTES)
        if unread:
            warnings.append(f"the command's ${SUMMARY} file was {unread}; its entries are ignored")
        try:
            used = os.lstat(real).st_size
        except OSError:
            used = 0
        part, trimmed = summary_part(data, used)
        problem = _append(real, part)
        if problem:
            warnings.append(f"cannot pass the command's job summary on: {problem}")
        if trimmed:
            warnings.append(f"the command's job summary was trimmed to keep ${SUMMARY} under GitHub's limit")
        return warnings

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _dropped_warning(name: str, dropped: Sequence[str]) -> str:
    counts: Dict[str, int] = {}
    for reason in dropped:
        counts[reason] = counts.get(reason, 0) + 1
    parts = [reason if n == 1 else f"{reason} (x{n})" for reason, n in counts.items()]
    return f"dropped from the command's ${name}: " + "; ".join(parts)


@dataclass(frozen=True)
class ReportPath:
    """A path the guard writes its report to (``--json``, ``--summary``, ``--github-output``), as it was
    before the command ran: the command may plant a link, a FIFO or a device there meanwhile.

    What the user gave stays theirs: a link at the start (``--json /dev/stdout``) is followed while it
    still reads the same, and a FIFO, a device or a file of several names (a hard link) at the start is
    written as it is. Anything else found
    at the path when the report is due, other than a regular file, was planted by the command; as the
    runner does for its file commands (``FileCommandManager.InitializeFiles``: ``TryDeleteFile`` then
    ``File.Create``, lines 53-56 at 258d6c8), the guard removes it and creates a new file.
    """

    path: str
    link: Optional[str] = None  # the link's text when the path was a symlink at the start
    special: Optional[Tuple[int, int]] = None  # (st_dev, st_ino) of a FIFO, device or hard link at the start

    @classmethod
    def at_start(cls, path: str) -> "ReportPath":
        try:
            here = os.lstat(path)
            if stat.S_ISLNK(here.st_mode):
                return cls(path, link=os.readlink(path))
        except OSError:
            return cls(path)
        if not (_plain(here) or stat.S_ISDIR(here.st_mode)):
            return cls(path, special=(here.st_dev, here.st_ino))
        return cls(path)

    def open(self, append: bool) -> Tuple[int, str]:
        """A descriptor to write the report, and what the guard did with what the command had planted
        there ('' if nothing), in the guard's words.

        Never blocks on a FIFO nobody reads (that is an ``OSError``). A directory is moved aside, never
        removed: it may hold what the command wrote, and removing a tree is unbounded.
        """
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        try:
            here: Optional[os.stat_result] = os.lstat(self.path)
        except FileNotFoundError:
            here = None
        if here is not None and self._the_users(here):
            fd = os.open(self.path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
            os.set_blocking(fd, True)
            return fd, ""
        try:
            return _open_plain(self.path, flags), ""
        except _NotPlain as what:
            planted = str(what)
        if here is not None and stat.S_ISDIR(here.st_mode):
            aside = _move_aside(self.path)
            done = f"was {planted} during the run; the guard moved it aside as {aside} and wrote a new file"
        else:
            os.unlink(self.path)
            what = "the link" if planted.endswith("link") else "it"
            done = f"was {planted} during the run; the guard removed {what} and wrote a new file"
        return _open_plain(self.path, flags | os.O_EXCL), done

    def _the_users(self, here: os.stat_result) -> bool:
        if self.link is not None:
            try:
                return stat.S_ISLNK(here.st_mode) and os.readlink(self.path) == self.link
            except OSError:
                return False
        return self.special == (here.st_dev, here.st_ino)


def _move_aside(path: str) -> str:
    """Rename ``path`` to ``PATH.put-there-by-the-command-XXXX`` (a fresh name), as the guard does with a
    log the command replaced (``supervise.guard._restore_log``); the new name."""
    for _ in range(8):
        aside = f"{path}.put-there-by-the-command-{secrets.token_hex(4)}"
        if not os.path.lexists(aside):  # rename(2) would replace an empty directory of that name
            os.rename(path, aside)
            return aside
    raise FileExistsError(errno.EEXIST, "no free name to move it aside", path)


class _NotPlain(OSError):
    """The path names something other than a regular file; ``str`` says what, in the guard's words."""


def _open_plain(path: str, flags: int) -> int:
    """``os.open`` for a regular file only: never through a link, never blocking on a FIFO.

    A hard link is a link too: a second name of a file of the user's, planted at the path, would have
    the report written into that file. ``O_TRUNC`` is applied only once the file proved plain.
    Raises ``_NotPlain`` saying what is there instead, or the ``OSError`` of the open.
    """
    truncate = bool(flags & os.O_TRUNC)
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _NotPlain("replaced with a symlink") from None
        if err.errno == errno.EISDIR:
            raise _NotPlain("replaced with a directory") from None
        if err.errno == errno.ENXIO:  # O_NONBLOCK | O_WRONLY on a FIFO nobody reads
            raise _NotPlain("replaced with a FIFO") from None
        raise
    try:
        here = os.fstat(fd)
        if not _plain(here):
            raise _NotPlain(_what_is(here))
        if truncate:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        raise
    return fd


def _plain(here: os.stat_result) -> bool:
    """A regular file of one name: a second name (a hard link) may be a file of the user's."""
    return stat.S_ISREG(here.st_mode) and here.st_nlink == 1


def _what_is(here: os.stat_result) -> str:
    """What the command put where a plain file was (``_plain`` is false), in the guard's words."""
    mode = here.st_mode
    if stat.S_ISREG(mode):
        return "replaced with a hard link"
    if stat.S_ISLNK(mode):
        return "replaced with a symlink"
    if stat.S_ISDIR(mode):
        return "replaced with a directory"
    if stat.S_ISFIFO(mode):
        return "replaced with a FIFO"
    return "replaced with a special file"


def _make_plain(path: str) -> str:
    """Make ``path`` an empty regular file if something else is there; what was there, or ''."""
    try:
        here = os.lstat(path)
    except FileNotFoundError:
        return ""
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    if _plain(here):
        return ""
    problem = _what_is(here)
    try:
        if stat.S_ISDIR(here.st_mode):
            shutil.rmtree(path)  # never follows the symlinks inside
        else:
            os.unlink(path)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
    except OSError as err:
        problem += f", and could not be made a plain file ({err.strerror or err})"
    return problem


def _save(path: str) -> Optional[_Saved]:
    try:
        size = os.lstat(path).st_size
    except OSError:
        return _Saved(-1, None)  # not there yet: the guard's own write will create it
    content = None
    if size <= _SAVED_MAX_BYTES:
        try:
            fd = _open_plain(path, os.O_RDONLY)
        except OSError:
            return None
        with open(fd, "rb") as handle:
            content = handle.read(_SAVED_MAX_BYTES + 1)
    return _Saved(size, content)


def _restore(path: str, saved: _Saved) -> bool:
    """Rewrite ``path`` to ``saved`` if it changed; True when it had."""
    if saved.size < 0:
        if not os.path.lexists(path):
            return False
        try:
            os.unlink(path)
        except OSError:
            pass
        return True
    try:
        fd = _open_plain(path, os.O_RDWR)
    except OSError:
        return False
    try:
        with open(fd, "r+b") as handle:
            now = handle.read(saved.size + 1)
            if saved.content is not None:
                if now == saved.content:
                    return False
                handle.seek(0)
                handle.write(saved.content)
            elif len(now) == saved.size:
                return False  # too big to keep a copy of: only what was added can be taken back
            handle.truncate(saved.size)
        return True
    except OSError:
        return False


def _read(path: str, max_bytes: int) -> Tuple[bytes, str]:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; ``(b"", why)`` otherwise.

    Nothing there, or an unreadable file, is ``(b"", "")``: the command wrote no entries.
    """
    try:
        fd = _open_plain(path, os.O_RDONLY)
    except _NotPlain as what:
        return b"", str(what)
    except OSError:
        return b"", ""
    with open(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            size = os.fstat(handle.fileno()).st_size
            return b"", f"{size:,} bytes, over the {max_bytes:,} the guard reads"
    return data, ""


def ends_in_a_partial_line(fd: int) -> bool:
    """Whether the file open (write-only) on ``fd`` is not empty and its last byte is no line break.

    An earlier command of the step may have left its last line open there: the runner would read what
    the guard appends as the rest of that line (an output's value, a summary's paragraph). Read through
    ``/proc/self/fd``: the very file the guard opened, never the path again.
    """
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return False
        reader = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:  # no /proc, or not readable: append as before
        return False
    try:
        return os.pread(reader, 1, size - 1) not in (b"\n", b"")
    except OSError:
        return False
    finally:
        os.close(reader)


def _append(path: str, data: bytes) -> str:
    """Append ``data`` to the regular file ``path`` (made if missing), on a line of its own; '' on
    success, else the reason."""
    if not data:
        return ""
    try:
        fd = _open_plain(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        if ends_in_a_partial_line(fd):
            data = b"\n" + data
        with open(fd, "ab") as handle:
            handle.write(data)
    except _NotPlain as what:
        return f"the file was {what}"
    except OSError as err:
        return (err.strerror or str(err)).lower()
    return ""
