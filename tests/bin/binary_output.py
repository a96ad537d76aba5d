"""Prints invalid UTF-8, NUL bytes and a last line without a newline, then exits 3."""

import os
import sys

os.write(1, b"ok line\n\xff\xfe not utf-8 \xc3\x28\n\x00nul\x00 inside\n")
os.write(2, b"err \x80\x81\r\n")
os.write(1, b"no newline at end \xe2\x82")
sys.exit(3)
