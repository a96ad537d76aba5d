"""Module-level patterns compiled on first use (``analyzer.lazy_re``), and what a scan of a clean log
leaves unimported because of them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.lazy_re import lazy, lazy_regex

ROOT = Path(__file__).resolve().parents[1]


def test_a_lazy_pattern_acts_as_the_compiled_one():
    compiled = re.compile(rb"(?P<rank>\d+): (\w+)", re.I)
    pattern = lazy(rb"(?P<rank>\d+): (\w+)", re.I)
    assert "search" not in vars(pattern)  # nothing compiled yet
    text = b"rank 3: NCCL timeout, 4: again"
    assert pattern.search(text).groups() == compiled.search(text).groups()
    assert "search" in vars(pattern)  # from now on the compiled pattern's own method
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert pattern.sub(b"x", text) == compiled.sub(b"x", text)
    assert (pattern.groupindex, pattern.groups, pattern.flags, pattern.pattern) == (
        compiled.groupindex, compiled.groups, compiled.flags, compiled.pattern)


def test_the_first_use_puts_the_compiled_pattern_in_the_using_modules_globals():
    namespace = {"PATTERN": lazy(rb"rank(\d+)"), "OTHER": lazy(rb"x")}
    exec("def first(text):\n    return PATTERN.search(text).group(1)", namespace)
    assert namespace["first"](b"[rank3]: boom") == b"3"
    assert isinstance(namespace["PATTERN"], re.Pattern)  # later calls skip the stand-in
    assert not isinstance(namespace["OTHER"], re.Pattern)  # never used: never compiled


def test_a_lazy_regex_pattern_uses_the_regex_module_and_its_timeout():
    import regex

    pattern = lazy_regex(r"\brank\s*:\s*(\d+)")
    assert pattern.search("rank: 7 (local_rank: 1)", timeout=1.0).group(1) == "7"
    assert isinstance(pattern.compiled, regex.Pattern)


def test_a_bad_pattern_fails_when_first_used():
    pattern = lazy("(unclosed")
    with pytest.raises(re.error):
        pattern.search("x")


def test_a_clean_log_is_scanned_without_importing_what_only_findings_need(tmp_path):
    """regex (rule patterns), zipfile and gzip (archives), html (Markdown) and PyYAML (the catalogue's
    cache) stay unimported by a JSON scan of a log with no candidate line, once the caches are written."""
    log = tmp_path / "clean.log"
    log.write_bytes(b"step 1 ok\nstep 2 ok\n" * 100)
    code = ("import sys; from analyzer import cli; rc = cli.main(['--format', 'json', sys.argv[1]]); "
            "import json; print(json.dumps(sorted(m for m in ('regex', 'zipfile', 'gzip', 'html', 'yaml') "
            "if m in sys.modules)))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for _ in range(2):  # the first run may write the caches
        done = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True,
                              check=True, env=env, cwd=ROOT)  # this checkout's analyzer
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stdout
    assert '"verdict": "pass"' in done.stdout
