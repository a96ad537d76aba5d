"""The composite action end to end, run as GitHub's runner would run it, on the bundled examples.

One private virtualenv is built for the whole session (the first scenario pays for it; every later one
goes through the action's reuse path), from a copy of the repository laid out like a downloaded action.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psutil
import pytest

from .harness import REPO_ROOT, STEP_SUMMARY_LIMIT_BYTES, ActionRun, run_action

ANNOTATION_CAP = 10  # per severity, as analyzer.report.github.render_annotations caps them
HANG_TIMEOUT = "10s"  # pytest must reach the hanging test first, also on a loaded machine


@pytest.fixture(scope="session")
def clean_run(act) -> ActionRun:
    return act(run="python -m pytest -q examples/clean", timeout="120s")


@pytest.fixture(scope="session")
def atexit_run(clean_run, act) -> ActionRun:
    return act(run="python -m pytest -q examples/atexit_exit0", timeout="120s", **{"upload-logs": "logs-1"})


@pytest.fixture(scope="session")
def hang_run(clean_run, act) -> ActionRun:
    return act(run="python -m pytest -v examples/hang", timeout=HANG_TIMEOUT, **{"kill-grace": "3s"})


@pytest.fixture(scope="session")
def flood_run(clean_run, act) -> ActionRun:
    return act(run="python examples/flood.py", timeout="120s")


@pytest.fixture(scope="session")
def inject_run(clean_run, act) -> ActionRun:
    return act(run="python examples/inject.py", timeout="120s")


def report_of(result: ActionRun) -> dict:
    path = Path(result.outputs["report"])
    assert path.is_absolute() and path.is_file(), path
    return json.loads(path.read_text(encoding="utf-8"))


def assert_outputs_consistent(result: ActionRun, verdict: str, exit_code: int) -> dict:
    outputs = result.outputs
    context = f"outputs {dict(outputs)}; guard output ends:\n{result.step('guard').output[-4000:]}"
    assert (outputs["verdict"], outputs["exit-code"]) == (verdict, str(exit_code)), context
    assert result.step("guard").exit_code == exit_code
    assert result.conclusion == ("success" if exit_code == 0 else "failure")
    report = report_of(result)
    assert report["version"] == 1 and report["verdict"] == verdict
    assert outputs["findings"] == str(len(report["findings"]))
    assert outputs["timed-out"] == ("true" if report["command"]["timed_out"] else "false")
    log_dir = Path(outputs["log-dir"])
    assert log_dir.is_dir() and Path(outputs["report"]).parent == log_dir
    assert log_dir.is_relative_to(result.runner_temp)
    summary = result.summary
    assert summary.strip(), "the job summary is empty"
    assert len(summary.encode("utf-8")) < STEP_SUMMARY_LIMIT_BYTES
    return report


def annotations(result: ActionRun, severity: str):
    return [a for a in result.annotations if a.name == severity]


# --- the private virtualenv ---------------------------------------------------------------------------


def test_first_use_installs_inside_a_group_and_later_uses_reuse_it(clean_run, atexit_run):
    first = clean_run.step("setup")
    assert first.exit_code == 0, first.output
    assert [c.name for c in first.commands] == ["group", "endgroup"]
    assert "Install gpu-hang-guard" in first.commands[0].data
    venv = Path(first.outputs["venv"])
    assert venv.is_relative_to(clean_run.runner_temp) and (venv / "bin" / "python").exists()

    second = atexit_run.step("setup")
    assert second.commands == (), "the second use must not install again"
    assert f"reusing {venv}" in second.output
    assert second.outputs["venv"] == str(venv)


# --- scenarios --------------------------------------------------------------------------------------------


def test_clean_pass(clean_run):
    report = assert_outputs_consistent(clean_run, "pass", 0)
    assert report["findings"] == []
    assert annotations(clean_run, "error") == [] and annotations(clean_run, "warning") == []
    assert "2 passed" in clean_run.step("guard").output
    outcomes = [s.outcome for s in clean_run.steps]
    assert outcomes == ["success", "success", "skipped", "skipped"], "no stop, no upload unasked"


def test_atexit_exception_after_exit_0_fails_the_job(atexit_run):
    report = assert_outputs_consistent(atexit_run, "fail", 1)
    kinds = {f["kind"] for f in report["findings"]}
    assert "atexit-exception" in kinds
    assert "RuntimeError" in atexit_run.summary and "NCCL communicator was aborted" in atexit_run.summary
    errors = annotations(atexit_run, "error")
    assert errors and any("atexit" in (a.data + (a.prop("title") or "")).lower() for a in errors)


def test_logs_are_uploaded_after_a_failed_command(atexit_run):
    [upload] = [s for s in atexit_run.steps if s.uses]
    assert upload.uses.startswith("actions/upload-artifact@")
    assert upload.with_inputs["name"] == "logs-1"
    assert upload.with_inputs["path"] == atexit_run.outputs["log-dir"]
    assert any(Path(upload.with_inputs["path"]).iterdir())


def test_hang_times_out_and_the_stack_names_the_function(hang_run):
    report = assert_outputs_consistent(hang_run, "fail", 124)
    assert report["command"]["timed_out"] is True
    assert "wait_for_peers" in hang_run.summary
    assert any(a.name == "error" for a in hang_run.annotations)
    assert "test_data_loader PASSED" in hang_run.step("guard").output


def test_flood_keeps_annotations_and_summary_within_githubs_limits(flood_run):
    assert_outputs_consistent(flood_run, "fail", 1)
    for severity in ("error", "warning", "notice"):
        assert len(annotations(flood_run, severity)) <= ANNOTATION_CAP
    report = report_of(flood_run)
    assert len(report["findings"]) > ANNOTATION_CAP, "the flood must overflow the annotation cap"
    assert any("more findings" in a.data for a in annotations(flood_run, "notice")), "say what was left out"
    guard_output = flood_run.step("guard").output
    assert "step 199998 |" in guard_output, "the command's output must be passed through whole"


def test_injected_workflow_commands_never_reach_the_runner(inject_run):
    assert_outputs_consistent(inject_run, "pass", 0)
    output = inject_run.step("guard").output
    assert "::error::injected error annotation" in output, "the text itself stays visible"
    for command in inject_run.commands:
        assert "injected" not in command.data and command.name not in ("set-output", "add-mask"), command
    assert inject_run.outputs["verdict"] == "pass"


def test_a_partial_last_stderr_line_is_not_a_command(act):
    result = act(run="printf '::error::injected partial stderr line' >&2")
    assert result.outputs["verdict"] == "pass"
    assert "::error::injected partial stderr line" in result.step("guard").output
    assert [c for c in result.commands if "injected" in c.data] == []


def test_a_partial_last_stderr_line_does_not_hide_the_guards_annotations(act):
    result = act(run="python -m pytest -q examples/atexit_exit0\nprintf 'no newline' >&2")
    assert result.outputs["verdict"] == "fail"
    assert any("atexit" in (a.data + (a.prop("title") or "")).lower() for a in result.annotations)


def test_allow_workflow_commands_lets_them_through(act):
    result = act(run="python examples/inject.py", timeout="120s", **{"allow-workflow-commands": "true"})
    assert result.outputs["verdict"] == "pass"
    passed_through = [c.data for c in result.commands if c.name == "error"]
    assert "injected error annotation" in passed_through, result.output


def test_cancelled_job_gets_its_diagnosis_in_the_runners_window_and_nothing_survives(act):
    marker = f"ghg-cancel-{uuid.uuid4().hex}"
    result = act(run=f"python -m pytest -v examples/hang --basetemp={tempfile.gettempdir()}/{marker}",
                 cancel=("guard", 1.5, "test_data_loader PASSED"), **{"upload-logs": "cancelled-logs"})
    processes = psutil.process_iter(["cmdline"])
    survivors = [p for p in processes if marker in " ".join(p.info["cmdline"] or ())]
    for process in survivors:  # only when the test fails; never leave them running
        process.kill()
    assert survivors == []
    guard = result.step("guard")
    # exec made the guard the step's process, so the runner's first SIGINT reached it and sufficed.
    assert guard.cancel_signals == (signal.SIGINT,), guard.output[-3000:]
    assert result.conclusion == "cancelled"
    assert result.outputs["verdict"] == "fail"
    report = report_of(result)
    assert report["command"]["timeout_reason"] == "cancelled"
    assert "wait_for_peers" in result.summary
    [upload] = [s for s in result.steps if s.uses]
    assert upload.ran and upload.with_inputs["path"] == result.outputs["log-dir"]


# --- inputs -----------------------------------------------------------------------------------------


def test_working_directory_and_custom_shell(act, tmp_path):
    (tmp_path / "probe.py").write_text("import os\nprint('cwd=' + os.getcwd())\n")
    result = act(run="import runpy; runpy.run_path('probe.py')", shell="python {0}",
                 **{"working-directory": str(tmp_path)})
    assert result.outputs["verdict"] == "pass", result.output
    assert f"cwd={tmp_path}" in result.step("guard").output


def test_bash_runs_with_errexit_and_pipefail(act):
    result = act(run="false | true\necho not-reached")
    assert result.outputs["exit-code"] == "1"
    assert "not-reached" not in result.step("guard").output


def test_a_command_that_exits_124_itself_did_not_time_out(act):
    # coreutils' timeout in the test script: the guard's own timeout status, but the guard ended nothing.
    result = act(run="timeout 0.1 sleep 5")
    assert (result.outputs["exit-code"], result.outputs["timed-out"]) == ("124", "false")


def test_explicit_log_dir(act, tmp_path):
    result = act(run="echo hello", **{"log-dir": str(tmp_path / "logs")})
    assert result.outputs["log-dir"] == str(tmp_path / "logs")
    assert Path(result.outputs["report"]).is_file()


@pytest.mark.parametrize(
    "inputs",
    [{"allow-workflow-commands": "yes"}, {"shell": "zsh-without-placeholder"}, {"fail-on": "fatal"}],
)
def test_bad_inputs_fail_the_step_with_a_message(act, inputs):
    result = act(run="echo hi", **inputs)
    guard = result.step("guard")
    assert guard.exit_code == 2, guard.output
    assert result.conclusion == "failure"
    assert "hi\n" not in guard.output


# --- the self-test workflow's checker, on the same runs -----------------------------------------------

def test_self_test_checker_rejects_a_wrong_expectation(clean_run):
    env = dict(os.environ, VERDICT="pass", EXIT_CODE="0", FINDINGS=clean_run.outputs["findings"],
               REPORT=clean_run.outputs["report"], EXPECT_VERDICT="fail", EXPECT_EXIT_CODE="1")
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "examples" / "check_outcome.py")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "::error title=self-test::verdict 'pass', expected 'fail'" in proc.stdout


def test_missing_interpreter_fails_setup_with_one_clear_annotation(act):
    result = act(run="echo hi", python="no-such-python3.99", **{"upload-logs": "logs"})
    assert [s.outcome for s in result.steps] == ["failure", "skipped", "skipped", "skipped"]
    [error] = result.annotations
    assert error.name == "error" and "no-such-python3.99" in error.data and "python input" in error.data
    assert result.outputs["verdict"] == ""


def test_failed_install_is_reported_and_never_reused(action_path, tmp_path):
    broken = tmp_path / "broken-action"
    shutil.copytree(action_path, broken)
    (broken / "pyproject.toml").write_text("this is [not toml\n")
    runner_temp = tmp_path / "runner_temp"
    result = run_action({"run": "echo hi"}, runner_temp=runner_temp, action_path=broken)
    setup = result.step("setup")
    assert setup.outcome == "failure" and result.step("guard").outcome == "skipped"
    errors = [a.data for a in result.annotations if a.name == "error"]
    assert any("pip could not install" in e for e in errors), setup.output[-2000:]
    assert [c.name for c in setup.commands if c.name in ("group", "endgroup")] == ["group", "endgroup"]
    assert not list(runner_temp.glob("gpu-hang-guard/venv-*/.gpu-hang-guard-ready"))


def test_input_values_in_the_actions_own_messages_are_escaped(act):
    odd = "no-such-python%0A\n::warning::forged"
    result = act(run="echo hi", python=odd)
    [error] = result.annotations
    assert error.name == "error"
    assert error.data == f"python input: interpreter '{odd}' was not found on PATH"


# --- a missing run input, hostile values, a hostile workspace ---------------------------------------


@pytest.mark.parametrize("inputs", [{"command": "pytest"}, {"run": ""}, {"run": "  \n\t"}],
                         ids=["misspelled", "empty-matrix-key", "blank"])
def test_a_missing_or_empty_run_fails_with_one_clear_error(act, inputs):
    """ActionRunner.cs:205-236 never checks required: a misspelled input is a warning, run stays ""."""
    result = act(**inputs)
    assert [s.outcome for s in result.steps] == ["failure", "skipped", "skipped", "skipped"]
    assert result.conclusion == "failure" and result.outputs["verdict"] == ""
    errors = [a for a in result.shown_annotations if a.name == "error"]
    assert len(errors) == 1 and errors[0].data.startswith("run input: no command to run"), errors
    if "command" in inputs:
        [warning] = result.runner_issues
        assert warning.data.startswith("Unexpected input(s) 'command'")


def test_a_newline_in_log_dir_cannot_inject_outputs(act, tmp_path):
    odd = str(tmp_path / "logs\nverdict=pass\nreport=/etc/passwd")
    result = act(run="exit 3", **{"log-dir": odd})
    setup = result.step("setup")
    assert setup.outputs["log-dir"] == odd and set(setup.outputs) == {"venv", "log-dir", "report"}
    assert result.outputs["verdict"] == "fail" and result.outputs["exit-code"] == "3"
    assert result.outputs["report"] == odd + "/report.json"


@pytest.fixture()
def hostile_workspace(tmp_path):
    """A repository whose root holds its own analyzer package and a yaml.py, on PYTHONPATH too."""
    root = tmp_path / "repo"
    (root / "analyzer").mkdir(parents=True)
    for name in ("__init__.py", "__main__.py", "cli.py"):
        (root / "analyzer" / name).write_text("print('HIJACKED analyzer')\nraise SystemExit(0)\n")
    (root / "yaml.py").write_text("print('HIJACKED yaml')\nraise SystemExit(0)\n")
    return root


def test_the_tested_repository_cannot_replace_the_guard(action_path, runner_temp, step_env,
                                                        hostile_workspace):
    env = dict(step_env, PYTHONPATH=str(hostile_workspace))
    result = run_action({"run": "python -m pytest -q examples/atexit_exit0 --rootdir=.",
                         "working-directory": str(REPO_ROOT), "timeout": "120s"},
                        runner_temp=runner_temp, action_path=action_path, env=env,
                        workspace=hostile_workspace)
    output = result.step("guard").output
    assert "HIJACKED" not in output, output[-3000:]
    assert result.outputs["verdict"] == "fail"
    assert "atexit-exception" in {f["kind"] for f in report_of(result)["findings"]}
    # And where the guard starts in the hostile checkout itself:
    result = run_action({"run": "echo in the repo", "timeout": "60s"}, runner_temp=runner_temp,
                        action_path=action_path, env=env, workspace=hostile_workspace)
    assert "HIJACKED" not in result.step("guard").output and result.outputs["verdict"] == "pass"


def test_the_command_is_not_handed_the_actions_variables_or_the_venv(act, clean_run):
    venv = clean_run.step("setup").outputs["venv"]
    result = act(run="env", timeout="60s")
    output = result.step("guard").output
    assert result.outputs["verdict"] == "pass"
    assert "GHG_" not in output and venv not in output, output


# --- timeouts and the annotation budget ---------------------------------------------------------------


def test_no_timeout_input_warns_in_the_job_log(act, clean_run):
    result = act(run="echo hi")
    warnings = [a.data for a in result.shown_annotations if a.name == "warning"]
    assert any(w.startswith("no timeout input") for w in warnings), warnings
    assert not any(a.data.startswith("no timeout input") for a in clean_run.annotations)


def test_flood_leaves_room_for_the_runners_warning_and_keeps_the_root_cause(flood_run, act):
    """What GitHub shows for the uses: step: the first 10 of each type, the runner's own first."""
    report = report_of(flood_run)
    cause = next(f for f in report["findings"] if f["severity"] == "error")
    for run in (flood_run, act(run="python examples/flood.py", timeout="120s", typo="x")):
        shown = run.shown_annotations
        assert any(a.name == "error" and a.data == cause["message"] for a in shown)
        notices = [a for a in shown if a.name == "notice" and "more findings" in a.data]
        assert len(notices) == 1, [a.data for a in shown if a.name == "notice"]
        titles = [a.prop("title") or "" for a in run.commands if a.name in ("error", "warning", "notice")]
        annotated = sum(1 for t in titles if t.startswith("gpu-hang-guard: ") and "more" not in t)
        left_out = int(notices[0].data.split(" ", 1)[0].replace(",", ""))
        assert annotated + left_out == len(report["findings"])
        # Nothing the guard made was dropped by the cap.
        assert [a for a in run.annotations if a not in shown] == []


# --- container jobs -------------------------------------------------------------------------------------


def _kill_marked(marker: str) -> list:
    survivors = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or ())]
    for process in survivors:  # only when the test fails; never leave them running
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return survivors


def test_container_job_cancel_the_stop_step_reaches_the_guard(act):
    """In a container: job the runner's SIGINT only kills the docker exec client (docker_exec.py); the
    guard runs on inside. The stop step signals it, waits for its report and hands on summary and outputs,
    then the upload runs."""
    marker = f"ghg-container-{uuid.uuid4().hex}"
    result = act(run=f"python -m pytest -v examples/hang --basetemp={tempfile.gettempdir()}/{marker}",
                 timeout="120s", cancel=("guard", 1.5, "test_data_loader PASSED"), container=True,
                 **{"upload-logs": "container-logs"})
    survivors = _kill_marked(marker)
    guard, stop = result.step("guard"), result.step("stop")
    assert guard.outcome == "cancelled" and guard.cancel_signals == (signal.SIGINT,)
    # The runner read the guard step's files when the client died: no verdict came from that step.
    assert "verdict" not in guard.outputs and guard.outputs["pid"]
    assert stop.ran and stop.outcome == "success", stop.output[-3000:]
    assert any(a.name == "warning" and "did not reach the guard" in a.data for a in stop.commands)
    assert survivors == []
    assert result.outputs["verdict"] == "fail"
    assert report_of(result)["command"]["timeout_reason"] == "cancelled"
    assert "wait_for_peers" in stop.summary
    # The guard's annotations went to the dead client; the stop step makes them again from the report.
    assert any(a.name == "error" and "wait_for_peers" in a.data for a in result.shown_annotations)
    [upload] = [s for s in result.steps if s.uses]
    assert upload.ran and upload.with_inputs["path"] == result.outputs["log-dir"]


def test_host_job_cancel_the_stop_step_finds_the_guard_gone(act):
    result = act(run="sleep 60", timeout="120s", cancel=("guard", 2.0))
    stop = result.step("stop")
    assert stop.ran and "the guard had already ended" in stop.output
    assert [c for c in stop.commands if c.name == "warning"] == []
    assert result.outputs["verdict"] == "fail"


# --- inputs passed on to the guard ------------------------------------------------------------------


def test_name_labels_the_job_in_the_report(act):
    result = act(run="echo hi", timeout="60s", name="shard-1 (a100)")
    assert result.outputs["verdict"] == "pass", result.step("guard").output[-2000:]
    assert report_of(result)["job"]["name"] == "shard-1 (a100)"


def test_abort_on_ends_the_command_at_the_first_such_finding(act):
    result = act(run="echo 'Segmentation fault (core dumped)'\nsleep 60", timeout="120s",
                 **{"abort-on": "crash", "abort-grace": "1s", "kill-grace": "2s"})
    guard = result.step("guard")
    assert result.outputs["verdict"] == "fail", guard.output[-2000:]
    report = report_of(result)
    assert report["command"]["timeout_reason"] == "aborted"
    assert "crash" in {f["kind"] for f in report["findings"]}


def test_abort_on_empty_never_aborts(act):
    result = act(run="echo 'Segmentation fault (core dumped)'", timeout="60s")
    assert report_of(result)["command"]["timeout_reason"] is None
