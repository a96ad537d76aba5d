"""Keep the guarded command's output from issuing GitHub workflow commands.

The runner parses ``::name::`` at the start of a line (after leading whitespace) and ``##[`` anywhere,
in every line a step prints. Printing ``::stop-commands::TOKEN`` first makes it ignore all of them until
``::TOKEN::`` appears, so a test cannot add masks, fake annotations or switch our own commands off.
The token is random and never reaches the command (the command only ever sees its own output).
"""

from __future__ import annotations

import secrets
from typing import Mapping


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
