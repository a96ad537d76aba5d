"""Issue 10.8: config bombs through the real CLI, each a one-line error, exit 2, in bounded memory.

Every case runs ``python -m analyzer --config BOMB LOG`` as a subprocess under an address-space limit
(``RLIMIT_AS``, 2 GiB: the bombs used to take 5.8 GB and more), and asserts ``(exit, stdout, stderr)``
together. A bomb that still expanded would die of MemoryError there, with a traceback, and fail.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 << 30
PREFIX = "python -m analyzer: error: "


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(config: Path, log: Path):
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "--config", str(config), str(log)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=_limit_memory,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    return done.returncode, done.stdout, done.stderr


def laughs(levels: int, key: str = "match_timeout") -> str:
    """A "billion laughs": each level is nine aliases of the one before (9**levels strings)."""
    lines = [f"{key}:", '  - &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        lines.append(f"  - &a{level} [" + ",".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def laughs_mapping(levels: int, key: str) -> str:
    """The same bomb as the values of a mapping (``severity: {a0: [...], a1: [*a0, ...]}``)."""
    lines = [f"{key}:", '  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        lines.append(f"  a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


ALIASES = "more than 1,000,000 nodes and characters once its aliases (*name) are expanded"
BOMBS = [
    # The 348-byte bomb under match_timeout: 47 s and 5.8 GB before.
    ("laughs-9", laughs(9), f"document: too big: {ALIASES}"),
    # One level deeper: a MemoryError traceback before.
    ("laughs-10", laughs(10), f"document: too big: {ALIASES}"),
    ("laughs-in-severity", laughs_mapping(9, "severity"), f"document: too big: {ALIASES}"),
    (
        "laughs-as-examples",
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: lol,\n"
        "     examples: {match: &e [" + ",".join(["lol"] * 9) + "]}}\n"
        + laughs(8, "x").replace("x:\n", "pad:\n"),
        f"document: too big: {ALIASES}",
    ),
    (
        "recursive-alias",
        "severity: &a {x: *a}\n",
        "document: too big: an alias refers to the collection that holds it",
    ),
    (
        "huge-repeat",
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d, pattern: 'x{2147483648}'}\n",
        "rules[0].pattern: rule mine: invalid regex: its counted repeats ({n}) expand it to about "
        "2,147,483,660 items, more than 100,000; use a smaller count, or * or +",
    ),
    (
        "nested-repeats",
        "ignore:\n  lines: ['(?:(?:x{1000}){1000}){1000}']\n",
        "ignore.lines[0]: invalid regex: its counted repeats ({n}) expand it to about 1,010,010,006 items, "
        "more than 100,000; use a smaller count, or * or +",
    ),
    (
        "huge-block-end",
        "rules:\n  - {id: mine, kind: hang, severity: error, message: m, doc: d,"
        " start: a, end: '(ab){99999}'}\n",
        "rules[0].end: rule mine: invalid regex: its counted repeats ({n}) expand it to about 400,003 items, "
        "more than 100,000; use a smaller count, or * or +",
    ),
    ("too-big-file", "# " + "x" * (1 << 20) + "\n", "file: too big: more than 1,048,576 bytes"),
    (
        "huge-value-quoted-short",
        "match_timeout: '" + "9" * 500_000 + "'\n",
        "match_timeout: '" + "9" * 56 + "... is not a positive duration; write 0.5, 500ms or 2s",
    ),
    (
        "huge-key-quoted-short",
        "? " + "k" * 500_000 + "\n: 1\n",
        "'" + "k" * 56 + "...: unknown key; expected one of: match_timeout, severity, ignore, rules, "
        "match_budget",
    ),
]


@pytest.mark.parametrize("name, text, problem", BOMBS, ids=[b[0] for b in BOMBS])
def test_a_config_bomb_is_one_line_exit_2_in_bounded_memory(tmp_path, name, text, problem):
    config = tmp_path / "bomb.yaml"
    config.write_text(text, encoding="utf-8")
    log = tmp_path / "job.log"
    log.write_text("Segmentation fault (core dumped)\n", encoding="utf-8")
    assert run_cli(config, log) == (2, "", f"{PREFIX}{config}: {problem}\n")


def test_a_merge_key_still_works_and_a_key_may_override_it(tmp_path):
    config = tmp_path / "ci.yml"
    config.write_text(
        "x-base: &base {pytest-timeout: notice, segfault: warning}\n"
        "severity: {<<: *base, segfault: notice}\n",
        encoding="utf-8",
    )
    log = tmp_path / "job.log"
    log.write_text("Segmentation fault (core dumped)\n", encoding="utf-8")
    code, out, err = run_cli(config, log)
    assert (code, err) == (2, f"{PREFIX}{config}: x-base: unknown key; expected one of: match_timeout, "
                              "severity, ignore, rules, match_budget\n")
    assert out == ""


def test_the_normal_cli_runs_under_the_same_memory_limit(tmp_path):
    config = tmp_path / "ci.yml"
    config.write_text("severity: {pytest-timeout: notice}\n", encoding="utf-8")
    log = tmp_path / "job.log"
    log.write_text("all good\n", encoding="utf-8")
    code, out, err = run_cli(config, log)
    assert (code, err) == (0, "")
    assert out
