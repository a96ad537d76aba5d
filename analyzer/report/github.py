"""Talking to GitHub Actions: annotations as workflow commands, and step outputs for ``$GITHUB_OUTPUT``.

Escaping follows actions/toolkit ``packages/core/src/command.ts`` exactly: data escapes ``%`` first,
then ``\\r`` and ``\\n``; properties also escape ``:`` and ``,``. The runner keeps only the first 10
annotations of each type (error, warning, notice) per step and cuts each message at 4,096 characters
(actions/runner ``ExecutionContext.cs``: ``_maxCountPerIssueType``, ``_maxIssueMessageLength``), so
we choose which findings get the slots and say in one notice how many more the job summary holds.
"""

from __future__ import annotations

import uuid
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..model import Finding, Report, Severity
from ..markup import visible
from ._escape import one_line, safe_report
from .headline import plural, root_cause

RUNNER_ANNOTATIONS_PER_TYPE = 10
MESSAGE_MAX_CHARS = 1000  # well under the runner's 4,096 after escaping
TITLE_PREFIX = "gpu-hang-guard"
OUTPUT_NAMES = ("verdict", "exit-code", "report", "log-dir", "findings", "timed-out")


def escape_data(value: str) -> str:
    """A workflow command's message: ``%`` -> ``%25`` (first), ``\\r`` -> ``%0D``, ``\\n`` -> ``%0A``."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A workflow command's property value: as ``escape_data``, and ``:`` -> ``%3A``, ``,`` -> ``%2C``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, properties: Dict[str, str], message: str) -> str:
    """``::command key=value,key=value::message`` with every part escaped."""
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


def _annotation(finding: Finding) -> str:
    properties: Dict[str, str] = {}
    if finding.path and finding.line > 0:
        properties["file"] = visible(finding.path)  # as every format shows it: one line, no controls
        properties["line"] = str(finding.line)
    properties["title"] = f"{TITLE_PREFIX}: {finding.kind.value} [{finding.rule}]"
    message = one_line(finding.message) or finding.rule
    if len(message) > MESSAGE_MAX_CHARS:
        message = message[: MESSAGE_MAX_CHARS - 3] + "..."
    return workflow_command(finding.severity.value, properties, message)


def select_annotations(
    findings: Sequence[Finding],
    per_severity_cap: int = RUNNER_ANNOTATIONS_PER_TYPE,
    slots: Optional[Mapping[Severity, int]] = None,
) -> Tuple[List[Finding], List[Finding]]:
    """Split ranked ``findings`` into ``(annotated, left_out)``, at most ``per_severity_cap`` each.

    ``slots`` lowers the cap of a severity to what is left of the step's budget when annotations of
    that type were already made on the same step (in a composite action every embedded step, and the
    runner's own "Unexpected input(s)" warning, share the ``uses:`` step's 10 per type).
    When anything is left out, one notice slot is kept free for the notice that says so: the runner
    would drop an eleventh notice, and that one must not be it.
    """
    caps = {severity: per_severity_cap for severity in Severity}
    for severity, left in (slots or {}).items():
        caps[severity] = max(0, min(caps[severity], left))
    totals = {severity: sum(1 for f in findings if f.severity is severity) for severity in Severity}
    if any(totals[s] > caps[s] for s in Severity):
        caps[Severity.NOTICE] = max(0, caps[Severity.NOTICE] - 1)
    used = {severity: 0 for severity in Severity}
    annotated: List[Finding] = []
    left_out: List[Finding] = []
    for finding in findings:
        if used[finding.severity] < caps[finding.severity]:
            used[finding.severity] += 1
            annotated.append(finding)
        else:
            left_out.append(finding)
    return annotated, left_out


def render_annotations(
    report: Report,
    per_severity_cap: int = RUNNER_ANNOTATIONS_PER_TYPE,
    slots: Optional[Mapping[Severity, int]] = None,
) -> str:
    """Workflow-command lines: one annotation per finding, root cause first, capped per severity
    (and by ``slots``, what is left of the step's budget: see ``select_annotations``).

    Findings beyond the cap are summed up in exactly one ``::notice`` pointing at the job summary.
    Only the one-line message is annotated; excerpts live in the summary and the JSON report.
    """
    report = safe_report(report)
    cause = root_cause(report)
    ordered = list(report.findings)
    if cause is not None:
        # Ranking already puts the root cause first; make sure of it, the first annotation is read most.
        ordered.remove(cause)
        ordered.insert(0, cause)
    annotated, left_out = select_annotations(ordered, per_severity_cap, slots)
    lines = [_annotation(finding) for finding in annotated]
    if left_out:
        breakdown = ", ".join(
            plural(count, severity.value)
            for severity in Severity
            for count in [sum(1 for f in left_out if f.severity is severity)]
            if count
        )
        noun = "more finding" if len(left_out) == 1 else "more findings"
        lines.append(
            workflow_command(
                "notice",
                {"title": f"{TITLE_PREFIX}: {len(left_out):,} {noun}"},
                f"{len(left_out):,} {noun} ({breakdown}) not annotated here: GitHub shows at most "
                f"{RUNNER_ANNOTATIONS_PER_TYPE} annotations of each type per step. "
                "All findings are in the job summary and the JSON report.",
            )
        )
    return "".join(line + "\n" for line in lines)


def fence_commands(text: str, token: str, markdown: bool = False) -> str:
    """``text`` between ``::stop-commands::TOKEN`` and ``::TOKEN::``: the runner runs no command in it.

    The runner matches ``::cmd::`` after leading whitespace and legacy ``##[cmd]`` anywhere in a line
    (actions/runner ``src/Runner.Common/ActionCommand.cs``: ``TryParseV2`` trims, ``TryParse`` uses
    ``IndexOf("##[")``), and while stopped it acts only on a line that is exactly the token as a
    command (``src/Runner.Worker/ActionCommandManager.cs``, ``TryProcessCommand``). A line break is
    written before both fence lines, so an unterminated line that someone else left on our stdout
    (or the end of ``text``) cannot swallow either. ``token`` must be fresh and unguessable per run.
    With ``markdown`` each fence line sits in an HTML comment, so the document still renders the same
    when the console output is kept as Markdown.
    """
    stop, resume = f"::stop-commands::{token}", f"::{token}::"
    if markdown:
        stop, resume = f"<!--\n{stop}\n-->", f"<!--\n{resume}\n-->"
    return f"\n{stop}\n{text}\n{resume}\n"


def _output_line(name: str, value: str, delimiter: Optional[str] = None) -> str:
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    # GitHub's multiline form, as actions/toolkit file-command writes it: a random delimiter that
    # the value cannot contain, so the value cannot end the block early or smuggle in other outputs.
    delimiter = delimiter or f"ghadelimiter_{uuid.uuid4()}"
    while delimiter in value:
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def render_outputs(report: Report, report_path: Optional[str]) -> str:
    """Lines to append to ``$GITHUB_OUTPUT``: verdict, exit-code, report, log-dir, findings (a count), and
    timed-out (``true`` when the guard ended the command: a command may exit 124 itself, as coreutils'
    ``timeout`` does).

    A value holding a line break is written as ``name<<DELIMITER`` ... ``DELIMITER`` with a random
    delimiter; other values as ``name=value``.
    """
    values = {
        "verdict": report.verdict.value,
        "exit-code": str(report.exit_status),
        "report": report_path or "",
        "log-dir": report.log_dir or "",
        "findings": str(len(report.findings)),
        "timed-out": "true" if report.command is not None and report.command.timed_out else "false",
    }
    return "".join(_output_line(name, values[name]) for name in OUTPUT_NAMES)
