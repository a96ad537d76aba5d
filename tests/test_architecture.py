"""The rooms keep their one-way doors: supervise -> saved logs -> scan (with rules) -> verdict -> report.

Read from the source, so a stray import fails here rather than in review.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Set, Tuple

PACKAGE = Path(__file__).resolve().parents[1] / "analyzer"
LEAVES = {"model", "errors", "exits", "durations", "markup", "redact", "lazy_re"}
ALLOWED = {
    "leaf": LEAVES,
    "rules": LEAVES | {"rules"},
    "supervise": LEAVES | {"supervise"},
    "report": LEAVES | {"report"},
    "scan": LEAVES | {"rules", "scan"},
    "verdict": LEAVES,
    "gh": LEAVES | {"gh", "rules", "scan", "verdict"},
    "file_commands": LEAVES,
    # The guarded run walks the rooms as cli.py does, all set up before the command starts.
    "guarded": LEAVES | {"supervise", "scan", "rules", "verdict", "report", "file_commands"},
}


def _room(module: Path) -> str:
    relative = module.relative_to(PACKAGE)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return "leaf" if relative.stem in LEAVES else relative.stem


def _imported_rooms(module: Path) -> Iterator[Tuple[str, int]]:
    """The top-level ``analyzer`` subpackage or module each import of ``module`` reaches."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    package_parts = module.relative_to(PACKAGE).parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package_parts[: len(package_parts) - (node.level - 1)])
                target = base + (node.module.split(".") if node.module else [])
                names = [target[0]] if target else [alias.name for alias in node.names]
            elif node.module and node.module.split(".")[0] == "analyzer":
                parts = node.module.split(".")[1:]
                names = [parts[0]] if parts else [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                yield name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "analyzer" and len(parts) > 1:
                    yield parts[1], node.lineno


def test_rooms_import_only_through_their_doors():
    wrong: Set[str] = set()
    for module in sorted(PACKAGE.rglob("*.py")):
        room = _room(module)
        if room not in ALLOWED:
            continue  # cli.py and __main__ walk through every room
        for target, line in _imported_rooms(module):
            target_room = "leaf" if target in LEAVES else target
            if target_room != room and target not in ALLOWED[room] and target != "__init__":
                wrong.add(f"{module.relative_to(PACKAGE.parent)}:{line} ({room}) imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def _exits_outside_main_guard(tree: ast.AST) -> Iterator[int]:
    """Lines calling ``sys.exit`` outside an ``if __name__ == "__main__":`` entry point."""
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
            guarded.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "exit"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "sys"
            and id(node) not in guarded
        ):
            yield node.lineno


def test_only_the_cli_ends_the_process():
    offenders = []
    for module in sorted(PACKAGE.rglob("*.py")):
        if module.name in ("cli.py", "__main__.py"):
            continue
        tree = ast.parse(module.read_text(encoding="utf-8"))
        name = module.relative_to(PACKAGE.parent)
        offenders += [f"{name}:{line}" for line in _exits_outside_main_guard(tree)]
    assert not offenders
