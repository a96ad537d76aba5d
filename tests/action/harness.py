"""Run ``action.yml`` the way GitHub's runner runs a composite action, on this machine.

GitHub's runner cannot run here (nektos/act needs Docker), so this harness does what the runner does for
a composite action, read from its source (actions/runner at 258d6c8, cited as FILE:LINE below), and no
more:

* inputs: given ones matched case-insensitively, the rest from their defaults, ``""`` without one;
  ``required`` is never checked and an unknown input is only a warning on the ``uses:`` step
  (ActionRunner.cs:205-236, ActionManifestManager.cs:273-278);
* evaluates the ``${{ }}`` expressions the action uses (``inputs.*``, ``env.*``, ``github.*``,
  ``runner.*``, ``steps.<id>.outputs.*``, ``||``/``&&``/``!``/``==``/``!=`` and the status functions)
  in ``if:``, ``env:``, ``with:`` and outputs;
* gives each ``run:`` step fresh ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` files, runs the script
  with the shell's template, and reads stdout and stderr as the runner does: lines end at ``\n``,
  ``\r`` or ``\r\n`` (.NET ``StreamReader.ReadLine``, ProcessInvoker.cs:507-519), and within a batch
  every stderr line is handled before any stdout line (ProcessInvoker.cs:398-441). A batch is whatever
  arrived since the last wake-up, so the harness takes the worst case: the whole step is one batch;
* feeds those lines to a workflow-command parser that follows ``ActionCommand.TryParseV2``/``TryParse``
  (ActionCommand.cs:51-189: ``::cmd props::data`` after leading whitespace, legacy ``##[cmd props]data``
  anywhere in a line, case-insensitive names, properties in a case-insensitive map where the last one
  wins) and ``ActionCommandManager.TryProcessCommand`` (ActionCommandManager.cs:61-188: one state per
  step for both streams, ``::stop-commands::TOKEN`` until ``::TOKEN::``, an empty or command-named token
  throws, a failing command fails the step: ``set-env`` and ``add-path`` are disabled, ``set-output``
  and ``save-state`` need ``name``);
* reads the file commands as ``EnvFileKeyValuePairs`` does (FileCommandManager.cs:353-497: lines end at
  ``\n`` only, so a ``\r`` stays in the value; pairs before a bad line are kept, the rest is dropped and
  the step fails);
* gives every embedded step the *remaining* time of the ``uses:`` step's ``timeout-minutes`` when the
  action starts (CompositeActionHandler.cs:143, ExecutionContext.cs:500 and 750-779): once it expires,
  the running step is cancelled and fails "timed out", and every later step, ``always()`` or not,
  fails at once without running (CompositeActionHandler.cs:486-498);
* cancels the job the runner's way on request: SIGINT to the step's process only, SIGTERM 7.5 s later,
  SIGKILL 2.5 s after that (ProcessInvoker.cs:32-33, 443-465); the running step's ``if:`` is evaluated
  again and later steps run on their own clock when their ``if:`` allows it
  (CompositeActionHandler.cs:328-372);
* keeps the first 10 annotations of each type of the whole ``uses:`` step, the runner's own first
  (ExecutionContext.cs:144, 535-540, 838, 864-866);
* checks ``uses:`` steps (their pin and evaluated ``with:``) without running them.

It refuses an expression inside a ``run:`` script, which the action must never contain.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
ACTION_FILE = REPO_ROOT / "action.yml"
DOCKER_EXEC = Path(__file__).with_name("docker_exec.py")

# GitHub refuses a step summary larger than this (the runner drops it and adds an error).
STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024

# How the runner cancels a step (ProcessInvoker.cs:32-33, 443-465): SIGINT to the step's process only
# (not its group), SIGTERM 7.5 s later, then a kill 2.5 s after that.
CANCEL_SIGINT_WAIT_S = 7.5
CANCEL_SIGTERM_WAIT_S = 2.5
PIPE_HELD_WAIT_S = 5.0
# After the step's process exits, the runner waits this long for its pipes (ProcessInvoker.cs:485-498).
RUNNER_STREAM_WAIT_S = 5.0

# The runner keeps this many annotations of each type per (outer) step (ExecutionContext.cs:144, 838).
ANNOTATIONS_PER_TYPE = 10

SHELL_TEMPLATES = {
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
    "sh": ["sh", "-e", "{0}"],
    "python": ["python", "{0}"],
}

# The runner's registered command extensions (ActionCommandManager.cs:204-835); internal-set-repo-path
# is registered only for plugins (ActionCommandManager.cs:42-45).
REGISTERED_COMMANDS = frozenset(
    {
        "add-mask", "add-matcher", "add-path", "debug", "echo", "endgroup", "error", "group", "notice",
        "remove-matcher", "save-state", "set-env", "set-output", "warning",
    }
)
STOP_COMMAND = "stop-commands"
ANNOTATION_COMMANDS = frozenset({"error", "warning", "notice"})
DISABLED_COMMANDS = frozenset({"set-env", "add-path"})  # ActionCommandManager.cs:257-260, 475-478
NAMED_COMMANDS = frozenset({"set-output", "save-state"})  # ActionCommandManager.cs:339-342, 392-395

# Constants.cs:235-236, and the messages the runner's handlers write (CompositeActionHandler.cs:497,
# ActionCommandManager.cs:140, FileCommandManager.cs:85).
DISABLED_COMMAND_MESSAGE = "The `{0}` command is disabled."
INVALID_STOP_TOKEN_MESSAGE = (
    "You cannot use a endToken that is an empty string, the string 'pause-logging', "
    "or another workflow command."
)
TIMED_OUT_MESSAGE = "The action has timed out."
COMMAND_FAILED_MESSAGE = "Unable to process command '{0}' successfully."
FILE_COMMAND_FAILED_MESSAGE = "Unable to process file command '{0}' successfully."

_DATA_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_LEGACY_UNESCAPES = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_FULL_SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


class HarnessError(Exception):
    """The action did something the harness cannot model, or broke a rule of this project."""


class StepFailure(Exception):
    """Something the runner throws while handling a step's output: the step fails with this error."""


@dataclass(frozen=True)
class WorkflowCommand:
    """One line of step output that the runner's command parser accepted, or an issue the runner made
    itself (then ``line`` is ``"(runner)"``)."""

    name: str
    properties: Tuple[Tuple[str, str], ...]
    data: str
    line: str

    def prop(self, key: str) -> Optional[str]:
        # A case-insensitive map where a repeated key overwrites (ActionCommand.cs:34, 106).
        found = None
        for k, v in self.properties:
            if k.lower() == key.lower():
                found = v
        return found


def runner_issue(kind: str, message: str) -> WorkflowCommand:
    return WorkflowCommand(kind, (), message, "(runner)")


@dataclass(frozen=True)
class StepResult:
    id: str
    name: str
    ran: bool
    exit_code: Optional[int] = None
    cancelled: bool = False
    timed_out: bool = False
    failed_by_runner: bool = False  # a command or file command failed (the step's CommandResult)
    output: str = ""
    outputs: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    commands: Tuple[WorkflowCommand, ...] = ()
    uses: str = ""
    cancel_signals: Tuple[int, ...] = ()
    with_inputs: Mapping[str, str] = field(default_factory=dict)
    skipped: bool = False

    @property
    def outcome(self) -> str:
        if self.skipped:
            return "skipped"
        if self.cancelled:
            return "cancelled"
        if self.timed_out or self.failed_by_runner or self.exit_code:
            return "failure"
        return "success"


@dataclass(frozen=True)
class ActionRun:
    """What a workflow run would show for one use of the action."""

    steps: Tuple[StepResult, ...]
    outputs: Mapping[str, str]
    runner_temp: Path
    runner_issues: Tuple[WorkflowCommand, ...] = ()  # put on the uses: step by the runner itself

    @property
    def conclusion(self) -> str:
        outcomes = {s.outcome for s in self.steps}
        for worst in ("cancelled", "failure"):
            if worst in outcomes:
                return worst
        return "success"

    @property
    def summary(self) -> str:
        return "".join(s.summary for s in self.steps)

    @property
    def commands(self) -> Tuple[WorkflowCommand, ...]:
        return tuple(c for s in self.steps for c in s.commands)

    @property
    def annotations(self) -> Tuple[WorkflowCommand, ...]:
        """Every annotation made, the runner's own first, in order (before the per-type cap)."""
        made = self.runner_issues + self.commands
        return tuple(c for c in made if c.name in ANNOTATION_COMMANDS)

    @property
    def shown_annotations(self) -> Tuple[WorkflowCommand, ...]:
        """The annotations GitHub keeps for the ``uses:`` step: the first 10 of each type."""
        kept: List[WorkflowCommand] = []
        counts: Dict[str, int] = {}
        for annotation in self.annotations:
            counts[annotation.name] = counts.get(annotation.name, 0) + 1
            if counts[annotation.name] <= ANNOTATIONS_PER_TYPE:
                kept.append(annotation)
        return tuple(kept)

    @property
    def output(self) -> str:
        return "".join(s.output for s in self.steps)

    def step(self, step_id: str) -> StepResult:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)


# ---------------------------------------------------------------------------------------------------
# The runner's line reader and workflow-command parser


def split_lines(data: bytes) -> List[str]:
    """Lines as .NET ``StreamReader.ReadLine`` returns them: ends at ``\\n``, ``\\r`` or ``\\r\\n`` only;
    a last line without an end is still a line; invalid UTF-8 becomes U+FFFD."""
    text = data.decode("utf-8", errors="replace")
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class CommandParser:
    """Stateful like the runner's ActionCommandManager: one per step, shared by stdout and stderr
    (ScriptHandler.cs:332-336, Handler.cs:172), so stop-commands persists across lines of a step."""

    def __init__(self) -> None:
        self._stop_token: Optional[str] = None

    def feed(self, line: str) -> Optional[WorkflowCommand]:
        """The command this line would run, or None when the runner would only print it.

        Raises StepFailure for an invalid stop token (ActionCommandManager.cs:156-188).
        """
        registered = set(REGISTERED_COMMANDS) | {STOP_COMMAND}
        if self._stop_token is not None:
            registered.add(self._stop_token.lower())
        parsed = _parse_v2(line, registered) or _parse_legacy(line, registered)
        if parsed is None:
            return None
        if self._stop_token is not None:
            if parsed.name == self._stop_token.lower():
                self._stop_token = None
            return None
        if parsed.name == STOP_COMMAND:
            token = parsed.data
            if token == "" or token.lower() in registered or token.lower() == "pause-logging":
                raise StepFailure(INVALID_STOP_TOKEN_MESSAGE)
            self._stop_token = token
            return None
        return parsed

    @property
    def stopped(self) -> bool:
        return self._stop_token is not None


def _unescape(text: str, table: Sequence[Tuple[str, str]]) -> str:
    for escaped, plain in table:
        text = text.replace(escaped, plain)
    return text


def _properties(items: Iterable[str], table: Sequence[Tuple[str, str]]) -> Tuple[Tuple[str, str], ...]:
    found: Dict[str, Tuple[str, str]] = {}
    for item in items:
        # Split(new[] {'='}, 2, RemoveEmptyEntries): "=v" and "k=" are dropped, "k==v" is ("k", "=v").
        parts = [p for p in item.split("=", 1) if p]
        if len(parts) == 2:
            found[parts[0].lower()] = (parts[0], _unescape(parts[1], table))
    return tuple(found.values())


def _parse_v2(line: str, registered: set) -> Optional[WorkflowCommand]:
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    if name.lower() not in registered:
        return None
    properties: Tuple[Tuple[str, str], ...] = ()
    if space > 0:
        properties = _properties(info[space + 1:].strip().split(","), _PROPERTY_UNESCAPES)
    data = _unescape(message[end + 2:], _DATA_UNESCAPES)
    return WorkflowCommand(name.lower(), properties, data, line)


def _parse_legacy(line: str, registered: set) -> Optional[WorkflowCommand]:
    start = line.find("##[")
    if start < 0:
        return None
    end = line.find("]", start)
    if end < 0:
        return None
    info = line[start + 3:end]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    if name.lower() not in registered:
        return None
    properties: Tuple[Tuple[str, str], ...] = ()
    if space > 0:
        properties = _properties(info[space + 1:].split(";"), _LEGACY_UNESCAPES)
    data = _unescape(line[end + 1:], _LEGACY_UNESCAPES)
    return WorkflowCommand(name.lower(), properties, data, line)


@dataclass(frozen=True)
class ProcessedOutput:
    """What the runner made of a step's output lines."""

    commands: Tuple[WorkflowCommand, ...]  # accepted commands and the runner's own errors, in order
    outputs: Mapping[str, str]  # from set-output
    failed: bool  # a command failed or threw: the step fails


def process_lines(lines: Iterable[str], env: Optional[Mapping[str, str]] = None) -> ProcessedOutput:
    """Run the lines through one step's command manager, applying what the runner applies."""
    env = env or {}
    if str(env.get("ACTIONS_ALLOW_UNSECURE_COMMANDS", "")).lower() == "true":
        raise HarnessError("ACTIONS_ALLOW_UNSECURE_COMMANDS is not modelled by the harness")
    parser = CommandParser()
    commands: List[WorkflowCommand] = []
    outputs: Dict[str, str] = {}
    failed = False
    for line in lines:
        try:
            command = parser.feed(line)
        except StepFailure as err:
            # Thrown out of the output handler: the step ends failed, nothing after it is handled.
            commands.append(runner_issue("error", str(err)))
            return ProcessedOutput(tuple(commands), outputs, True)
        if command is None:
            continue
        problem = None
        if command.name in DISABLED_COMMANDS:
            problem = DISABLED_COMMAND_MESSAGE.format(command.name)
        elif command.name in NAMED_COMMANDS and not command.prop("name"):
            problem = f"Required field 'name' is missing in ##[{command.name}] command."
        if problem is not None:
            commands.append(runner_issue("error", COMMAND_FAILED_MESSAGE.format(line)))
            commands.append(runner_issue("error", problem))
            failed = True
            continue
        if command.name == "set-output":  # deprecated, but the runner still applies it
            outputs[command.prop("name") or ""] = command.data
        commands.append(command)
    return ProcessedOutput(tuple(commands), outputs, failed)


def parse_commands(text: str) -> Tuple[WorkflowCommand, ...]:
    """Every workflow command (and runner error) the runner would make of this step output."""
    return process_lines(split_lines(text.encode("utf-8"))).commands


# ---------------------------------------------------------------------------------------------------
# Expressions


_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>\|\||&&|==|!=|!|\(|\)|,)"
    r"|(?P<ident>[A-Za-z_][\w-]*(?:\.[A-Za-z_*][\w-]*)*))"
)


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", 0)


def _number(value: Any) -> float:
    """GitHub's coercion to a number, used when the two sides of ``==`` differ in type."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if text == "":
        return 0.0
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()  # GitHub compares strings ignoring case
    if type(a) is type(b):
        return a == b
    return _number(a) == _number(b)  # null == '' and 0 == '' are true; NaN equals nothing


class _Evaluator:
    def __init__(self, text: str, contexts: Mapping[str, Any], status: Mapping[str, bool]) -> None:
        self.tokens = self._tokenize(text)
        self.pos = 0
        self.contexts = contexts
        self.status = status

    @staticmethod
    def _tokenize(text: str) -> List[Tuple[str, str]]:
        tokens, pos = [], 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise HarnessError(f"cannot parse expression {text!r} at {pos}")
            kind = m.lastgroup
            tokens.append((kind, m.group(kind)))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        return tokens

    def _peek(self) -> Optional[Tuple[str, str]]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, value: Optional[str] = None) -> Tuple[str, str]:
        token = self._peek()
        if token is None or (value is not None and token[1] != value):
            raise HarnessError(f"expected {value!r} in expression, got {token!r}")
        self.pos += 1
        return token

    def evaluate(self) -> Any:
        value = self._or()
        if self._peek() is not None:
            raise HarnessError(f"trailing tokens in expression: {self.tokens[self.pos:]}")
        return value

    def _or(self) -> Any:
        value = self._and()
        while self._peek() == ("op", "||"):
            self._take()
            right = self._and()
            value = value if _truthy(value) else right
        return value

    def _and(self) -> Any:
        value = self._compare()
        while self._peek() == ("op", "&&"):
            self._take()
            right = self._compare()
            value = right if _truthy(value) else value
        return value

    def _compare(self) -> Any:
        value = self._unary()
        while self._peek() in (("op", "=="), ("op", "!=")):
            op = self._take()[1]
            right = self._unary()
            value = _equal(value, right) if op == "==" else not _equal(value, right)
        return value

    def _unary(self) -> Any:
        if self._peek() == ("op", "!"):
            self._take()
            return not _truthy(self._unary())
        return self._primary()

    def _primary(self) -> Any:
        kind, text = self._take()
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text) if "." in text else int(text)
        if kind == "op" and text == "(":
            value = self._or()
            self._take(")")
            return value
        if kind == "ident":
            if self._peek() == ("op", "("):
                self._take("(")
                self._take(")")
                if text not in self.status:
                    raise HarnessError(f"function {text}() is not modelled by the harness")
                return self.status[text]
            if text in ("true", "false"):
                return text == "true"
            if text == "null":
                return None
            return self._lookup(text)
        raise HarnessError(f"unexpected token {text!r}")

    def _lookup(self, dotted: str) -> Any:
        head, *rest = dotted.split(".")
        if head not in self.contexts:
            raise HarnessError(f"context {head!r} is not modelled by the harness")
        value: Any = self.contexts[head]
        for part in rest:
            value = value.get(part) if isinstance(value, Mapping) else None
        return value


def evaluate(expression: str, contexts: Mapping[str, Any], status: Mapping[str, bool]) -> Any:
    """The value of one expression (without the ``${{ }}``)."""
    return _Evaluator(expression, contexts, status).evaluate()


def _as_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def substitute(template: Any, contexts: Mapping[str, Any], status: Mapping[str, bool]) -> str:
    """A YAML scalar with every ``${{ expr }}`` replaced by its value, as the runner renders it."""
    text = _as_string(template)
    return _EXPRESSION.sub(lambda m: _as_string(evaluate(m.group(1), contexts, status)), text)


def condition(text: Any, contexts: Mapping[str, Any], status: Mapping[str, bool]) -> bool:
    """A step's ``if:``; GitHub adds ``success() &&`` unless the condition calls a status function."""
    if text is None or text == "":
        return status["success"]
    if isinstance(text, bool):
        return text and status["success"]
    body = str(text).strip()
    if body.startswith("${{") and body.endswith("}}"):
        body = body[3:-2]
    if not re.search(r"\b(success|failure|always|cancelled)\(\)", body):
        body = f"success() && ({body})"
    return _truthy(evaluate(body, contexts, status))


# ---------------------------------------------------------------------------------------------------
# Files the runner hands a step


class FileCommandError(HarnessError):
    """A file command the runner cannot read; ``pairs`` holds what it applied before the bad line."""

    def __init__(self, message: str, pairs: Mapping[str, str]) -> None:
        super().__init__(message)
        self.pairs = dict(pairs)


def parse_output_file(path: Path) -> Dict[str, str]:
    """``name=value`` and ``name<<DELIMITER`` blocks, as ``EnvFileKeyValuePairs`` reads them on Linux
    (FileCommandManager.cs:364-497): lines end at ``\\n`` only, so ``\\r`` stays in names, values and
    delimiters; a repeated name wins last. Raises FileCommandError at the first bad line."""
    result: Dict[str, str] = {}
    if not path.exists():
        return result
    text = path.read_bytes().decode("utf-8", errors="replace")
    pos = 0

    def read_line() -> Tuple[Optional[str], bool]:
        nonlocal pos
        if pos >= len(text):
            return None, False
        lf = text.find("\n", pos)
        if lf < 0:
            line, pos = text[pos:], len(text)
            return line, False
        line, pos = text[pos:lf], lf + 1
        return line, True

    line, _ = read_line()
    while line is not None:
        if line != "":
            equals, heredoc = line.find("="), line.find("<<")
            if equals >= 0 and (heredoc < 0 or equals < heredoc):
                result[line[:equals]] = line[equals + 1:]
            elif heredoc >= 0:
                name, delimiter = line[:heredoc], line[heredoc + 2:]
                if not name or not delimiter:
                    raise FileCommandError(f"Invalid format '{line}'. Name must not be empty and delimiter "
                                           "must not be empty", result)
                body: List[str] = []
                current, ended = read_line()
                while current != delimiter:
                    if current is None:
                        raise FileCommandError(f"Invalid value. Matching delimiter not found '{delimiter}'",
                                               result)
                    if not ended:
                        raise FileCommandError("Invalid value. EOF marker missing new line.", result)
                    body.append(current)
                    current, ended = read_line()
                result[name] = "\n".join(body)
            else:
                raise FileCommandError(f"Invalid format '{line}'", result)
        line, _ = read_line()
    return result


def _read_file_command(path: Path, context_name: str) -> Tuple[Dict[str, str], Tuple[WorkflowCommand, ...]]:
    """The pairs the runner applies from a file command, and its errors (FileCommandManager.cs:75-91)."""
    try:
        return parse_output_file(path), ()
    except FileCommandError as err:
        return err.pairs, (runner_issue("error", FILE_COMMAND_FAILED_MESSAGE.format(context_name)),
                           runner_issue("error", str(err)))


# ---------------------------------------------------------------------------------------------------
# The runner


def _runner_environment(base: Mapping[str, str], workspace: Path, runner_temp: Path,
                        action_path: Path) -> Dict[str, str]:
    # Drop anything a real runner around this test suite set, so the action only sees our files.
    env = {k: v for k, v in base.items() if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))}
    env.update(
        {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(action_path),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_REPOSITORY": "example/gpu-project",
            "GITHUB_JOB": "test",
            "GITHUB_RUN_ID": "1",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_SERVER_URL": "https://github.com",
            "RUNNER_TEMP": str(runner_temp),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "RUNNER_NAME": "harness-runner",
        }
    )
    return env


def resolve_inputs(declared: Mapping[str, Any], given: Mapping[str, str]
                   ) -> Tuple[Dict[str, str], Tuple[WorkflowCommand, ...]]:
    """The inputs an action sees, and the runner's warning about unknown ones (ActionRunner.cs:183-236).

    Names match case-insensitively; a declared input not given takes its default, or ``""`` when it
    has none: ``required`` is not checked by the runner at all.
    """
    by_lower = {name.lower(): name for name in declared}
    resolved: Dict[str, str] = {}
    unexpected = []
    for key, value in given.items():
        if key.lower() in by_lower:
            resolved[by_lower[key.lower()]] = str(value)
        else:
            unexpected.append(key)
    for name, spec in declared.items():
        if name not in resolved:
            resolved[name] = _as_string((spec or {}).get("default", ""))
    issues: Tuple[WorkflowCommand, ...] = ()
    if unexpected:
        valid = "', '".join(declared)
        issues = (runner_issue("warning", f"Unexpected input(s) '{', '.join(unexpected)}', valid inputs are "
                                          f"['{valid}']"),)
    return resolved, issues


def run_action(
    inputs: Mapping[str, str],
    *,
    runner_temp: Path,
    workspace: Path = REPO_ROOT,
    action_path: Path = REPO_ROOT,
    action_file: Optional[Path] = None,
    env: Optional[Mapping[str, str]] = None,
    step_timeout_s: float = 300.0,
    cancel: Optional[Tuple[Any, ...]] = None,
    timeout_minutes_s: Optional[float] = None,
    extra_runner_issues: Sequence[WorkflowCommand] = (),
    container: bool = False,
) -> ActionRun:
    """Run the composite action with ``inputs`` as a workflow's ``with:`` would give them.

    ``cancel=(step_id, seconds)`` cancels the job that many seconds into that step, as the runner does
    when a user cancels the workflow or the job's ``timeout-minutes`` expires;
    ``cancel=(step_id, seconds, text)`` that many seconds after ``text`` first appeared in its output.
    ``timeout_minutes_s`` is the ``uses:`` step's own ``timeout-minutes``, in seconds.
    ``step_timeout_s`` is only the harness's guard against a test that hangs. ``container=True`` runs
    each ``run:`` step as a ``container:`` job does, through a ``docker exec -i`` client that forwards no
    signal (see docker_exec.py); the pid of each step's process "in the container" is in
    ``runner_temp/_runner_file_commands/STEP.container-pid``.
    """
    action = yaml.safe_load((action_file or action_path / "action.yml").read_text(encoding="utf-8"))
    if action.get("runs", {}).get("using") != "composite":
        raise HarnessError("action.yml: runs.using must be composite")
    resolved_inputs, input_issues = resolve_inputs(action.get("inputs") or {}, inputs)
    runner_issues = tuple(extra_runner_issues) + input_issues

    runner_temp.mkdir(parents=True, exist_ok=True)
    scratch = runner_temp / "_runner_file_commands"
    scratch.mkdir(exist_ok=True)
    job_env = _runner_environment(env if env is not None else os.environ, workspace, runner_temp,
                                  action_path)
    github_env_file = scratch / f"set_env_{uuid.uuid4().hex}"
    github_env_file.touch()
    job_env["GITHUB_ENV"] = str(github_env_file)

    # Every embedded step's clock is set when the action starts, to what is left of the uses: step's.
    deadline = None if timeout_minutes_s is None else time.monotonic() + timeout_minutes_s
    steps_ctx: Dict[str, Dict[str, Any]] = {}
    results: List[StepResult] = []
    failed = cancelled = False
    for index, step in enumerate(action["runs"].get("steps") or []):
        step_id = str(step.get("id") or f"__run_{index}")
        contexts = {
            "inputs": resolved_inputs,
            "env": dict(job_env),
            "github": {"action_path": str(action_path), "workspace": str(workspace),
                       "repository": job_env["GITHUB_REPOSITORY"]},
            "runner": {"temp": str(runner_temp), "os": "Linux", "arch": "X64"},
            "steps": steps_ctx,
        }
        status = _status(failed, cancelled)
        name = substitute(step.get("name", step_id), contexts, status)
        if not condition(step.get("if"), contexts, status):
            results.append(StepResult(step_id, name, ran=False, skipped=True))
            steps_ctx[step_id] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            continue
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            # Its token is already cancelled: RunAsync throws at once and the step "timed out".
            result = StepResult(step_id, name, ran=False, timed_out=True, uses=str(step.get("uses", "")),
                                commands=(runner_issue("error", TIMED_OUT_MESSAGE),))
        elif "uses" in step:
            result = _check_uses(step, step_id, name, contexts, status)
        else:
            cancel_after = cancel[1] if cancel and cancel[0] == step_id else None
            cancel_text = cancel[2] if cancel and cancel[0] == step_id and len(cancel) > 2 else None
            wrap = None
            if container:
                wrap = [sys.executable, str(DOCKER_EXEC), str(scratch / f"{step_id}.container-pid"), "--"]
            result = run_script_step(step, step_id, name, contexts, status, job_env, scratch, workspace,
                                     step_timeout_s, cancel_after, timeout_after_s=remaining, wrap=wrap,
                                     cancel_after_text=cancel_text)
        results.append(result)
        steps_ctx[step_id] = {"outputs": dict(result.outputs), "outcome": result.outcome,
                              "conclusion": result.outcome}
        failed = failed or result.outcome == "failure"
        cancelled = cancelled or result.cancelled
        env_pairs, _ = _read_file_command(github_env_file, "env")
        job_env.update(env_pairs)

    # The action's outputs are evaluated after its steps, whatever happened to them
    # (CompositeActionHandler.cs:167-172).
    contexts = {"inputs": resolved_inputs, "env": dict(job_env), "steps": steps_ctx,
                "github": {"action_path": str(action_path)}, "runner": {"temp": str(runner_temp)}}
    status = _status(failed, cancelled)
    outputs = {
        name: substitute((spec or {}).get("value", ""), contexts, status)
        for name, spec in (action.get("outputs") or {}).items()
    }
    return ActionRun(tuple(results), outputs, runner_temp, runner_issues)


def _status(failed: bool, cancelled: bool) -> Dict[str, bool]:
    return {"success": not failed and not cancelled, "failure": failed and not cancelled, "always": True,
            "cancelled": cancelled}


def _cancel_like_the_runner(proc: subprocess.Popen, after_s: float, done: threading.Event,
                            sent: List[int], seen: Optional[Any] = None) -> None:
    while seen is not None and not seen():
        if done.wait(0.05):
            return
    if done.wait(after_s):
        return
    for signum, wait_s in ((signal.SIGINT, CANCEL_SIGINT_WAIT_S), (signal.SIGTERM, CANCEL_SIGTERM_WAIT_S),
                           (signal.SIGKILL, 0.0)):
        if proc.poll() is not None:
            break
        try:
            os.kill(proc.pid, signum)  # the step's process only, as the runner does
        except ProcessLookupError:
            break
        sent.append(signum)
        if done.wait(wait_s):
            return
    # The step's process is gone, yet something it started still holds the output pipe: end the step's
    # process group so the harness does not wait for EOF forever (the runner's step would not end either).
    if not done.wait(PIPE_HELD_WAIT_S):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _read_stream(pipe: Any, stream: str, arrived: List[Tuple[str, bytes]], lock: threading.Lock) -> None:
    """Raw chunks in arrival order; lines are cut later, across chunk borders, as ReadLine would."""
    with pipe:
        while True:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                return
            with lock:
                arrived.append((stream, chunk))


def _check_uses(step: Mapping[str, Any], step_id: str, name: str, contexts: Mapping[str, Any],
                status: Mapping[str, bool]) -> StepResult:
    uses = str(step["uses"])
    if not uses.startswith("./") and not _FULL_SHA_PIN.match(uses):
        raise HarnessError(f"step {step_id}: {uses!r} is not pinned to a full commit SHA")
    with_inputs = {k: substitute(v, contexts, status) for k, v in (step.get("with") or {}).items()}
    return StepResult(step_id, name, ran=True, exit_code=0, uses=uses, with_inputs=with_inputs)


def _sigint_as_the_runner() -> None:
    """In the step's process before its exec: SIGINT at its default, as a runner's step gets it.

    The runner's service starts with default dispositions (systemd), and .NET keeps an inherited
    ``SIG_IGN`` across ``Process.Start`` and resets only handlers (dotnet/runtime pal_process.c,
    ``SystemNative_ForkAndExecProcess``), so its steps take the cancel's SIGINT. A harness started as a
    background job of a non-interactive shell has SIGINT ignored on entry (bash: asynchronous commands
    ignore SIGINT and SIGQUIT without job control), which every step would inherit: a cancel test would
    see a step that never took the SIGINT. Only ``signal.signal`` runs here (preexec_fn after fork).
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_script_step(step: Mapping[str, Any], step_id: str, name: str, contexts: Mapping[str, Any],
                    status: Mapping[str, bool], job_env: Mapping[str, str], scratch: Path, workspace: Path,
                    timeout_s: float, cancel_after_s: Optional[float] = None, *,
                    timeout_after_s: Optional[float] = None, stream_order: str = "stderr-first",
                    wrap: Optional[Sequence[str]] = None, cancel_after_text: Optional[str] = None
                    ) -> StepResult:
    """Run one ``run:`` step. ``cancel_after_s``: the job is cancelled then; ``timeout_after_s``: the
    step's clock runs out then (it fails "timed out"). ``stream_order``: ``stderr-first`` (the whole
    step as one batch, the runner's worst case) or ``arrival``. ``wrap``: argv put before the shell
    command, as a container job puts ``docker exec -i CONTAINER`` (ContainerStepHost, StepHost.cs:237-264).
    """
    script = str(step.get("run", ""))
    if "${{" in script:
        raise HarnessError(f"step {step_id}: expression inside a run: script (inputs must go through env:)")
    shell = step.get("shell")
    if not shell:
        raise HarnessError(f"step {step_id}: composite run steps need shell:")
    if shell in SHELL_TEMPLATES:
        template = SHELL_TEMPLATES[shell]
    elif "{0}" in str(shell):
        template = str(shell).split()
    else:
        raise HarnessError(f"step {step_id}: unknown shell {shell!r}")

    token = uuid.uuid4().hex
    output_file = scratch / f"set_output_{token}"
    summary_file = scratch / f"step_summary_{token}"
    output_file.touch()
    summary_file.touch()
    script_file = scratch / f"{token}.sh"
    script_file.write_text(script, encoding="utf-8")

    step_env = dict(job_env)
    step_env.update({k: substitute(v, contexts, status) for k, v in (step.get("env") or {}).items()})
    step_env.update({"GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary_file),
                     "GITHUB_ACTION": step_id})
    cwd = substitute(step.get("working-directory", ""), contexts, status) or str(workspace)
    argv = list(wrap or ()) + [part.replace("{0}", str(script_file)) for part in template]

    # stdin is a pipe the runner closes at once (ProcessInvoker.cs:232, 318-328); stdout and stderr are
    # separate pipes, each read on its own (ProcessInvoker.cs:307-316).
    proc = subprocess.Popen(argv, cwd=cwd, env=step_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_sigint_as_the_runner)
    assert proc.stdin is not None
    proc.stdin.close()
    arrived: List[Tuple[str, bytes]] = []
    lock = threading.Lock()
    readers = [threading.Thread(target=_read_stream, args=(pipe, stream, arrived, lock), daemon=True)
               for pipe, stream in ((proc.stdout, "stdout"), (proc.stderr, "stderr"))]
    for reader in readers:
        reader.start()
    done = threading.Event()
    sent: List[int] = []
    canceller = None
    stop_after = [t for t in (cancel_after_s, timeout_after_s) if t is not None]
    timed_out = timeout_after_s is not None and (cancel_after_s is None or timeout_after_s <= cancel_after_s)
    seen = None
    if cancel_after_text is not None:
        if timeout_after_s is not None:
            raise HarnessError("a cancel after a text and a step deadline together are not modelled")
        needle = cancel_after_text.encode("utf-8")

        def seen() -> bool:
            with lock:
                return needle in b"".join(c for _, c in arrived)
    if stop_after:
        canceller = threading.Thread(target=_cancel_like_the_runner,
                                     args=(proc, min(stop_after), done, sent, seen))
        canceller.start()
    deadline = time.monotonic() + timeout_s
    try:
        proc.wait(timeout=timeout_s)
        # Like ProcessInvoker: when the step's process has exited but something still holds its output
        # pipes, wait 5 s, then kill what is left, and take whatever was printed.
        for reader in readers:
            reader.join(max(0.0, min(RUNNER_STREAM_WAIT_S, deadline - time.monotonic())))
        if any(reader.is_alive() for reader in readers):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for reader in readers:
                reader.join(max(0.0, deadline - time.monotonic()))
        if any(reader.is_alive() for reader in readers):
            raise subprocess.TimeoutExpired(argv, timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise HarnessError(f"step {step_id} ran past the harness limit of {timeout_s:.0f}s") from None
    finally:
        done.set()
        if canceller is not None:
            canceller.join()
    with lock:
        chunks = list(arrived)
    streams = {name: b"".join(c for s, c in chunks if s == name) for name in ("stdout", "stderr")}
    lines_by_stream = {name: split_lines(data) for name, data in streams.items()}
    if stream_order == "stderr-first":
        ordered = lines_by_stream["stderr"] + lines_by_stream["stdout"]
    elif stream_order == "arrival":
        ordered = _arrival_order(chunks)
    else:
        raise HarnessError(f"unknown stream_order {stream_order!r}")
    text = b"".join(c for _, c in chunks).decode("utf-8", errors="replace")

    processed = process_lines(ordered, step_env)
    commands = list(processed.commands)
    outputs: Dict[str, str] = dict(processed.outputs)
    file_outputs, file_errors = _read_file_command(output_file, "output")
    outputs.update(file_outputs)
    commands.extend(file_errors)
    stopped = bool(sent)
    if stopped and timed_out:
        commands.append(runner_issue("error", TIMED_OUT_MESSAGE))
    summary_bytes = summary_file.read_bytes()
    if len(summary_bytes) > STEP_SUMMARY_LIMIT_BYTES:
        raise HarnessError(f"step {step_id}: summary of {len(summary_bytes)} bytes; GitHub drops it")
    return StepResult(step_id, name, ran=True, exit_code=proc.returncode,
                      cancelled=stopped and not timed_out, timed_out=stopped and timed_out,
                      failed_by_runner=processed.failed or bool(file_errors),
                      output=text, outputs=outputs, summary=summary_bytes.decode("utf-8", errors="replace"),
                      commands=tuple(commands), cancel_signals=tuple(sent))


def _arrival_order(chunks: Sequence[Tuple[str, bytes]]) -> List[str]:
    """Lines in the order their last byte arrived, each stream cut on its own."""
    pending = {"stdout": b"", "stderr": b""}
    lines: List[str] = []
    for stream, chunk in chunks:
        data = pending[stream] + chunk
        # A trailing \r may be the first half of \r\n: keep it until more comes.
        cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1))
        if cut < 0:
            pending[stream] = data
            continue
        lines.extend(split_lines(data[:cut + 1]))
        pending[stream] = data[cut + 1:]
    for stream in ("stderr", "stdout"):
        if pending[stream]:
            lines.extend(split_lines(pending[stream]))
    return lines
