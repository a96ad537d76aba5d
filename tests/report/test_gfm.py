"""The summary rendered by cmark-gfm, the renderer GitHub itself uses (``cmarkgfm`` on PyPI).

``mdcheck`` covers the same rules without a dependency; this proves them against the real parser,
with raw HTML let through (as GitHub does before its sanitizer), so any live tag would show.
"""

from __future__ import annotations

import re

import pytest

from analyzer.report.markdown import render_markdown

from .reports import GOLDEN_REPORTS
from .test_markdown import _hostile_report

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm (test extra) renders Markdown like GitHub")


def _html(markdown: str) -> str:
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


@pytest.mark.parametrize("name", sorted(GOLDEN_REPORTS) + ["hostile"])
def test_rendered_html_has_no_live_log_markup(name):
    report = _hostile_report() if name == "hostile" else GOLDEN_REPORTS[name]
    markdown = render_markdown(report)
    html = _html(markdown)
    assert not re.search(r"<(script|img|iframe)\b", html)
    # Only the collapsible blocks we wrote are live; log text cannot open or close one.
    ours = markdown.count("<details><summary>")
    assert html.count("<details>") == html.count("</details>") == ours
    # Every table row keeps its six cells.
    for row in re.findall(r"<tr>(.*?)</tr>", html, re.DOTALL):
        assert len(re.findall(r"<t[dh]\b", row)) == 6
