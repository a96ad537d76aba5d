"""Like forge_a_pass.py, without one ESC byte: the terminal is left concealed, black on black, through
the C1 form of CSI (U+009B, which VTE and xterm read as ESC [ in UTF-8), and shifted out (SO, 0x0E) to
the G1 character set, which the Linux console draws as line graphics. Everything the guard prints next
would be invisible or garbled, leaving the forged pass.
"""

import sys

sys.stdout.write("Passed: exited 0 in 1s\n\nLogs: guard-logs\n")
sys.stdout.flush()
sys.stderr.write("Fatal Python error: Segmentation fault\n")
sys.stderr.flush()
sys.stdout.write("\u009b8m\u009b30;40m\x0e")
