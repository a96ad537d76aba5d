"""A stand-in for ``docker exec -i CONTAINER COMMAND...`` as a container job's runner starts each step.

In a ``container:`` job the runner does not run a step's shell itself: it runs the docker client,
``docker exec -i --workdir DIR -e NAME... CONTAINER SHELL ARGS`` (actions/runner ``StepHost.cs``
237-264, ``ContainerStepHost.ExecuteAsync``), closes its stdin at once (``redirectStandardIn: null``,
StepHost.cs:288, and ProcessInvoker.cs:318-328) and, on cancel or ``timeout-minutes``, signals that client
process only (ProcessInvoker.cs:443-465). The client forwards no signal to the process in the container
(docker/cli#5309, moby/moby#9098): it just dies, and the process runs on, its output still read by the
daemon, until it ends or the container is removed at the end of the job.

This stand-in keeps those three facts and nothing else:

* COMMAND runs in a session of its own (it is not in the client's process group), its stdin a pipe that
  is at EOF from the start (what ``-i`` gives once the runner closed the client's stdin);
* its stdout and stderr are read by a separate "daemon" process, which forwards them to the client while
  the client lives and then keeps reading (and dropping) them, so the command never sees EPIPE;
* the client (this process) exits with COMMAND's status, or dies of the runner's signal without
  forwarding it.

Usage: python docker_exec.py PIDFILE -- COMMAND [ARG...]; PIDFILE receives COMMAND's pid (the test's
view into the "container").
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading


def _daemon(out_r: int, err_r: int, out_s: socket.socket, err_s: socket.socket) -> None:
    """Forward each pipe to its socket until the client is gone, then drain it until EOF."""

    def pump(fd: int, sock: socket.socket) -> None:
        forwarding = True
        while True:
            data = os.read(fd, 65536)
            if not data:
                break
            if forwarding:
                try:
                    sock.sendall(data)
                except OSError:  # the client died: keep reading, as the daemon does
                    forwarding = False
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threads = [threading.Thread(target=pump, args=(out_r, out_s)),
               threading.Thread(target=pump, args=(err_r, err_s))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _relay(sock: socket.socket, fd: int) -> None:
    while True:
        data = sock.recv(65536)
        if not data:
            return
        os.write(fd, data)


def main(argv: list) -> int:
    # The client dies of the runner's signals and forwards none of them.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    pidfile, separator, command = argv[0], argv[1], argv[2:]
    if separator != "--" or not command:
        print("usage: docker_exec.py PIDFILE -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    out_client, out_daemon = socket.socketpair()
    err_client, err_daemon = socket.socketpair()
    daemon = os.fork()
    if daemon == 0:
        os.setsid()
        for fd in (out_w, err_w):
            os.close(fd)
        out_client.close()
        err_client.close()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        _daemon(out_r, err_r, out_daemon, err_daemon)
        os._exit(0)
    os.close(out_r)
    os.close(err_r)
    out_daemon.close()
    err_daemon.close()
    stdin_r, stdin_w = os.pipe()
    os.close(stdin_w)  # at EOF from the start
    child = subprocess.Popen(command, stdin=stdin_r, stdout=out_w, stderr=err_w, start_new_session=True)
    for fd in (stdin_r, out_w, err_w):
        os.close(fd)
    with open(pidfile, "w", encoding="ascii") as handle:
        handle.write(f"{child.pid}\n")
    relays = [threading.Thread(target=_relay, args=(out_client, 1), daemon=True),
              threading.Thread(target=_relay, args=(err_client, 2), daemon=True)]
    for relay in relays:
        relay.start()
    status = child.wait()  # SIGINT/SIGTERM end this process here, and nothing is forwarded
    for relay in relays:
        relay.join()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
