"""The README's timeout patterns keep the evidence on GitHub: run as the runner runs them.

The runner gives every step inside a composite action the time the ``uses:`` step has left when the action
starts (actions/runner CompositeActionHandler.cs:143, ExecutionContext.cs:500 and 750-779), so a
step-level ``timeout-minutes`` also ends the action's own upload step before it starts; a job-level
limit or a cancel lets the action's remaining steps run on their own clock (CompositeActionHandler.cs:
328-372). The harness models both (test_harness.py proves it on a toy action); here the README's own
snippets run with the action and the hanging example, with a minute scaled down.
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
import textwrap
import uuid
from pathlib import Path
from typing import Any, Dict, List, Tuple

import psutil
import yaml

from .harness import REPO_ROOT
from .workflow_runner import run_job

HANG = "python -m pytest -v examples/hang --basetemp={tmp}/{marker}"
STARTED = "test_data_loader PASSED"


def _readme_jobs(section: str = "") -> List[Dict[str, Any]]:
    """The jobs of the README's workflow snippets that use the action (in ``## section`` when given)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    if section:
        text = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    jobs = []
    for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
        if block.startswith("jobs:") and "gpu-hang-guard@" in block:
            for job in yaml.safe_load(textwrap.dedent(block))["jobs"].values():
                jobs.append(job)
    return jobs


def _uses_action(step: Dict[str, Any]) -> bool:
    return str(step.get("uses", "")).split("@")[0].endswith("/gpu-hang-guard")


def _is_outside_upload(step: Dict[str, Any], guard_id: str) -> bool:
    return (str(step.get("uses", "")).startswith("actions/upload-artifact@")
            and "always()" in str(step.get("if", ""))
            and step.get("with", {}).get("path") == f"${{{{ steps.{guard_id}.outputs.log-dir }}}}")


def test_every_readme_job_keeps_its_logs_when_a_limit_fires():
    """A step-level limit comes only with an upload of the job's own after it; everywhere the guard has its
    own timeout; in the action's section the backstop is on the job."""
    documented = _readme_jobs("In GitHub Actions")
    assert len(documented) >= 2
    for job in _readme_jobs():
        steps = job["steps"]
        for index, step in enumerate(steps):
            if not _uses_action(step):
                continue
            assert step["with"].get("timeout"), "the guard's own timeout is the real limit"
            if "timeout-minutes" in step:
                # A step-level limit: only an upload step of the job's own, after it, survives it.
                assert not step["with"].get("upload-logs"), step
                assert any(_is_outside_upload(later, step["id"]) for later in steps[index + 1:]), step
            elif job in documented:
                assert "timeout-minutes" in job, "the backstop goes on the job"
                assert step["with"].get("upload-logs")


def _runnable(job: Dict[str, Any], tmp_path: Path, **with_values: str) -> Tuple[Path, str, str]:
    """The README job with ``uses: ./`` and the hanging example, as a workflow file; its guard step id."""
    job = copy.deepcopy(job)
    marker = f"ghg-readme-{uuid.uuid4().hex}"
    for step in job["steps"]:
        if _uses_action(step):
            step["uses"] = "./"
            step.setdefault("id", "guard")
            step["with"].update(run=HANG.format(tmp=tempfile.gettempdir(), marker=marker), **with_values)
            guard_id = step["id"]
    workflow = tmp_path / "readme.yml"
    workflow.write_text(yaml.safe_dump({"on": "push", "jobs": {"job": job}}), encoding="utf-8")
    return workflow, guard_id, marker


def _assert_nothing_left(marker: str) -> None:
    survivors = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or ())]
    for process in survivors:
        process.kill()
    assert survivors == []


def _report(log_dir: str) -> dict:
    return json.loads((Path(log_dir) / "report.json").read_text(encoding="utf-8"))


def test_recommended_pattern_guard_timeout_fires_and_the_action_uploads(tmp_path, action_path, runner_temp,
                                                                       step_env):
    job = [j for j in _readme_jobs("In GitHub Actions") if "timeout-minutes" in j][0]
    workflow, guard_id, marker = _runnable(job, tmp_path, timeout="10s", **{"kill-grace": "3s"})
    run = run_job(workflow, "job", runner_temp=runner_temp, action_path=action_path, env=step_env,
                  matrix={"shard": 1})
    _assert_nothing_left(marker)
    action = run.step(guard_id).action
    upload = [s for s in action.steps if s.uses][0]
    assert upload.ran and Path(upload.with_inputs["path"]) == Path(action.outputs["log-dir"])
    assert _report(action.outputs["log-dir"])["command"]["timed_out"] is True
    assert "wait_for_peers" in action.summary


def test_recommended_pattern_survives_the_jobs_own_timeout(tmp_path, action_path, runner_temp, step_env):
    """The job's timeout-minutes (or a user's cancel) fires before the guard's timeout."""
    job = [j for j in _readme_jobs("In GitHub Actions") if "timeout-minutes" in j][0]
    workflow, guard_id, marker = _runnable(job, tmp_path, timeout="10m")
    run = run_job(workflow, "job", runner_temp=runner_temp, action_path=action_path, env=step_env,
                  matrix={"shard": 1}, cancel=(guard_id, "guard", 1.5, STARTED))
    _assert_nothing_left(marker)
    action = run.step(guard_id).action
    assert action.step("guard").outcome == "cancelled"
    upload = [s for s in action.steps if s.uses][0]
    assert upload.ran and Path(upload.with_inputs["path"]) == Path(action.outputs["log-dir"])
    assert _report(action.outputs["log-dir"])["command"]["timeout_reason"] == "cancelled"
    assert "wait_for_peers" in action.summary


def test_step_level_pattern_uploads_from_its_own_step(tmp_path, action_path, runner_temp, step_env):
    """A step-level timeout-minutes fires: the action's steps after the guard fail at once, and the
    job's own upload step, which has its own clock, gets the log dir from the action's outputs."""
    job = [j for j in _readme_jobs() if any("timeout-minutes" in s for s in j["steps"])][0]
    workflow, guard_id, marker = _runnable(job, tmp_path, timeout="10m")
    minutes = float([s for s in job["steps"] if _uses_action(s)][0]["timeout-minutes"])
    run = run_job(workflow, "job", runner_temp=runner_temp, action_path=action_path, env=step_env,
                  minute_s=15.0 / minutes)
    _assert_nothing_left(marker)
    guard_step = run.step(guard_id)
    action = guard_step.action
    assert guard_step.outcome == "failure" and action.step("guard").timed_out
    assert action.step("guard").cancel_signals[0] == 2  # SIGINT, like a cancel, then the step fails
    upload = run.steps[-1]
    assert upload.outcome == "not-run" and upload.with_inputs["path"] == action.outputs["log-dir"]
    report = _report(upload.with_inputs["path"])
    assert report["command"]["timeout_reason"] == "cancelled" and report["verdict"] == "fail"
    assert "wait_for_peers" in action.summary
