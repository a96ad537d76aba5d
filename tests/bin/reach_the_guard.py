"""Try to reach into the guard (the parent process) through /proc, as a same-user command can.

Reads its environment (the real GITHUB_OUTPUT path), opens each of its descriptors (the console's
pipes, the logs, the guard's private copies), and writes a workflow command straight onto the guard's
stderr, which under GitHub Actions is outside the stop-commands fence. Prints one line per attempt:
``reached WHAT`` or ``denied WHAT``. Exits 0.
"""

import os

guard = os.getppid()
attempts = [("environ", f"/proc/{guard}/environ", os.O_RDONLY)]
try:
    fds = sorted(os.listdir(f"/proc/{guard}/fd"), key=int)
except OSError:
    fds = []
    print("denied fd-list", flush=True)
for fd in fds:
    attempts.append((f"fd/{fd}", f"/proc/{guard}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK))
attempts.append(("stderr-write", f"/proc/{guard}/fd/2", os.O_WRONLY | os.O_NONBLOCK))
for what, path, flags in attempts:
    try:
        fd = os.open(path, flags)
    except OSError:
        print("denied", what, flush=True)
        continue
    if what == "stderr-write":
        os.write(fd, b"::add-mask::written-past-the-fence\n")
    os.close(fd)
    print("reached", what, flush=True)
