"""Escaping of log text for terminals, Markdown, HTML and fenced blocks."""

from __future__ import annotations

from analyzer.report._escape import (
    clean_text,
    code_fence,
    html_text,
    markdown_inline,
    markdown_text,
    one_line,
)


def test_clean_text_strips_ansi_and_shows_controls():
    raw = "\x1b[31mFAILED\x1b[0m\x00bell\x07 osc\x1b]0;title\x07done\r\nnext\rredraw"
    assert clean_text(raw) == "FAILED\\x00bell\\x07 oscdone\nnext\nredraw"


def test_one_line_folds_whitespace():
    assert one_line("a\n  b\t\r\nc ") == "a b c"


def test_html_text_escapes_markup():
    assert html_text('</details><script>x & "y"') == "&lt;/details&gt;&lt;script&gt;x &amp; &quot;y&quot;"


def test_markdown_text_neutralises_structure():
    assert markdown_text("a|b *c* _d_ [e](f) `g` <h> & @team ~~i~~ \\") == (
        "a&#124;b &#42;c&#42; &#95;d&#95; &#91;e&#93;(f) &#96;g&#96; &lt;h&gt; &amp; &#64;team "
        "&#126;&#126;i&#126;&#126; &#92;"
    )


def test_markdown_inline_keeps_code_spans_as_html_code():
    assert markdown_inline("hung in `_exit|<x>` after `a`") == (
        "hung in <code>_exit&#124;&lt;x&gt;</code> after <code>a</code>"
    )
    # An unbalanced backtick is text, not the start of a span.
    assert markdown_inline("it's ` odd") == "it's &#96; odd"


def test_code_fence_is_longer_than_any_backtick_run():
    assert code_fence("plain") == "```text\nplain\n```"
    assert code_fence("a ``` b\n`````") == "``````text\na ``` b\n`````\n``````"


def test_code_fence_cleans_controls():
    assert code_fence("\x1b[1mbold\x1b[0m\rx\n") == "```text\nbold\nx\n```"
