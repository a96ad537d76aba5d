"""Cleaning finds the same words whatever container a CI system or launcher stored the line in.

Each prefix below is the one the tool writes, from its source or manual: Buildkite's agent's timestamp
(an APC control string, buildkite/agent core/job_controller.go), journalctl's short-precise, short-iso
and short-iso-precise outputs, rsyslog's RFC 3339 file format, a syslog tag without a pid after a host
name, MPICH's and Intel MPI's mpiexec -prepend-rank ("[%r] ", hydra's prepend pattern), torchrun's log
line prefix template as torch's docs give it ("[${rank}]:", set through
TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE), and Python logging's "%(asctime)s %(levelname)s %(message)s"
family ("%(levelname)-8s" padded to 8 columns).
"""

from __future__ import annotations

import pytest

from analyzer.scan.clean import clean_line, clean_speaking, strip_controls

WORDS = "Traceback (most recent call last):"

CONTAINERS = {
    "buildkite": b"\x1b_bk;t=1704825683123\x07",
    "buildkite-st": b"\x1b_bk;t=1704825683123\x1b\\",
    "journalctl-short-precise": b"Nov 29 17:59:56.123456 gpu-node-3 python3[1234]: ",
    "journalctl-short-iso": b"2024-01-09T18:41:23+0000 gpu-node-3 python3[1234]: ",
    "journalctl-short-iso-precise": b"2024-01-09T18:41:23.123456+00:00 gpu-node-3 python3[1234]: ",
    "rsyslog-rfc3339": b"2024-01-09T18:41:23.123456+01:00 gpu-node-3 kernel: ",
    "syslog-tag-without-pid": b"Nov 29 17:59:56 gpu-node-3 train: ",
    # journalctl under pl_PL and zh_CN (strftime's %b): as quoted in ollama issues 12106 and 9247
    "journalctl-short-month-pl": b"sie 28 10:25:27 razer ollama[49992]: ",
    "journalctl-short-month-zh": "2月 21 08:55:27 GBITDeepSeek ollama[698750]: ".encode(),
    "journalctl-short-month-fr": "déc. 05 01:50:10 gpu-node-3 python3[1234]: ".encode(),
    "mpich-prepend-rank": b"[3] ",
    "torchrun-rank-template": b"[7]:",
    "torchrun-rank-template-space": b"[7]: ",
    "logging-level": b"2024-01-09 18:41:23,123 ERROR ",
    "logging-level-padded": b"2024-01-09 18:41:23,123 INFO     ",
    "logging-level-critical": b"2024-01-09 18:41:23,123 CRITICAL ",
    "logging-level-bracket": b"2024-01-09 18:41:23,123 [ERROR] ",
    "github+buildkite-like-ansi+rank": b"2024-01-09T18:41:23.1234567Z \x1b[31m[rank3]:",
}


@pytest.mark.parametrize("prefix", CONTAINERS.values(), ids=list(CONTAINERS))
def test_the_container_is_stripped(prefix):
    assert clean_line(prefix + WORDS.encode() + b"\n")[0] == WORDS


def test_buildkite_stamps_go_and_leave_the_text_between_them():
    raw = b"\x1b_bk;t=1704825683123\x07Segmentation fault\n\x1b_bk;t=1704825683130\x07done\n"
    assert strip_controls(raw) == b"Segmentation fault\ndone\n"
    # An unterminated one is the old two-byte escape: nothing past the line's end is eaten.
    assert strip_controls(b"\x1b_bk;t=17\nKilled\n") == b"bk;t=17\nKilled\n"


def test_torchrun_rank_template_names_the_speaker():
    assert clean_speaking(b"[7]:RuntimeError: boom")[0::2] == ("RuntimeError: boom", "[7]:")


def test_what_the_new_prefixes_must_not_take():
    kept = {
        # moreutils' ts: a stamp before a message names no host and program
        b"Nov 29 17:59:56.123 CUDA error: an illegal memory access was encountered":
            "CUDA error: an illegal memory access was encountered",
        # a localized month only before a host and a program with its pid
        b"sie 28 10:25:27 CUDA error: an illegal memory access was encountered":
            "sie 28 10:25:27 CUDA error: an illegal memory access was encountered",
        b"2024-01-09T18:41:23+0000 Fatal error: x": "Fatal error: x",
        # bash's job report aligns its columns: "[1]" is its job, the line is its report
        b"[1]    5606 segmentation fault  python x.py": "[1]    5606 segmentation fault  python x.py",
        # a WARNING record keeps its level (python-logged-warning-traceback reads it)
        b"2024-01-09 18:41:23,123 WARNING batch size 4096 does not fit, halving":
            "WARNING batch size 4096 does not fit, halving",
        # a level word that is the message's own
        b"2024-01-09 18:41:23,123 ERRORS: 3": "ERRORS: 3",
        b"[12]:x": "x",
        b"[12]  x": "[12]  x",
        # Ray's "%(levelname)s %(filename)s:%(lineno)s -- ": the level stays with its prefix (rules read it)
        b"2025-04-24 09:39:44,684 ERROR tune_controller.py:1331 -- Trial task failed for trial x":
            "ERROR tune_controller.py:1331 -- Trial task failed for trial x",
        # "%(levelname)-8s": the padding goes, the message's own indent stays
        b'2024-01-09 18:41:23,123 ERROR      File "q.py", line 9, in get': '  File "q.py", line 9, in get',
    }
    for raw, text in kept.items():
        assert clean_line(raw)[0] == text, raw
