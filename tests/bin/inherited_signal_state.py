"""Exec argv[2:] in a signal state some CI agents and daemons leave to what they start; both survive
execve (signal(7)).

argv[1]: ``ignore-sigchld`` (SIGCHLD ignored, so that the kernel reaps their children and they never
wait for one) or ``block-cancel`` (SIGINT, SIGTERM and SIGHUP blocked, as in a thread that leaves them
to a signal thread).
"""

import os
import signal
import sys

if sys.argv[1] == "ignore-sigchld":
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
else:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
os.execv(sys.argv[2], sys.argv[2:])
