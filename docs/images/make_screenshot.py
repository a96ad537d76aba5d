"""Render a job-summary Markdown file the way GitHub shows it, and screenshot it with headless Chromium.

    python docs/images/make_screenshot.py                       # golden hang summary -> summary.png
    python docs/images/make_screenshot.py SUMMARY.md -o out.png

Markdown goes through cmark-gfm (``pip install cmarkgfm``: the renderer GitHub itself uses) with GitHub's
extensions, into a page styled like a job summary card. Chromium (Debian: ``apt-get install chromium``)
runs twice: once to measure the page's height, once to take a screenshot of exactly that height.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
DEFAULT_MARKDOWN = REPO_ROOT / "tests" / "report" / "golden" / "guard_hang.md"
DEFAULT_OUTPUT = HERE / "summary.png"
WIDTH_PX = 1012
SCALE = 1.25

# Close to GitHub's Primer styles for rendered Markdown inside a job summary card.
CSS = """
body { margin: 0; padding: 16px; background: #f6f8fa; color: #1f2328;
       font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", "Liberation Sans",
             "DejaVu Sans", Helvetica, Arial, sans-serif; }
.card { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; }
.card-head { padding: 12px 16px; border-bottom: 1px solid #d0d7de; font-weight: 600; font-size: 14px; }
.card-head span { color: #59636e; font-weight: 400; }
.markdown-body { padding: 16px 24px 8px; font-size: 14px; word-wrap: break-word; }
.markdown-body h2 { font-size: 1.5em; font-weight: 600; padding-bottom: .3em;
                    border-bottom: 1px solid #d1d9e0; margin: 0 0 16px; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 24px 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body table, .markdown-body pre,
.markdown-body details { margin: 0 0 16px; }
.markdown-body code { font: 85% ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas,
                      "Liberation Mono", "DejaVu Sans Mono", monospace;
                      background: rgba(129, 139, 152, .12); padding: .2em .4em; border-radius: 6px; }
.markdown-body pre { background: #f6f8fa; padding: 16px; border-radius: 6px; overflow: auto;
                     line-height: 1.45; }
.markdown-body pre code { background: transparent; padding: 0; font-size: 85%; }
.markdown-body table { border-collapse: collapse; display: block; width: max-content; max-width: 100%; }
.markdown-body th, .markdown-body td { border: 1px solid #d1d9e0; padding: 6px 13px; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body summary { cursor: pointer; }
.markdown-body ul { padding-left: 2em; }
"""

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title><style>{css}</style></head>
<body><div class="card"><div class="card-head">{title} <span>summary</span></div>
<div class="markdown-body">{body}</div></div>
<script>document.body.setAttribute("data-height", document.documentElement.scrollHeight);</script>
</body></html>
"""

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", f"--force-device-scale-factor={SCALE}",
]


def render_page(markdown_text: str, title: str) -> str:
    """The Markdown as GitHub would render it (cmark-gfm with its extensions), inside a summary card."""
    try:
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        sys.exit("make_screenshot: needs cmarkgfm (pip install cmarkgfm), the renderer GitHub uses")
    body = cmarkgfm.github_flavored_markdown_to_html(markdown_text, options=Options.CMARK_OPT_UNSAFE)
    return PAGE.format(title=html.escape(title), css=CSS, body=body)


def _chromium(binary: str, profile: str, args: list) -> str:
    proc = subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        sys.exit(f"make_screenshot: {binary} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout


def screenshot(page_file: Path, output: Path, binary: str) -> int:
    """Screenshot the page at its full height; returns the height in CSS pixels."""
    with tempfile.TemporaryDirectory() as profile:
        dom = _chromium(binary, profile, [f"--window-size={WIDTH_PX},800", "--dump-dom", page_file.as_uri()])
        match = re.search(r'data-height="(\d+)"', dom)
        if not match:
            sys.exit("make_screenshot: could not measure the page height")
        height = int(match.group(1))
        _chromium(binary, profile, [f"--window-size={WIDTH_PX},{height}", f"--screenshot={output}",
                                    page_file.as_uri()])
    return height


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("markdown", nargs="?", type=Path, default=DEFAULT_MARKDOWN)
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--title", default="test")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--html", type=Path, help="also keep the rendered HTML page here")
    args = parser.parse_args(argv)

    page = render_page(args.markdown.read_text(encoding="utf-8"), args.title)
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "summary.html"
        page_file.write_text(page, encoding="utf-8")
        if args.html:
            args.html.write_text(page, encoding="utf-8")
        height = screenshot(page_file, args.output.resolve(), args.chromium)
    size = args.output.stat().st_size
    print(f"{args.output}: {WIDTH_PX}x{height} CSS px at scale {SCALE}, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
