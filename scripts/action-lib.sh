# Shell functions shared by the steps of action.yml (sourced, never run): the one place that writes
# workflow commands and outputs from the action's own shell code.

# fail MESSAGE: one error annotation (data escaped as the runner unescapes it: actions/toolkit
# packages/core command.ts escapeData), then exit 2.
fail() {
  local message="${1//%/%25}"
  message="${message//$'\r'/%0D}"
  printf '::error title=gpu-hang-guard::%s\n' "${message//$'\n'/%0A}"
  exit 2
}

# put_output NAME VALUE: the one writer of the action's own outputs. GitHub's heredoc form with a random
# delimiter that does not occur in the value (as actions/toolkit file-command.ts prepareKeyValueMessage
# does), so no value, whatever it holds (a newline, "\r", "x<<EOF"), can end the block or add outputs.
put_output() {
  local delimiter
  delimiter="ghadelimiter_$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
  while [[ "$2" == *"$delimiter"* ]]; do delimiter="${delimiter}_$RANDOM"; done
  printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >> "$GITHUB_OUTPUT"
}
