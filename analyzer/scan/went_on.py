"""Whether a rank went on after a traceback it printed: a traceback it caught and logged
(``logging.exception``, ``traceback.print_exc``) is not how the rank died.

torch's own excepthook prints an uncaught exception with a ``[rankN]: `` prefix, and a rank dies of it;
with torchrun's per-line prefix (``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[rank${rank}]:'``) every line
of a rank carries one, a handled traceback too. The rank's next line that says something tells them
apart: a rank that printed on ("step 2 ok") had handled it. The engine reads only candidate lines, so
this watch looks at the window's bytes for the rank's prefix after each such traceback's end.
"""

from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Set, Tuple

from .clean import clean_speaking, strip_controls

# What a rank may still print after its uncaught exception and before it is gone: the rest of the
# exception's own text (indented lines, c10's "Exception raised from ..." and "frame #N:"), a chained
# exception's link, and c10/glog log lines of its exit ("[W1206 03:44:30.395 ProcessGroupNCCL.cpp:...]",
# "W1206 03:44:30.395000 9526 ...").
_NOT_GOING_ON = re.compile(
    r"^(?:\s|$|Exception raised from |frame #\d+:|During handling of the above exception"
    r"|The above exception was the direct cause|\[?[WEIF]\d{4} \d\d:\d\d:\d\d)"
)
MAX_WATCHES = 64  # rank tracebacks watched at once (the state keeps as many identities)
MAX_LOOKS = 64  # lines of a rank read after its traceback before the watch gives up (not gone on)

Watch = Tuple[int, int]  # (rank, the traceback's last line)


class RankWatch:
    """Tracebacks of ranks (``[rankN]:`` prefix) and whether each rank printed on after one."""

    def __init__(self) -> None:
        self.open: Dict[Watch, int] = {}  # watch -> lines of the rank read so far
        self.gone_on: Set[Watch] = set()
        # whether a launcher's label is a rank (the engine's reading: ``clean.torch_rank_behind_launcher``)
        self.launcher_ranks = True

    def watch(self, rank: int, end_line: int) -> None:
        if len(self.open) < MAX_WATCHES:
            self.open.setdefault((rank, end_line), 0)

    def window(self, buf: bytes, first_line: int) -> None:
        """Read ``buf`` (its first line is ``first_line``) for the watched ranks' later lines."""
        for key in list(self.open):
            rank, end_line = key
            start = _line_offset(buf, first_line, end_line + 1)
            if start is None:
                continue
            looks, went = self._read(buf, start, rank, self.open[key])
            if went:
                self.gone_on.add(key)
            if went or looks >= MAX_LOOKS:
                del self.open[key]
            else:
                self.open[key] = looks

    def _read(self, buf: bytes, start: int, rank: int, looks: int) -> Tuple[int, bool]:
        tokens = _prefix_tokens(rank) if self.launcher_ranks else _prefix_tokens(rank)[:1]
        found = [buf.find(token, start) for token in tokens]
        pos = _first(found)
        while pos != -1 and looks < MAX_LOOKS:
            begin = buf.rfind(b"\n", 0, pos) + 1
            end = buf.find(b"\n", pos)
            end = len(buf) if end == -1 else end
            text, line_rank, _speaker = clean_speaking(
                strip_controls(buf[begin:end]), launcher_ranks=self.launcher_ranks)
            if line_rank == rank:
                looks += 1
                if not _NOT_GOING_ON.match(text):
                    return looks, True
            # each token is looked for again only once the line it was found in is read: linear in ``buf``
            found = [buf.find(token, end) if -1 < at < end else at for token, at in zip(tokens, found)]
            pos = _first(found)
        return looks, False

    def result(self) -> FrozenSet[Watch]:
        return frozenset(self.gone_on)


def _prefix_tokens(rank: int) -> Tuple[bytes, ...]:
    """Bytes inside each line prefix that names ``rank`` (``clean_speaking`` confirms the line's rank):
    torch's "[rank3]:" and PSM's "rank3: " label (also "host:rank3.python: "), then the launchers' labels:
    Open MPI --tag-output's "[1,3]<stderr>:", horovodrun's "[3]<stderr>:" and srun --label's "3: "
    (zero-padded to the widest task id: "03: " holds it)."""
    return (b"rank%d" % rank, b",%d]<std" % rank, b"[%d]<std" % rank, b"%d: " % rank)


def _first(found: List[int]) -> int:
    """The smallest of the offsets ``found`` (``bytes.find``'s), -1 when none was found."""
    return min((at for at in found if at != -1), default=-1)


def _line_offset(buf: bytes, first_line: int, line: int):
    """The offset of line ``line`` in ``buf``, 0 for a line before the window, None past its end."""
    pos = 0
    for _ in range(line - first_line):
        pos = buf.find(b"\n", pos) + 1
        if pos == 0:
            return None
    return pos
