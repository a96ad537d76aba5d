"""Shared helpers for the scan engine tests: hand-built rules and a one-call scan of some bytes.

Rules are built here by hand (compiled with ``regex`` exactly as the loader does) so the engine's
tests do not depend on the catalogue's wording; tests that use the real catalogue say so.
"""

from __future__ import annotations

import dataclasses
import os
from typing import List, Optional, Sequence

import regex

from analyzer.model import Kind, Severity
from analyzer.rules.model import Catalogue, Rule
from analyzer.scan.attribution import RERUN_WORD, TestTracker as Tracker  # not a test class to collect
from analyzer.scan.engine import iter_matches
from analyzer.scan.match import Match
from analyzer.scan.sources import iter_sources

try:
    import hyperscan  # noqa: F401

    ENGINES = ("python", "hyperscan")
except ImportError:  # Python 3.9 here has no hyperscan wheel; the python engine is still tested
    ENGINES = ("python",)


def error_findings(findings) -> list:
    """The findings of severity error, in the scan's order."""
    return [f for f in findings if f.severity is Severity.ERROR]


def line_rule(rule_id: str, pattern: str, **extra) -> Rule:
    flags = regex.IGNORECASE if extra.get("ignore_case") else 0
    return Rule(
        id=rule_id, kind=extra.pop("kind", Kind.CRASH), severity=extra.pop("severity", Severity.ERROR),
        message="m", doc="d", pattern=pattern, pattern_re=regex.compile(pattern, flags), **extra,
    )


def block_rule(rule_id: str, start: str, end: str, **extra) -> Rule:
    flags = regex.IGNORECASE if extra.get("ignore_case") else 0
    return Rule(
        id=rule_id, kind=Kind.ATEXIT_EXCEPTION, severity=Severity.ERROR, message="m", doc="d",
        start=start, end=end, start_re=regex.compile(start, flags), end_re=regex.compile(end, flags), **extra,
    )


def marker_rule(rule_id: str, pattern: str, marker: str) -> Rule:
    return Rule(
        id=rule_id, kind=None, severity=None, message="", doc="d", pattern=pattern,
        pattern_re=regex.compile(pattern), marker=marker,
    )


SEGV = line_rule("segv", r"Segmentation fault")
ANCHORED = line_rule("anchored-fatal", r"^Fatal Python error: (?P<what>[A-Z][a-z]+(?: [a-z]+)*)")
SIGNAL = line_rule("signal-exit", r"exitcode\s*: (?P<code>-\d+)", kind=Kind.SIGNAL_EXIT)
CASELESS = line_rule("caseless-timeout", r"\btimed out after (?P<n>\d+)", ignore_case=True, kind=Kind.TIMEOUT)
TRACEBACK = block_rule(
    "atexit-traceback", r"^Exception ignored in atexit callback:? ?(?P<callback><[^>]*>)",
    r"^(?P<exc>[A-Za-z_.]+(?:Error|Exception|Exit))(?::|$)", max_lines=20,
)
VERDICT = marker_rule("pytest-verdict", r"^=+ (?P<summary>\d+ passed.*) in [\d.]+s", "verdict-printed")

CATALOGUE = Catalogue(rules=(SEGV, ANCHORED, SIGNAL, CASELESS, TRACEBACK, VERDICT))
ANY_LINE = line_rule("any-line", r"\S")  # no literal: every line is its candidate


def with_every_line_a_candidate(catalogue: Catalogue) -> Catalogue:
    """``catalogue`` plus a rule every line is a candidate of. A single-line echo marker is tried only
    on a line that another rule is a candidate of (it rides on them: ``_engine_literals``), as here."""
    return dataclasses.replace(catalogue, rules=(*catalogue.rules, ANY_LINE))


def write(tmp_path, name: str, data: bytes) -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def scan(
    paths: Sequence[str], catalogue: Catalogue = CATALOGUE, engine: str = "python"
) -> List[Match]:
    return list(iter_matches(iter_sources(list(paths)), catalogue, engine))


def scan_bytes(tmp_path, data: bytes, catalogue: Catalogue = CATALOGUE, engine: str = "python",
               name: str = "job.log") -> List[Match]:
    return scan([write(tmp_path, name, data)], catalogue, engine)


def summary(matches: Sequence[Match], with_excerpt: bool = True) -> List[tuple]:
    """Everything a match says, as plain tuples, for comparing two scans."""
    return [
        (m.rule.id, m.path, m.line, m.end_line, m.text, m.excerpt if with_excerpt else None, m.seq,
         dict(m.groups), m.rank)
        for m in matches
    ]


def ids_lines(matches: Sequence[Match], rule: Optional[str] = None) -> List[tuple]:
    return [(m.rule.id, m.line) for m in matches if rule is None or m.rule.id == rule]


def record_rerun_told(monkeypatch) -> List[tuple]:
    """Each window the test tracker is given, as (what the engine told it of "RERUN", whether the window
    holds the word): the engine's RERUN probe must tell every window that holds it."""
    told: List[tuple] = []
    end_window = Tracker.end_window

    def recording(self, buf, first_line, next_line, starts=None, raw=None, hint_ends=None, rerun=None):
        told.append((rerun, RERUN_WORD in buf))
        return end_window(self, buf, first_line, next_line, starts, raw, hint_ends, rerun)

    monkeypatch.setattr(Tracker, "end_window", recording)
    return told
