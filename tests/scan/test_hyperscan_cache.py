"""The compiled Hyperscan databases kept between runs (``analyzer.scan._hyperscan``): a second run loads
what the first compiled and finds the same matches; a changed input, another CPU or a damaged file never
hands over a stale database."""

from __future__ import annotations

import os
import threading

import pytest

from analyzer.scan import _hyperscan
from analyzer.scan._engine_prefilter import hyperscan_available

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="hyperscan is not installed here")

NEEDLES = [b"Segmentation fault", b"CUDA error", b"exitcode"]
WINDOW = b"ok\n[rank1] CUDA error: an illegal memory access\nSegmentation fault (core dumped)\nexitcode: 0\n"


def _expected(needles):
    return sorted((WINDOW.index(needle) + len(needle), i) for i, needle in enumerate(needles))


def _ends(db):
    return sorted(_hyperscan.match_ends(db, threading.local(), WINDOW))


def _database(dirs, needles=NEEDLES, name="literals"):
    ids = range(len(needles))
    return _hyperscan.database(name, needles, ids, [0] * len(needles), literal=True, dirs=dirs)


def _written(place):
    return sorted(os.listdir(place))


def test_a_second_run_loads_the_compiled_database_and_finds_the_same(tmp_path, monkeypatch):
    monkeypatch.setattr(_hyperscan.sys, "dont_write_bytecode", False)
    dirs = [str(tmp_path / "__pycache__")]
    first = _ends(_database(dirs))
    assert [name.split("-")[:2] for name in _written(dirs[0])] == [["hyperscan", "literals"]]
    import hyperscan

    def refused(**_kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(hyperscan, "Database", refused)  # a compile now fails: the cache must serve
    assert _ends(_database(dirs)) == first == _expected(NEEDLES)


def test_new_expressions_or_another_cpu_make_another_key_and_replace_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_hyperscan.sys, "dont_write_bytecode", False)
    dirs = [str(tmp_path)]
    _database(dirs)
    before = _written(dirs[0])
    assert _ends(_database(dirs, NEEDLES[:2])) == _expected(NEEDLES[:2])
    after = _written(dirs[0])
    assert len(after) == 1 and after != before  # the older database of that name is removed
    monkeypatch.setattr(_hyperscan, "cpu_flags", lambda: b"flags : another cpu")
    _database(dirs, NEEDLES[:2])
    assert len(_written(dirs[0])) == 1 and _written(dirs[0]) != after
    _database(dirs, NEEDLES[:1], name="markers")  # another name keeps its own file
    assert len(_written(dirs[0])) == 2


def test_a_damaged_cached_database_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setattr(_hyperscan.sys, "dont_write_bytecode", False)
    dirs = [str(tmp_path)]
    expected = _ends(_database(dirs))
    (name,) = _written(dirs[0])
    path = tmp_path / name
    import marshal

    key, data = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps((key, data[:100] + b"\xff" * 64 + data[164:])))
    assert _ends(_database(dirs)) == expected
    path.write_bytes(marshal.dumps((key, "not a database")))
    assert _ends(_database(dirs)) == expected


def test_the_cpu_flags_are_read_from_this_machine():
    flags = _hyperscan.cpu_flags()
    assert flags and flags == _hyperscan.cpu_flags()
    if os.path.exists("/proc/cpuinfo"):
        assert flags.startswith((b"flags", b"Features"))
