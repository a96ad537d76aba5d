"""Print BLOCKS blocks of 2000 lines that each match a crash rule, then exit 0 at once.

Usage: spam_crash_lines.py BLOCKS. Each line is a Python worker's fatal error, so every line is a match
the scan must confirm: read at a few MB/s, far slower than the program writes them.
"""

import sys

LINE = b"Fatal Python error: Segmentation fault in a worker\n"

block = LINE * 2000
for _ in range(int(sys.argv[1])):
    sys.stdout.buffer.write(block)
sys.stdout.flush()
