"""docs/rules.md is generated from the catalogue; a stale page fails here with the command that fixes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from analyzer.model import Kind, Severity
from analyzer.rules.docs import REGENERATE, render_catalogue, render_rules
from analyzer.rules.loader import load_catalogue
from analyzer.rules.model import Rule

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "rules.md"


def test_docs_rules_md_is_up_to_date():
    expected = render_catalogue(load_catalogue())
    actual = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    assert actual == expected, f"docs/rules.md is stale; regenerate it with: {REGENERATE}"


def test_the_module_prints_the_page_and_fails_cleanly_on_a_bad_config(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "analyzer.rules.docs"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == render_catalogue(load_catalogue())
    bad = tmp_path / "ci.yml"
    bad.write_text("severity: {no-such-rule: warning}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "analyzer.rules.docs", "--config", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"python -m analyzer.rules.docs: error: {bad}: severity.no-such-rule: unknown rule id\n"
    )


def test_every_rule_has_a_section_and_a_table_row():
    catalogue = load_catalogue()
    page = render_catalogue(catalogue)
    for rule in (*catalogue.rules, *catalogue.guard_rules):
        assert f"\n## {rule.id}\n" in page
        assert f"| [{rule.id}](#{rule.id}) |" in page


def test_the_guard_rules_are_documented_without_a_pattern():
    catalogue = load_catalogue()
    page = render_catalogue(catalogue)
    assert "\n## Made by the guard\n" in page
    section = page[page.index("\n## guard-timeout\n") :].split("\n## ", 2)[1]
    assert "made by gpu-hang-guard itself, no pattern" in section
    assert "regex" not in section and "kind `hang`; severity `error`" in section


def test_text_from_rules_cannot_break_the_markdown():
    rule = Rule(
        id="tricky",
        kind=Kind.CRASH,
        severity=Severity.ERROR,
        message="a | b `c`",
        doc="prints <script>alert(1)</script> and *** stars *** but keeps `<code>` and snake_case",
        pattern="a```b|c",
        examples_match=("x ```` y",),
    )
    page = render_rules([rule])
    assert "| [tricky](#tricky) | crash | error | `` a \\| b `c` `` |" in page
    assert (
        "prints &lt;script&gt;alert(1)&lt;/script&gt; and \\*\\*\\* stars \\*\\*\\* "
        "but keeps `<code>` and snake_case" in page
    )
    assert "\n````regex\na```b|c\n````\n" in page
    assert "\n`````text\nx ```` y\n`````\n" in page
