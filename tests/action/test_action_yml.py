"""Static checks of action.yml: the contract with workflow authors and the injection rules."""

from __future__ import annotations

import re

import yaml

from .harness import ACTION_FILE

ACTION = yaml.safe_load(ACTION_FILE.read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]
RUN_STEPS = [s for s in STEPS if "run" in s]

EXPECTED_INPUTS = {
    "run", "shell", "working-directory", "timeout", "idle-timeout", "kill-grace", "log-dir", "config",
    "fail-on", "python", "upload-logs", "allow-workflow-commands", "abort-on", "abort-grace", "name",
}
EXPECTED_OUTPUTS = {"verdict", "exit-code", "report", "log-dir", "findings", "timed-out"}


def test_composite_with_name_description_branding():
    assert ACTION["runs"]["using"] == "composite"
    assert ACTION["name"] and ACTION["description"]
    assert set(ACTION["branding"]) == {"icon", "color"}


def test_inputs_and_outputs_are_the_documented_ones():
    assert set(ACTION["inputs"]) == EXPECTED_INPUTS
    assert set(ACTION["outputs"]) == EXPECTED_OUTPUTS


def test_every_input_is_one_documented_sentence_stating_its_default():
    for name, spec in ACTION["inputs"].items():
        description = spec["description"].strip()
        assert description.endswith("."), name
        if spec.get("required"):
            assert "default" not in spec and "required" in description, name
        else:
            assert "default" in spec, name
            assert "default" in description, f"{name}: the description must state the default"


def test_every_input_reaches_a_step():
    text = yaml.safe_dump(STEPS)
    for name in ACTION["inputs"]:
        assert f"inputs.{name} " in text or f"inputs.{name}}}" in text, f"input {name} is never used"


def test_no_expression_inside_any_run_script():
    for step in RUN_STEPS:
        assert "${{" not in step["run"], step.get("name")


def test_run_scripts_use_action_path_variable_and_quote_every_input_variable():
    for step in RUN_STEPS:
        script = step["run"]
        assert "github.action_path" not in script
        for var in step.get("env", {}):
            # Every use is quoted ("$VAR" or inside a larger "..."); never a bare $VAR that word-splits.
            for line in script.splitlines():
                for match in re.finditer(r"\$\{?" + re.escape(var) + r"\b", line):
                    before = line[: match.start()]
                    quoted = before.endswith(('"', "'")) or before.count('"') % 2 == 1
                    assert quoted, f"unquoted ${var} in: {line.strip()}"


def test_inputs_reach_scripts_only_through_env():
    for step in RUN_STEPS:
        for value in (step.get("env") or {}).values():
            # An input or a step's output, or a variable cleared (a step that runs after the command).
            assert value == "" or re.fullmatch(r"\$\{\{ (inputs|steps)\.[\w.-]+ \}\}", value), value


def test_the_guard_is_execed_with_the_github_contract_options():
    [guard] = [s for s in STEPS if s.get("id") == "guard"]
    script = guard["run"]
    last = [line for line in script.splitlines() if line.strip()][-1].strip()
    assert last.startswith('exec "${guard[@]}" "${args[@]}" -- ')
    # Isolated mode: never `python -m` with the working directory (the tested repository) first on sys.path.
    assert 'guard=("$GHG_VENV/bin/python" -I -m analyzer)' in script
    assert script.index('unset "${!GHG_@}"') < script.index('exec "${guard[@]}"')
    assert re.findall(r"-m analyzer", script) == ["-m analyzer"]
    for option in ("--format github", '--summary "$GITHUB_STEP_SUMMARY"', '--json "$GHG_REPORT"',
                   '--github-output "$GITHUB_OUTPUT"', '--fail-on "$GHG_FAIL_ON"'):
        assert option in script


def test_every_output_write_goes_through_the_one_heredoc_writer():
    for step in RUN_STEPS:
        for line in step["run"].splitlines():
            if "GITHUB_OUTPUT" in line and "--github-output" not in line:
                # Only the stop step hands on the guard's own outputs file, written by the guard's writer.
                assert line.strip().startswith("put_output ") or '"$GHG_OUTPUT_FILE"' in line, line
    lib = (ACTION_FILE.parent / "scripts" / "action-lib.sh").read_text(encoding="utf-8")
    writes = [line.strip() for line in lib.splitlines() if "GITHUB_OUTPUT" in line]
    assert writes == ["printf '%s<<%s\\n%s\\n%s\\n' \"$1\" \"$delimiter\" \"$2\" \"$delimiter\" "
                      '>> "$GITHUB_OUTPUT"']


def test_outputs_come_from_the_guard_step():
    for name, spec in ACTION["outputs"].items():
        assert f"steps.guard.outputs.{name}" in spec["value"], name


def test_upload_step_is_pinned_and_runs_after_failure():
    [upload] = [s for s in STEPS if "uses" in s]
    assert re.fullmatch(r"actions/upload-artifact@[0-9a-f]{40}", upload["uses"])
    assert "always()" in upload["if"] or "!cancelled()" in upload["if"]
    assert upload["with"]["name"] == "${{ inputs.upload-logs }}"


def test_steps_after_the_command_run_no_code_the_command_put_in_the_jobs_environment():
    # The command's GITHUB_ENV and GITHUB_PATH entries reach every later step; the stop step writes the
    # verdict after a cancel, so bash's start-up file and the loader's preload are cleared in its env:
    # (which overrides the job's), and PATH (which the runner prepends to) is reset before any command.
    after = STEPS[[step.get("id") for step in STEPS].index("guard") + 1:]
    scripts = [step for step in after if "run" in step]
    assert [step["id"] for step in scripts] == ["stop"]
    for step in scripts:
        assert {"BASH_ENV": "", "LD_PRELOAD": "", "LD_AUDIT": ""}.items() <= step["env"].items()
        assert step["run"].splitlines()[0].startswith("PATH=/usr/local/sbin:")
