"""The exit table, in one place: a command's outcome plus findings -> verdict and exit status.

| situation                                                    | status           |
| ------------------------------------------------------------ | ---------------- |
| usage, config or input error (raised, handled by the CLI)    | 2                |
| guard: the guard killed the command for a timeout            | 124              |
| guard: the command exited non-zero                           | its own (128+N for signal N) |
| guard: the command exited 0 but a finding reached ``fail_on`` | 1               |
| scan: a finding reached ``fail_on``                           | 1               |
| otherwise                                                    | 0                |
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

from .exits import TIMEOUT_EXIT_STATUS
from .model import CommandResult, Finding, Severity, Verdict

FINDING_EXIT_STATUS = 1


def decide(
    findings: Iterable[Finding],
    command: Optional[CommandResult] = None,
    fail_on: Severity = Severity.ERROR,
) -> Tuple[Verdict, int]:
    """The verdict and the process exit status for a scan (``command=None``) or a guarded run."""
    failing_finding = any(f.severity.at_least(fail_on) for f in findings)
    status = FINDING_EXIT_STATUS if failing_finding else 0
    if command is not None:
        if command.timed_out or command.exit_code is None:
            status = TIMEOUT_EXIT_STATUS
        elif command.exit_code != 0:
            status = command.exit_code
    return (Verdict.FAIL if status else Verdict.PASS), status
