"""Prints output that tries to talk to the runner; with the guard none of it may act as a command."""

import sys

LINES = [
    "::error::injected error annotation",
    "::warning file=setup.py,line=1::injected warning annotation",
    "   ::notice title=spoof::injected notice after leading spaces",
    "::stop-commands::attacker-token",
    "::attacker-token::",
    "::error::injected after a spoofed resume",
    "progress 50% ##[error]injected legacy command in the middle of a line",
    "::set-output name=verdict::pass",
    "::add-mask::hide-the-evidence",
    "::ERROR::injected upper-case command",
]


def main() -> int:
    for line in LINES:
        print(line)
    print("::error::injected on stderr", file=sys.stderr)
    print("ordinary output: 2 passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
