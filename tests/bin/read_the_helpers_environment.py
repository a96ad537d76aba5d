"""Read the environment of every process outside this one, as a same-user command can, while it hangs.

At a timeout the guard starts helpers (py-spy, nvidia-smi) while the command still runs: ordinary
processes of the same user, whose ``/proc/PID/environ`` the command may open. A thread looks at every
process but this one and the guard (its parent, non-dumpable) every few milliseconds and prints
``read GITHUB_OUTPUT=VALUE from pid N: COMMAND LINE`` for each one whose environment names another
``GITHUB_OUTPUT`` than its own (the runner's real file, which the command must never learn). Prints
``looking`` first once the thread runs, then hangs in the main thread.
"""

import os
import threading
import time

OWN = os.environ.get("GITHUB_OUTPUT", "")
SKIP = {os.getpid(), os.getppid()}


def command_line(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def look() -> None:
    # Said here, not after starting the thread: a process readable at once (root opens the guard's own
    # forks) would otherwise be printed before it.
    print("looking", flush=True)
    seen = set()
    while True:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in SKIP or name in seen:
                continue
            # Its command line before its environment: a fork of the guard that execs a helper between the
            # two reads showed the guard's environment beside the helper's command line (the test tells
            # the guard's forks by their command line), never so in this order.
            line = command_line(name)
            try:
                with open(f"/proc/{name}/environ", "rb") as handle:
                    entries = handle.read().split(b"\0")
            except OSError:
                continue
            for entry in entries:
                key, _, value = entry.partition(b"=")
                if key == b"GITHUB_OUTPUT" and value.decode(errors="replace") != OWN:
                    seen.add(name)
                    print(f"read GITHUB_OUTPUT={value.decode(errors='replace')} from pid {name}: {line}",
                          flush=True)
        time.sleep(0.002)


threading.Thread(target=look, daemon=True).start()
while True:
    time.sleep(0.05)
