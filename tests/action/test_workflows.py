"""The self-test workflow's jobs, run here step by step: what GitHub will run must pass here first.

Steps that use other actions (checkout, setup-python) are not run: this checkout and this Python stand in
for them. Steps that would change this machine are left out as well: ``pip install pytest`` (pytest is a
test dependency, already installed) and the ``sudo sysctl`` that lets py-spy attach on GitHub's runners
(this machine's tests run as root or without Yama, see the README FAQ).
"""

from __future__ import annotations

import pytest

from .harness import REPO_ROOT
from .workflow_runner import load_job, run_job

SELF_TEST = REPO_ROOT / ".github" / "workflows" / "self-test.yml"


def changes_this_machine(step) -> bool:
    script = str(step.get("run", ""))
    return "sudo " in script or "pip install" in script


MATRIX = load_job(SELF_TEST, "examples")["strategy"]["matrix"]["include"]


@pytest.mark.parametrize("entry", MATRIX, ids=lambda e: e["example"])
def test_examples_job(entry, action_path, runner_temp, step_env):
    job = run_job(SELF_TEST, "examples", matrix=entry, runner_temp=runner_temp, action_path=action_path,
                  env=step_env, skip=changes_this_machine)
    guard, check = job.step("guard"), job.steps[-1]
    expected = "success" if entry["verdict"] == "pass" else "failure"
    assert guard.outcome == expected, guard.action.step("guard").output[-3000:] if guard.action else guard
    assert guard.conclusion == "success", "continue-on-error lets the checking step run"
    assert check.outcome == "success", check.script.output if check.script else check
    assert job.conclusion == "success"
    ran = [s.name for s in job.steps if s.outcome in ("success", "failure")]
    assert ran == ["Run the example under the guard", "Check what the guard reported"]


def test_twice_in_one_job(action_path, runner_temp, step_env):
    job = run_job(SELF_TEST, "twice-in-one-job", runner_temp=runner_temp, action_path=action_path,
                  env=step_env, skip=changes_this_machine)
    assert [s.outcome for s in job.steps] == ["not-run", "success", "success", "success"], [
        s.script.output for s in job.steps if s.script]
    second = job.step("second").action
    assert "reusing" in second.step("setup").output


def test_in_a_container(action_path, runner_temp, step_env):
    job = run_job(SELF_TEST, "in-a-container", runner_temp=runner_temp, action_path=action_path,
                  env=step_env, skip=changes_this_machine)
    guard, check = job.step("guard"), job.steps[-1]
    assert guard.outcome == "failure" and guard.conclusion == "success"
    assert check.outcome == "success", check.script.output if check.script else check
    assert guard.action.outputs["verdict"] == "fail" and "wait_for_peers" in guard.action.summary
    assert job.conclusion == "success"


def test_a_matrix_key_that_does_not_exist_fails_the_step(tmp_path, action_path, runner_temp, step_env):
    """`run: ${{ matrix.cmd }}` in a matrix entry without `cmd` hands the action "" (nothing checks it)."""
    workflow = tmp_path / "matrix.yml"
    workflow.write_text(
        "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n"
        "        include:\n          - command: pytest\n    steps:\n      - id: guard\n        uses: ./\n"
        "        with:\n          run: ${{ matrix.cmd }}\n          timeout: 1m\n", encoding="utf-8")
    job = run_job(workflow, "t", matrix={"command": "pytest"}, runner_temp=runner_temp,
                  action_path=action_path, env=step_env)
    guard = job.step("guard")
    assert guard.outcome == "failure" and job.conclusion == "failure"
    [error] = [a for a in guard.action.shown_annotations if a.name == "error"]
    assert error.data.startswith("run input: no command to run")
