"""Generate ``docs/rules.md`` from the rule catalogue: ``python -m analyzer.rules.docs > docs/rules.md``.

The page is a table of every rule (id, kind, severity, message), the marker rules that give ranking
its context, the findings gpu-hang-guard makes itself (``guard: true``: the supervisor's and the
scanner's), then one section per rule with its doc, its pattern(s) and the examples that must and
must not match. A test fails when the committed page differs from what this prints, so the page can
never drift from the catalogue. ``--config FILE`` documents a user's config merged in (their own
rules included).
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence

import regex

from ..errors import AnalyzerError
from ..markup import backtick_fence
from .loader import load_catalogue
from .model import Catalogue, Rule

REGENERATE = "python -m analyzer.rules.docs > docs/rules.md"
HEADER = f"""\
# Rules

<!-- Generated from analyzer/rules/catalogue.yaml by `{REGENERATE}`. Do not edit by hand. -->

Every rule the scanner applies, in priority order. Patterns are Python `regex` syntax, searched in
each *cleaned* log line (no GitHub timestamp, ANSI escapes or `[rankN]:` prefix). A block rule
(`start` ... `end`) makes one finding for the whole block, at most `max_lines` lines. Named groups fill
the `{{fields}}` of the message; a field written `{{name:text {{}} text}}` is the text with the value in
place of `{{}}` when its group matched, and is left out when it did not (`{{name:text {{}}|otherwise}}`:
reads the text after `|` instead). Re-grade or ignore any rule by its id with `--config` (see the
README's Configuration section).
"""
_CODE_SPAN = regex.compile(r"(`+)(.+?)\1", regex.DOTALL)
# What would turn prose into emphasis: any *, and an _ that is not inside a word (snake_case is safe).
_EMPHASIS = regex.compile(r"\*|(?<!\w)_|_(?!\w)")


def render_catalogue(catalogue: Catalogue) -> str:
    """The Markdown page documenting every rule of ``catalogue``, its ``guard: true`` rules included."""
    return render_rules((*catalogue.rules, *catalogue.guard_rules))


def render_rules(rules: Sequence[Rule]) -> str:
    """The Markdown page documenting ``rules`` (ends with one newline)."""
    findings = [rule for rule in rules if not rule.marker and not rule.guard]
    markers = [rule for rule in rules if rule.marker]
    guards = [rule for rule in rules if rule.guard]
    out: List[str] = [HEADER]
    counts = f"{len(findings)} rules make findings; {len(markers)} marker rules record context"
    if guards:
        counts += f"; gpu-hang-guard makes {len(guards)} kinds of finding itself"
    out.append(counts + ".\n")
    out.append("| id | kind | severity | message |")
    out.append("| --- | --- | --- | --- |")
    for rule in findings:
        kind = rule.kind.value if rule.kind else ""
        severity = rule.severity.value if rule.severity else ""
        out.append(f"| [{rule.id}](#{rule.id}) | {kind} | {severity} | {_cell(rule.message)} |")
    if markers:
        out.append("")
        out.append("## Markers\n")
        out.append(
            "Marker rules make no finding. Ranking reads them: `closing-signal` makes later signal exits "
            "in the same log collateral, `traceback` is attached to the failure of its rank, "
            "`crash-stack` gives a crash its faulthandler stack, `verdict-printed` tells an exit-path "
            "event (after the run's verdict) from one inside a test, `test-header` / `test-section` "
            "name the test a failure report belongs to, and `run-started` / `attempt-restarted` / "
            "`run-succeeded` tell a failure a supervisor's restart handled (the run then succeeded), "
            "`rerun-passed` names tests a runner re-ran in a new process that then passed, "
            "`retry-attempt` names the test a retry plugin's report tells an attempt of. "
            "Which test was running at any other line is "
            "read from the log around the finding, so passing tests' lines match no rule at all.\n"
        )
        out.append("| id | marker | records |")
        out.append("| --- | --- | --- |")
        for rule in markers:
            out.append(f"| [{rule.id}](#{rule.id}) | {rule.marker} | {_cell(rule.message)} |")
    if guards:
        out.append("")
        out.append("## Made by the guard\n")
        out.append(
            "These findings match no log line: the guard makes them while it supervises a command "
            "(`run`), and the scanner when part of its input could not be scanned. Their message is "
            "shown in outline. Re-grade or ignore them by id like any other rule.\n"
        )
        out.append("| id | kind | severity | message |")
        out.append("| --- | --- | --- | --- |")
        for rule in guards:
            kind = rule.kind.value if rule.kind else ""
            severity = rule.severity.value if rule.severity else ""
            out.append(f"| [{rule.id}](#{rule.id}) | {kind} | {severity} | {_cell(rule.message)} |")
    for rule in rules:
        out.append("")
        out.extend(_section(rule))
    return "\n".join(out).rstrip("\n") + "\n"


def _section(rule: Rule) -> List[str]:
    lines = [f"## {rule.id}", ""]
    lines.append(_prose(" ".join(rule.doc.split())))
    lines.append("")
    facts = []
    if rule.marker:
        facts.append(f"marker `{rule.marker}`")
        if rule.unframed_run:
            facts.append("verdict of a run whose start is not shown")
        if rule.void_at_end:
            facts.append("void when the log ends with it or an event follows at once")
    else:
        facts.append(f"kind `{rule.kind.value if rule.kind else ''}`")
        facts.append(f"severity `{rule.severity.value if rule.severity else ''}`")
    if rule.root_cause:
        facts.append("root cause: outranks every other error")
    if rule.at_end:
        facts.append("reported at the block's last line")
    if rule.error_at_end:
        facts.append("an error when it is the log's last word")
    if rule.voids_verdict:
        facts.append("a passing verdict after it does not handle it")
    if rule.collateral_after:
        facts.append("collateral after " + ", ".join(f"`{name}`" for name in rule.collateral_after))
    if rule.same_event_as:
        told = ", ".join(f"`{name}`" for name in rule.same_event_as)
        within = f"within {rule.same_event_lines} lines"
        if rule.same_event_in_test:
            within += " (anywhere in one test)"
        facts.append(f"tells the same event as {told} {within}")
    if rule.dies_of:
        facts.append(f"the process dies of `{rule.dies_of}`")
    if rule.peer_lost:
        facts.append("a peer's view of another rank's death: told by that death when the log shows it")
    if rule.stack_follows:
        facts.append("a faulthandler stack follows: the finding names its stuck frame")
    if rule.fallback:
        facts.append("fallback: kept only when no other error explains the failure")
    if rule.fold_groups:
        facts.append("repeats fold by " + ", ".join(f"`{name}`" for name in rule.fold_groups))
    if rule.across_ranks:
        same = ", ".join(f"`{name}`" for name in rule.across_ranks)
        facts.append(f"one event on every rank with the same {same}")
    if rule.is_block:
        facts.append(f"block of at most {rule.max_lines} lines")
    if rule.ignore_case:
        facts.append("ignores case")
    if rule.literals:
        facts.append("prefilter literals " + ", ".join(_code(lit) for lit in rule.literals))
    if rule.user_defined:
        facts.append("from the user's config")
    if rule.guard:
        facts.append("made by gpu-hang-guard itself, no pattern")
    lines.append("- " + "; ".join(facts))
    if rule.message:
        lines.append(f"- message: {_code(rule.message)}")
    if rule.inner_message:
        lines.append(f"- message in a test's inner run: {_code(rule.inner_message)}")
    lines.append("")
    if rule.is_block:
        lines.extend(_fenced("start", rule.start or "", "regex"))
        lines.extend(_fenced("end", rule.end or "", "regex"))
    elif rule.pattern is not None:
        lines.extend(_fenced("pattern", rule.pattern or "", "regex"))
    for example in rule.examples_match:
        lines.extend(_fenced("matches", example, "text"))
    for example in rule.examples_no_match:
        lines.extend(_fenced("does not match", example, "text"))
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _fenced(title: str, text: str, info: str) -> List[str]:
    """A titled code block whose fence is longer than any backtick run inside (CommonMark 4.5)."""
    fence = backtick_fence(text)
    return [f"{title}:", "", f"{fence}{info}", text, fence, ""]


def _code(text: str) -> str:
    """An inline code span that survives backticks inside (CommonMark 6.1)."""
    ticks = backtick_fence(text, minimum=1)
    pad = " " if text.startswith("`") or text.endswith("`") or len(ticks) > 1 else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _cell(text: str) -> str:
    """Text for a table cell: a code span, with the pipe escaped as GFM tables require."""
    return _code(text).replace("|", "\\|") if text else ""


def _prose(text: str) -> str:
    """Doc text as Markdown: code spans kept; outside them HTML and emphasis characters are escaped."""
    out = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_escape_html(text[last : span.start()]))
        out.append(span.group(0))
        last = span.end()
    out.append(_escape_html(text[last:]))
    return "".join(out)


def _escape_html(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _EMPHASIS.sub(lambda m: "\\" + m.group(0), text)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the rules page; exit status 2 with one line on stderr for a bad catalogue or config."""
    parser = argparse.ArgumentParser(
        prog="python -m analyzer.rules.docs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--config", metavar="FILE", help="also document the rules and severities of FILE")
    args = parser.parse_args(argv)
    try:
        catalogue = load_catalogue(args.config)
    except AnalyzerError as err:
        print(f"python -m analyzer.rules.docs: error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(render_catalogue(catalogue))
    return 0


if __name__ == "__main__":
    sys.exit(main())
