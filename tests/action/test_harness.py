"""The harness must model the runner faithfully, or the end-to-end tests prove nothing: test it alone."""

from __future__ import annotations

import signal

import pytest

from . import harness
from .harness import (
    HarnessError,
    condition,
    evaluate,
    parse_commands,
    parse_output_file,
    run_action,
    substitute,
)

CONTEXTS = {
    "inputs": {"upload-logs": "", "name": "logs", "flag": "false"},
    "steps": {
        "guard": {"outputs": {"verdict": "fail", "log-dir": ""}},
        "setup": {"outputs": {"log-dir": "/t"}},
    },
    "env": {"HOME": "/root"},
}
OK = {"success": True, "failure": False, "always": True, "cancelled": False}
FAILED = {"success": False, "failure": True, "always": True, "cancelled": False}


def names(text):
    return [(c.name, c.data) for c in parse_commands(text)]


def test_v2_commands_after_leading_whitespace_with_properties_unescaped():
    [command] = parse_commands("   ::error file=a%2Cb.py,line=3,title=x%3Ay::multi%0Aline %25")
    assert (command.name, command.data) == ("error", "multi\nline %")
    assert command.prop("file") == "a,b.py" and command.prop("line") == "3" and command.prop("title") == "x:y"


def test_names_are_case_insensitive_and_unknown_commands_are_text():
    assert names("::ERROR::x\n::bogus::y\n:: error::z\nprefix ::error::w") == [("error", "x")]


def test_legacy_command_anywhere_in_a_line():
    assert names("progress ##[warning]careful\n##[nope]x") == [("warning", "careful")]


def test_stop_commands_until_the_token_and_only_the_token():
    text = "\n".join(
        [
            "::stop-commands::tok123",
            "::error::hidden",
            "::other::",
            "##[error]hidden too",
            "::TOK123::",
            "::error::visible",
        ]
    )
    assert names(text) == [("error", "visible")]


def test_stop_commands_without_a_token_never_resumes():
    assert names("::stop-commands::\n::error::x\n::::") == []


def test_expressions_or_and_not_comparison():
    assert evaluate("steps.guard.outputs.log-dir || steps.setup.outputs.log-dir", CONTEXTS, OK) == "/t"
    assert evaluate("inputs.upload-logs != ''", CONTEXTS, OK) is False
    assert evaluate("inputs.name == 'LOGS'", CONTEXTS, OK) is True  # GitHub ignores case
    assert evaluate("!(inputs.name == 'x') && inputs.name", CONTEXTS, OK) == "logs"
    assert evaluate("steps.missing.outputs.x", CONTEXTS, OK) is None


def test_loose_equality_coerces_like_github():
    assert evaluate("steps.missing.outputs.x == ''", CONTEXTS, OK) is True  # null == ''
    assert evaluate("steps.missing.outputs.x != ''", CONTEXTS, OK) is False
    assert evaluate("inputs.flag == false", CONTEXTS, OK) is False  # 'false' is NaN as a number
    assert evaluate("'0' == 0", CONTEXTS, OK) is True


def test_substitute_renders_values_as_the_runner_does():
    assert substitute("a ${{ inputs.name }} ${{ steps.nope.outputs.x }} b", CONTEXTS, OK) == "a logs  b"
    assert substitute("${{ inputs.name == 'logs' }}", CONTEXTS, OK) == "true"


def test_if_gets_an_implicit_success_unless_it_calls_a_status_function():
    assert condition(None, CONTEXTS, FAILED) is False
    assert condition("inputs.name == 'logs'", CONTEXTS, FAILED) is False
    assert condition("${{ always() && inputs.name == 'logs' }}", CONTEXTS, FAILED) is True
    assert condition("${{ !cancelled() }}", CONTEXTS, FAILED) is True


def test_unknown_context_is_an_error_not_an_empty_string():
    with pytest.raises(HarnessError):
        evaluate("secrets.TOKEN", CONTEXTS, OK)


def test_output_file_with_heredoc_and_a_later_value_winning(tmp_path):
    path = tmp_path / "out"
    path.write_text("a=1\nsummary<<EOF_x\nline one\nline=two\nEOF_x\na=2\n")
    assert parse_output_file(path) == {"a": "2", "summary": "line one\nline=two"}


def test_output_file_unterminated_heredoc_is_rejected(tmp_path):
    path = tmp_path / "out"
    path.write_text("a<<EOF\nno end\n")
    with pytest.raises(HarnessError, match="delimiter"):
        parse_output_file(path)


ACTION_WITH_EXPRESSION_IN_RUN = """
name: bad
description: bad
inputs:
  run: {description: x, required: true}
runs:
  using: composite
  steps:
    - shell: bash
      run: echo "${{ inputs.run }}"
"""

ACTION_TOY = """
name: toy
description: toy
inputs:
  word: {description: x, default: hello}
outputs:
  said: {description: x, value: "${{ steps.say.outputs.said }}"}
runs:
  using: composite
  steps:
    - id: say
      shell: bash
      env:
        WORD: ${{ inputs.word }}
      run: |
        echo "said=$WORD" >> "$GITHUB_OUTPUT"
        echo "# $WORD" >> "$GITHUB_STEP_SUMMARY"
        echo "::warning::$WORD"
        echo "WORD_SEEN=$WORD" >> "$GITHUB_ENV"
        false
    - id: after-failure
      shell: bash
      run: echo never
    - id: always
      if: ${{ always() }}
      shell: bash
      run: echo "seen=$WORD_SEEN" >> "$GITHUB_OUTPUT"
"""


def test_expression_inside_a_run_script_is_refused(tmp_path):
    action = tmp_path / "action.yml"
    action.write_text(ACTION_WITH_EXPRESSION_IN_RUN)
    with pytest.raises(HarnessError, match="inside a run"):
        run_action({"run": "x"}, runner_temp=tmp_path / "t", action_path=tmp_path)


def test_toy_action_runs_like_the_runner(tmp_path):
    (tmp_path / "action.yml").write_text(ACTION_TOY)
    result = run_action({"word": "hi there"}, runner_temp=tmp_path / "t", action_path=tmp_path)
    assert [s.outcome for s in result.steps] == ["failure", "skipped", "success"]
    assert result.conclusion == "failure"
    assert result.outputs == {"said": "hi there"}
    assert result.summary == "# hi there\n"
    assert [(a.name, a.data) for a in result.annotations] == [("warning", "hi there")]
    assert result.step("always").outputs == {"seen": "hi there"}


ACTION_TWO_STREAMS = """
name: streams
description: streams
runs:
  using: composite
  steps:
    - id: s
      shell: bash
      run: |
        printf '::error::from stdout'
        echo '::warning::from stderr' >&2
        sleep 0.2
        echo ' continued'
"""


def test_stdout_and_stderr_are_separate_line_streams(tmp_path):
    """A partial stdout line is not cut by a stderr line: the runner reads each pipe on its own."""
    (tmp_path / "action.yml").write_text(ACTION_TWO_STREAMS)
    result = run_action({}, runner_temp=tmp_path / "t", action_path=tmp_path)
    assert sorted((a.name, a.data) for a in result.annotations) == [
        ("error", "from stdout continued"), ("warning", "from stderr")]


ACTION_STUBBORN = """
name: stubborn
description: stubborn
runs:
  using: composite
  steps:
    - id: s
      shell: bash
      run: |
        python3 -c 'import time; time.sleep(0.3); print("ready", flush=True); time.sleep(60)'
    - id: after
      if: ${{ cancelled() }}
      shell: bash
      run: echo "ran=yes" >> "$GITHUB_OUTPUT"
"""


def test_cancel_signals_only_the_step_process_like_the_runner(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "CANCEL_SIGINT_WAIT_S", 0.5)
    monkeypatch.setattr(harness, "CANCEL_SIGTERM_WAIT_S", 0.5)
    monkeypatch.setattr(harness, "PIPE_HELD_WAIT_S", 0.5)
    (tmp_path / "action.yml").write_text(ACTION_STUBBORN)
    result = run_action({}, runner_temp=tmp_path / "t", action_path=tmp_path, cancel=("s", 1.0))
    step = result.step("s")
    # bash waiting for a foreground child defers SIGINT, and the child never gets it (only the step's
    # process is signalled): it takes the SIGTERM. This is why the action execs the guard.
    assert step.cancel_signals == (signal.SIGINT, signal.SIGTERM) and step.outcome == "cancelled"
    assert "ready" in step.output
    assert result.step("after").outputs == {"ran": "yes"} and result.conclusion == "cancelled"
