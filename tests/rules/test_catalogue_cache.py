"""The shipped catalogue's parsed YAML is cached between runs (``analyzer.rules.cache``): the cache gives
the data a parse gives, is never used once the catalogue's bytes change, and a cache that cannot be
read or written only costs the parse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.rules import cache
from analyzer.rules.config import parse_yaml_bytes
from analyzer.rules.loader import builtin_rules, builtin_rules_path, load_rules_file

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = b"rules:\n  - id: one\n    pattern: 'x'\n    flags: [1, 2.5, true, null]\n"


def _load(path, raw, dirs, parses):
    def parse():
        parses.append(raw)
        return parse_yaml_bytes(raw, path)

    return cache.cached_yaml(path, raw, parse, dirs, write=True)


def test_a_second_run_reads_the_cache_and_gets_the_same_data(tmp_path):
    parses = []
    dirs = [str(tmp_path / "cache")]
    first = _load("c.yaml", CATALOGUE, dirs, parses)
    second = _load("c.yaml", CATALOGUE, dirs, parses)
    assert first == second == parse_yaml_bytes(CATALOGUE, "c.yaml")
    assert len(parses) == 1, "the second run must not parse again"
    assert first is not second
    assert os.listdir(dirs[0]) == [f"catalogue-{cache.cache_key(CATALOGUE)}.marshal"]


def test_an_edited_catalogue_is_parsed_again_and_its_old_cache_removed(tmp_path):
    parses = []
    dirs = [str(tmp_path / "cache")]
    _load("c.yaml", CATALOGUE, dirs, parses)
    edited = CATALOGUE.replace(b"'x'", b"'y'")
    assert _load("c.yaml", edited, dirs, parses)["rules"][0]["pattern"] == "y"
    assert parses == [CATALOGUE, edited]
    assert os.listdir(dirs[0]) == [f"catalogue-{cache.cache_key(edited)}.marshal"]


def test_the_key_names_the_yaml_library_and_python(monkeypatch):
    import yaml

    library = cache.yaml_library()
    assert f"__version__ = '{yaml.__version__}'".encode() in library
    assert (b"\0_yaml." in library) == yaml.__with_libyaml__  # its C extension, where built
    key = cache.cache_key(CATALOGUE)
    monkeypatch.setattr(cache, "yaml_library", lambda: library.replace(yaml.__version__.encode(), b"0.0"))
    assert cache.cache_key(CATALOGUE) != key
    monkeypatch.setattr(cache.sys, "version", "3.0.0 (another Python)")
    assert cache.cache_key(CATALOGUE) != key


def test_a_cache_hit_imports_no_yaml_library():
    code = "import sys; from analyzer.rules.loader import load_catalogue; load_catalogue(None); " \
        "print('yaml' in sys.modules)"
    for _ in range(2):  # the first run may be the one that writes the cache
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                              cwd=ROOT)  # this checkout's analyzer, not an installed one
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("garbage", [b"", b"\x00not marshal", None])
def test_a_damaged_or_foreign_cache_file_is_passed_over(tmp_path, garbage):
    place = tmp_path / "cache"
    place.mkdir()
    target = place / f"catalogue-{cache.cache_key(CATALOGUE)}.marshal"
    if garbage is None:  # valid marshal data made for another key
        import marshal

        target.write_bytes(marshal.dumps(("another key", {"rules": []})))
    else:
        target.write_bytes(garbage)
    parses = []
    assert _load("c.yaml", CATALOGUE, [str(place)], parses) == parse_yaml_bytes(CATALOGUE, "c.yaml")
    assert len(parses) == 1
    assert _load("c.yaml", CATALOGUE, [str(place)], parses) == parse_yaml_bytes(CATALOGUE, "c.yaml")
    assert len(parses) == 1, "the damaged file was replaced by a good one"


def test_no_writable_place_means_a_parse_every_run(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    dirs = [str(blocker / "cache"), str(blocker / "other")]
    parses = []
    for _ in range(2):
        assert _load("c.yaml", CATALOGUE, dirs, parses) == parse_yaml_bytes(CATALOGUE, "c.yaml")
    assert len(parses) == 2


def test_the_next_place_is_used_when_the_first_cannot_be_written(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    dirs = [str(blocker / "cache"), str(tmp_path / "user-cache")]
    parses = []
    _load("c.yaml", CATALOGUE, dirs, parses)
    _load("c.yaml", CATALOGUE, dirs, parses)
    assert len(parses) == 1
    assert os.listdir(dirs[1])


def test_the_cached_catalogue_gives_the_rules_of_a_fully_checked_load(tmp_path, monkeypatch):
    """The built-in rules read through the cache (twice: written, then read) equal those of the strict
    load every user file gets (duplicate keys refused, alias expansion bounded, no cache)."""
    monkeypatch.setattr(cache, "cache_dirs", lambda path: [str(tmp_path / "cache")])
    monkeypatch.setattr(cache.sys, "dont_write_bytecode", False)
    strict = load_rules_file(builtin_rules_path(), require_examples=True, trusted=False)
    assert builtin_rules() == strict
    assert os.listdir(tmp_path / "cache")
    assert builtin_rules() == strict


def test_the_cache_lives_only_beside_the_catalogue(tmp_path, monkeypatch):
    """Never in a directory the code under test shares with later jobs (~/.cache on a self-hosted
    runner): a forged file there would decide the next scan's rules."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dirs("/opt/x/analyzer/rules/catalogue.yaml") == ["/opt/x/analyzer/rules/__pycache__"]


def test_no_bytecode_writing_means_no_cache_written_but_one_read(tmp_path, monkeypatch):
    dirs = [str(tmp_path / "cache")]
    parses = []
    monkeypatch.setattr(cache.sys, "dont_write_bytecode", True)
    for _ in range(2):
        cache.cached_yaml("c.yaml", CATALOGUE, lambda: parses.append(1) or {"rules": []}, dirs)
    assert len(parses) == 2 and not os.path.exists(dirs[0])
    _load("c.yaml", CATALOGUE, dirs, [])  # a run that may write
    cache.cached_yaml("c.yaml", CATALOGUE, lambda: parses.append(1) or {"rules": []}, dirs)
    assert len(parses) == 2, "a cache another run wrote is still read"


def _counted_parses(monkeypatch, tmp_path):
    """Builds of the shipped rules from here on (each a list entry), their cache under ``tmp_path``."""
    from analyzer.rules import loader

    monkeypatch.setattr(cache, "cache_dirs", lambda path: [str(tmp_path / "cache")])
    monkeypatch.setattr(cache.sys, "dont_write_bytecode", False)
    builds = []
    parse = loader.parse_catalogue
    monkeypatch.setattr(loader, "parse_catalogue", lambda *a, **k: builds.append(1) or parse(*a, **k))
    return builds


def test_the_checked_rules_are_cached_and_match_as_the_parsed_ones(tmp_path, monkeypatch):
    builds = _counted_parses(monkeypatch, tmp_path)
    first = builtin_rules()
    second = builtin_rules()
    assert first == second and len(builds) == 1, "the second run must not check the rules again"
    assert sorted(name.split("-")[0] for name in os.listdir(tmp_path / "cache")) == ["catalogue", "rules"]
    for old, new in zip(first, second):  # their lazily compiled patterns still compile and match
        if new.pattern_re is not None and new.examples_match:
            assert bool(new.pattern_re.search(new.examples_match[0])) == bool(
                old.pattern_re.search(new.examples_match[0]))


def test_changed_rule_code_or_a_damaged_file_builds_the_rules_again(tmp_path, monkeypatch):
    builds = _counted_parses(monkeypatch, tmp_path)
    expected = builtin_rules()
    digest = cache.code_digest()
    assert len(digest) == 32 and digest == cache.code_digest()
    monkeypatch.setattr(cache, "code_digest", lambda: digest[::-1])  # an edit to the loader's code
    assert builtin_rules() == expected and len(builds) == 2
    (rules_file,) = [name for name in os.listdir(tmp_path / "cache") if name.startswith("rules-")]
    import marshal

    key, _data = marshal.loads((tmp_path / "cache" / rules_file).read_bytes())
    (tmp_path / "cache" / rules_file).write_bytes(marshal.dumps((key, b"\x80\x04not a pickle")))
    assert builtin_rules() == expected and len(builds) == 3
    assert builtin_rules() == expected and len(builds) == 3, "the damaged file was written again"
