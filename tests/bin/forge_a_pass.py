"""Print the guard's own "Passed" report, crash, then leave the terminal in SGR 8 (conceal) with no
newline: on a terminal, everything the guard prints next would be invisible, leaving the forged pass.
"""

import sys

sys.stdout.write("Passed: exited 0 in 1s\n\nLogs: guard-logs\n")
sys.stdout.flush()
sys.stderr.write("Fatal Python error: Segmentation fault\n")
sys.stderr.flush()
sys.stdout.write("\x1b[8m\x1b[30;40m")
