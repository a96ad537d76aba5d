"""Exec argv[1:] with SIGCHLD ignored, as some CI agents and daemons start what they run (so that the
kernel reaps their children and they never wait for one). The ignored disposition survives execve."""

import os
import signal
import sys

signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])
