"""``strip_controls`` told by Hyperscan which rare markers a window holds (container streams, caret and
rsyslog escapes) gives what it gives looking for each on its own, also where one edit makes another
marker (a NUL inside one, a caret sequence inside rsyslog's)."""

from __future__ import annotations

import random

import pytest

from analyzer.scan import clean
from analyzer.scan._engine_prefilter import hyperscan_available, hyperscan_markers

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="hyperscan is not installed here")

PIECES = (
    b"stdout", b"stderr", b'",', b" F ", b" P ", b"std", b"out", b"\x00", b"^[[", b"^[", b"[", b"#033[",
    b"#0", b"33[", b"0;33m", b"1m", b"\x1b[", b"\x1b[32m", b"m", b"\n", b" ", b"x", b'{"log":"', b"\\n", b'"',
    b"2024-01-09T10:00:01.123Z ",
)


def _window(rng: random.Random) -> bytes:
    return b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 16)))


def test_one_pass_of_markers_gives_the_same_text_as_each_search():
    markers_in = hyperscan_markers(clean.RARE_MARKERS)
    rng = random.Random(12)
    windows = [_window(rng) for _ in range(60_000)]
    windows += [
        b'{"log":"\\u001b[31mRuntimeError: CUDA error\\n","stream":"stderr","time":"2024-01-09T10:00:01Z"}\n',
        b"2024-01-09T10:00:01.123456789Z stderr F \x1b[31mFAILED\x1b[0m tests/t.py::t\n",
        b"std\x00out F text\n#0\x00" + b"33[0;33mWARNING\n^\x00[[1mbold\n#0^[[1m33[1mboth\n",
    ]
    seen = set()
    for window in windows:
        assert clean.strip_controls(window, markers_in) == clean.strip_controls(window), window
        seen |= markers_in(window)
    assert seen == set(clean.RARE_MARKERS)  # every marker was found somewhere
