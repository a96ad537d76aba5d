"""Run ``supervise`` in its own process, as the CLI will: options as JSON in argv[1], result to argv[2].

Used by the tests that need the guard's real stdout (echo, stop-commands) or send it signals.
Prints nothing of its own, so its stdout is exactly what the guard wrote.
"""

from __future__ import annotations

import json
import sys

from analyzer.supervise.guard import GuardOptions, supervise

if __name__ == "__main__":
    options = json.loads(sys.argv[1])
    options["argv"] = tuple(options["argv"])
    result = supervise(GuardOptions(**options))
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(
            {
                "command": result.command.to_dict(),
                "findings": [finding.to_dict() for finding in result.findings],
                "diagnostics": [diagnostic.to_dict() for diagnostic in result.diagnostics],
                "stdout_path": result.stdout_path,
                "stderr_path": result.stderr_path,
            },
            handle,
        )
