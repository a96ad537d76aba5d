"""Command-line interface: the one module that parses arguments, chooses streams and calls sys.exit.

It walks the rooms in order, one way: supervise -> saved logs -> scan (with rules) -> verdict -> report.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import os
import signal
import stat
import sys
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .durations import parse_duration
from .errors import USAGE_EXIT_STATUS, AnalyzerError, CommandNotStarted, UsageError
from .markup import one_line_message
from .model import Report, Severity
from .supervise import early_cancel
from .verdict import decide

if TYPE_CHECKING:
    from .file_commands import ReportPath

PROG = "python -m analyzer"
DEFAULT_LOG_DIR = "guard-logs"
DEFAULT_KILL_GRACE = "10s"
DEFAULT_ABORT_GRACE = "60s"
INTERRUPTED_EXIT_STATUS = 130
SUMMARY_MIN_BYTES = 4096  # a step summary already near GitHub's limit still gets the headline
FORMATS = ("text", "json", "markdown", "github")

SCAN_DESCRIPTION = (
    "Scan CI logs (files, directories, .gz, GitHub run-log .zip, or - for stdin) for the ways a GPU "
    "test run lied: exceptions in atexit handlers that exit 0, workers killed by signals, timeouts, "
    "crashes and hangs. Exit status: 0 no failing finding, 1 at least one, 2 bad usage or input."
)
RUN_DESCRIPTION = (
    "Run COMMAND under the guard: stream and save its output, time it out (wall clock and idle), dump "
    "the stacks of hung processes before killing the whole process tree, then scan the saved logs. "
    "Exit status: 0 pass, 124 timed out, the command's own status when it failed, 127 or 126 when it "
    "could not be started (not found, not executable), 1 when it exited 0 but a failing finding was made, "
    "2 bad usage (no report)."
)
GH_DESCRIPTION = (
    "Fetch the job logs of GitHub Actions runs through the REST API (token from GH_TOKEN, else "
    "GITHUB_TOKEN), scan each like a local log, and triage every failure as new, flaky, known (it also "
    "failed in a --baseline run) or broken. Exit status: 0 no job failed, 1 a job failed, 2 bad usage, "
    "an API error or a missing cache entry."
)
MERGE_DESCRIPTION = (
    "Merge the report.json of many guarded jobs (a matrix's artifacts, searched recursively) into one "
    "report and one summary, with the same triage as gh. Exit status: 0 no job failed, 1 a job failed, "
    "2 bad usage or an unreadable report."
)
HELP = {
    "run": "workflow run id to read (repeatable)",
    "attempt": "read the jobs of this attempt of each run (default: each job's latest execution)",
    "all_attempts": "read every execution of every job, each once",
    "baseline": "run id (e.g. the base branch's latest) read for triage only: known vs new (repeatable)",
    "job": "only jobs whose name matches this case-sensitive glob (fnmatch); others are not downloaded",
    "api_url": "REST API base (default: $GITHUB_API_URL, else https://api.github.com; GHES: https://HOST/api/v3)",
    "cache_dir": "keep run objects, job lists and completed jobs' logs here; answer from it when offline",
    "workers": "log downloads at once (default: 8); scans run one at a time",
    "job_name": "the job name recorded in the report (a matrix job labels itself; default: $GITHUB_JOB)",
    "format": "what to print on stdout: text (default), json, markdown or github (workflow commands)",
    "json": "also write the JSON report to FILE",
    "summary": "append the Markdown report to FILE (as GitHub's $GITHUB_STEP_SUMMARY expects)",
    "github_output": "append verdict, exit-code, report, log-dir and findings to FILE ($GITHUB_OUTPUT)",
    "config": "YAML file that adds rules, changes severities and ignores known benign lines",
    "fail_on": "lowest severity that fails the run: error (default) or warning",
    "engine": "matching engine: auto (default: hyperscan when installed), hyperscan or python",
    "annotation_slots": (
        "with --format github, annotations of each type still free on this step, as "
        "error=N,warning=N,notice=N (default: 10 each, GitHub's per-step cap)"
    ),
    "timeout": "wall-clock limit for the whole command, e.g. 90, 30s, 10m, 1h (default: none)",
    "idle_timeout": "fail when the command prints nothing on stdout or stderr for this long (default: none)",
    "kill_grace": f"time between SIGTERM and SIGKILL for the process tree (default: {DEFAULT_KILL_GRACE})",
    "log_dir": f"directory for stdout.log, stderr.log and diagnosis dumps (default: ./{DEFAULT_LOG_DIR})",
    "allow_workflow_commands": (
        "under GitHub Actions, let the command's output issue workflow commands such as ::group:: "
        "(default: they are disabled with ::stop-commands::)"
    ),
    "abort_on": (
        "comma-separated finding kinds (e.g. timeout,crash,worker-failure) that end the run early: when "
        "the live scan sees an error of one, the command gets --abort-grace to end by itself, then the "
        "guard diagnoses and ends it as for a timeout (default: none)"
    ),
    "abort_grace": f"how long it may run on after an --abort-on finding (default: {DEFAULT_ABORT_GRACE})",
}


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse builds a formatter for every add_argument, and one without a width imports shutil
        # (with bz2 and lzma: about 2 ms of every scan's start-up) to ask the terminal's size.
        return self.formatter_class(prog=self.prog, width=_help_width())


def _help_width() -> int:
    """The width argparse gives help text: ``shutil.get_terminal_size().columns - 2``, computed as
    shutil does (``$COLUMNS``, else standard output's terminal, else 80 columns)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="text", help=HELP["format"])
    parser.add_argument("--json", metavar="FILE", help=HELP["json"])
    parser.add_argument("--summary", metavar="FILE", help=HELP["summary"])
    parser.add_argument("--github-output", metavar="FILE", help=HELP["github_output"])
    parser.add_argument("--config", metavar="FILE", help=HELP["config"])
    parser.add_argument("--fail-on", choices=["error", "warning"], default="error", help=HELP["fail_on"])
    parser.add_argument(
        "--engine", choices=["auto", "hyperscan", "python"], default="auto", help=HELP["engine"]
    )
    parser.add_argument(
        "--annotation-slots", metavar="TYPE=N,...", type=_annotation_slots, help=HELP["annotation_slots"]
    )


def _annotation_slots(text: str) -> Dict[Severity, int]:
    """``error=N,warning=N,notice=N`` (any subset) -> free annotation slots per severity."""
    slots: Dict[Severity, int] = {}
    for item in text.split(","):
        name, _, count = item.partition("=")
        try:
            severity = Severity(name.strip())
            slots[severity] = int(count)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected error=N,warning=N,notice=N with N >= 0, got {text!r}"
            ) from None
        if slots[severity] < 0:
            raise argparse.ArgumentTypeError(f"expected N >= 0, got {text!r}")
    return slots


def _scan_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=SCAN_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"gpu-hang-guard {__version__}")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log file, directory, .gz, .zip or -")
    _add_report_options(parser)
    return parser


def _run_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=f"{PROG} run", description=RUN_DESCRIPTION)
    parser.add_argument("--timeout", metavar="DUR", help=HELP["timeout"])
    parser.add_argument("--idle-timeout", metavar="DUR", help=HELP["idle_timeout"])
    parser.add_argument("--kill-grace", metavar="DUR", default=DEFAULT_KILL_GRACE, help=HELP["kill_grace"])
    parser.add_argument("--log-dir", metavar="DIR", default=DEFAULT_LOG_DIR, help=HELP["log_dir"])
    parser.add_argument(
        "--allow-workflow-commands", action="store_true", help=HELP["allow_workflow_commands"]
    )
    parser.add_argument("--job-name", metavar="NAME", help=HELP["job_name"])
    parser.add_argument("--abort-on", metavar="KINDS", help=HELP["abort_on"])
    parser.add_argument("--abort-grace", metavar="DUR", default=DEFAULT_ABORT_GRACE, help=HELP["abort_grace"])
    _add_report_options(parser)
    return parser


# format -> (module of analyzer.report, its renderer of one job's report, of a report of many jobs)
_RENDERERS = {
    "text": ("text", "render_text", ("multi_markdown", "render_many_text")),
    "json": ("json_report", "render_json", None),
    "markdown": ("markdown", "render_markdown", ("multi_markdown", "render_many_markdown")),
    "github": ("github", "render_annotations", None),
}


def _renderer(fmt: str, report: Optional[Report] = None) -> Callable[..., str]:
    """The renderer of ``fmt``, importing only its own module: a scan asked for JSON imports no other."""
    import importlib

    module, name, many = _RENDERERS[fmt]
    if many is not None and report is not None and report.jobs is not None:  # gh and merge
        module, name = many
    return getattr(importlib.import_module(f".report.{module}", __package__), name)


# What a scan imports only when its log needs it (a candidate line, a zip or gzip source, an HTML summary).
_IMPORTED_WHEN_NEEDED = ("regex", "zipfile", "gzip", "html", "html.entities", "shutil")


def _import_everything() -> None:
    """Import every renderer's module, the stop-commands fence and what a scan imports only when needed,
    now: the live scanner is forked from this process, and the command may write where they come from."""
    import importlib

    for module, _name, many in _RENDERERS.values():
        for part in (module, many[0] if many else None):
            if part:
                importlib.import_module(f".report.{part}", __package__)
    importlib.import_module(".supervise.workflow", __package__)
    for name in _IMPORTED_WHEN_NEEDED:
        importlib.import_module(name)
    try:
        importlib.import_module("hyperscan")
    except ImportError:
        pass  # optional: the pure-Python engine scans without it


def _optional_duration(text: Optional[str], option: str) -> Optional[float]:
    return None if text is None else parse_duration(text, option)


def _split_run_argv(argv: Sequence[str]) -> Tuple[list, list]:
    """Guard options before ``--``, the command after it; the command is required."""
    if "--" not in argv and any(a in ("-h", "--help") for a in argv):
        _run_parser().parse_args(["--help"])  # prints the help and exits 0, as argparse does
    if "--" not in argv:
        raise UsageError("run: put the command after --, as in: run --timeout 10m -- pytest tests/")
    split = list(argv).index("--")
    command = list(argv[split + 1 :])
    if not command:
        raise UsageError("run: no command after --")
    return list(argv[:split]), command


def _write_file(
    path: str, text: str, option: str, append: bool = False, errors: str = "backslashreplace",
    start: Optional["ReportPath"] = None,
) -> List[str]:
    """Write ``text`` to ``path``; a failure is returned as a one-line warning, never raised.

    The paths were checked before the work started (``start``: what each was then); a write that
    still fails (a full disk, a file removed meanwhile) must not throw away the report or the
    verdict's exit status. What the command planted at the path is replaced, never followed or
    waited on (``file_commands.ReportPath``).
    """
    from .file_commands import ReportPath, ends_in_a_partial_line

    warnings = []
    try:
        fd, done = (start or ReportPath.at_start(path)).open(append)
        if done:
            warnings.append(f"{option} {path}: {done}")
        if append and ends_in_a_partial_line(fd):
            text = "\n" + text  # else the verdict would be the rest of an earlier command's last line
        with open(fd, "a" if append else "w", encoding="utf-8", errors=errors) as handle:
            handle.write(text)
    except OSError as err:
        return warnings + [f"{option} {path}: cannot write: {err.strerror or err}; the report is on stdout"]
    return warnings


class _EarlyJson:
    """``--json`` written early (the guard's own findings when the clock runs out) and then replaced.

    Each write goes to a new file beside the path and is renamed over it (rename(2) is atomic), so a
    guard killed at any moment leaves a whole report there, early or final, never a cut one. Only for
    a path that was a plain file or nothing at the start: a link, FIFO or device the user gave
    (``--json /dev/stdout``) gets the final report alone, as before. Only inside the directory that
    held the path at the start: a command that swaps that directory for a link to a decoy (``rm -rf
    logs; ln -s decoy logs``) must not get the report written into the decoy.
    """

    def __init__(self, path: str, start: "ReportPath") -> None:
        self.path = path
        self.folder = os.path.dirname(path) or "."
        self.name = os.path.basename(path)
        self.usable = start.link is None and start.special is None
        self.folder_id = _identity(self.folder)  # (st_dev, st_ino) of the directory at the start
        self.written: Optional[Tuple[int, int]] = None  # (st_dev, st_ino) of the file this put there

    def early(self, report: Report) -> None:
        if not self.usable:
            return
        with _same_folder(self.folder, self.folder_id) as folder:
            if folder is None:
                return
            try:
                here: Optional[os.stat_result] = os.lstat(self.name, dir_fd=folder)
            except OSError:
                here = None
            # What the command planted there is left for the final write, which says what it found.
            if here is None or (stat.S_ISREG(here.st_mode) and here.st_nlink == 1):
                self.written = _replace_file(folder, self.name, _renderer("json")(report)) or self.written

    def final(self, text: str) -> bool:
        """Replace the early report with ``text``, if the path still holds it; False: not done."""
        if self.written is None:
            return False
        with _same_folder(self.folder, self.folder_id) as folder:
            if folder is None:
                return False
            try:
                here = os.lstat(self.name, dir_fd=folder)
            except OSError:
                return False
            if self.written != (here.st_dev, here.st_ino) or not stat.S_ISREG(here.st_mode):
                return False
            return _replace_file(folder, self.name, text) is not None


def _identity(folder: str) -> Optional[Tuple[int, int]]:
    """(st_dev, st_ino) of the directory ``folder`` (not a link to one), or None."""
    try:
        here = os.lstat(folder)
    except OSError:
        return None
    return (here.st_dev, here.st_ino) if stat.S_ISDIR(here.st_mode) else None


@contextlib.contextmanager
def _same_folder(folder: str, identity: Optional[Tuple[int, int]]) -> Iterator[Optional[int]]:
    """A descriptor of ``folder`` while it is still the directory ``identity`` names, else None."""
    fd = -1
    if identity is not None:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            here = os.fstat(fd)
            if (here.st_dev, here.st_ino) != identity:
                os.close(fd)
                fd = -1
        except OSError:
            fd = -1
    try:
        yield fd if fd >= 0 else None
    finally:
        if fd >= 0:
            os.close(fd)


def _replace_file(folder: int, name: str, text: str) -> Optional[Tuple[int, int]]:
    """Write ``text`` to a new file in the directory ``folder`` (a descriptor) and rename it over
    ``name`` there; its (st_dev, st_ino), or None where that failed (nothing is left behind then)."""
    part = f".{name}.{os.urandom(4).hex()}.part"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=folder)
        try:
            data = memoryview(text.encode("utf-8", "backslashreplace"))
            while data:
                data = data[os.write(fd, data):]
            made = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(part, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        try:
            os.unlink(part, dir_fd=folder)
        except OSError:
            pass
        return None
    return made.st_dev, made.st_ino


def _summary_budget(path: str) -> int:
    """Bytes the guard's summary may take: GitHub drops a step summary file over 1 MiB whole."""
    from .report.markdown import DEFAULT_BUDGET_BYTES

    try:
        used = os.path.getsize(path)
    except OSError:
        used = 0
    return max(SUMMARY_MIN_BYTES, DEFAULT_BUDGET_BYTES - used)


def _write_stdout(text: str) -> None:
    """``text`` on stdout in its encoding, anything it cannot encode as ``\\xNN`` (never an error)."""
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
    else:
        stream.flush()
        buffer.write(text.encode(getattr(stream, "encoding", None) or "utf-8", "backslashreplace"))
        buffer.flush()
    stream.flush()


def _emit(report: Report, args: argparse.Namespace, starts: Optional[Dict[str, "ReportPath"]] = None) -> None:
    """Write the report files, then print the report on stdout, then warn about any file not written."""
    warnings = _write_report_files(report, args, starts)
    _write_stdout(_console_report(report, args))
    for warning in warnings:
        _warn(warning)


def _write_report_files(
    report: Report, args: argparse.Namespace, starts: Optional[Dict[str, "ReportPath"]] = None,
    early: Optional[_EarlyJson] = None,
) -> List[str]:
    """Write ``--json``, append ``--summary`` and ``--github-output``; warnings for those not written.

    ``starts``: each option's path as ``_check_writable`` found it before the work (default: as now).
    The Markdown appended to ``--summary`` is capped at what the file has left of GitHub's limit.
    """
    starts = starts or {}
    warnings: List[str] = []
    if args.json:
        text = _renderer("json")(report)
        if early is None or not early.final(text):
            warnings += _write_file(args.json, text, "--json", start=starts.get("--json"))
    if args.summary:
        summary = _renderer("markdown", report)(
            report, report_path=args.json, budget_bytes=_summary_budget(args.summary)
        )
        warnings += _write_file(args.summary, summary, "--summary", True, start=starts.get("--summary"))
    if args.github_output:
        report_path = os.path.abspath(args.json) if args.json else ""
        from .report import github

        outputs = github.render_outputs(report, report_path)
        # The real bytes of a path that is not UTF-8, so a later step finds the file.
        warnings += _write_file(args.github_output, outputs, "--github-output", True, "surrogateescape",
                                start=starts.get("--github-output"))
    return warnings


def _console_report(report: Report, args: argparse.Namespace) -> str:
    """The report in ``--format`` for stdout.

    Under GitHub Actions every format but ``github`` (our own escaped commands) and ``json`` (inert by
    construction) is put inside a fresh stop-commands fence: excerpts are the command's text, and the
    runner would act on a ``::add-mask::`` among them.
    """
    if args.format == "github":
        return _renderer("github")(report, slots=args.annotation_slots)
    out = _renderer(args.format, report)(report)
    if args.format != "json" and os.environ.get("GITHUB_ACTIONS") == "true":
        from .report import github
        from .supervise.workflow import stop_token

        out = github.fence_commands(out, stop_token(), markdown=args.format == "markdown")
    return out


def _main_scan(argv: Sequence[str]) -> int:
    args = _scan_parser().parse_args(argv)
    from .rules.loader import load_catalogue
    from .scan import scan_paths

    catalogue = load_catalogue(args.config)
    starts = _check_report_paths(args)
    findings = scan_paths(args.paths, catalogue, engine=args.engine)
    verdict, status = decide(findings, None, Severity(args.fail_on))
    _emit(Report(verdict=verdict, exit_status=status, findings=tuple(findings)), args, starts)
    return status


def _hold_off_runner_signals(on_signal: Optional[Callable[[], None]] = None) -> None:
    """From here on SIGINT and SIGTERM only call ``on_signal`` (or nothing): the report is left to write.

    On cancel GitHub's runner sends SIGINT, then SIGTERM 7.5 s later; dying at the second signal would
    lose the very report that says where the job hung (actions/runner#3341). While the guard still
    waits for its live scan, a signal means the runner's window is closing: ``on_signal`` cuts it short.
    """
    from .supervise.guard import CANCEL_SIGNALS  # SIGHUP: the runner's session went away; SIGUSR1 &c.

    for signum in CANCEL_SIGNALS:
        if on_signal is None:
            signal.signal(signum, signal.SIG_IGN)
        else:
            signal.signal(signum, lambda _signum, _frame: on_signal())


def _check_report_paths(args: argparse.Namespace) -> Dict[str, "ReportPath"]:
    """``_check_writable`` for each report path given; what each path was, for ``_write_file``."""
    starts = {}
    for option, path in (("--json", args.json), ("--summary", args.summary),
                         ("--github-output", args.github_output)):
        if path:
            from .file_commands import ReportPath

            _check_writable(path, option)
            starts[option] = ReportPath.at_start(path)
    return starts


def _check_no_path_is_another(args: argparse.Namespace) -> None:
    """Fail before the command runs when a report path names a file of the log dir or another report path.

    ``--json LOGDIR/stdout.log`` wrote the report over the byte-exact log it cites, and ``--summary``
    on the ``--json`` file appended Markdown to the JSON: both leave a file no later step can use.
    """
    from .supervise.guard import EVIDENCE_FILES, STDERR_LOG, STDOUT_LOG

    taken = {os.path.realpath(os.path.join(args.log_dir, name)): f"the log dir's {name}"
             for name in (STDOUT_LOG, STDERR_LOG, *EVIDENCE_FILES)}
    for option, path in (("--json", args.json), ("--summary", args.summary),
                         ("--github-output", args.github_output)):
        if not path or _is_a_stream(path):
            continue
        real = os.path.realpath(path)
        if real in taken:
            raise UsageError(f"{option} {path}: is {taken[real]}; give the report a file of its own")
        taken[real] = f"the {option} file"


def _is_a_stream(path: str) -> bool:
    """Whether ``path`` is there and no regular file (``/dev/stdout``, a FIFO): two reports may share it."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _check_writable(path: Optional[str], option: str) -> None:
    """Fail before the command runs when ``path`` could not be written after it (a file or a new one)."""
    if not path:
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise UsageError(f"{option} {path}: cannot write: permission denied")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: cannot write: no such directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot write: permission denied in {parent}")


def _warn(message: str) -> None:
    print(_warning_line(message), file=sys.stderr, flush=True)


def _warning_line(message: str) -> str:
    return f"{PROG}: warning: {one_line_message(message)}"


def _write_console_bounded(stream: TextIO, text: str) -> None:
    """``text`` on ``stream`` (stdout or stderr) as ``_write_stdout`` does, but never waiting long.

    The guarded command can SIGSTOP the guard's parent, the reader of its console, and fill the pipe:
    a plain write would then block the guard for good (``supervise.pump.CONSOLE_STALL_S``).
    """
    from .supervise.pump import Console

    try:
        stream.flush()
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    Console(fd).write_own(text.encode(getattr(stream, "encoding", None) or "utf-8", "backslashreplace"))


def _resolve_run_paths(args: argparse.Namespace) -> None:
    """Make the log dir and report paths absolute, once, before the command runs.

    A relative path names a place in the working directory, which the command may delete (a
    self-hosted runner's workspace cleanup, ``rm -rf`` of the suite's temporary checkout): after that
    no relative path resolves, and the logs, the report and even the report's ``log_dir`` were lost.
    """
    for name in ("log_dir", "json", "summary", "github_output"):
        path = getattr(args, name)
        if not path or os.path.isabs(path):
            continue
        try:
            setattr(args, name, os.path.abspath(path))
        except OSError as err:  # the working directory was removed before the guard started
            option = "--" + name.replace("_", "-")
            problem = f"a relative path needs a working directory: {err.strerror}"
            raise UsageError(f"{option} {path}: {problem}") from err


class _CancelledBeforeStart(Exception):
    def __init__(self, signum: int, at: float) -> None:
        super().__init__(signum, at)
        self.signum, self.at = signum, at


def _main_run(argv: Sequence[str]) -> int:
    options_argv, command = _split_run_argv(argv)
    args = _run_parser().parse_args(options_argv)
    _resolve_run_paths(args)
    from .gh.facts import facts_from_env
    from .guarded import GuardedRun, parse_abort_kinds
    from .rules.loader import load_catalogue
    from .supervise.guard import GuardOptions

    # Everything that can be wrong is found before the command runs for an hour: the config, every
    # option, and the paths the report goes to.
    catalogue = load_catalogue(args.config)
    _check_no_path_is_another(args)
    starts = _check_report_paths(args)
    options = GuardOptions(
        argv=tuple(command),
        log_dir=args.log_dir,
        timeout_s=_optional_duration(args.timeout, "--timeout"),
        idle_timeout_s=_optional_duration(args.idle_timeout, "--idle-timeout"),
        kill_grace_s=parse_duration(args.kill_grace, "--kill-grace"),
        allow_workflow_commands=args.allow_workflow_commands,
    )
    job = facts_from_env(os.environ, args.job_name)
    _import_everything()  # now: after the command started, nothing is imported from where it could write
    early = _EarlyJson(args.json, starts["--json"]) if args.json else None
    run = GuardedRun(
        options,
        catalogue,
        engine=args.engine,
        fail_on=Severity(args.fail_on),
        abort_on=parse_abort_kinds(args.abort_on),
        abort_grace_s=parse_duration(args.abort_grace, "--abort-grace"),
        on_early_report=(lambda report: early.early(dataclasses.replace(report, job=job))) if early else None,
    )
    warnings: list = []
    try:
        try:
            cancelled = early_cancel.taken()
            if cancelled is not None:
                # The runner cancelled while the guard started: nothing is started after that, and
                # the step still gets its report (a cancelled run is never a pass).
                raise _CancelledBeforeStart(*cancelled)
            supervision = run.supervise()
        except _CancelledBeforeStart as err:
            report = run.report_cancelled_before_start(err.signum, err.at - early_cancel.held_since(),
                                                       job=job)
        except CommandNotStarted as err:
            # A shell's 127 or 126, and a report that says why, so a CI step fails saying so (a usage
            # error's exit 2 with no report left the summary empty). The one line on stderr too.
            _write_console_bounded(sys.stderr, f"{PROG}: error: {err}\n")
            report = run.report_not_started(err, job=job)
        else:
            _hold_off_runner_signals(run.cut_short)
            report = run.report(supervision, job=job)
            _hold_off_runner_signals()
        # Every file before the console: a reader of the console the command stopped must not keep
        # the report off the disk (the console writes after them are bounded in time).
        warnings += run.pass_through_files()
        warnings += _write_report_files(report, args, starts, early)
        warnings += run.pass_through_summary()
        _write_console_bounded(sys.stdout, _console_report(report, args))
    finally:
        run.close()
        if warnings:
            _write_console_bounded(sys.stderr, "".join(_warning_line(w) + "\n" for w in warnings))
    return report.exit_status


def _gh_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=f"{PROG} gh", description=GH_DESCRIPTION)
    parser.add_argument("owner_repo", metavar="OWNER/REPO", help="the repository whose runs to read")
    parser.add_argument("--run", metavar="RUN_ID", type=int, action="append", required=True, help=HELP["run"])
    attempts = parser.add_mutually_exclusive_group()
    attempts.add_argument("--attempt", metavar="N", type=int, help=HELP["attempt"])
    attempts.add_argument("--all-attempts", action="store_true", help=HELP["all_attempts"])
    parser.add_argument(
        "--baseline", metavar="RUN_ID", type=int, action="append", default=[], help=HELP["baseline"]
    )
    parser.add_argument("--job", metavar="GLOB", help=HELP["job"])
    parser.add_argument("--api-url", metavar="URL", help=HELP["api_url"])
    parser.add_argument("--cache-dir", metavar="DIR", help=HELP["cache_dir"])
    parser.add_argument("--workers", metavar="N", type=int, default=8, help=HELP["workers"])
    _add_report_options(parser)
    return parser


def _merge_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=f"{PROG} merge", description=MERGE_DESCRIPTION)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="report.json file, or a directory of them")
    _add_report_options(parser)
    return parser


def _stderr_line(line: str) -> None:
    # Job names and report paths are someone else's text: one line, no runner command (markup).
    print(one_line_message(line), file=sys.stderr, flush=True)


def _progress() -> Optional[Callable[[str], None]]:
    """Progress on stderr only when it is a terminal: CI logs get the result, not a ticker."""
    if not sys.stderr.isatty():
        return None

    def show(line: str) -> None:
        sys.stderr.write("\r\x1b[K" + line)
        sys.stderr.flush()

    return show


def _main_gh(argv: Sequence[str]) -> int:
    args = _gh_parser().parse_args(argv)
    from .gh.client import Client, api_url_from_env, token_from_env
    from .gh.fetch import Selection
    from .gh.runs import GhOptions, check_owner_repo, gh_report
    from .rules.loader import load_catalogue
    from .scan import scan_paths

    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected at least 1")
    catalogue = load_catalogue(args.config)
    options = GhOptions(
        owner_repo=check_owner_repo(args.owner_repo),
        runs=tuple(args.run),
        selection=Selection(attempt=args.attempt, all_attempts=args.all_attempts, job_glob=args.job),
        baselines=tuple(args.baseline),
        cache_dir=args.cache_dir,
        workers=args.workers,
        fail_on=Severity(args.fail_on),
    )
    client = Client(api_url_from_env(dict(os.environ), args.api_url), token_from_env(dict(os.environ)))
    progress = _progress()

    def scan(path: str) -> list:
        return scan_paths([path], catalogue, engine=args.engine)

    report = gh_report(options, client, scan, _stderr_line, progress)
    if progress is not None:
        sys.stderr.write("\n")
    _emit(report, args)
    return report.exit_status


def _main_merge(argv: Sequence[str]) -> int:
    args = _merge_parser().parse_args(argv)
    from .gh.combine import combine
    from .gh.merge import read_reports

    if args.config:
        # The reports were graded when each job ran; re-grading here would disagree with their verdicts.
        raise UsageError("merge: --config does not apply; give it to each job's run (the action's config)")
    report = combine(read_reports(args.paths, _stderr_line), Severity(args.fail_on))
    _emit(report, args)
    return report.exit_status


def _asks_for_github_format(argv: Sequence[str]) -> bool:
    """Whether the guard's own options (before any ``--``) ask for ``--format github``."""
    options = list(argv[: list(argv).index("--")] if "--" in argv else argv)
    return "--format=github" in options or any(
        a == "--format" and b == "github" for a, b in zip(options, options[1:])
    )


def _fill_closed_standard_descriptors() -> None:
    """Put ``/dev/null`` on whichever of descriptors 0, 1 and 2 is closed, and streams on them.

    Started with stdout or stderr closed (``>&-``, a daemon's leftovers), the guard's first files took
    those numbers: the console echo of the command's stderr went into ``stdout.log`` (which then read
    as rewritten by the command), and the report's console write failed on ``sys.stdout`` being None
    with a traceback, turning a passing run into exit 1. A closed console now simply shows nothing.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: ``fd`` itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False))


def _exit_now(status: int) -> None:
    """End the process with ``status`` at once when nothing is lost by it, else return (never raises).

    After the guard's report, the interpreter's own shutdown (every module torn down, the scan's state
    freed) took 0.07-0.2 s at load 17-20 (guard18), inside the runner's window between the deadline and
    its SIGKILL (issue 8, item 6). Skipping it loses nothing once no other thread runs, the atexit
    handlers have run and every file object still open is flushed; otherwise the usual shutdown runs.
    """
    import atexit
    import gc
    import io
    import threading

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's own, since 3.0
    if run_exit_handlers is None or threading.active_count() > 1:
        return
    try:
        run_exit_handlers()
        for stream in [o for o in gc.get_objects() if isinstance(o, io.IOBase)]:
            if not stream.closed and stream.writable():
                stream.flush()
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a flush that fails is left to the usual shutdown to report
        return
    os._exit(status)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI and return the process exit status (see ``analyzer.verdict`` for the table).

    Called as the program (no ``argv``), ``run`` ends the process itself once its report is out
    (``_exit_now``)."""
    program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if program and argv[:1] == ["run"] and not early_cancel.held_since():
        early_cancel.hold()  # the console script's entry; ``python -m analyzer`` held it already
    _fill_closed_standard_descriptors()
    try:
        if argv[:1] == ["run"]:
            status = _main_run(argv[1:])
            if program:
                _exit_now(status)
            return status
        if argv[:1] == ["gh"]:
            return _main_gh(argv[1:])
        if argv[:1] == ["merge"]:
            return _main_merge(argv[1:])
        if argv[:1] == ["scan"]:
            argv = argv[1:]
        return _main_scan(argv)
    except AnalyzerError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        if _asks_for_github_format(argv):
            # In a workflow the job page shows annotations, not stderr: say why it stopped there too.
            from .report.github import workflow_command

            print(workflow_command("error", {"title": "gpu-hang-guard"}, str(err)), flush=True)
        return USAGE_EXIT_STATUS
    except KeyboardInterrupt:
        return INTERRUPTED_EXIT_STATUS
    except BrokenPipeError:
        # A reader such as `| head` went away; the report is not ours to finish (see Python's
        # "Note on SIGPIPE" in the signal module docs).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as err:  # after BrokenPipeError, an OSError too
        if err.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        # A tiny `ulimit -n`: the guard needs a few dozen descriptors (pipes, logs, their private copies).
        print(f"{PROG}: error: out of file descriptors ({err.strerror}); raise `ulimit -n`", file=sys.stderr)
        return USAGE_EXIT_STATUS
