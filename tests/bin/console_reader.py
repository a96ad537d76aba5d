"""Run argv[1:] with its stdout and stderr piped to this process, and read both until EOF.

The reader a guard's console really has (the runner, `| tee`): a program the command can stop.
Prints nothing; exits with the child's status.
"""

import selectors
import subprocess
import sys

child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
selector = selectors.DefaultSelector()
for stream in (child.stdout, child.stderr):
    selector.register(stream, selectors.EVENT_READ)
open_streams = 2
while open_streams:
    for key, _ in selector.select():
        if not key.fileobj.read1(1 << 16):
            selector.unregister(key.fileobj)
            open_streams -= 1
sys.exit(child.wait())
