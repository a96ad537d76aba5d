"""Wait at a password prompt on the terminal, as a login step (``huggingface-cli login``, a W&B key)
does when a test runs it without the token in its environment: ``getpass`` turns the terminal's echo
off until the answer comes, and no answer comes. Prints the prompt, then blocks reading stdin.

With argv[1] ``nonblocking`` it first makes stdin non-blocking, as Node.js does with a terminal stdin
(a JavaScript tool in the suite), and waits on it with select.
"""

import fcntl
import getpass
import os
import select
import sys

if sys.argv[1:] == ["nonblocking"]:
    fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_NONBLOCK)
    print("Enter your token: ", end="", flush=True)
    select.select([0], [], [])
getpass.getpass("Enter your token (input will not be visible): ")
