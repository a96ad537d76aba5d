"""Terminal line-wrapping: the lines a terminal cut, joined again so that rules see the whole message.

A log copied out of a terminal (a tmux or screen copy, an old Windows console, a paste into an issue)
keeps a hard break every W columns, often in the middle of a word: "... ran for 600" / "043
milliseconds before timing out." No piece holds the rule's wording, and a literal the prefilter looks
for may be cut in two. Output that reached the log through a pipe (CI, the guard) was never wrapped.

A source is wrapped when the first ``SAMPLE_BYTES`` of it show the signature of a terminal of width W
(at least ``MIN_WIDTH`` columns): no more than ``MAX_LONGER`` lines longer than W, and at least
``MIN_CUT_SHARE`` of the W-column rows broken inside a word or a sentence. The sample is the same
whatever the engine's window size, so the decision is too. Rows a program drew to the full width
(pytest's ``=== ... ===`` rules) and rows a copy padded with spaces end a line; a row of W - 1 columns
is one whose last column held a space the copy trimmed (tmux's ``capture-pane`` does). When every cut of
the sample fell on such a space, no row is W wide: the widest rows are W - 1, some of them read as a cut
only with their space back ("... Reason:" / "Page not present"), and no narrower row was trimmed.
Cuts count only with evidence (``_goes_on``): at least one of them goes on where no program starts a
line. A log that came through a pipe has one longest line too, and it often ends in a word before a
line that starts with one ("... timed out after 0.29 seconds" / "setUpClass (mod.C) ... ERROR",
"... /bin/python" / "Traceback"): 12 of 33 real pytest and unittest runs read as terminal copies so.
A terminal cuts before a capital too ("capab" / "ilities: [[gpu]]"): such a cut counts when the scan
(``Vouch``) finds that the rows joined match a rule that none of them matches alone.

In a wrapped source, a logical line is a run of cut rows plus the row after them (at most
``MAX_PIECES`` rows). Windows are re-cut so that no run is split between two windows. What the engine
does with a logical line is its business (``engine._SourceScan``): it only *adds* the matches that
need the join, and the rows keep their own line numbers.
"""

from __future__ import annotations

import itertools
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..lazy_re import lazy
from .attribution import PYTEST_NEEDLE, UNITTEST_NEEDLE, parse_progress
from .clean import advisory, clean_speaking, starts_with_runner_stamp

SAMPLE_BYTES = 64 * 1024
MIN_WIDTH = 60  # no terminal people paste from is narrower
MAX_LONGER = 5  # lines longer than the terminal a paste may hold (a header, a line typed in by hand)
MIN_CUT_SHARE = 0.1  # a terminal cuts inside words and sentences often; a log's longest lines end them
MAX_PIECES = 64  # rows of one logical line (64 x 80 columns: a 5 KB message)
MAX_HELD = 1 << 20  # a run of W-rows longer than this is matched as it is
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
# A row ending in a rule of punctuation ("=== short test summary info ===", "____ test_x ____") or in
# a right-aligned progress count ("... PASSED     [ 45%]") was drawn to the terminal's width by the
# program (pytest does): it is a whole line, not a cut one. Not a run of dots: CTest's dot leader
# ("1/3 Test #1: name ........") runs on past the cut, and so does unittest's row of progress dots.
_SEPARATOR = lazy(rb"(?:([^\s.A-Za-z0-9])\1\1|\[ *\d+%\])$")
# The last bytes that neither alternative can end in: most rows end so, and the search walks the row.
_ENDS_NO_SEPARATOR = frozenset(b" \t\n\r\f\v.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

# A row ending in a box's right edge: rich draws its traceback panel ("╭─── Traceback (most recent call
# last) ───╮", "│ ... │", "╰───╯") to the console's width, which it reads from the terminal. Read as a cut,
# its last row "╰───╯" was joined with the exception line under it ("╰───╯FileNotFoundError: ..."), which
# then was no traceback's end. Not a row ending in the box's lines: a panel wider than the terminal (rich
# told its width) is cut inside them ("╰──────" / "───╯"), and joined again it is the panel's bottom.
_BOX_EDGES = tuple(edge.encode("utf-8") for edge in ("╮", "╯", "┐", "┘", "│", "┃", "║", "╗", "╝", "┤", "┫"))
_NUMBER_GOES_ON = frozenset(b"0123456789.([{,=-_/\\")  # "in 2000" / "000 ms", "thread: [" / "0,0,0]"
_RULE = frozenset(b"=_-*~#")
_OPEN = frozenset(b"([{,=-_/\\")  # a line seldom ends so: a cut does
# A line seldom starts so: a cut does ("...: block" / ": [31,0,0], thread", "gloo/.../pair" / ".cc:563]").
_CLOSE = frozenset(b")]},;:.=-_")
# An elapsed-time stamp no cleaning strips: CPython regrtest's "0:00:01 load avg: 0.50 [1/2] test_x".
_ELAPSED = lazy(rb"\d+:\d\d:\d\d ")
# A row ending inside a timestamp ("... AT 2020-07-11T", "2020-07-11T2", "17:09:") whose next row goes
# on with digits: no program ends a line there.
_INSIDE_A_STAMP = lazy(rb"(?:\d\d-\d\dT\d{0,2}|\d:\d\d:|\d{4}-(?:\d\d-)?)$")
# A number cut after one of its dots ("Connect to 10.0." / "0.82<38455> failed", NCCL's WARN): a line
# ends in a word or a number and its full stop, never in a dotted number's inner dot before more digits.
_DOTTED_NUMBER_CUT = lazy(rb"\d\.\d+\.$")
# A row ending in ":", "," or ";" before a capitalised word: a sentence's punctuation, then its space,
# which a copy trimmed from the row's end; the words are never glued so.
_SPACE_WAS_HERE = lazy(rb"[:,;]\n[A-Z][a-z]$")
# A test runner's passing outcome alone on its row: unittest -v's "ok" (or "skipped 'why'") after the
# output a test printed, pytest -s's "PASSED" after a test's own lines. The runner writes it at the
# margin after a newline of its own: a line, not the rest of a cut ("... in 2000 ms" / "ok"). Read as a
# cut's rest, it is lost and the passing test's events count as unfinished: errors. A failing outcome
# ("FAIL", "FAILED", "ERROR") is left to the cut reading, where an event stays unfinished either way.
_OUTCOME_ROW = lazy(rb"(?:ok|PASSED|SKIPPED|XFAIL|expected failure|skipped '.*')(?: +\[ *\d+%\])?$")
# A row that ends in a test's outcome on its progress line (unittest -v's "test_m (mod.C) ... ok", pytest -v
# -s's "t.py::test_x PASSED", no percent column there) ends a line: the runner writes its newline right
# after the outcome. unittest ids of one length make rows of one width, each ending in a letter before
# the next id's "test_": read as cuts in a word, a short log became a terminal copy and its progress
# lines were joined into one, so an event on the last of them went to the test three rows up.
_OUTCOME_END = lazy(
    rb"(?: \.\.\. (?:ok|FAIL|ERROR|expected failure|unexpected success|skipped '.*')"
    rb"|(?:\.py|^)::\S* (?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN))$"
)
# One cut is evidence of a terminal only where the break falls where no program ends a line and starts
# the next: a word in lower case goes on ("so t" / "he stacktrace", "stopped ex" / "itcode=-SIGTERM>"), a
# number goes on ("in 2000" / "000 ms", "[1" / "92.168.70.92]"), a space was kept at the row's end or the
# rest starts with one ("has been marked" / " dead because"), or the rest starts with closing punctuation
# (".", ")", ":56 DUE TO ..."). A row a program starts starts otherwise: a capital ("Traceback", "FAILED"),
# a rule, a progress letter ("F.F", "..F", "Eok"), a label ("rootdir: ...") or an identifier in camel
# case (unittest's "setUpClass (mod.C)" after a test's longest line "... timed out after 0.29 seconds").
# A longest line that ends in a word before a line that starts with one is what every piped log holds.
_GOES_ON = lazy(rb"[a-z]\w*(?![\w:])|[a-z]\w*::|[)\]},;:=_-](?:[\w ]|$)|\.(?:[a-z0-9 ]|$)| \S")
# pytest's short test summary cuts a long "FAILED test - message" to the terminal's width and ends it with
# "..." (_pytest/terminal.py, _get_line_with_reprcrash_message): a whole line, however wide.
_SUMMARY_CUT = lazy(rb"(?:FAILED|ERROR|XFAIL|XPASS|SKIPPED) \S.*\.\.\.$")
# The rest of a caret line (CPython 3.11+ marks a frame's expression with "^^^^" or "~~~^^^") whose indent a
# terminal cut: a logger's prefix makes the line long ("(Worker pid=1) ERROR ... [multiproc_executor.py:857]
#  " + 31 blanks + "^^^^"), and the row before ends in the blanks of that indent, as a padded row does.
_CARET_REST = lazy(rb" +[~^]+ *\r?$")
Piece = Tuple[int, int]  # a row of the window: its start and end offsets (no line ending)
# Whether one of the lines, each joined again across its cuts, says what none of its rows says alone:
# [(joined, rows), ...].
Vouch = Callable[[Sequence[Tuple[bytes, Sequence[bytes]]]], bool]


def _columns(row: bytes) -> int:
    return len(row) if row.isascii() else len(row.decode("utf-8", "replace"))


def _row(line: bytes) -> bytes:
    """A line less its CRLF ending."""
    return line[:-1] if line.endswith(b"\r") else line


def _padded(row: bytes) -> bool:
    return row.endswith(b"  ")


def _drawn_to_width(row: bytes) -> bool:
    """A row ending in ``_SEPARATOR`` or a box's right edge (``_BOX_EDGES``): the program drew it to the
    terminal's width."""
    if not row or row[-1] in _ENDS_NO_SEPARATOR:
        return False
    return row[-1] >= 0x80 and row.endswith(_BOX_EDGES) or _SEPARATOR.search(row) is not None


def _starts_a_record(row: bytes, before: bytes = b"") -> bool:
    """A row that starts with a timestamp or another logger's prefix, or that is a test runner's passing
    outcome alone (``_OUTCOME_ROW``), is a line of its own, unless the row ``before`` it was cut inside a
    timestamp: then its digits are that stamp's rest."""
    if row.startswith(b".") or row[:1].isdigit() and _INSIDE_A_STAMP.search(before):
        return False  # no prefix starts with a dot: a dot leader's rest, or unittest's progress dots
    if row[:1] == b"`" and row[1:2] != b"`" and row.count(b"`") == 1:
        return False  # a GNU-style quote ("`false' failed.", HIP's assertion), no Markdown code span
    if _OUTCOME_ROW.match(row.rstrip(b" \t\r")) is not None:
        return True
    if _ELAPSED.match(row) is not None or starts_with_runner_stamp(row):
        return True  # the stamp alone settles it: every line of a GitHub log has one, cleaning is dear
    # "724: failed assertion" after a cut "file.mm:" is the rest of a location, not srun's task label
    return clean_speaking(row, task_labels=False)[0] != row.decode("utf-8", "backslashreplace").rstrip(" \t")


def _cut_in_a_word(row: bytes, after: bytes) -> bool:
    """Whether the break between two rows falls inside a word or a sentence ("indi" / "cates",
    "the maximum time " / "of 60 minutes", "failed (" / "exitcode: -9)"): a terminal's cut, seldom
    where a program ends a line (programs end lines with a word, ")", "." or ":", and start the next
    one at its margin or indented by two or more)."""
    if not row or not after:
        return False
    if after[:1].isdigit() and _INSIDE_A_STAMP.search(row):
        return True  # "... AT 2020-07-11T" / "22:48:26 DUE ...": one stamp
    if row[-1] == 32 and after[0] == 32:
        return False
    if after[:1] == after[1:2] == after[2:3] and after[0] in _RULE and row.rstrip(b" ")[-1:] != after[:1]:
        return False  # a rule a program drew ("===== test session starts =====") starts its own line
    head = row[:row.find(b" ") + 1]
    if len(head) > 2 and after.startswith(head):
        return False  # a record like the row's own ("submitit WARNING (...) ..." twice): a line of its own
    if row.endswith((b"...", b"... ")) and _SUMMARY_CUT.match(row.rstrip(b" ")) is not None:
        return False
    # A row that starts a record ends the cut; cleaning the row to see that costs most, so it comes last.
    return _breaks_inside(row, after) and _OUTCOME_END.search(row) is None and not _starts_a_record(after)


def _breaks_inside(row: bytes, after: bytes) -> bool:
    """``_cut_in_a_word``'s reading of the characters on either side of the break."""
    if row[-1] == 32:
        row, after = row[:-1], b" " + after
    if not row or row[-1] == 32:
        return False
    if after[0] == 32:
        return after[1:2] not in (b"", b" ", b"\t")
    if row[-1] == 96 and row.count(b"`") % 2:
        return True  # a backtick that opens a span: "Assertion `" / "x < n` failed."
    if after[0] == 47 and row[-1] in _WORD and _path_left_open(row):
        return True  # a path cut before a separator: 'File "/env/lib' / '/python3.12/site.py", line 1'
    if after[0] == 92 and row[-1] in _WORD and _windows_path_at_end(row):
        return True  # a Windows path cut before a separator: "...\src\arrow" / "\read\mod.rs:144:31:"
    if row[-1] == 46 and after[:1].isdigit() and _DOTTED_NUMBER_CUT.search(row) is not None:
        return True  # an address or a version cut after a dot: "Connect to 10.0." / "0.82<38455> failed"
    if row[-1] == 46 and len(row) > 1 and row[-2] in _WORD and after.startswith(b"py::"):
        return True  # a node id cut before its file's extension: "['test_flaky_assert." / "py::test_x']"
    if row.endswith(b"::") and after[0] in _WORD:
        return True  # a scope's separator, never a line's end: "test_x.py::" / "TestCase", "c10d::" / "Store"
    return row[-1] in _WORD and after[0] in _WORD or row[-1] in _OPEN or after[0] in _CLOSE


def _path_left_open(row: bytes) -> bool:
    """Whether ``row`` ends inside a path that a quote or a parenthesis opened and did not close ('File
    "/env/lib', "(Triggered internally at /pytorch/torch/csrc/utils"): a program ends no line there, so a
    row after it that starts with "/" is the path's rest, not a path of its own."""
    last = row[row.rfind(b" ") + 1:]
    return b"/" in last and (row.count(b'"') % 2 == 1 or row.count(b"(") > row.count(b")"))


def _windows_path_at_end(row: bytes) -> bool:
    """Whether the last word of ``row`` is a Windows path ("C:\\a\\polars\\crates\\src\\arrow"): a row after
    it that starts with a backslash is the path's rest, as no program starts a line with one."""
    return b"\\" in row[row.rfind(b" ") + 1:]


def _goes_on(row: bytes, after: bytes, trimmed: bool) -> bool:
    """Whether a cut between ``row`` and ``after`` is one no program's line ending explains (``_GOES_ON``);
    ``trimmed``: the row is read with the space a copy trimmed, which only a word after it can vouch for."""
    if trimmed:
        return after[:1].islower() and _GOES_ON.match(after) is not None
    if row.endswith(b" "):
        return after[:1] != b" "
    if after[:1].isdigit():
        return row[-1] in _NUMBER_GOES_ON or _INSIDE_A_STAMP.search(row) is not None
    if row.endswith(b"...") and after.startswith(b".."):
        return True  # a dot leader runs on past the cut (CTest's "Test #1: name ......" / "...Passed")
    if after[:1].islower() and parse_progress(after) is not None:
        return False  # unittest's line of a test or fixture: "setUpClass (mod.C) ... ERROR"
    if row.endswith(b"::") or row[-1] == 96 and row.count(b"`") % 2:
        return True  # a scope or a quoted span left open: "Reporter::" / "Base::", "Assertion `" / "srcIndex"
    if after[:1] == b"/" and row[-1] in _WORD and _path_left_open(row):
        return True  # a quoted or bracketed path goes on: "at /torch/csrc/utils" / "/tensor_numpy.cpp"
    if after[:1] == b"\\" and row[-1] in _WORD and _windows_path_at_end(row):
        return True  # a Windows path goes on: "panicked at C:\a\src\arrow" / "\read\mod.rs:144:31:"
    if row[-1:].isupper() and row[-2:-1] in (b" ", b"_") and after[:1].isupper():
        return True  # a capital alone ends no line: "closing signal S" / "IGTERM", "CUBLAS_S" / "TATUS_..."
    return _GOES_ON.match(after) is not None


def wrap_width(sample: bytes, vouch: Optional[Vouch] = None) -> Optional[int]:
    """The width of the terminal that wrapped ``sample`` (whole lines of a log's start), or None.
    ``vouch``: the catalogue's word on a cut ``_goes_on`` finds no evidence in (``_cut_at``)."""
    rows = sample.split(b"\n")
    if rows and not rows[-1]:
        rows.pop()
    if b"\r" in sample:
        rows = [_row(row) for row in rows]
    widths = list(map(len, rows)) if sample.isascii() else [_columns(row) for row in rows]
    if b"\r" in sample:
        widths = [-1 if b"\r" in row else w for row, w in zip(rows, widths)]  # a redrawn bar is no row
    candidates = sorted(set(widths), reverse=True)[: MAX_LONGER + 1]
    if not candidates or candidates[0] < MIN_WIDTH:
        return None
    floor = candidates[-1] - 1
    long_rows = [i for i, w in enumerate(widths[:-1]) if w >= floor]  # the rows any candidate looks at
    longer = 0
    for width in candidates:
        if width < MIN_WIDTH or longer > MAX_LONGER:
            return None
        if _cut_at(rows, widths, long_rows, width, 2 if longer else 1, vouch):
            return width + 1 if not longer and _trimmed_at(rows, widths, long_rows, width) else width
        longer += widths.count(width)
    return None


def _trimmed_at(rows: List[bytes], widths: List[int], long_rows: List[int], width: int) -> bool:
    """Whether the widest rows, ``width`` wide, are rows of a terminal one column wider whose every cut
    fell on a space the copy trimmed: no row is ``width - 1`` wide with its own trimmed cut, and a row
    reads as a cut only with the space back ("... Reason:" / "Page not present": no program prints
    "Reason:Page")."""
    evidence = False
    for i in long_rows:
        row, after, w = rows[i], rows[i + 1], widths[i]
        if w == width - 1 and _cut_in_a_word(row + b" ", after):
            return False
        if w == width and _SPACE_WAS_HERE.search(row + b"\n" + after[:2]) and not _cut_in_a_word(row, after):
            evidence = True
    return evidence


def _cut_at(rows: List[bytes], widths: List[int], long_rows: List[int], width: int, least: int,
            vouch: Optional[Vouch] = None) -> bool:
    """Whether the rows ``width`` wide look cut by a terminal: enough of them break inside a word or a
    sentence (a row of ``width - 1`` counts when its cut space was trimmed), at least ``least``: where
    rows longer than ``width`` say no terminal that wide cut them, one row that happens to end there
    before a line starting with a word ("...using the default cache" then "Traceback (most recent call
    last):") is no proof. One cut must go on where no program starts a line (``_goes_on``), or join into
    a line that ``vouch`` says tells what neither row tells alone."""
    full = cuts = 0
    in_a_word = False
    unproven: List[int] = []
    for i in long_rows:
        w = widths[i]
        if w not in (width, width - 1) or _padded(rows[i]) or _drawn_to_width(rows[i].rstrip(b" ")):
            continue
        row, after = rows[i], rows[i + 1]
        cut = _cut_in_a_word(row, after) if w == width else _cut_in_a_word(row + b" ", after)
        full += w == width or cut
        cuts += cut
        if cut and not in_a_word:
            in_a_word = _goes_on(row, after, w != width)
            if not in_a_word and vouch is not None:
                unproven.append(i)
    if cuts < MIN_CUT_SHARE * full or cuts < least:
        return False
    # A piped log's longest line that ends in a word before a line starting with a capital or a label
    # joins into nothing a rule knows; a terminal's cut there ("driver with capab" / "ilities: [[gpu]]",
    # "Resource exhaus" / "ted: Out of memory") hid the message a rule is written for.
    if in_a_word or not unproven or vouch is None:
        return in_a_word
    return vouch([_run(rows, i, width) for i in unproven])


def _run(rows: List[bytes], i: int, width: int) -> Tuple[bytes, List[bytes]]:
    """The line that the cut after ``rows[i]`` is part of, joined as ``logical_lines`` joins it (from the
    first of the cut rows before it to the row after the last), and its rows."""
    start = i
    while start > 0 and i - start < MAX_PIECES and continues(rows[start - 1], width) is not None:
        start -= 1
    end = i + 1
    while end + 1 < len(rows) and end - start < MAX_PIECES and continues(rows[end], width) is not None:
        end += 1
    pieces = rows[start:end + 1]
    return b"".join(row + (continues(row, width) or b"") for row in pieces[:-1]) + pieces[-1], pieces


class WrapReader:
    """The windows of one source, re-cut so that no wrapped run is split; ``width`` once it is known
    (None: not wrapped, and the windows pass through untouched)."""

    def __init__(self, windows: Iterable[bytes], vouch: Optional[Vouch] = None) -> None:
        self.windows = iter(windows)
        self.vouch = vouch
        self.width: Optional[int] = None
        # What it read from ``windows`` and has not handed on yet: the sample's windows, then a held run.
        self.sampled: List[bytes] = []
        self.held = b""

    def held_lines(self) -> int:
        """How many lines end in what it read and has not handed on yet (``_Dropped``'s notice: its line
        is the number of the first line not handed on plus this)."""
        return sum(window.count(b"\n") for window in self.sampled) + self.held.count(b"\n")

    def __iter__(self) -> Iterator[bytes]:
        first: List[bytes] = self.sampled
        size = 0
        for window in self.windows:
            first.append(window)
            size += len(window)
            if size >= SAMPLE_BYTES:
                break
        # Windows end at a "\n": the sample is the whole lines of the first SAMPLE_BYTES (a big first
        # window, the common case, is sliced, not copied whole).
        sample = first[0][: SAMPLE_BYTES + 1] if len(first) == 1 else b"".join(first)
        if len(sample) > SAMPLE_BYTES:
            sample = sample[:SAMPLE_BYTES]
            sample = sample[: sample.rfind(b"\n") + 1]
        self.width = wrap_width(sample, self.vouch)
        # Nothing more is read from ``windows`` before ``first`` is handed on whole.
        self.sampled = []
        if self.width is None:
            yield from first
            yield from self.windows
            return
        held = b""
        for window in itertools.chain(first, self.windows):
            buf = held + window if held else window
            cut = _safe_end(buf, self.width)
            if cut == 0 and len(buf) <= MAX_HELD:
                held = self.held = buf
                continue
            if cut == 0:
                cut = len(buf)
            held = self.held = buf[cut:]
            yield buf[:cut]
        if held:
            yield held


def _safe_end(buf: bytes, width: int) -> int:
    """Where ``buf`` stops being safe to match: before the run of W-rows it ends with, which may go on
    in the next window (0: the whole of it is such a run)."""
    end = len(buf)
    if not buf.endswith(b"\n"):  # the source's last window
        return end
    last = buf.rfind(b"\n", 0, end - 1) + 1
    if buf.endswith(b"  \n") and _columns(_row(buf[last:end - 1])) == width:
        end = last  # blanks at the last column: a caret line's indent may go on (``_CARET_REST``)
    while end > 0:
        start = buf.rfind(b"\n", 0, end - 1) + 1
        if continues(_row(buf[start:end - 1]), width) is None:
            return end
        end = start
    return 0


def continues(row: bytes, width: int) -> Optional[bytes]:
    """What a terminal of ``width`` columns cut ``row`` (one line, no ending) from a longer line before:
    b"" when it cut at the last column, b" " when the cut fell on a space that the copy trimmed from the
    row's end (tmux's capture-pane does), None when ``row`` is a whole line."""
    columns = _columns(row)
    if columns < width - 1 or columns > width or b"\r" in row or _padded(row) or _drawn_to_width(row):
        return None
    if columns == width:
        return b""
    return None if row.endswith(b" ") else b" "


def logical_lines(buf: bytes, width: int) -> List[Tuple[int, List[Piece], bytes]]:
    """The lines of a window of a wrapped source that span two rows or more: the offset where each
    starts, its rows, and its text joined again. A run of cut rows gives one such line from each of
    its rows but the last: a row W - 1 wide may be a whole line after all (only a trimmed space tells
    them apart), and the line that starts after it must still be found at its start."""
    found: List[Tuple[int, List[Piece], bytes]] = []
    run: List[Piece] = []
    parts: List[bytes] = []  # each row of the run, then what the cut took after it
    pos = 0
    n = len(buf)
    while pos < n:
        nl = buf.find(b"\n", pos)
        end = n if nl == -1 else nl
        row_end = end - 1 if end > pos and buf[end - 1] == 13 else end
        row = buf[pos:row_end]
        cut = continues(row, width)
        if cut is None and row.endswith(b"  ") and _indent_cut_before_carets(buf, end, row, width):
            cut = b""
        if run and not (not row.strip() or b"\r" in row or _starts_a_record(row, parts[-2])):
            run.append((pos, row_end))
            parts.append(row)
            if cut is None or len(run) == MAX_PIECES:
                _add_run(found, run, parts)
                run = []
            else:
                parts.append(cut)
        else:
            # Not a continuation: the row before was a whole line that happened to be W wide.
            if len(run) > 1:
                _add_run(found, run, parts[:-1])
            run, parts = ([(pos, row_end)], [row, cut]) if cut is not None else ([], [])
        pos = end + 1
    if len(run) > 1:
        _add_run(found, run, parts[:-1])
    return found


def _indent_cut_before_carets(buf: bytes, end: int, row: bytes, width: int) -> bool:
    """Whether ``row``, ``width`` columns ending in blanks (as a padded row does), is a caret line's first
    row, cut in its indent: the row after it (from ``buf[end]``, the row's newline) is ``_CARET_REST``."""
    if _columns(row) != width or end >= len(buf):
        return False
    nl = buf.find(b"\n", end + 1)
    return _CARET_REST.match(buf, end + 1, len(buf) if nl == -1 else nl) is not None


def _add_run(found: List[Tuple[int, List[Piece], bytes]], run: List[Piece], parts: List[bytes]) -> None:
    for first in range(len(run) - 1):
        found.append((run[first][0], run[first:], b"".join(parts[2 * first:])))


def advisory_rows(buf: bytes, lines: List[Tuple[int, List[Piece], bytes]]) -> Dict[int, bytes]:
    """The rows of a wrapped window that continue a line whose first row is a record that reports no error
    (``clean.advisory``: NCCL's "NCCL INFO dlvsym failed on ... - libmlx5.so.1:" cut before "undefined
    symbol: ...", torchvision's "UserWarning: Failed to load image Python extension: ..."), each with that
    whole line joined again (``logical_lines``): such a row is that record's rest, and a rule the whole
    line does not match is not matched on the row alone (``engine._matched``)."""
    rows_of: Dict[int, bytes] = {}
    inside = set()
    for start, rows, text in lines:
        if start in inside:
            continue  # a shorter join inside a run, read from its first row already
        inside.update(row_start for row_start, _end in rows[1:])
        if advisory(buf[start:rows[0][1]]):
            rows_of.update((row_start, text) for row_start, _end in rows[1:])
    return rows_of


def _progress_after(buf: bytes, row: Piece, joined: bytes) -> bool:
    """Whether ``row``, the second of a cut line, is a test runner's progress line of its own that the join
    would hide: the sample's one widest line may end a word just before unittest's next line
    ("... timed out after 0.3 seconds" / "setUpClass (mod.C) ... ERROR"), which no cut explains as well."""
    text = buf[row[0]:row[1]]
    if not any(needle in text for needle in (PYTEST_NEEDLE, UNITTEST_NEEDLE)) and not text.startswith(b"::"):
        return False
    return parse_progress(text) is not None and parse_progress(joined) is None


def attribution_view(buf: bytes, lines: List[Tuple[int, List[Piece], bytes]]) -> Tuple[bytes, List[int]]:
    """``buf`` as test attribution reads it: each cut line (``logical_lines``) joined again on its first
    row, its other rows left empty, so a test runner's progress line the terminal cut is whole and the
    line numbers stay; and where each line of it starts."""
    out: List[bytes] = []
    pos = 0
    for start, rows, text in lines:
        if start < pos:
            continue  # a shorter join inside a run already joined from its first row
        if _progress_after(buf, rows[1], text):
            continue
        out.append(buf[pos:start])
        out.append(text)
        out.append(b"\n" * (len(rows) - 1))
        pos = rows[-1][1]
    out.append(buf[pos:])
    view = b"".join(out)
    starts = [0]
    find = view.find
    at = find(b"\n")
    while at != -1:
        starts.append(at + 1)
        at = find(b"\n", at + 1)
    return view, starts
