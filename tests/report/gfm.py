"""Render Markdown as GitHub does (cmark-gfm) and check that nothing from untrusted text is live.

Shared by the single-job summary tests (tests/report/test_gfm.py) and the many-jobs summary tests
(tests/gh/test_multi_markdown.py): both renderers must write only the elements in ``OURS``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import List

import pytest

cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm (test extra) renders Markdown like GitHub")

# Every element the summary renderers write; anything else came from untrusted text.
OURS = {
    "h2", "h3", "p", "strong", "em", "code", "pre", "details", "summary", "table", "thead", "tbody",
    "tr", "th", "td", "ul", "li", "blockquote",
}


def render_html(markdown: str) -> str:
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class _Elements(HTMLParser):
    """Tags, and the text outside <code>/<pre> (where GitHub would look for mentions)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: List[str] = []
        self.plain: List[str] = []
        self._code = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._code += tag in ("code", "pre")

    def handle_endtag(self, tag):
        self._code -= tag in ("code", "pre")

    def handle_data(self, data):
        if not self._code:
            self.plain.append(data)


def assert_inert(markdown: str, columns: int) -> None:
    """Only our elements render, no link, image or mention, and every table row has ``columns`` cells."""
    html = render_html(markdown)
    elements = _Elements()
    elements.feed(html)
    assert set(elements.tags) <= OURS, set(elements.tags) - OURS
    assert "<a " not in html and "<img" not in html
    plain = "".join(elements.plain)
    assert "@" not in plain and not re.search(r"#\d", plain), plain
    # Only the collapsible blocks we wrote are live; log text cannot open or close one.
    ours = markdown.count("<details><summary>")
    assert html.count("<details>") == html.count("</details>") == ours
    for row in re.findall(r"<tr>(.*?)</tr>", html, re.DOTALL):
        assert len(re.findall(r"<t[dh]\b", row)) == columns
