"""Property-based tests of hostile inputs, one family each (issue 10), run as a fixed-seed fuzz run.

Every test is derandomized (hypothesis derives its examples from the test itself, not from a random
seed), so the run is the same on every machine and in CI; ``GHG_FUZZ_EXAMPLES`` raises the number of
examples for a longer fuzz job (``GHG_FUZZ_EXAMPLES=5000 python -m pytest tests/fuzz``).

Families:
- config files: any bytes, any YAML-ish text -> exit 0/1 with a report, or one line on stderr and exit 2;
  never a traceback (the real ``cli.main``, in process, so hundreds of examples stay fast);
- user patterns: any regex as a user rule -> a one-line config error, or a scan that ends and reports;
- file names: any bytes the file system allows as names in a scanned directory -> every file scanned,
  each display path the exact name back through ``os.fsencode``;
- archives: zips with repeated, odd or hostile member names -> every member scanned once, paths distinct.
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from typing import List, Tuple

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from analyzer import cli
from analyzer.errors import ConfigError
from analyzer.rules.config import parse_config, parse_yaml
from analyzer.rules.loader import apply_config, builtin_rules
from analyzer.scan import scan_paths
from analyzer.scan.sources import iter_sources

EXAMPLES = int(os.environ.get("GHG_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
BUILTIN = builtin_rules()
PREFIX = "python -m analyzer: error: "


def run_cli(args: List[str]) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


def assert_cli_contract(code: int, out: str, err: str) -> None:
    if code == 2:
        assert out == "" and err.startswith(PREFIX) and err.endswith("\n") and err.count("\n") == 1, err
        assert len(err) < 2000, len(err)
    else:
        assert code in (0, 1) and err == "" and out, (code, err)


# ---- config files -----------------------------------------------------------------------------------

YAML_TOKENS = [
    "match_timeout", "match_budget", "severity", "ignore", "rules", "lines", "paths", "pattern", "id", "kind",
    "message", "doc", "examples", "match", "no_match", "guard", "marker", "start", "end", "literals",
    "segfault", "guard-timeout", "scan-incomplete", "hang", "error", "warning", "notice", "true", "~",
    "1e309", "-1", "0x10", "2s", "500ms", "x{99999999}", "(a|aa)+$", "(?P<x>a)", "{x}", "[", "(", "*", "&a",
    "*a", "<<", "!!python/object", "!!binary", "? ", ": ", ":", "- ", "\n", "  ", "    ", "{", "}", "[", "]",
    ",", "'", '"', "#", "\t", "\x00", "\ufeff", "\u2028",
]


@FUZZ
@given(st.lists(st.sampled_from(YAML_TOKENS), max_size=60).map("".join))
def test_any_yamlish_config_gives_a_report_or_one_line_exit_2(text):
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "ci.yml")
        with open(config, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        log = os.path.join(tmp, "job.log")
        with open(log, "wb") as handle:
            handle.write(b"Segmentation fault (core dumped)\n")
        assert_cli_contract(*run_cli(["--config", config, "--format", "json", log]))


@FUZZ
@given(st.binary(max_size=300))
def test_any_bytes_as_a_config_give_a_report_or_one_line_exit_2(data):
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "ci.yml")
        with open(config, "wb") as handle:
            handle.write(data)
        log = os.path.join(tmp, "job.log")
        with open(log, "wb") as handle:
            handle.write(b"ok\n")
        assert_cli_contract(*run_cli(["--config", config, log]))


# ---- user patterns ----------------------------------------------------------------------------------

REGEX_PIECES = [
    "a", "b", "\\d", "\\w+", ".", ".*", "+", "*", "?", "{2}", "{1,3}", "{1000}", "{,5}", "{99999999}",
    "(", ")", "(?:", "(?P<x>", "(?i)", "[a-z]", "[^]]", "[[:alpha:]]", "|", "^", "$", "\\", "\\p{L}",
    "\\N{DASH}", "(?=", "(?<=a)",
    "(?>", "*+", "{", "}", "x", "!", "\\1", "(?(1)a|b)", "\\K", "(?r)", "(?V1)", "\\G",
]


@FUZZ
@given(st.lists(st.sampled_from(REGEX_PIECES), min_size=1, max_size=12).map("".join), st.booleans())
def test_any_user_pattern_is_a_config_error_or_a_bounded_scan(pattern, ignore_case):
    rule = {
        "id": "fuzzed", "kind": "crash", "severity": "error", "message": "m", "doc": "d",
        "pattern": pattern, "ignore_case": ignore_case,
    }
    config = {"match_timeout": 0.05, "match_budget": 0.2, "rules": [rule], "ignore": {"lines": [pattern]}}
    try:
        catalogue = apply_config(BUILTIN, parse_config(config, "f.yml"))
    except ConfigError as err:
        assert "\n" not in str(err) and str(err).startswith("f.yml: ") and len(str(err)) < 1000
        return
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "job.log")
        with open(log, "wb") as handle:
            handle.write(b"aaaaaaaaaaaaaaaaaaaaaaaa!\nab12 b\nSegmentation fault\n" * 5)
        findings = scan_paths([log], catalogue, engine="python")
    assert all(f.path == log for f in findings)


@FUZZ
@given(st.text(max_size=80))
def test_any_text_as_a_pattern_value_is_handled(pattern):
    text = "rules:\n  - {id: x, kind: hang, severity: error, message: m, doc: d, pattern: %s}\n"
    text %= repr(pattern)
    try:
        apply_config(BUILTIN, parse_config(parse_yaml(text, "f.yml"), "f.yml"))
    except ConfigError as err:
        assert "\n" not in str(err)


# ---- file names -------------------------------------------------------------------------------------

names = st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b).filter(
    lambda b: b not in (b".", b"..")
)


@FUZZ
@given(st.lists(names, min_size=1, max_size=6, unique=True))
def test_any_file_names_in_a_directory_are_all_scanned_under_their_own_name(raw_names):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.fsencode(tmp), b"logs")
        os.mkdir(root)
        made = []
        for name in raw_names:
            path = os.path.join(root, name)
            try:
                with open(path, "wb") as handle:
                    handle.write(b"Segmentation fault\n")
            except OSError:  # a name this file system refuses (too long after encoding, ...)
                continue
            made.append(path)
        assume(made)
        sources = list(iter_sources([os.fsdecode(root)]))
        scannable = [s for s in sources if s.skipped is None]
        # A name ending in .zip or .gz is read as one (and, holding no such data, is an error).
        plain = [p for p in made if not p.lower().endswith((b".zip", b".gz"))]
        assert sorted(os.fsencode(s.display_path) for s in scannable) == sorted(made)
        if plain == made:
            findings = scan_paths([os.fsdecode(root)], apply_config(BUILTIN, parse_config(None, "-")))
            assert {os.fsencode(f.path) for f in findings if f.kind.value == "crash"} == set(made)


# ---- archives ---------------------------------------------------------------------------------------

member_names = st.one_of(
    st.sampled_from(
        ["1_job.txt", "job/1_step.txt", "../evil.txt", "a\nb", "#2", "1_job.txt#2", " ", "\\x.txt"]
    ),
    st.text(min_size=1, max_size=30).filter(lambda n: not n.endswith("/")),
)


@FUZZ
@given(st.lists(member_names, min_size=1, max_size=6))
def test_any_zip_members_are_each_scanned_once_under_distinct_paths(members):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "logs.zip")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Duplicate name": exactly what is being tested
            with zipfile.ZipFile(path, "w") as archive:
                for index, name in enumerate(members):
                    archive.writestr(name, f"line {index}\n")
        with zipfile.ZipFile(path) as archive:
            kept = [info.filename for info in archive.infolist() if not info.is_dir()]
        sources = list(iter_sources([path]))
        shown = [s.display_path for s in sources]
        assert len(set(shown)) == len(shown)
        bodies = sorted(s.open().read() for s in sources)
        # GitHub's job file is skipped when the job also has step files; otherwise every member is read.
        assert len(bodies) <= len(kept) and len(set(bodies)) == len(bodies)
        if not any("/" in name for name in kept):
            assert len(bodies) == len(kept)
