"""The one error family the CLI turns into a one-line message and exit status 2.

Anything the user got wrong (arguments, a config file, an unreadable input) raises a subclass of
``AnalyzerError`` with a message that names the value and where it came from. ``cli.main`` catches the
base class once; nothing else prints these.
"""

from __future__ import annotations

from .markup import one_line_message

USAGE_EXIT_STATUS = 2


class AnalyzerError(Exception):
    """Base of every user-facing error; ``str(err)`` is the whole one-line message.

    Messages name paths and values the user (or a hostile archive) chose: ``str`` shows their line
    breaks, controls and undecodable bytes as escapes and breaks GitHub's ``##[`` command prefix, so
    the message stays one line that no terminal or runner acts on, whatever it quotes.
    """

    def __str__(self) -> str:
        return one_line_message(super().__str__())


class UsageError(AnalyzerError):
    """Bad command-line arguments (a malformed duration, a missing command after ``--``)."""


class CommandNotStarted(UsageError):
    """The guarded command could not be started (not found, not executable, a missing interpreter).

    ``exit_status`` is what a shell gives for the same command: 127 when it was not found (ENOENT,
    also a script whose ``#!`` interpreter is missing, as bash 5.2 says), 126 when it was found but
    could not be executed. ``reason`` names the program and says why (``'pytset': No such file or
    directory``).
    """

    def __init__(self, reason: str, exit_status: int) -> None:
        super().__init__(f"run: cannot start {reason}")
        self.reason = one_line_message(reason)
        self.exit_status = exit_status


class ConfigError(AnalyzerError):
    """A config or rule catalogue that cannot be used; the message names the file and the key."""

    def __init__(self, source: str, key: str, problem: str) -> None:
        super().__init__(f"{source}: {key}: {problem}")
        self.source = source
        self.key = key
        self.problem = problem


class InputError(AnalyzerError):
    """A log that cannot be read (missing, a directory without logs, a corrupt archive)."""
