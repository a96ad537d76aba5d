"""Escaping of log text for terminals, Markdown, HTML and fenced blocks."""

from __future__ import annotations

from analyzer.report._escape import (
    clean_text,
    code_fence,
    html_inline,
    html_text,
    markdown_code,
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
    assert markdown_text("a|b *c* _d_ [e](f) `g` <h> & ~~i~~ \\ !x") == (
        "a&#124;b &#42;c&#42; &#95;d&#95; &#91;e&#93;(f) &#96;g&#96; &lt;h&gt; &amp; "
        "&#126;&#126;i&#126;&#126; &#92; !x"
    )


def test_markdown_text_breaks_autolinks_and_puts_mentions_in_code():
    assert markdown_text("see https://evil/x or WWW.evil.com") == "see https&#58;//evil/x or WWW&#46;evil.com"
    assert markdown_text("ping @team, mail a@b.co, see #12") == "ping ` @team, ` mail ` a@b.co, ` see ` #12 `"
    assert markdown_text("a|@b", table=True) == "` a\\|@b `"


def test_markdown_code_is_longer_than_any_backtick_run_and_escapes_cell_pipes():
    assert markdown_code("x") == "` x `"
    assert markdown_code("a `b` c") == "`` a `b` c ``"
    assert markdown_code("`") == "`` ` ``"
    assert markdown_code("a|b") == "` a|b `"
    assert markdown_code("a|b", table=True) == "` a\\|b `"
    assert markdown_code("") == ""


def test_markdown_inline_writes_code_spans_as_markdown_code():
    assert markdown_inline("hung in `_exit|<x>` after `a`") == "hung in ` _exit|<x> ` after ` a `"
    assert markdown_inline("hung in `_exit|<x>`", table=True) == "hung in ` _exit\\|<x> `"
    # An unbalanced backtick is text, not the start of a span.
    assert markdown_inline("it's ` odd") == "it's &#96; odd"


def test_html_inline_is_escaped_html_with_mentions_in_code():
    assert html_inline("`f<x>` by @bob [x](y) #3") == (
        "<code>f&lt;x&gt;</code> by <code>&#64;bob</code> [x](y) <code>#3</code>"
    )


def test_surrogates_and_separators_become_visible_escapes():
    name = "bad\udcff\u2028name\u202e.log"
    assert clean_text(name) == "bad\\xff\\u2028name\\u202e.log"
    assert one_line(name).encode("utf-8")


def test_code_fence_is_longer_than_any_backtick_run():
    assert code_fence("plain") == "```text\nplain\n```"
    assert code_fence("a ``` b\n`````") == "``````text\na ``` b\n`````\n``````"


def test_code_fence_cleans_controls():
    assert code_fence("\x1b[1mbold\x1b[0m\rx\n") == "```text\nbold\nx\n```"
