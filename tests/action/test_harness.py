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


@pytest.mark.parametrize("token", ["", "error", "WARNING", "set-output", "stop-commands", "pause-logging"])
def test_an_invalid_stop_token_throws_and_fails_the_step(token):
    """ActionCommandManager.cs:156-188: ValidateStopToken throws out of the output handler."""
    processed = harness.process_lines([f"::stop-commands::{token}", "::error::after"])
    assert processed.failed
    assert [(c.name, c.line) for c in processed.commands] == [("error", "(runner)")]
    assert "endToken" in processed.commands[0].data


def test_the_resume_token_is_case_insensitive():
    assert names("::stop-commands::Tok-1\n::error::hidden\n::tOK-1::\n::warning::shown") == [
        ("warning", "shown")]


def test_only_lf_cr_and_crlf_end_lines_like_dotnet_readline():
    lines = harness.split_lines(b"a\rb\r\nc\nd\x0be\x0cf\xc2\x85g\xe2\x80\xa8h\x1ci\xff")
    assert lines == ["a", "b", "c", "d\x0be\x0cf\x85g\u2028h\x1ci\ufffd"]
    # A \r alone ends a line, so a command hidden after it on "the same line" runs.
    assert names("progress 50%\r::error::after a carriage return") == [("error", "after a carriage return")]
    # A vertical tab or U+2028 does not end a line: the text after it is data.
    assert names("::warning::one\x0b::error::two") == [("warning", "one\x0b::error::two")]


def test_repeated_properties_last_wins_case_insensitively():
    [command] = parse_commands("::error title=first,TITLE=second,file=a.py,line=1,line=2::x")
    assert command.prop("title") == "second" and command.prop("Line") == "2"
    [legacy] = parse_commands("##[error title=a;title=b]y")
    assert legacy.prop("title") == "b"


def test_property_split_like_dotnet():
    [command] = parse_commands("::error title==x,=y,z=::m")
    assert command.properties == (("title", "=x"),)


@pytest.mark.parametrize("line", ["::set-env name=A::1", "::add-path::/evil/bin", "::set-output::no name",
                                  "::save-state::no name", "##[set-env name=A]1"])
def test_commands_that_fail_the_step(line):
    """set-env and add-path are disabled (ActionCommandManager.cs:257-260, 475-478); set-output and
    save-state without a name throw (339-342, 392-395): each is an error and fails the step (137-143)."""
    processed = harness.process_lines([line, "::notice::still handled"])
    assert processed.failed and processed.outputs == {}
    assert [c.name for c in processed.commands] == ["error", "error", "notice"]
    assert processed.commands[0].data == f"Unable to process command '{line}' successfully."


def test_set_output_command_still_sets_an_output():
    processed = harness.process_lines(["::set-output name=a::1", "::set-output NAME=a::2"])
    assert processed.outputs == {"a": "2"} and not processed.failed


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


def test_output_file_unterminated_heredoc_keeps_what_came_before(tmp_path):
    path = tmp_path / "out"
    path.write_text("ok=1\na<<EOF\nno end\n")
    with pytest.raises(harness.FileCommandError, match="delimiter") as err:
        parse_output_file(path)
    assert err.value.pairs == {"ok": "1"}


def test_output_file_keeps_carriage_returns(tmp_path):
    """On Linux EnvFileKeyValuePairs ends lines at \\n only (FileCommandManager.cs:462-494)."""
    path = tmp_path / "out"
    path.write_bytes(b"a=1\r\nb<<EOF\r\nx\r\nEOF\r\nc<<EOF\ny\r\nEOF\r\nEOF\n")
    # b's delimiter is "EOF\r", which the CRLF line matches; c's is "EOF", which "EOF\r" is not.
    assert parse_output_file(path) == {"a": "1\r", "b": "x\r", "c": "y\r\nEOF\r"}


def test_output_file_body_without_final_newline_is_an_error(tmp_path):
    path = tmp_path / "out"
    path.write_bytes(b"a<<EOF\nvalue")
    with pytest.raises(harness.FileCommandError, match="EOF marker missing new line"):
        parse_output_file(path)
    path.write_bytes(b"a<<EOF\nvalue\nEOF")  # the delimiter itself may end the file
    assert parse_output_file(path) == {"a": "value"}


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


ACTION_SIGINT_STATE = """
name: sigint
description: sigint
runs:
  using: composite
  steps:
    - id: s
      shell: bash
      run: |
        echo "ignored=$(awk '/^SigIgn:/ {print $2}' /proc/$$/status)" >> "$GITHUB_OUTPUT"
"""


def test_a_step_takes_sigint_even_when_the_harness_ignores_it(tmp_path):
    """Started as a background job of a non-interactive shell, the test run has SIGINT ignored; the
    runner's steps never do, so a step must not inherit it (or the cancel tests see no SIGINT)."""
    (tmp_path / "action.yml").write_text(ACTION_SIGINT_STATE)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = run_action({}, runner_temp=tmp_path / "t", action_path=tmp_path)
    finally:
        signal.signal(signal.SIGINT, before)
    ignored = int(result.step("s").outputs["ignored"], 16)
    assert not ignored & (1 << (signal.SIGINT - 1))


ACTION_DEADLINE = """
name: deadline
description: deadline
outputs:
  seen: {description: x, value: "${{ steps.s.outputs.seen }}"}
runs:
  using: composite
  steps:
    - id: s
      shell: bash
      run: |
        trap 'echo "seen=sigint" >> "$GITHUB_OUTPUT"; kill "$!"; exit 130' INT
        echo "seen=started" >> "$GITHUB_OUTPUT"
        sleep 30 >/dev/null 2>&1 &
        wait
    - id: upload
      if: ${{ always() }}
      uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02
      with: {name: logs, path: /tmp}
    - id: after
      if: ${{ always() }}
      shell: bash
      run: echo "ran=yes" >> "$GITHUB_OUTPUT"
"""


def test_a_uses_steps_timeout_minutes_is_every_embedded_steps_deadline(tmp_path):
    """CompositeActionHandler.cs:143 creates every embedded context up front with ExecutionContext.cs:500's
    GetRemainingTimeout(): once the uses: step's time is up, the running step times out (failed, not
    cancelled: CompositeActionHandler.cs:494-498) and each later step, always() or not, fails at once."""
    (tmp_path / "action.yml").write_text(ACTION_DEADLINE)
    result = run_action({}, runner_temp=tmp_path / "t", action_path=tmp_path, timeout_minutes_s=1.0)
    s, upload, after = result.steps
    assert s.timed_out and s.outcome == "failure" and s.cancel_signals == (signal.SIGINT,)
    # The step's files are still read after it was stopped (ActionRunner.cs:276-283), outputs evaluated.
    assert s.outputs == {"seen": "sigint"} and result.outputs == {"seen": "sigint"}
    assert not upload.ran and upload.timed_out and not after.ran and after.outcome == "failure"
    assert [(a.name, a.data) for a in result.annotations] == [("error", harness.TIMED_OUT_MESSAGE)] * 3
    assert result.conclusion == "failure"


def test_a_job_cancel_lets_always_steps_run_on_their_own_clock(tmp_path):
    """CompositeActionHandler.cs:328-372: on the job's cancel the running step's if: is evaluated again;
    later steps get their own token (ExecutionContext.cs:436), so always() steps run."""
    (tmp_path / "action.yml").write_text(ACTION_DEADLINE)
    result = run_action({}, runner_temp=tmp_path / "t", action_path=tmp_path, cancel=("s", 1.0))
    s, upload, after = result.steps
    assert s.outcome == "cancelled" and s.outputs == {"seen": "sigint"}
    assert upload.ran and upload.with_inputs == {"name": "logs", "path": "/tmp"}
    assert after.outputs == {"ran": "yes"}


ACTION_ORDER = """
name: order
description: order
runs:
  using: composite
  steps:
    - id: s
      shell: bash
      run: |
        echo '::stop-commands::tok-9'
        echo '::error::from stderr, written after the fence' >&2
        echo '::tok-9::'
"""


def test_stderr_lines_of_a_batch_are_handled_before_stdout_lines(tmp_path):
    """ProcessInvoker.cs:398-441: a fence on stdout does not cover stderr written inside it."""
    (tmp_path / "action.yml").write_text(ACTION_ORDER)
    result = run_action({}, runner_temp=tmp_path / "t", action_path=tmp_path)
    errors = [(a.name, a.data) for a in result.annotations]
    assert errors == [("error", "from stderr, written after the fence")]


ACTION_INPUTS = """
name: inputs
description: inputs
inputs:
  run: {description: x, required: true}
  Mode: {description: x, default: fast}
outputs:
  got: {description: x, value: "[${{ inputs.run }}|${{ inputs.Mode }}]"}
runs:
  using: composite
  steps:
    - shell: bash
      run: "true"
"""


def test_required_is_not_enforced_names_match_case_insensitively_unknown_inputs_warn(tmp_path):
    (tmp_path / "action.yml").write_text(ACTION_INPUTS)
    result = run_action({"command": "pytest", "MODE": "slow"}, runner_temp=tmp_path / "t",
                        action_path=tmp_path)
    assert result.outputs == {"got": "[|slow]"} and result.conclusion == "success"
    [warning] = result.runner_issues
    assert warning.name == "warning"
    assert warning.data.startswith("Unexpected input(s) 'command', valid inputs")


def test_shown_annotations_keep_the_runners_own_first_and_ten_of_each_type(tmp_path):
    lines = "\n        ".join(f"echo '::warning::w{i}'" for i in range(12))
    (tmp_path / "action.yml").write_text(ACTION_TOY.replace('echo "::warning::$WORD"', lines))
    result = run_action({"word": "x", "typo": "y"}, runner_temp=tmp_path / "t", action_path=tmp_path)
    shown = [a.data for a in result.shown_annotations if a.name == "warning"]
    assert shown[0].startswith("Unexpected input(s) 'typo'") and shown[1:] == [f"w{i}" for i in range(9)]
