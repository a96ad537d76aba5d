"""The shared vocabulary: what a finding, a command's outcome and a whole report are.

Every room of the package (supervise, scan, rules, report) speaks in these frozen dataclasses, and
``to_dict`` methods are the one place where the public JSON contract (``version: 1``) is spelled out.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

REPORT_VERSION = 1


# The rule ids of the findings the guard makes itself (no log line matches them); a user's config
# re-grades or ignores them like any catalogue rule.
GUARD_TIMEOUT_RULE = "guard-timeout"
GUARD_IDLE_TIMEOUT_RULE = "guard-idle-timeout"
GUARD_CANCELLED_RULE = "guard-cancelled"
GUARD_UNKILLABLE_RULE = "guard-unkillable-process"
GUARD_LEAKED_RULE = "guard-leaked-process"
GUARD_ABORTED_RULE = "guard-aborted"  # --abort-on: a live finding ended the command (kind hang, error)
# The command failed and no other finding says why: its exit status, and the last traceback it printed.
GUARD_COMMAND_FAILED_RULE = "guard-command-failed"
# The kernel's OOM killer killed a process while the command ran (its kill counters moved).
GUARD_OOM_KILL_RULE = "guard-oom-kill"
# The command could not be started (not found, not executable): exit 127 or 126, as a shell's.
GUARD_COMMAND_NOT_STARTED_RULE = "guard-command-not-started"
GUARD_RULE_IDS = (
    GUARD_TIMEOUT_RULE,
    GUARD_IDLE_TIMEOUT_RULE,
    GUARD_CANCELLED_RULE,
    GUARD_UNKILLABLE_RULE,
    GUARD_LEAKED_RULE,
    GUARD_ABORTED_RULE,
    GUARD_COMMAND_FAILED_RULE,
    GUARD_OOM_KILL_RULE,
    GUARD_COMMAND_NOT_STARTED_RULE,
)
# The scanner's own finding (kind scan-incomplete): an unreadable file or a device skipped inside a
# scanned directory, a user pattern disabled for its time budget. A catalogue entry like the above.
SCAN_INCOMPLETE_RULE = "scan-incomplete"
# Also the scanner's: a log that ends while a test it showed starting is still running, with nothing
# after it to say why (os._exit(0) inside a test exits 0 with no verdict; a crash whose report went to a
# captured stream leaves only the test's -v line).
TEST_NEVER_FINISHED_RULE = "test-never-finished"
# Also the scanner's: a plain scan of a log whose last lines are a Python traceback (a copy of a run's
# output cut where the process died of an uncaught exception; no exit status tells it).
TRACEBACK_ENDS_LOG_RULE = "traceback-ends-log"
# Also the scanner's: a rank's own uncaught exception (its "[rankN]:" traceback) that no finding tells, in a
# log whose launcher reports a failed job: that rank failed on its own, beside the root cause reported.
RANK_RAISED_RULE = "rank-raised"
# Also the scanner's: a unittest verdict that counts failures no line of the log names ("FAILED (unexpected
# successes=1)" after CPython 3.9's bare "u"), on the verdict's lines.
UNITTEST_FAILURES_UNNAMED_RULE = "unittest-failures-unnamed"

# The workflow commands GitHub's runner registers (actions/runner 258d6c8: src/Runner.Worker/
# ActionCommandManager.cs and its IActionCommandExtension classes), matched ignoring case ("::ERROR::x" is
# one): the guard keeps the command's own from the runner, the scanner never reads one as a test's name.
WORKFLOW_COMMANDS = frozenset({
    "add-mask", "add-matcher", "add-path", "debug", "echo", "endgroup", "error", "group", "notice",
    "remove-matcher", "save-state", "set-env", "set-output", "warning", "stop-commands",
})


class Kind(str, enum.Enum):
    """What kind of lie a finding uncovers; the values are part of the JSON contract."""

    ATEXIT_EXCEPTION = "atexit-exception"
    TIMEOUT = "timeout"
    SIGNAL_EXIT = "signal-exit"
    WORKER_FAILURE = "worker-failure"
    CRASH = "crash"
    HANG = "hang"
    UNKILLABLE_PROCESS = "unkillable-process"
    LEAKED_PROCESS = "leaked-process"
    # A test the runner reported as failed or errored; it ranks after the findings that explain it.
    TEST_FAILURE = "test-failure"
    # Part of the input could not be scanned as asked (an unreadable file, a device skipped, a user
    # rule disabled for exhausting its time budget, findings dropped past the per-rule cap).
    SCAN_INCOMPLETE = "scan-incomplete"


class Severity(str, enum.Enum):
    """How bad a finding is; ``rank`` orders them, most severe first."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]

    def at_least(self, threshold: "Severity") -> bool:
        """True when this severity is ``threshold`` or worse."""
        return self.rank <= threshold.rank


_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTICE: 2}


class Verdict(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"


class TimeoutReason(str, enum.Enum):
    """Why the guard ended the command before it exited by itself; values are part of the contract."""

    WALL = "wall"
    IDLE = "idle"
    CANCELLED = "cancelled"
    # A live finding of a kind named in --abort-on appeared and the command did not end by itself.
    ABORTED = "aborted"

    # Renderers print the reason in f-strings: the value, on every Python (3.11 and later would
    # print "TimeoutReason.WALL" for a plain str mix-in).
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


@dataclass(frozen=True)
class Finding:
    """One event in a log (or seen by the guard) that says the run lied.

    ``line`` is the original 1-based line number in ``path`` (``0`` when the guard made the finding and
    it belongs to no log line). ``excerpt`` is cut from the original text. Findings are kept in ranked
    order: the first error is the root cause.
    """

    kind: Kind
    rule: str
    severity: Severity
    path: str
    line: int
    message: str
    excerpt: str = ""
    # The test id the event happened in (pytest node id, unittest "test_m (pkg.mod.Class)"), or None
    # when the log shows no test running at that line.
    test: Optional[str] = None
    # Index into Report.jobs for reports of many jobs (gh, merge); None for a single log or run.
    job: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {
            "kind": self.kind.value,
            "rule": self.rule,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "excerpt": self.excerpt,
            "test": self.test,
        }
        if self.job is not None:
            data["job"] = self.job
        return data


@dataclass(frozen=True)
class ProcessInfo:
    """A snapshot of one process of the guarded tree, taken before any signal was sent."""

    pid: int
    ppid: int
    state: str  # one letter as in /proc/PID/stat: R S D T Z ...
    cmdline: str
    wchan: str = ""
    kernel_stack: str = ""
    started_s_ago: float = 0.0


@dataclass(frozen=True)
class Diagnostic:
    """A titled block of evidence (stack dumps, process table, GPU snapshot) shown collapsed."""

    title: str
    text: str

    def to_dict(self) -> Dict[str, Any]:
        return {"title": self.title, "text": self.text}


@dataclass(frozen=True)
class CommandResult:
    """How the guarded command ended; ``to_dict`` is the JSON report's ``command`` object.

    ``exit_code`` is the shell-style status (``128 + N`` for death by signal N) or ``None`` when the
    command never finished (it survived every signal). ``signal`` is the name of the signal that ended
    it, e.g. ``"SIGTERM"``.
    """

    argv: Tuple[str, ...]
    exit_code: Optional[int]
    signal: Optional[str] = None
    timed_out: bool = False
    timeout_reason: Optional[TimeoutReason] = None
    duration_s: float = 0.0
    leftover_pids: Tuple[int, ...] = ()
    unkillable_pids: Tuple[int, ...] = ()
    log_dir: Optional[str] = None
    # How the guard held the tree: "cgroup-v2", "cgroup-v1" (the kernel's own membership, freeze and
    # kill) or "process-scan" (session, subreaper and environment token); None outside the guard.
    containment: Optional[str] = None
    # False only when the runner cancelled before the guard started the command: nothing ran. Not in
    # the JSON (its keys are stable): there ``exit_code`` is null and the guard-cancelled finding says so.
    started: bool = True

    def to_dict(self) -> Dict[str, Any]:
        return {
            "argv": list(self.argv),
            "exit_code": self.exit_code,
            "signal": self.signal,
            "timed_out": self.timed_out,
            "timeout_reason": None if self.timeout_reason is None else str(self.timeout_reason),
            "duration_s": round(self.duration_s, 3),
            "leftover_pids": list(self.leftover_pids),
            "unkillable_pids": list(self.unkillable_pids),
            "containment": self.containment,
        }


@dataclass(frozen=True)
class JobFacts:
    """Who ran a guarded command: the GitHub Actions job, from the runner's environment.

    ``job_id`` is the numeric id of the REST API, ``None`` when the runner does not say it; ``name``
    is ``--job-name`` (a matrix job labels itself) else ``$GITHUB_JOB``. ``merge`` tells jobs apart by
    ``job_id``, else by ``(run_id, attempt, name)``.
    """

    run_id: Optional[int] = None
    attempt: Optional[int] = None
    job_id: Optional[int] = None
    name: str = ""
    runner: Optional[str] = None
    head_sha: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "run_id": self.run_id,
            "attempt": self.attempt,
            "job_id": self.job_id,
            "name": self.name,
            "runner": self.runner,
            "head_sha": self.head_sha,
        }


@dataclass(frozen=True)
class JobResult:
    """One job of a report of many jobs (``gh``, ``merge``): its facts, GitHub's word and ours.

    ``conclusion`` is GitHub's (``None`` for a merged report); ``verdict`` is ours, ``None`` when the
    log is gone; ``findings`` counts the report's findings whose ``job`` is this job's index.
    ``log`` is ``"scanned"`` or ``"gone"`` (expired: 404 or 410 from the logs endpoint).
    """

    facts: JobFacts
    conclusion: Optional[str] = None
    verdict: Optional[Verdict] = None
    findings: int = 0
    log: str = "scanned"

    def to_dict(self) -> Dict[str, Any]:
        data = self.facts.to_dict()
        data.update(
            {
                "conclusion": self.conclusion,
                "verdict": self.verdict.value if self.verdict else None,
                "findings": self.findings,
                "log": self.log,
            }
        )
        return data


@dataclass(frozen=True)
class TriageEntry:
    """One failing signature across the jobs: flaky, broken, new or known (see ``analyzer.gh.triage``)."""

    signature: str
    kind: str
    test: Optional[str]
    status: str  # "flaky" | "broken" | "new" | "known"
    failed_jobs: Tuple[int, ...] = ()
    passed_jobs: Tuple[int, ...] = ()
    runners: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        return {
            "signature": self.signature,
            "kind": self.kind,
            "test": self.test,
            "status": self.status,
            "failed_jobs": list(self.failed_jobs),
            "passed_jobs": list(self.passed_jobs),
            "runners": list(self.runners),
        }


@dataclass(frozen=True)
class Report:
    """Everything a renderer needs: the verdict, ranked findings, and (for the guard) the command.

    ``job`` is who ran a guarded command (under GitHub Actions); ``jobs`` and ``triage`` are set only
    for a report of many jobs (``gh``, ``merge``), where each finding's ``job`` indexes ``jobs``.
    """

    verdict: Verdict
    exit_status: int
    findings: Tuple[Finding, ...] = ()
    command: Optional[CommandResult] = None
    diagnostics: Tuple[Diagnostic, ...] = field(default_factory=tuple)
    job: Optional[JobFacts] = None
    jobs: Optional[Tuple[JobResult, ...]] = None
    triage: Optional[Tuple[TriageEntry, ...]] = None

    @property
    def log_dir(self) -> Optional[str]:
        """Where the guarded run's logs are; ``None`` for a scan."""
        return self.command.log_dir if self.command else None

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {
            "version": REPORT_VERSION,
            "verdict": self.verdict.value,
            "findings": [f.to_dict() for f in self.findings],
            "command": self.command.to_dict() if self.command else None,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }
        # Keys beyond the single-log contract appear only where they mean something.
        if self.job is not None:
            data["job"] = self.job.to_dict()
        if self.jobs is not None:
            data["jobs"] = [j.to_dict() for j in self.jobs]
            data["triage"] = [t.to_dict() for t in (self.triage or ())]
        return data
