"""Run one job of a workflow in this repository the way the runner would, as far as this machine allows.

Steps that use ``./`` run this repository's action through the harness; ``run:`` steps run with the
shell a workflow gets (``bash -e {0}`` when none is named); steps that use other actions (checkout,
setup-python, upload-artifact) are recorded with their evaluated ``with:`` but not run: the checkout and
the Python are this machine's. A ``skip`` predicate leaves out steps that would change this machine
(``sudo``, ``pip install``); the caller says why.

A step's ``timeout-minutes`` is its own clock (StepsRunner.cs:296-313), handed down to the action's
embedded steps (see harness.run_action); ``minute_s`` scales a minute so tests stay short. ``cancel``
cancels the job (a user's cancel or the job's ``timeout-minutes``) that many seconds into a step of the
action; later steps then see ``cancelled()``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import yaml

from .harness import (
    DOCKER_EXEC,
    REPO_ROOT,
    ActionRun,
    HarnessError,
    StepResult,
    _runner_environment,
    condition,
    run_action,
    run_script_step,
    substitute,
)

WORKFLOW_DEFAULT_SHELL = "bash -e {0}"


@dataclass(frozen=True)
class JobStep:
    id: str
    name: str
    outcome: str  # success | failure | skipped | not-run (another action, or skipped by the caller)
    conclusion: str  # after continue-on-error
    action: Optional[ActionRun] = None
    script: Optional[StepResult] = None
    with_inputs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JobRun:
    steps: Tuple[JobStep, ...]

    @property
    def conclusion(self) -> str:
        return "failure" if any(s.conclusion == "failure" for s in self.steps) else "success"

    def step(self, step_id: str) -> JobStep:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)


def load_job(workflow: Path, job_id: str) -> Mapping[str, Any]:
    return yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"][job_id]


def run_job(
    workflow: Path,
    job_id: str,
    *,
    runner_temp: Path,
    action_path: Path,
    matrix: Optional[Mapping[str, Any]] = None,
    env: Optional[Mapping[str, str]] = None,
    skip: Callable[[Mapping[str, Any]], bool] = lambda step: False,
    minute_s: float = 60.0,
    cancel: Optional[Tuple[Any, ...]] = None,
) -> JobRun:
    """Run the job's steps in order with shared ``RUNNER_TEMP`` and workspace (this checkout).

    ``cancel=(job_step_id, action_step_id, seconds[, text])`` cancels the job during that step of the
    action, as ``run_action``'s ``cancel`` does.
    """
    job = load_job(workflow, job_id)
    # A container: job runs each step through docker exec (harness.DOCKER_EXEC stands in for it); the
    # image itself is this machine.
    in_container = "container" in job
    base_env = dict(env if env is not None else os.environ)
    job_env = _runner_environment(base_env, REPO_ROOT, runner_temp, action_path)
    runner_temp.mkdir(parents=True, exist_ok=True)
    scratch = runner_temp / "_job_file_commands"
    scratch.mkdir(exist_ok=True)
    steps_ctx: Dict[str, Dict[str, Any]] = {}
    results: List[JobStep] = []
    failed = cancelled = False
    for index, step in enumerate(job.get("steps") or []):
        step_id = str(step.get("id") or f"__step_{index}")
        contexts = {"matrix": dict(matrix or {}), "steps": steps_ctx, "env": dict(job_env),
                    "github": {"workspace": str(REPO_ROOT)}, "runner": {"temp": str(runner_temp)}}
        status = {"success": not failed and not cancelled, "failure": failed and not cancelled,
                  "always": True, "cancelled": cancelled}
        name = substitute(step.get("name", step.get("uses", step_id)), contexts, status)
        with_inputs: Dict[str, str] = {}
        if not condition(step.get("if"), contexts, status):
            outcome, action, script = "skipped", None, None
        elif skip(step) or ("uses" in step and step["uses"] != "./"):
            outcome, action, script = "not-run", None, None
            with_inputs = {k: substitute(v, contexts, status) for k, v in (step.get("with") or {}).items()}
        else:
            step_env = {k: substitute(v, contexts, status) for k, v in (step.get("env") or {}).items()}
            minutes = step.get("timeout-minutes")
            if step.get("uses") == "./":
                inputs = {k: substitute(v, contexts, status) for k, v in (step.get("with") or {}).items()}
                with_inputs = inputs
                action_cancel = tuple(cancel[1:]) if cancel and cancel[0] == step_id else None
                action = run_action(inputs, runner_temp=runner_temp, action_path=action_path,
                                    env={**base_env, **step_env}, cancel=action_cancel,
                                    timeout_minutes_s=None if minutes is None else float(minutes) * minute_s,
                                    container=in_container)
                script = None
                outcome = {"failure": "failure", "cancelled": "cancelled"}.get(action.conclusion, "success")
                cancelled = cancelled or outcome == "cancelled"
            elif minutes is not None:
                raise HarnessError(f"step {step_id}: timeout-minutes on a run: step is not modelled")
            else:
                shaped = dict(step, shell=step.get("shell", WORKFLOW_DEFAULT_SHELL))
                wrap = None
                if in_container:
                    wrap = [sys.executable, str(DOCKER_EXEC), str(scratch / f"{step_id}.container-pid"), "--"]
                script = run_script_step(shaped, step_id, name, contexts, status, job_env, scratch,
                                         REPO_ROOT, 300.0, wrap=wrap)
                action = None
                outcome = script.outcome
        outputs = (action.outputs if action else script.outputs if script else {})
        conclusion = "success" if outcome == "failure" and step.get("continue-on-error") else outcome
        if outcome not in ("success", "failure", "cancelled", "skipped", "not-run"):
            raise HarnessError(f"step {step_id}: unexpected outcome {outcome}")
        steps_ctx[step_id] = {"outputs": dict(outputs), "outcome": outcome, "conclusion": conclusion}
        results.append(JobStep(step_id, name, outcome, conclusion, action, script, with_inputs))
        failed = failed or conclusion == "failure"
    return JobRun(tuple(results))
