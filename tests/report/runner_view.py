"""What GitHub's runner makes of a step's output: the lines it sees and the commands it would run.

Lines: the runner reads each stream with .NET ``StreamReader.ReadLine`` (actions/runner
``src/Runner.Sdk/ProcessInvoker.cs`` ``StartReadStream``, line 513), which ends a line at ``\\n``,
``\\r`` or ``\\r\\n`` and nowhere else (``harness.split_lines``), and handles every stderr line of a
batch before the stdout lines (``ProcessOutput``, lines 398-410). Commands: the parser of
``tests/action/harness.py`` (owned by the action's tests), which follows
``src/Runner.Common/ActionCommand.cs`` (``TryParseV2`` trims leading whitespace before ``::``, line 62;
legacy ``TryParse`` finds ``##[`` anywhere, line 132) and the stop-commands state of
``src/Runner.Worker/ActionCommandManager.cs`` (``TryProcessCommand``, lines 85-123).
"""

from __future__ import annotations

from typing import List, Tuple

from tests.action.harness import CommandParser, WorkflowCommand, split_lines


def runner_commands(*streams: bytes) -> Tuple[WorkflowCommand, ...]:
    """Every command the runner would run for these streams, read in this order by one parser."""
    parser = CommandParser()
    found = []
    for data in streams:
        for line in split_lines(data):
            command = parser.feed(line)
            if command is not None:
                found.append(command)
    return tuple(found)


def every_order(stdout: bytes, stderr: bytes) -> List[Tuple[WorkflowCommand, ...]]:
    """The commands for each way the runner may interleave the two streams (each whole, either first)."""
    return [runner_commands(stdout, stderr), runner_commands(stderr, stdout)]
