"""Session fixtures shared by the action's end-to-end tests: one downloaded-looking copy of the action,
one RUNNER_TEMP (so the private virtualenv is built once and every later use takes the reuse path), and
the environment a runner's step would see."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Dict

import pytest

from .harness import REPO_ROOT, ActionRun, run_action


@pytest.fixture(scope="session")
def action_path(tmp_path_factory) -> Path:
    """The action as the runner downloads it (_actions/OWNER/REPO/REF), without this checkout's junk."""
    target = tmp_path_factory.mktemp("actions") / "gpu-hang-guard"
    shutil.copytree(
        REPO_ROOT,
        target,
        ignore=shutil.ignore_patterns(
            ".git", "__pycache__", "*.egg-info", "build", "dist", ".venv*", "node_modules", ".cache",
            ".pytest_cache", ".ruff_cache", "fixtures", "tests", "bench", "docs", "examples",
        ),
    )
    return target


@pytest.fixture(scope="session")
def runner_temp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runner_temp")


@pytest.fixture(scope="session")
def step_env() -> Dict[str, str]:
    """This machine's environment, with the Python running the tests first on PATH (the job's python)
    and bytecode kept out of the examples directory."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="session")
def act(action_path, runner_temp, step_env):
    def run(cancel=None, timeout_minutes_s=None, container=False, **inputs: str) -> ActionRun:
        return run_action(inputs, runner_temp=runner_temp, action_path=action_path, env=step_env,
                          cancel=cancel, timeout_minutes_s=timeout_minutes_s, container=container)

    return run
