"""Keep the guarded command's output from issuing GitHub workflow commands.

The runner parses ``::name::`` at the start of a line (after leading whitespace) and ``##[`` anywhere,
in every line a step prints. Printing ``::stop-commands::TOKEN`` first makes it ignore all of them until
``::TOKEN::`` appears, so a test cannot add masks, fake annotations or switch our own commands off.
The token is random and never reaches the command (the command only ever sees its own output).
"""

from __future__ import annotations

import re
import secrets
import threading
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple

from ..model import WORKFLOW_COMMANDS


def stop_token() -> str:
    """A fresh unguessable token for one guarded run (hex, so it never needs escaping)."""
    return "ghg-" + secrets.token_hex(16)


def should_stop_commands(environ: Mapping[str, str], allow_workflow_commands: bool) -> bool:
    """True when running under GitHub Actions and the user did not opt in to the command's commands."""
    return environ.get("GITHUB_ACTIONS") == "true" and not allow_workflow_commands


def stop_line(token: str) -> bytes:
    """The line that stops workflow-command processing until ``resume_line(token)``.

    It starts with a line break: the runner takes a command only at the start of a line (actions/runner
    ``src/Runner.Common/ActionCommand.cs``, ``TryParseV2``, lines 61-66 at 258d6c8), and the step may
    have left a partial line on this stdout before the guard started (``printf "Running: "``).
    """
    return f"\n::stop-commands::{token}\n".encode("ascii")


def resume_line(token: str) -> bytes:
    """The line that resumes workflow-command processing, after a line break as ``stop_line``.

    The guard ends its own echo's partial line, but another process of the step (a background job of
    its shell) writes the same stdout and may have left one meanwhile.
    """
    return f"\n::{token}::\n".encode("ascii")


# The first parser to find one of the runner's commands (``WORKFLOW_COMMANDS``) in a line wins (TryParseV2,
# then the legacy TryParse), so a line's command depends on the whole set.
_STOP_COMMAND = "stop-commands"
# Data escapes as ActionCommand.UnescapeData and the legacy ActionCommand.Unescape undo them, in order.
_DATA_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_LEGACY_ESCAPES = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))
# The runner's StreamReader.ReadLine ends a line at \n, \r or \r\n (an empty line between \r and \n is
# no command either way).
_LINE_END = re.compile(rb"[\r\n]")
# How much of a line the follower keeps: a command that matters here (a stop token, a group) is short,
# and a test's single line may be a gigabyte.
LINE_HEAD_BYTES = 64 * 1024
_LEGACY_MARK = b"##["
# A line the runner may take for a command: "::" after leading whitespace (the runner's TrimStart,
# Unicode spaces included, in UTF-8) or "##[" anywhere. Found from a line end with a literal first
# byte, which Python's re searches for fast (a character class first ran at 20 MB/s on a flood).
_LEADING_SPACE = (rb"(?:[ \t\x0b\x0c\x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
                  rb"|\xe2\x81\x9f|\xe3\x80\x80)*::")
_COMMAND_AFTER_LINE_END = (re.compile(b"\n" + _LEADING_SPACE), re.compile(b"\r" + _LEADING_SPACE))


def _unescape(text: str, table: Tuple[Tuple[str, str], ...]) -> str:
    for escaped, plain in table:
        text = text.replace(escaped, plain)
    return text


def parse_command(line: str, registered: FrozenSet[str]) -> Optional[Tuple[str, str]]:
    """``(name in lower case, data)`` of the workflow command the runner finds in ``line``, or None.

    ``registered`` holds lower-case names. As ActionCommand.TryParseV2 (``::name props::data`` after
    leading whitespace), then ActionCommand.TryParse (``##[name props]data`` anywhere in the line).
    """
    message = line.lstrip()
    if message.startswith("::"):
        end = message.find("::", 2)
        if end >= 0:
            name = message[2:end].split(" ", 1)[0]
            if name.lower() in registered:
                return name.lower(), _unescape(message[end + 2:], _DATA_ESCAPES)
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            name = line[start + 3:end].split(" ", 1)[0]
            if name.lower() in registered:
                return name.lower(), _unescape(line[end + 1:], _LEGACY_ESCAPES)
    return None


class CommandFollower:
    """What GitHub's runner has made of the command's own workflow commands, where the guard lets them
    through (``--allow-workflow-commands``): is command processing stopped, and with which token, and is
    a log group still open. One per step, as the runner keeps one state for stdout and stderr together.

    A command killed by a timeout, or a nested tool that fenced its output and died before resuming it,
    leaves that state behind: every annotation the guard prints after it would be plain text, and its
    report would sit folded in the command's group. ``closing_lines`` undoes what it can.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._heads: Dict[str, bytearray] = {}
        self._dropped_tail: Dict[str, bytes] = {}  # the end of what a too-long line lost, for a "##[" split
        self._dropped_mark: Dict[str, bool] = {}
        self.stop_token: Optional[str] = None
        self.group_open = False
        self.unknown = False  # a line too long to follow may have held a command

    def feed(self, stream: str, data: bytes) -> None:
        """Follow ``data``, as it reached the console of ``stream`` (``stdout`` or ``stderr``).

        Only the lines the runner could take for a command are parsed (the echo of a flood goes
        through here): the line the last call left open, the one this leaves open, and the whole
        lines in between that hold a candidate (``_CANDIDATE``).
        """
        with self._lock:
            first = _LINE_END.search(data)
            if first is None:
                self._add(stream, data)
                return
            self._add(stream, data[: first.start()])
            self._end_line(stream)
            last = max(data.rfind(b"\n"), data.rfind(b"\r"))
            done = first.end()
            for where in _candidates(data, first.start(), last):
                if where < done:
                    continue  # in a line already read
                begin = max(data.rfind(b"\n", done, where), data.rfind(b"\r", done, where), done - 1) + 1
                end = _LINE_END.search(data, where, last + 1).start()
                line = data[begin:end]
                dropped = line[LINE_HEAD_BYTES:]
                self._line(line[:LINE_HEAD_BYTES], bool(dropped), _LEGACY_MARK in dropped)
                done = end + 1
            self._add(stream, data[last + 1:])

    def _add(self, stream: str, piece: bytes) -> None:
        head = self._heads.setdefault(stream, bytearray())
        room = LINE_HEAD_BYTES - len(head)
        head += piece[:room]
        dropped = piece[max(room, 0):]
        if dropped:
            seen = self._dropped_tail.get(stream, b"") + dropped
            self._dropped_mark[stream] = self._dropped_mark.get(stream, False) or _LEGACY_MARK in seen
            self._dropped_tail[stream] = seen[-(len(_LEGACY_MARK) - 1):]

    def _end_line(self, stream: str) -> None:
        head = self._heads.pop(stream, bytearray())
        cut = stream in self._dropped_tail
        marked = self._dropped_mark.pop(stream, False)
        self._dropped_tail.pop(stream, None)
        self._line(bytes(head), cut, marked)

    def _line(self, head: bytes, cut: bool, marked: bool) -> None:
        """One whole line: its first ``LINE_HEAD_BYTES`` bytes, whether more followed, and whether what
        followed held a legacy ``##[``."""
        registered = WORKFLOW_COMMANDS | ({self.stop_token.lower()} if self.stop_token else frozenset())
        command = parse_command(head.decode("utf-8", "replace"), registered)
        if command is None:
            # The runner reads the whole line: a legacy "##[" past the kept head could be a command.
            self.unknown = self.unknown or (marked and _LEGACY_MARK not in head)
            return
        name, data = command
        if self.stop_token is not None:
            if name == self.stop_token.lower():
                self.stop_token = None
        elif name == _STOP_COMMAND:
            # ValidateStopToken throws for these, and the runner's state stays as it was.
            if data and data.lower() not in registered and data.lower() != "pause-logging":
                self.stop_token = data
                self.unknown = self.unknown or cut  # the token went on past the kept head
        elif name == "group":
            self.group_open = True
        elif name == "endgroup":
            self.group_open = False

    def closing_lines(self) -> Tuple[bytes, bool]:
        """The lines that resume command processing and close the group, and whether they restore it.

        The command's unfinished last lines count as ended: the runner reads a stream's last line
        without its end, and the guard ends them on the console before its own lines. False when the
        state is not the guard's to restore: a token no line can resume (one with a space, or "::"),
        or a command the follower could not read.
        """
        with self._lock:
            for stream in list(self._heads):
                self._end_line(stream)
            out = b""
            restored = not self.unknown
            if self.stop_token is not None:
                resume = _resume_line_for(self.stop_token)
                if resume is None:
                    return b"", False
                out += resume
            if self.group_open:
                out += b"::endgroup::\n"
            return out, restored


def _candidates(data: bytes, start: int, stop: int) -> List[int]:
    """Where lines that may be commands start (after the line end at ``start``), or where their "##["
    is, in ``data[start:stop]``; in order."""
    found = [match.start() + 1 for pattern in _COMMAND_AFTER_LINE_END
             for match in pattern.finditer(data, start, stop)]
    mark = data.find(_LEGACY_MARK, start, stop)
    while mark >= 0:
        found.append(mark)
        mark = data.find(_LEGACY_MARK, mark + len(_LEGACY_MARK), stop)
    return sorted(found)


def _resume_line_for(token: str) -> Optional[bytes]:
    """A line the runner reads as ``token``'s resume command, or None when no line is (a space in it)."""
    registered = WORKFLOW_COMMANDS | {token.lower()}
    for line in (f"::{token}::", f"##[{token}]"):
        if "\r" not in line and "\n" not in line and parse_command(line, registered) == (token.lower(), ""):
            return f"\n{line}\n".encode("utf-8")
    return None
