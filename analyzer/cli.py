"""Command-line interface (placeholder until the scanner and the guard land)."""


def main(argv=None) -> int:
    return 0
