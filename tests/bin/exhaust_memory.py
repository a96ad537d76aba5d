"""Join the memory cgroup whose cgroup.procs is argv[1], print this pid, then use memory without end.

In a cgroup with a small memory limit the kernel's OOM killer kills this process (SIGKILL, nothing
printed). With argv[2] == "child", a child does that and this process then exits 0, as a launcher does
that retries or ignores a worker's death.
"""

import os
import subprocess
import sys


def exhaust() -> None:
    print(os.getpid(), flush=True)
    hoard = []
    while True:
        hoard.append(b"x" * (8 << 20))  # written, so every page is charged to the cgroup


def main() -> None:
    with open(sys.argv[1], "w") as procs:
        procs.write(str(os.getpid()))
    if sys.argv[2:] == ["child"]:
        subprocess.run([sys.executable, __file__, sys.argv[1], "self"])
        sys.exit(0)
    exhaust()


if __name__ == "__main__":
    main()
