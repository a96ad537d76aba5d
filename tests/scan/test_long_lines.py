"""A line a command made up to be slow for a built-in pattern cannot hold the scan, nor hide what follows.

``oneccl-error``'s ``(?P<what>.+?)\\s*$`` is linear on every real line and quadratic on "|CCL_ERROR| x",
300,000 blanks, "y" (each extension of ``.+?`` runs ``\\s*`` over all the blanks): 1.2 s at 16,000
blanks, so about 7 minutes for that one line. Past ``LONG_LINE_CHARS`` a built-in search runs under
``LONG_SEARCH_S`` and all of a rule's such searches under ``LONG_BUDGET_S``. The tests run real scans of
such lines; without the bound they run into the suite's time limit.

The loosened patterns (``_engine_approx``) that reject lines before that search run in ``re`` with no
time limit, and they are quadratic on long lines too: ``docker-container-exit-signal``'s
``[\\w.-]+\\s+exited `` takes 20 s over 32 KiB of word bytes. They are not run past ``LONG_LINE_CHARS``.
"""

from __future__ import annotations

import pytest

from analyzer.scan import engine
from analyzer.rules.loader import load_catalogue
from tests.scan.test_engine import ATEXIT
from tests.scan.test_engine_helpers import ENGINES, scan_bytes

BUILTIN = load_catalogue()
POISON = b"2024:05:29-19:16:18:(202165) |CCL_ERROR| x" + b" " * 300_000 + b"y\n"
# Each holds a rule's literal: docker's " exited ", and a CUDA error, beside which the riders (pytest's
# report lines, ``_engine_literals``) are tried; the loosened patterns took minutes on each.
SLOW_FOR_LOOSENED = {
    "docker-exit": b"w" * 300_000 + b"  exited with code 139\n",
    "rider": b"a" * 300_000 + b" CUDA error: an illegal memory access was encountered\n",
}


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_line_made_slow_for_a_pattern_does_not_hide_the_failure_after_it(tmp_path, engine_name):
    # The run exits 0 after the atexit failure: only the scan can fail it, so it must get there.
    log = b"step 1 loss 0.3\n" + POISON + b"step 2 loss 0.2\n" + ATEXIT
    rules = [m.rule.id for m in scan_bytes(tmp_path, log, BUILTIN, engine_name)]
    assert "atexit-callback-ignored" in rules, rules


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("poison", SLOW_FOR_LOOSENED.values(), ids=SLOW_FOR_LOOSENED.keys())
def test_a_line_made_slow_for_a_loosened_pattern_does_not_hide_the_failure_after_it(
    tmp_path, engine_name, poison
):
    log = b"step 1 loss 0.3\n" + poison + b"step 2 loss 0.2\n" + ATEXIT
    rules = [m.rule.id for m in scan_bytes(tmp_path, log, BUILTIN, engine_name)]
    assert "atexit-callback-ignored" in rules, rules


def test_a_rule_that_spends_its_time_on_long_lines_is_said_and_then_skipped(tmp_path):
    long_lines = int(engine.LONG_BUDGET_S / engine.LONG_SEARCH_S) + 3
    log = b"".join(b"line %d\n" % i + POISON for i in range(long_lines)) + ATEXIT
    matches = scan_bytes(tmp_path, log, BUILTIN, "python")
    said = [m.text for m in matches if m.rule.id == "scan-incomplete"]
    spent = "rule oneccl-error used up its time on lines over 4,096 characters"
    assert any(t.startswith(spent) for t in said), said
    assert "atexit-callback-ignored" in [m.rule.id for m in matches]


def test_a_real_long_line_is_still_matched_in_full():
    # A progress bar redrawn for minutes, then the error on the same line: linear, found well in time.
    line = "|" * 200_000 + " |CCL_ERROR| worker.cpp:338 ccl_coll_build: unsupported"
    (rule,) = [r for r in BUILTIN.rules if r.id == "oneccl-error"]
    scan = engine._SourceScan("log", (rule,), engine.build_plan((rule,)), lambda w: {}, 1.0, 0)
    found = scan._search_builtin(0, rule.pattern_re, line)
    assert found is not None and found.group("what").startswith("worker.cpp:338")
