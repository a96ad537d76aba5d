"""Run ``action.yml`` the way GitHub's runner runs a composite action, on this machine.

GitHub's runner cannot run here (nektos/act needs Docker), so this harness does what the runner does for
a composite action, and no more:

* evaluates the ``${{ }}`` expressions the action uses (``inputs.*`` with their defaults, ``env.*``,
  ``github.*``, ``runner.*``, ``steps.<id>.outputs.*``, ``||``/``&&``/``!``/``==``/``!=`` and the status
  functions ``success() failure() always() cancelled()``) in ``if:``, ``env:``, ``with:`` and outputs;
* gives each ``run:`` step fresh ``GITHUB_OUTPUT`` and ``GITHUB_STEP_SUMMARY`` files and the
  ``GITHUB_*``/``RUNNER_*`` variables, writes the script to a file and runs it with the shell's template
  (``bash --noprofile --norc -eo pipefail {0}``), reading stdout and stderr line by line as the runner does;
* feeds every output line to a workflow-command parser that follows the runner's
  ``ActionCommand.TryParseV2``/``TryParse`` and ``ActionCommandManager`` (``::cmd props::data`` after
  leading whitespace, legacy ``##[cmd props]data`` anywhere in a line, case-insensitive names, and
  ``::stop-commands::TOKEN`` until ``::TOKEN::``), and applies ``set-output`` as the runner still does;
* checks ``uses:`` steps (their pin and evaluated ``with:``) without running them;
* on request cancels a step the runner's way: SIGINT to the step's process only, SIGTERM 7.5 s later,
  SIGKILL 2.5 s after that; later steps then see ``cancelled()``.

It refuses an expression inside a ``run:`` script, which the action must never contain.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
ACTION_FILE = REPO_ROOT / "action.yml"

# GitHub refuses a step summary larger than this (the runner drops it and adds an error).
STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024

# How the runner cancels a step (ProcessInvoker): SIGINT to the step's process only (not its group),
# SIGTERM 7.5 s later, then a kill 2.5 s after that.
CANCEL_SIGINT_WAIT_S = 7.5
CANCEL_SIGTERM_WAIT_S = 2.5
PIPE_HELD_WAIT_S = 5.0
RUNNER_STREAM_WAIT_S = 5.0  # after the step's process exits, for the pipes to close

SHELL_TEMPLATES = {
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
    "sh": ["sh", "-e", "{0}"],
    "python": ["python", "{0}"],
}

# The runner's registered command extensions (src/Runner.Worker/*CommandExtension*).
REGISTERED_COMMANDS = frozenset(
    {
        "add-mask", "add-matcher", "add-path", "debug", "echo", "endgroup", "error", "group", "notice",
        "remove-matcher", "save-state", "set-env", "set-output", "warning",
    }
)
STOP_COMMAND = "stop-commands"
ANNOTATION_COMMANDS = frozenset({"error", "warning", "notice"})

_DATA_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_LEGACY_UNESCAPES = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_FULL_SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


class HarnessError(Exception):
    """The action did something the runner would reject, or the harness cannot model."""


@dataclass(frozen=True)
class WorkflowCommand:
    """One line of step output that the runner's command parser accepted."""

    name: str
    properties: Tuple[Tuple[str, str], ...]
    data: str
    line: str

    def prop(self, key: str) -> Optional[str]:
        for k, v in self.properties:
            if k.lower() == key.lower():
                return v
        return None


@dataclass(frozen=True)
class StepResult:
    id: str
    name: str
    ran: bool
    exit_code: Optional[int] = None
    cancelled: bool = False
    output: str = ""
    outputs: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    commands: Tuple[WorkflowCommand, ...] = ()
    uses: str = ""
    cancel_signals: Tuple[int, ...] = ()
    with_inputs: Mapping[str, str] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        if not self.ran:
            return "skipped"
        if self.cancelled:
            return "cancelled"
        return "success" if not self.exit_code else "failure"


@dataclass(frozen=True)
class ActionRun:
    """What a workflow run would show for one use of the action."""

    steps: Tuple[StepResult, ...]
    outputs: Mapping[str, str]
    runner_temp: Path

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
        return tuple(c for c in self.commands if c.name in ANNOTATION_COMMANDS)

    @property
    def output(self) -> str:
        return "".join(s.output for s in self.steps)

    def step(self, step_id: str) -> StepResult:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)


# ---------------------------------------------------------------------------------------------------
# The runner's workflow-command parser


class CommandParser:
    """Stateful like the runner's ActionCommandManager: stop-commands persists across lines of a step."""

    def __init__(self) -> None:
        self._stop_token: Optional[str] = None

    def feed(self, line: str) -> Optional[WorkflowCommand]:
        """The command this line would run, or None when the runner would only print it."""
        registered = set(REGISTERED_COMMANDS) | {STOP_COMMAND}
        if self._stop_token:
            registered.add(self._stop_token.lower())
        parsed = _parse_v2(line, registered) or _parse_legacy(line, registered)
        if parsed is None:
            return None
        if self._stop_token is not None:
            if self._stop_token and parsed.name == self._stop_token.lower():
                self._stop_token = None
            return None
        if parsed.name == STOP_COMMAND:
            self._stop_token = parsed.data
            return None
        return parsed

    @property
    def stopped(self) -> bool:
        return self._stop_token is not None


def _unescape(text: str, table: Sequence[Tuple[str, str]]) -> str:
    for escaped, plain in table:
        text = text.replace(escaped, plain)
    return text


def _parse_v2(line: str, registered: set) -> Optional[WorkflowCommand]:
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    name, _, props = info.partition(" ")
    if name.lower() not in registered:
        return None
    properties = []
    for item in props.strip().split(","):
        key, sep, value = item.partition("=")
        if sep and key and value:
            properties.append((key, _unescape(value, _PROPERTY_UNESCAPES)))
    data = _unescape(message[end + 2:], _DATA_UNESCAPES)
    return WorkflowCommand(name.lower(), tuple(properties), data, line)


def _parse_legacy(line: str, registered: set) -> Optional[WorkflowCommand]:
    start = line.find("##[")
    if start < 0:
        return None
    end = line.find("]", start)
    if end < 0:
        return None
    info = line[start + 3:end]
    name, _, props = info.partition(" ")
    if name.lower() not in registered:
        return None
    properties = []
    for item in props.split(";"):
        key, sep, value = item.partition("=")
        if sep and key and value:
            properties.append((key, _unescape(value, _LEGACY_UNESCAPES)))
    data = _unescape(line[end + 1:], _LEGACY_UNESCAPES)
    return WorkflowCommand(name.lower(), tuple(properties), data, line)


def parse_commands(text: str) -> Tuple[WorkflowCommand, ...]:
    """Every workflow command the runner would run for this step output."""
    parser = CommandParser()
    found = []
    for line in text.splitlines():
        command = parser.feed(line)
        if command is not None:
            found.append(command)
    return tuple(found)


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


def parse_output_file(path: Path) -> Dict[str, str]:
    """``name=value`` and ``name<<DELIMITER`` blocks, as the runner's SetOutputFileCommand reads them."""
    result: Dict[str, str] = {}
    if not path.exists():
        return result
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        i += 1
        if line == "":
            continue
        heredoc = line.find("<<")
        equals = line.find("=")
        if heredoc > 0 and (equals < 0 or heredoc < equals):
            name, delimiter = line[:heredoc], line[heredoc + 2:]
            if not name or not delimiter:
                raise HarnessError(f"{path.name}: invalid heredoc line {line!r}")
            body = []
            while True:
                if i >= len(lines):
                    raise HarnessError(f"{path.name}: matching delimiter not found {delimiter!r}")
                current = lines[i].rstrip("\r")
                i += 1
                if current == delimiter:
                    break
                body.append(current)
            result[name] = "\n".join(body)
        elif equals > 0:
            result[line[:equals]] = line[equals + 1:]
        else:
            raise HarnessError(f"{path.name}: invalid line {line!r}")
    return result


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
        }
    )
    return env


def run_action(
    inputs: Mapping[str, str],
    *,
    runner_temp: Path,
    workspace: Path = REPO_ROOT,
    action_path: Path = REPO_ROOT,
    action_file: Optional[Path] = None,
    env: Optional[Mapping[str, str]] = None,
    step_timeout_s: float = 300.0,
    cancel: Optional[Tuple[str, float]] = None,
) -> ActionRun:
    """Run the composite action with ``inputs`` as a workflow's ``with:`` would give them.

    ``cancel=(step_id, seconds)`` cancels the run that many seconds into that step, as the runner does
    when a user cancels the workflow or a ``timeout-minutes`` expires.
    """
    action = yaml.safe_load((action_file or action_path / "action.yml").read_text(encoding="utf-8"))
    if action.get("runs", {}).get("using") != "composite":
        raise HarnessError("action.yml: runs.using must be composite")
    declared = action.get("inputs") or {}
    unknown = set(inputs) - set(declared)
    if unknown:
        raise HarnessError(f"unexpected inputs {sorted(unknown)} (the runner warns and ignores them)")
    resolved_inputs = {}
    for name, spec in declared.items():
        spec = spec or {}
        if name in inputs:
            resolved_inputs[name] = str(inputs[name])
        elif spec.get("required") and "default" not in spec:
            raise HarnessError(f"required input {name!r} not given")
        else:
            resolved_inputs[name] = _as_string(spec.get("default", ""))

    runner_temp.mkdir(parents=True, exist_ok=True)
    scratch = runner_temp / "_runner_file_commands"
    scratch.mkdir(exist_ok=True)
    job_env = _runner_environment(env if env is not None else os.environ, workspace, runner_temp,
                                  action_path)
    github_env_file = scratch / f"set_env_{uuid.uuid4().hex}"
    github_env_file.touch()
    job_env["GITHUB_ENV"] = str(github_env_file)

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
            results.append(StepResult(step_id, name, ran=False))
            steps_ctx[step_id] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            continue
        if "uses" in step:
            result = _check_uses(step, step_id, name, contexts, status)
        else:
            cancel_after = cancel[1] if cancel and cancel[0] == step_id else None
            result = run_script_step(step, step_id, name, contexts, status, job_env, scratch, workspace,
                               step_timeout_s, cancel_after)
        results.append(result)
        steps_ctx[step_id] = {"outputs": dict(result.outputs), "outcome": result.outcome,
                              "conclusion": result.outcome}
        failed = failed or result.outcome == "failure"
        cancelled = cancelled or result.cancelled
        job_env.update(parse_output_file(github_env_file))

    contexts = {"inputs": resolved_inputs, "env": dict(job_env), "steps": steps_ctx,
                "github": {"action_path": str(action_path)}, "runner": {"temp": str(runner_temp)}}
    status = _status(failed, cancelled)
    outputs = {
        name: substitute((spec or {}).get("value", ""), contexts, status)
        for name, spec in (action.get("outputs") or {}).items()
    }
    return ActionRun(tuple(results), outputs, runner_temp)


def _status(failed: bool, cancelled: bool) -> Dict[str, bool]:
    return {"success": not failed and not cancelled, "failure": failed and not cancelled, "always": True,
            "cancelled": cancelled}


def _cancel_like_the_runner(proc: subprocess.Popen, after_s: float, done: threading.Event,
                            sent: List[int]) -> None:
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


def _read_lines(pipe: Any, arrived: List[bytes], lock: threading.Lock) -> None:
    with pipe:
        for line in iter(pipe.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"  # a last line without newline is still one line to the runner
            with lock:
                arrived.append(line)


def _check_uses(step: Mapping[str, Any], step_id: str, name: str, contexts: Mapping[str, Any],
                status: Mapping[str, bool]) -> StepResult:
    uses = str(step["uses"])
    if not uses.startswith("./") and not _FULL_SHA_PIN.match(uses):
        raise HarnessError(f"step {step_id}: {uses!r} is not pinned to a full commit SHA")
    with_inputs = {k: substitute(v, contexts, status) for k, v in (step.get("with") or {}).items()}
    return StepResult(step_id, name, ran=True, exit_code=0, uses=uses, with_inputs=with_inputs)


def run_script_step(step: Mapping[str, Any], step_id: str, name: str, contexts: Mapping[str, Any],
              status: Mapping[str, bool], job_env: Mapping[str, str], scratch: Path, workspace: Path,
              timeout_s: float, cancel_after_s: Optional[float] = None) -> StepResult:
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
    argv = [part.replace("{0}", str(script_file)) for part in template]

    # stdout and stderr are separate pipes, each read line by line, as the runner's ProcessInvoker reads
    # them; lines of both streams go to one command parser in the order they arrive.
    proc = subprocess.Popen(argv, cwd=cwd, env=step_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    arrived: List[bytes] = []
    lock = threading.Lock()
    readers = [threading.Thread(target=_read_lines, args=(pipe, arrived, lock), daemon=True)
               for pipe in (proc.stdout, proc.stderr)]
    for reader in readers:
        reader.start()
    done = threading.Event()
    sent: List[int] = []
    canceller = None
    if cancel_after_s is not None:
        canceller = threading.Thread(target=_cancel_like_the_runner, args=(proc, cancel_after_s, done, sent))
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
        text = b"".join(arrived).decode("utf-8", errors="backslashreplace")

    commands = parse_commands(text)
    outputs: Dict[str, str] = {}
    for command in commands:  # deprecated, but the runner still applies it
        if command.name == "set-output" and command.prop("name"):
            outputs[command.prop("name") or ""] = command.data
    outputs.update(parse_output_file(output_file))
    summary_bytes = summary_file.read_bytes()
    if len(summary_bytes) > STEP_SUMMARY_LIMIT_BYTES:
        raise HarnessError(f"step {step_id}: summary of {len(summary_bytes)} bytes; GitHub drops it")
    return StepResult(step_id, name, ran=True, exit_code=proc.returncode, cancelled=bool(sent),
                      output=text, outputs=outputs, summary=summary_bytes.decode("utf-8"),
                      commands=commands, cancel_signals=tuple(sent))
