"""Starts N Python children that each wait forever in ``wait_for_the_collective``, then waits for them.

Usage: many_stuck_pythons.py N. Prints ``N stuck`` once all of them run: a tree with N + 1 Python
processes to dump, as a 16-rank job stuck in a collective gives.
"""

import subprocess
import sys

CHILD = (
    "import sys, time\n"
    "def wait_for_the_collective():\n"
    "    while True:\n"
    "        time.sleep(0.05)\n"
    "print('up', flush=True)\n"
    "wait_for_the_collective()\n"
)
count = int(sys.argv[1])
children = [
    subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    for _ in range(count)
]
for child in children:
    child.stdout.readline()
print(f"{count} stuck", flush=True)
for child in children:
    child.wait()
