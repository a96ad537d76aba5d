"""Puts a child into a cgroup-v1 freezer cgroup set to FROZEN, then hangs: SIGKILL cannot end the child.

Usage: freeze_child.py CGROUP_DIR. Prints ``frozen pid=N``. The test thaws the cgroup afterwards.
"""

import os
import subprocess
import sys
import time

cgroup = sys.argv[1]
child = subprocess.Popen(
    [sys.executable, "-c", "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)"],
    stdout=subprocess.PIPE,
)
# Freeze it only once its interpreter runs: frozen mid-start-up, py-spy would find no Python stack.
child.stdout.readline()
with open(os.path.join(cgroup, "cgroup.procs"), "w") as procs:
    procs.write(str(child.pid))
with open(os.path.join(cgroup, "freezer.state"), "w") as state:
    state.write("FROZEN")
while open(os.path.join(cgroup, "freezer.state")).read().strip() != "FROZEN":
    time.sleep(0.01)
print(f"frozen pid={child.pid}", flush=True)
while True:
    time.sleep(0.05)
