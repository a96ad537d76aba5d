"""Turn one raw log line into the text rules match: no BOM, timestamp, ANSI escapes, NULs or rank prefix.

Cleaning happens in two steps so the engine can do the first one over a whole window at once:
``strip_controls`` decodes the lines of a container log stored as data (``container_lines_decoded``),
removes NULs and ANSI escape sequences, also in the caret notation a paste may show them in (``^[[36m``)
and in rsyslog's octal one (``#033[0;33m``; none of them ever contains ``\\n``, so line numbers survive), and
``clean_stripped`` removes what sits at the start of a line (UTF-8 BOM, GitHub's timestamp,
``[rankN]:``, another logger's prefix), decodes, and drops the line ending. ``clean_line`` is both in a
row.

Other loggers' prefixes are removed so that a rule anchored at ``^`` (a traceback's last line, "Process
NAME:", "Segmentation fault") still finds its wording when the log went through them: journald/syslog
(``Nov 29 17:59:56 host proc[12]: ``, journalctl's precise and ISO stamps and rsyslog's RFC 3339 one
before the same, a tag without a pid after a host name, or the stamp alone as CircleCI shows it), a
bare date-time (``2026-09-17 13:40:05 ``, pm2's ``2022-11-16T13:12:10: ``; Python logging's level after
it: ``2024-01-09 18:41:23,123 ERROR    ``), a Kubernetes container log's
``2024-01-09T18:41:23.123456789Z stderr F ``, a GitLab job log's ``2024-06-11T14:25:33.123456Z 00O ``,
loguru's ``2024-01-09 18:41:23.123 | ERROR    | train:main:42 - ``, Hydra's
``[2024-01-09 18:41:23,123][__main__][ERROR] - ``, Jenkins' timestamper (``14:13:08 ``), docker
buildkit (``#9 31.55 ``), Buildkite's ``[2026-01-31T04:40:19Z] `` (its agent's own
stamp, ``ESC _bk;t=MS BEL``, is a control string that ``strip_controls`` removes), Taskcluster's
``[task 2025-01-21T17:12:18.382Z] `` and ``[taskcluster 2017-01-25T23:31:13.787Z] ``,
Python logging's ``[2024-01-09 18:41:23,123] [ERROR] `` and ``ERROR:pkg.module:``, glog and torch's
C++ logging at levels I, W and E (``E0325 12:00:00.123 1234 file.cpp:12] ``,
``[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] ``), TensorFlow's and absl's
``2021-06-08 13:00:47.364628: E file.cc:12] ``, NCCL's ``host:pid:tid [dev] ``, mpirun
``--tag-output``'s ``[1,0]<stderr>:`` (after ``--timestamp-output``'s date or alone), vLLM's
``ERROR 08-15 17:38:13 [core.py:398] `` (older releases without the brackets), Ray's and vLLM's
``(EngineCore_DP0 pid=559) `` and ``(VllmWorker rank=2 pid=808339) ``, docker compose's
``service  | ``, torchrun ``--tee``'s ``[default0]:`` (a local rank, so it is not returned as the
rank) and its ``[${rank}]:`` template, MPICH's ``mpiexec -prepend-rank``'s ``[3] ``, pdsh's
``10.0.0.6: `` or ``worker-1: `` (DeepSpeed's multi-node launcher), Determined's trial
``13047a84-9fa2-4afe-b5b4-6475139b76b3 || `` (the master's ``<>  [2021-12-07 10:43:01] 087c0ee7 || ``),
horovodrun's ``[4]<stderr>:`` (mpirun's without the job number), srun ``--label``'s task ``0: ``
(ctest ``-V`` numbers its tests' lines alike: a log that shows ctest's keeps them), kubectl logs
``--prefix``'s ``[pod/NAME/CONTAINER] ``, and unittest
``-v``'s ``test_m (mod.Class) ... `` when a child's output (a glibc abort, a crash report) continues
that line instead of the outcome, pytest ``-v -s``'s node id (``test_x.py::test_y Process SpawnProcess-1:``)
when a child's header continues it, and a plain run's progress letters (``.``, ``E``, ``F``...) that the
first line a child printed next continues (``.Process worker-3:``, ``Fsubprocess.CalledProcessError:``).
A glog FATAL (``F``) prefix is kept: it is part of what the fatal-line rule matches. A line a paste
quoted as Markdown (``> Error: Process completed with exit code 137``) loses the quote marks (and one of
a failed Nix build's log tail, ``       > FAILED tests/x.py::t``, Nix's mark and indent), one
quoted as code (```` `Killed` ````, a fence glued to its first line) the backticks, and one pasted as
emphasis (``_Killed_``, ``**Killed**``, or only its start in bold: ``**RuntimeError: ...** Tried``) its
markers, and so do the first and last lines of a bold span over several lines (``**Traceback ...`` ...
``_queue.Empty**``). At the end of a line, Ray's log deduplication's `` [repeated 6x across cluster]``
goes (with the note Ray adds to its first one), so a folded line reads as the worker wrote it.

Container logs stored as data: Docker's json-file driver (the raw
``/var/lib/docker/containers/ID/ID-json.log`` that CI systems and people attach; ``docker logs`` shows the
text) writes each line as one JSON object,
``{"log":"text\\n","stream":"stderr","time":"2024-01-09T18:41:23.123456789Z"}``, the text JSON-escaped
(``\\"``, ``\\n``, ``\\r``, every other control byte and ``<``, ``>``, ``&`` as ``\\u00XX``: moby
daemon/logger/jsonfilelog/jsonlog/jsonlogbytes.go, ``ffjsonWriteJSONBytesAsString``). The log's text is
decoded in place of the object, one line for one line, so a finding keeps its line of the file. The
kubelet's CRI format (``2024-01-09T18:41:23.123456789Z stderr F text``: containerd
internal/cri/io/logger.go) loses its prefix the same way. A line longer than the writer's buffer (16 KiB:
moby daemon/logger/copier.go; containerd's ``maxLen``) is stored as several pieces (Docker's objects but
the last without the final ``\\n``, jsonfilelog.go ``marshalMessage``; CRI's tagged ``P``, cri-api
pkg/apis/runtime/v1/constants.go ``LogTagPartial``): each piece is matched as a line of its own, as the
engine's windows, cut at any ``\\n``, must give the same matches whatever their size.

A line of the shell's xtrace (``set -x``: ``+ grep -E 'CUDA error: |Killed' train.log``, ``++ `` in a
command substitution) is a command about to run, not anything it printed: it cleans to nothing.

Carriage returns: a progress bar redraws one terminal line with ``\\r`` many times before its ``\\n``.
Line numbers count ``\\n`` only, so the whole redraw stays one line, and the cleaned text keeps the
inner ``\\r`` as a separator between what were separate visible states of that line. The engine
matches each ``\\r`` segment on its own (``split_segments``): an error printed after a bar is found with
its ``^`` anchors working, and no match spans two redraws that never appeared together on screen. A
trailing ``\\r`` (CRLF line endings) is a line ending, not a segment. A tqdm bar that was never closed
leaves its last redraw unterminated, and whatever the process prints next (an atexit traceback's header
at exit) is glued to it: ``100%|####| 3/3 [00:00<00:00, 29.11it/s]Exception ignored in atexit ...``. The
bar is cut off such a segment, so the message is matched as the start of a line, as it was printed.
"""

from __future__ import annotations

import json
import re
from typing import Callable, FrozenSet, List, Optional, Tuple

from ..lazy_re import lazy
from ..rules.model import CUT_SHORT_GROUP

# CSI (colours, cursor moves), the control strings terminated by BEL or ST (OSC's hyperlinks and titles;
# APC, which Buildkite's agent writes before every line as its timestamp, "\x1b_bk;t=1704825683123\x07":
# buildkite/agent core/job_controller.go; DCS, PM, SOS), and the short two-byte escapes. No branch can
# consume b"\n", which keeps line numbering intact.
_ANSI = lazy(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]_P^X][^\x07\x1b\n]*(?:\x07|\x1b\\)|[ -/]*[0-~])")
# The same CSI sequences as a paste shows them when ESC went through ``cat -v``, ``less`` or a terminal
# copy in caret notation: ``^[[36m``. "^[[" is never text of its own, so no branch can eat a word.
_CARET_CSI = lazy(rb"\^\[\[[0-?]*[ -/]*[@-~]")
# The same CSI sequences as rsyslog stores them: its EscapeControlCharactersOnReceive (on by default)
# writes each control byte as "#" and three octal digits, so ESC is "#033" ("gitlab-runner[1701482]:
# #033[0;33mWARNING: Job failed: exit code 137" in /var/log/syslog). "#033[" is never text of its own.
_RSYSLOG_CSI = lazy(rb"#033\[[0-?]*[ -/]*[@-~]")
_BOM = b"\xef\xbb\xbf"
_EMPHASIS = ("_", "*")
# tqdm's bar as it redraws a line ("Epoch 1: 100%|####| 3/3 [00:00<00:00, 29.11it/s]", or "3it [00:00,
# 29.11it/s]" without a total): the percentage or count, then the elapsed time in brackets.
_PROGRESS_BAR = lazy(
    r"(?:[^\r|]{0,80}: )?\s*(?:\d{1,3}%\|[^|\r]*\| *\S+/\S+|\d[\d.]*[kMGTP]?[A-Za-z]*) "
    r"\[(?:\d+:)?\d+:\d\d[^\]\r]*\]"
)
# The shell's xtrace (set -x): PS4's "+ ", once per level of nesting ("++ " in a command substitution),
# before the command it is about to run. The command's words are not what it printed. A banner drawn
# with "+" (pytest-timeout's "+++++ Timeout +++++") ends with its "+" and is no command.
_XTRACE = lazy(r"\+{1,8} (?=\S)")
# Markdown's quote marks, one level or several ("> > "); never ">>> " (a REPL prompt) or ">" alone.
_QUOTE = lazy(r"(?:> )+")
# Nix's failed build: "error: builder for '/nix/store/...drv' failed with exit code 1;" then "last 10 log
# lines:" and each line of the build's log behind "> " (NixOS/nix src/libstore/build/derivation-goal.cc,
# BuildError's message), the message's lines indented under "error: " (google/flax#2554: a pytest short
# summary's FAILED lines and verdict read "       > FAILED tests/x.py::T::t").
_NIX_LOG_LINE = "       > "
# The same behind a prefix that took some of its blanks (torchrun --tee's "[default0]:" takes one).
_NIX_BEHIND_PREFIX = lazy(r" {1,7}> (?=\S)")
# A Kubernetes container log file's stream and whether the line is whole or a part of a longer one,
# after its stamp (the CRI format: "... stderr F ", containerd's stamp as GitHub's, CRI-O's +00:00).
_CRI_STREAM = r"(?:std(?:out|err) [FP] )?"
# A GitLab job log's stream after its stamp when FFRUNNER_STAMPS is on: the stream's number, O(ut) or E(rr),
# and "+" on a line that continues the one before ("2024-06-11T14:25:33.123456Z 00O+ ").
_GITLAB_STREAM = r"(?:[0-9a-f]{2}[OE]\+? )?"
# Python logging's level after its asctime ("%(asctime)s %(levelname)-8s %(message)s", "%(asctime)s
# [%(levelname)s] %(message)s"); a WARNING record keeps its level, as in the cookbook's format below.
# "%(levelname)-8s" pads the name to 8 columns: exactly that padding goes, so a traceback keeps its indent.
# Ray's format goes on with "file.py:N -- " (its plain handler's "%(asctime)s\t%(levelname)s
# %(filename)s:%(lineno)s -- %(message)s", a blank for the tab once pasted): the level stays with the rest
# of that prefix, which Ray's rules read ("ERROR tune_controller.py:1331 -- Trial task failed ...").
# Nor is pytest's short-summary "ERROR tests/t.py::test_x - ..." a level, behind a stamp another logger
# put before GitHub's ("Dec 05 01:50:10 2024-01-09T18:41:23.1Z ERROR t.py::test_x - ...").
_LOGGING_LEVEL = (
    r"(?:(?:(?:DEBUG|ERROR) {4}|INFO {5}|(?:DEBUG|INFO|ERROR|CRITICAL) |\[(?:DEBUG|INFO|ERROR|CRITICAL)\] )"
    r"(?![\w.-]+:\d+ -- |[\w./\\-]+\.py(?:::|\s|$)))?"
)
# GitHub's stamp.
_STAMP = rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z " + (_CRI_STREAM + _GITLAB_STREAM).encode()
RUNNER_STAMP = lazy(_STAMP)
# torchrun's --tee/--log-line-prefix and recent torch print "[rank3]:" before every line of a rank. A paste
# can lose the line's first byte, "[" ("rank0]:Traceback (most recent call last):", torchtitan#3065): no
# other line starts with "rank0]:".
_RANK = lazy(r"\[?rank(\d+)\]: ?")
# Intel's PSM3 (libfabric's psm3 provider) and PSM2 print their errors after the process's label and a
# blank: "%s: %s\n" (psm_error.c:83, psm3_get_mylabel()), their debug macros "%s.%s: " with the program's
# name ("rank2.python: Reading from remote process' memory failed"). PSM3 makes the label "%s:rank%lu"
# from the host and the launcher's rank (PMI_RANK, OMPI_COMM_WORLD_RANK, torchrun's RANK, SLURM_PROCID:
# libfabric prov/psm3/psm3/utils/utils_debug.c, psm3_init_mylabel); a build seen in the field prints
# "rank5: " alone (yao-matrix/mblog's FSDP run). The rank is what torch's "[rank5]:" is. Not a pdsh host
# (``_LOGGER_PREFIX``'s host group): no host name is "rank" and digits, and the host form has two colons.
# PSM3's debug macros put the time before the label, "[%lu.%09lu] " (PSM3_TIME_FMT, utils_debug.h).
_PSM_LABEL = lazy(r"(?:\[\d+\.\d{9}\] )?(?:[A-Za-z\d][\w.-]*:)?rank(\d+)(?:\.[A-Za-z_][\w.-]*)?: (?=\S)")
_PSM_LABEL_END = 96  # where "rank" may end in a line that starts with a PSM label (a host name is short)
# Ray's log deduplication: the driver prints a line that other workers repeated within its window once
# more, with how often (ray python/ray/_private/ray_logging/__init__.py, DedupState.formatted:
# line + " [repeated {count}x across cluster]" + _warn_once(), the first time followed by
# " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see
# https://docs.ray.io/... for more options.)"). The words are the worker's; the count is Ray's.
_RAY_REPEATED = lazy(
    r" \[repeated \d+x across cluster\](?: \(Ray deduplicates logs by default\.[^()]*\))?$"
)
_RAY_REPEATED_END = ("cluster]", "options.)")
# pdsh's "host: " before each line of a node: an IPv4 address, or a lower-case host name ending in a
# digit ("worker-1", "gpu003"), which no exception's or logger's name is. Not a shared library's soname:
# the dynamic loader's "libmlx5.so.1: undefined symbol: ..." (glibc's dlerror) names the library, and a
# terminal's cut in "/lib/x86_64-linux-gnu/l" / "ibmlx5.so.1: undefined symbol" leaves one at a row's start.
_HOST = r"(?:\d{1,3}(?:\.\d{1,3}){3}|(?![a-z\d.-]*\.so\.\d)[a-z][a-z\d.-]*\d)"
# Other loggers' line prefixes (see the module docstring); each alternative must consume some text.
_LOGGER_PREFIX = lazy(
    # syslog, journald: the host, then the program with its pid ("python3[1234]: ") or the kernel's; the
    # stamp alone before a message ("Dec 05 01:50:10 CUDA error: ...", "... Worker-2 exitcode: -15", as
    # moreutils' ts prints) names no host and program
    # (journalctl's short, short-precise, short-iso and short-iso-precise, rsyslog's RFC 3339 file format);
    # a tag without a pid (logger -t train) only after a host name as pdsh's (below): "CUDA error: " is none;
    # journalctl's month is strftime's %b, in the reader's locale ("sie 28", "2月 21", "déc. 05") when a host
    # and program follow
    r"(?:(?:(?:[^\W\d_]{2,5}\.?|1?\d[月월]) [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) "
    r"(?:[\w.-]+ (?:[\w./@-]+\[\d+\]|kernel)|" + _HOST + r" [\w./@-]+): "
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)? "  # the same stamp alone (CircleCI, old PyTorch CI)
    # loguru's default format, "2024-01-09 18:41:23.123 | ERROR    | train:main:42 - " (loguru/_defaults.py)
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \| (?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL) *\| "
    r"[\w.<>-]+:[\w.<>-]+:\d+ - "
    # a bare date-time, and a container log's or GitLab's stream after it; an ISO one and a colon (pm2's
    # and stampy's; TensorFlow's C++ logging has a space before its time, and its level after: kept below);
    # Hugging Face's examples' "%m/%d/%Y %H:%M:%S"
    r"| *\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)? "
    + _CRI_STREAM + _GITLAB_STREAM + _LOGGING_LEVEL +
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?: "
    r"|\d\d/\d\d/\d{4} \d\d:\d\d:\d\d "
    # what logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s" (the logging cookbook's) and
    # "%(asctime)s - %(levelname)s - %(name)s - " (transformers' and accelerate's examples) leave after it;
    # a WARNING record keeps its level: a traceback under it was logged and carried on past (the marker
    # python-logged-warning-traceback reads it)
    r"|- (?:[\w.<>-]+ - )?(?:DEBUG|INFO|ERROR|CRITICAL) - (?:[\w.<>-]+ - )?"
    # Hydra's job logging, "[2024-01-09 18:41:23,123][__main__][ERROR] - " (hydra/conf/hydra/job_logging)
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\]\[[^\]\s]+\]\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] - "
    r"|\d\d:\d\d:\d\d(?:\.\d+)?  ?"  # Jenkins' timestamper (one space or two; never more: indentation)
    r"|#\d+ \d+\.\d+ "  # docker buildkit's step and seconds
    # Python logging's bracketed stamp and level; Buildkite's stamp ends in Z ([2026-01-31T04:40:19Z]); a
    # bracketed time alone ("[18:41:23] ")
    r"|\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\] "
    r"(?:\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\] )?"
    # Taskcluster's live log: the worker's own lines and the task's, each after its source and stamp
    # ("[taskcluster 2017-01-25T23:31:13.787Z] ", generic-worker's TaskRun.Log; docker-worker's has a blank
    # for the T; "[task 2025-01-21T17:12:18.382Z] " and "[fetches ...] " from Firefox CI's run-task)
    r"|\[(?:taskcluster|task|fetches) \d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)\] "
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:(?=\S)"  # logging.basicConfig's default format
    r"|\[?[IWE]\d{3,4} \d\d:\d\d:\d+\.\d+ +(?:\d+ +)?[\w./-]+:\d+\]:? ?"  # glog, c10 (E321: no zero)
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] [\w./-]+:\d+\] "  # TensorFlow's and absl's C++ logging
    # mpirun's --tag-output (horovodrun's without the job), after --timestamp-output's date or alone
    r"|(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
    r"(?P<job>\[\d+(?:,\d+)?\])<std(?:out|err)>:"
    r"|\[[IWE] [\w./-]+:\d+\] "
    r"|[\w.-]+:\d+:\d+ \[\d+\] "  # NCCL's host:pid:tid [cudaDev]
    # vLLM's logger, the file in brackets (2025 releases) or bare (0.6.x: vllm-project/vllm#12510)
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+:\d+\] "
    r"|(?P<process>\((?:[\w.-]+ )*(?:rank=\d+ )?pid=\d+)(?:, ip=[\d.]+)?\) "  # Ray's, vLLM's "(Name pid=1) "
    r"|[\w.-]+ +\| "  # docker compose's "service  | "
    # torchrun --tee's "[default0]:" (role and *local* rank: not a rank), and the "[${rank}]:" that torch's
    # docs give as its log line prefix template (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE; torch/distributed/
    # elastic/agent/server/local_elastic_agent.py)
    r"|(?P<tee>\[(?:[A-Za-z_]\w*?)?\d+\]:) ?"
    # MPICH's and Intel MPI's mpiexec -prepend-rank (-l): "[3] " (hydra's prepend pattern "[%r] "), or a pid
    # tag before torch's "[rank3]:". Not a speaker: a log viewer's line numbers read the same ("[1824] ").
    # Bash's job report ("[1]    5606 segmentation fault") aligns its columns with more blanks.
    r"|\[\d+\] (?=\S)"
    # Determined's trial (or container) before each line of it, after the master's own stamp
    r"|(?:<> +\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] )?"
    r"(?P<trial>[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{8}) \|\| "
    r"|(?P<host>" + _HOST + r": )"  # pdsh's "host: " (DeepSpeed's multi-node launcher), then the line
    # kubectl logs --prefix: "[pod/NAME/CONTAINER] " (kubectl/pkg/cmd/logs/logs.go, addPrefixIfNeeded)
    r"|(?P<pod>\[pod/[a-z0-9][\w.-]*/[\w.-]*\]) "
    # srun --label: the task id, zero-padded to the widest ("%0*d: ", Slurm's
    # src/common/write_labelled_message.c, _write_label); ctest -V numbers its tests' lines the same way
    r"|(?P<task>\d{1,6}): )"
)
# The groups of the prefixes above that name the process a line came from (vLLM's "(VllmWorker rank=2
# pid=808339) ", Ray's "(pid=123) ", torchrun --tee's "[default0]:", mpirun's "[1,0]<stderr>:", pdsh's
# host): when several processes die at once their tracebacks interleave, and each block reads only its
# own process's lines.
_SPEAKER_GROUPS = ("process", "tee", "host", "job", "trial", "pod", "task")
# ctest -V numbers each line a test prints with the test's number, as srun --label does with the task's,
# before its "Test command:" line. Such a log keeps its numbers: what a test printed inside its own run
# ("2: Segmentation fault" from a death test that passed) is not matched as the run's own line.
CTEST_VERBOSE = b": Test command: "
# A plain run's progress (unittest without -v, pytest -q -s: one of ". E F s x u" per test, no newline)
# glued to the start of a child's line: ".Process worker-3:", "._queue.Empty", ".[E1202 ...",
# "EException in thread", "Fsubprocess.CalledProcessError: ". The line must start with a capitalised
# word, "_" or "[" after a dot, with a capitalised word after E F s x u, or with a qualified exception
# name after a dot, E or F (a lower-case s x u stays the name's first letter). So "Error", "Fatal",
# "ERROR:", "EOFError", "x86", "x_train.shape", glog's "F0325 ...", pytest's "E   " keep their letter,
# and a terminal's cut before ".cc:563] Read error" stays a cut. More progress then a blank or the end
# (pytest -q's "..F.. [ 50%]") is still progress.
_QUALIFIED_EXCEPTION = r"[A-Za-z_]\w*(?:\.\w+)*\.[A-Z]\w*(?::|$)"
_PROGRESS_GLUED = lazy(
    r"(?:[.EFsxu]*(?:[EFsxu](?=[A-Z][a-z])|\.(?=[A-Z_\[]))"
    r"|[.EFsxu]*?[.EF](?=" + _QUALIFIED_EXCEPTION + r"))"
    r"(?![.EFsxu]*(?:\s|$))"
)
_PROGRESS_CHARS = ".EFsxu"
_PROGRESS_RUN = lazy(r"[.EFsxu]*")
# A child's first word may begin with progress letters ("subprocess", "Exception"): the cut is looked
# for this far back from the end of the run only, so a line of a million "E"s costs one pass, not the
# square of its length.
_GLUED_BACKOFF = 16
# pytest's failure report marks each line of the exception it shows with "E" and the indentation of the
# failing source line ("E   subprocess.TimeoutExpired: ...", "E       RuntimeError: ..."; _pytest/_code/
# code.py, FormattedExcinfo.get_exconly with markall): the line after it is what the exception printed.
_PYTEST_FAIL_MARK = lazy(r"E {3,}(?=\S)")
# unittest -v's "test_m (mod.Class) ... " when what follows is a child's output, not the outcome. A test
# with a docstring prints "test_m (mod.Class)" alone, then the docstring's first line and " ... ": any text,
# so it is cut only before the header a dying child writes before its traceback (multiprocessing's "Process
# NAME:", threading's "Exception in thread NAME:", or the traceback itself), which then opens its block.
_CHILD_BLOCK_HEAD = (
    r"(?:Process|Exception in thread) [^:\s](?:[^:]*[^:\s])?(?::\d+)*:$|Traceback \(most recent call last\):$"
)
_UNITTEST_CONTINUED = lazy(
    r"\w+ \([\w.]+\) \.\.\. (?!(?:ok|FAIL|ERROR|skipped|expected failure|unexpected success)\b)(?=\S)"
    r"|\S.*? \.\.\. (?=" + _CHILD_BLOCK_HEAD + r")"
)

# pytest -v -s's node id ("tests/test_x.py::test_y[a-1] ", written before the test runs) when a child the
# test started continues that line with its header (pytest writes the outcome when the test ends).
_PYTEST_CONTINUED = lazy(r"[^\s:]+\.py::\S.*? (?=" + _CHILD_BLOCK_HEAD + r")")


# Docker's json-file driver: every object starts so, the log's text first (jsonlogbytes.go, MarshalJSONBuf).
_DOCKER_JSON = b'{"log":"'
# The log's text as a JSON string; an object cut inside it (a copy that stopped mid-line) holds no text.
_DOCKER_LOG = lazy(rb'\{"log":("(?:[^"\\\n]|\\.)*")')
# The kubelet's CRI format: RFC 3339 stamp (containerd's RFC3339Nano drops trailing zeros, CRI-O writes a
# local offset), the stream, then "P" (a piece) or "F" (a whole line or the last piece), and the text.
# The stream every line of either file names: json-file's '"stream":"stderr",' (before "time"), CRI's
# "stderr F " (before the text). One regex pass over a window costs about one bytes.find of a long needle.
_CONTAINER_STREAM = lazy(rb'std(?:out|err)(?:",| [FP] )')
_CRI_LINE = lazy(
    rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) std(?:out|err) [FP] "
)
# Above this many coloured lines in a window, one substitution over all of it beats editing each.
_ESCAPES_PER_LINE_EDIT = 64
_DENSE_PROBE = 32 * 1024  # bytes after a window's first escape in which more than twice that many is dense
# What ``strip_controls`` looks for before the ANSI escapes, as literals (NUL aside: memchr finds it):
# a caller with a multi-literal matcher (Hyperscan) says in one pass which occur in a window, where re's
# searches cost about 0.3-0.5 ms a MiB each.
CONTAINER_MARKERS = (b'stdout",', b'stderr",', b"stdout F ", b"stdout P ", b"stderr F ", b"stderr P ")
_CARET_MARKER = b"^[["
_RSYSLOG_MARKER = b"#033["
RARE_MARKERS = CONTAINER_MARKERS + (_CARET_MARKER, _RSYSLOG_MARKER)
MarkersIn = Callable[[bytes], FrozenSet[bytes]]  # raw -> which of RARE_MARKERS occur in it


def strip_controls(raw: bytes, markers_in: Optional[MarkersIn] = None) -> bytes:
    """Decode a container log's lines (``container_lines_decoded``), remove NUL bytes and ANSI escape
    sequences; never removes or adds a ``\\n``. ``markers_in``: tells which of ``RARE_MARKERS`` occur in
    ``raw`` in one pass (by default each is looked for on its own; the result is the same)."""
    found = markers_in(raw) if markers_in is not None else None  # None: look for each
    # One search for what every line of such a file holds, so that a line decodes whatever window it is in.
    if (_CONTAINER_STREAM.search(raw) is not None if found is None
            else not found.isdisjoint(CONTAINER_MARKERS)):
        raw, found = container_lines_decoded(raw), None  # each edit can make a marker: look again after it
    if b"\x00" in raw:
        raw, found = raw.replace(b"\x00", b""), None
    # One byte's search first: memchr skims a window for it, where "^[[" costs a pass as slow as the
    # Hyperscan pass (its last byte, "[", is on most lines of NCCL's chatter).
    if b"^" in raw and (_CARET_MARKER in raw if found is None else _CARET_MARKER in found):
        raw, found = _CARET_CSI.sub(b"", raw), None
    # memchr for "#" first; where "#" is common (tqdm's bars), re's search for "#033[" is about twice as
    # fast as bytes' ``in`` (0.5 against 1 ms a MiB).
    if b"#" in raw and (_RSYSLOG_CSI.search(raw) is not None if found is None else _RSYSLOG_MARKER in found):
        raw = _RSYSLOG_CSI.sub(b"", raw)
    at = raw.find(b"\x1b")
    if at == -1:
        return raw
    # Densely coloured text (pytest -v's PASSED on 40% of the lines, 9,000 escapes a MiB) goes to the one
    # substitution at once: editing its first coloured lines one by one before giving up cost about 0.15 ms
    # a MiB, an eighth of the substitution's own time.
    if raw.count(b"\x1b", at, at + _DENSE_PROBE) > 2 * _ESCAPES_PER_LINE_EDIT:
        return b"".join(_ANSI.split(raw))
    # A few coloured lines in a big window (pytest's PASSED among NCCL chatter): edit just those
    # lines, found with memchr; the regex engine would walk every byte of the window looking for ESC.
    parts = []
    pos = 0
    while at != -1:
        if len(parts) > 2 * _ESCAPES_PER_LINE_EDIT:
            # split and join rather than sub: the same bytes (the pattern has no group), about 20% less
            # time on densely coloured text (pytest -v's PASSED on 40% of the lines: 1.1 against 1.4 ms a
            # MiB), where sre's cost per escape is the scan's largest
            return b"".join(_ANSI.split(raw))
        start = raw.rfind(b"\n", pos, at) + 1 or pos
        end = raw.find(b"\n", at)
        if end == -1:
            end = len(raw)
        parts.append(raw[pos:start])
        parts.append(_ANSI.sub(b"", raw[start:end]))
        pos = end
        at = raw.find(b"\x1b", end)
    parts.append(raw[pos:])
    return b"".join(parts)


def container_lines_decoded(raw: bytes) -> bytes:
    """``raw`` with each Docker json-file line replaced by the text it holds and each CRI line without its
    prefix; as many ``\\n`` as ``raw`` has. A line that does not decode is kept as it is; never raises."""
    out = []
    for line in raw.split(b"\n"):
        text = _docker_text(line) if line.startswith(_DOCKER_JSON) else _cri_text(line)
        out.append(line if text is None else text)
    return b"\n".join(out)


def _docker_text(line: bytes) -> Optional[bytes]:
    """The text one json-file line holds (its line ending dropped), or None if it holds no object."""
    m = _DOCKER_LOG.match(line)
    if m is None:
        return None
    try:
        text = json.loads(m.group(1))
    except ValueError:  # an escape cut short, a lone surrogate the decoder refuses
        return None
    if text.endswith("\n"):
        text = text[:-1]
    # One object holds one line; another writer's inner line break becomes a segment (split_segments).
    return text.replace("\n", "\r").encode("utf-8", "surrogatepass")


def _cri_text(line: bytes) -> Optional[bytes]:
    """The text after a CRI line's prefix, or None if it is no CRI line."""
    m = _CRI_LINE.match(line) if line[:1].isdigit() else None
    return None if m is None else line[m.end():]


def starts_with_runner_stamp(raw: bytes) -> bool:
    """Whether ``raw`` starts with the GitHub runner's timestamp, which cleaning removes."""
    return raw[:1].isdigit() and RUNNER_STAMP.match(raw) is not None


# A record that reports no error, by its head: NCCL's "host:pid:tid [0] NCCL INFO " (src/debug.cc), a
# logger's level word ("INFO:root:", "- DEBUG - ", "[INFO] ", vLLM's "INFO 12-07 ...", "WARNING"), glog's
# "I1207 10:00:00", the warnings module's "file.py:13: UserWarning: " (warnings.formatwarning). The level
# must stand as a word within a prefix's reach of the line's start.
_ADVISORY = lazy(
    rb"(?:\d{4}-\d\d-\d\dT\S+ )?(?:[IW]\d{4} \d\d:\d\d:\d\d"
    rb"|[^\n]{0,120}?(?<![\w-])(?:NCCL (?:INFO|TRACE)|INFO|DEBUG|TRACE|WARNING)(?=[\s\]:|-])"
    rb"|[^\n]{0,200}?:\d+: [A-Z]\w*Warning: )"
)


def advisory(raw: bytes) -> bool:
    """Whether the line ``raw`` (one line, no ending) is a log record that reports no error: an
    informational one or a warning (``_ADVISORY``)."""
    return _ADVISORY.match(raw) is not None


def clean_stripped(raw: bytes, keep_progress: bool = False) -> Tuple[str, Optional[int]]:
    """Clean a line that already went through ``strip_controls``; see ``clean_line``.

    ``keep_progress``: keep a test runner's own text before what a line says (unittest -v's progress
    that a child's output continues, a plain run's progress letters, pytest's "E   " failure mark): test
    attribution reads the runner's text; rules match what follows it."""
    text, rank, _speaker = clean_speaking(raw, keep_progress)
    return text, rank


def clean_speaking(
    raw: bytes, keep_progress: bool = False, task_labels: bool = True, launcher_ranks: bool = True
) -> Tuple[str, Optional[int], Optional[str]]:
    """``clean_stripped``, and the prefix that named the process the line came from (``_SPEAKER_GROUPS``),
    None when no prefix did. ``task_labels``: whether "N: " is srun --label's task (``CTEST_VERBOSE``);
    ``launcher_ranks``: whether an MPI or Slurm launcher's label is the line's rank (``_launcher_rank``),
    which it is not once the log shows torchrun behind it (``torchrun_behind_launcher``)."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    while raw.endswith(b"\r"):
        raw = raw[:-1]
    if raw.startswith(_BOM):
        raw = raw[3:]
    if raw[:1].isdigit():
        m = RUNNER_STAMP.match(raw)
        if m is not None:
            raw = raw[m.end():]
            if raw.startswith(_BOM):
                raw = raw[3:]
    text = raw.decode("utf-8", "backslashreplace")
    if text[:1] == "+" and _XTRACE.match(text) and not text.rstrip().endswith("+"):
        return "", None, None  # set -x echoing a command (grep -E 'CUDA error: |Killed' train.log)
    if text.startswith(_NIX_LOG_LINE):
        text = text[len(_NIX_LOG_LINE):]
    if text.startswith("> "):
        text = text[_QUOTE.match(text).end():]  # type: ignore[union-attr]
    if text[:1] == "`" or text[:1] in _EMPHASIS or text.rstrip(" \t").endswith("**"):
        text = text.rstrip(" \t")  # Markdown's markers close the words, not the blanks a paste left after
    if text.startswith("`"):
        # A line pasted into Markdown as code ("`Killed`", "```Traceback (most recent call last):").
        text = text.lstrip("`")
        if text.endswith("`"):
            text = text.rstrip("`")
    elif text[:1] in _EMPHASIS or text.endswith("**"):
        text = _unemphasised(text)
    rank = None
    speaker = None
    glued = keep_progress  # a plain run's progress may precede a child's line once
    # An indented line (a traceback's frames and code, most of a log of logged tracebacks) has no prefix
    # to cut unless a stamp follows its blanks: _LOGGER_PREFIX's one alternative that starts with a
    # blank; the others, _RANK's and the progress marks start with a word's byte or a bracket. Trying
    # them cost about 2 us a line.
    indented = text[:1] == " " and not text.lstrip(" ")[:1].isdigit()
    unprefixed = text
    # e.g. srun's task, journald, [rankN]:, progress dots, torch's [E... file.cpp:N]
    for _ in range(0 if indented else 6):
        if not glued and text[:1] in _PROGRESS_CHARS:
            glued = True
            run = _PROGRESS_RUN.match(text).end()
            m = _PROGRESS_GLUED.match(text, max(0, run - _GLUED_BACKOFF)) or (
                _PYTEST_FAIL_MARK.match(text) if text[:4] == "E   " else None
            )
            if m is not None:
                text = text[m.end():]
                continue
        if text.startswith("[rank") or text.startswith("rank"):
            m = _RANK.match(text)
            if m is not None:
                rank = int(m.group(1))
                # the lost "[" put back: the rank's other lines name the same speaker
                speaker = (speaker or "") + ("" if text[:1] == "[" else "[") + m.group().rstrip()
                text = text[m.end():]
                continue
        if "rank" in text[:_PSM_LABEL_END]:
            m = _PSM_LABEL.match(text)
            if m is not None:
                rank = int(m.group(1))
                # one speaker for the label with or without the program's name; no bracket, so a launcher's
                # label before it is no torchrun behind that launcher (``torch_rank_behind_launcher``)
                speaker = (speaker or "") + "rank%d:" % rank
                text = text[m.end():]
                continue
        m = _LOGGER_PREFIX.match(text)
        if m is not None and m.end() < len(text) and (task_labels or m.group("task") is None):
            named = next((m.group(name) for name in _SPEAKER_GROUPS if m.group(name)), None)
            if named is not None:
                speaker = (speaker or "") + named
                if rank is None and launcher_ranks:
                    rank = _launcher_rank(m)
            text = text[m.end():]
            continue
        break
    if text[:1] == " " and text is not unprefixed:
        m = _NIX_BEHIND_PREFIX.match(text)  # a Nix build's tail behind a collector's prefix (journald)
        if m is not None:
            text = text[m.end():]
    if not keep_progress and " ... " in text:
        m = _UNITTEST_CONTINUED.match(text)
        if m is not None:
            text = text[m.end():]
    elif not keep_progress and text[-1:] == ":" and ".py::" in text:  # (every header ends in ":")
        m = _PYTEST_CONTINUED.match(text)
        if m is not None:
            text = text[m.end():]
    # Blanks after the last word: a console or a paste padded the line ("Error: Process completed with
    # exit code 1.   "); no program's wording ends in them.
    text = text.rstrip(" \t")
    if text.endswith(_RAY_REPEATED_END):
        m = _RAY_REPEATED.search(text)
        if m is not None:
            text = text[: m.start()].rstrip(" \t")
    return text, rank, speaker


def _launcher_rank(m: re.Match) -> Optional[int]:
    """The rank an MPI or Slurm launcher's line prefix names (``_LOGGER_PREFIX``'s ``job`` and ``task``
    groups), None for the other prefixes. Open MPI's --tag-output writes "[JOB,RANK]<stdout>:" (ORTE's
    and PRRTE's iof_base_output.c: ``"[%s,%s]<%s>:"``, the job id and the process's vpid, its rank in
    MPI_COMM_WORLD), horovodrun's Gloo launcher "[RANK]<stdout>:", and srun --label the task's number
    ("%0*d: ", Slurm's write_labelled_message.c), which is SLURM_PROCID, the rank torch and MPI take
    from it. A rank is what torch's "[rank3]:" is: one process's lines, so one event told by each rank
    folds into one finding naming the ranks, as it does under torchrun.

    The label is the launched process's number, which is the rank only when that process is the
    worker (``srun python train.py``, ``mpirun python train.py``). ``srun -l torchrun`` and ``mpirun -np
    NODES torchrun`` launch one agent per node: the label is then the node's, every worker and the agent
    of that node share it, and torch's "[rankN]:" names the worker (``torch_rank_behind_launcher``)."""
    job = m.group("job")
    if job:
        return int(job[job.rfind(",") + 1 if "," in job else 1:-1])
    task = m.group("task")
    return int(task) if task else None


# torch's rank ("[rank3]:", torchrun's log line prefix) or torchrun --tee's "[default3]:" right after an MPI
# or Slurm launcher's label in one line's speaker (``clean_speaking`` joins the prefixes' own text: the
# job group "[1,0]" or "[0]", the task group's digits): the launcher started torchrun, one per node.
_TORCH_BEHIND_LAUNCHER = lazy(r"(?:\[\d+(?:,\d+)?\]|(?<![\w\]=])\d{1,6})\[(?:rank|[A-Za-z_]\w*?)?\d+\]:")


# torchrun's own lines: its elastic agent's log records (run.py's banner, the agent's rendezvous and worker
# group, the launching side of its workers' processes: "torch/distributed/elastic/multiprocessing/api.py:
# 1002] failed (exitcode: -9) local_rank: 1 ..."), in torch's glog-like format or logging's default
# ("WARNING:torch.distributed.run:"). Only the process that runs torchrun's agent prints them, never a worker.
_TORCHRUN_AGENT_LINE = lazy(
    rb"torch/distributed/(?:run\.py:\d|elastic/(?:agent/server/[\w.]+:\d|multiprocessing/api\.py:\d))"
    rb"|:torch\.distributed\.(?:run|elastic\.agent\.server\.[\w.]+|elastic\.multiprocessing\.api):"
)


def torchrun_behind_launcher(speaker: Optional[str], raw: bytes) -> bool:
    """Whether a line (``raw``, and ``clean_speaking``'s speaker of it) shows that an MPI or Slurm launcher
    started torchrun, one agent a node: torch's rank behind the launcher's label
    (``torch_rank_behind_launcher``), or one of torchrun's own log records behind it, which a log shows
    before any worker speaks when the workers print nothing under torch's "[rankN]:" (a worker the OOM
    killer took)."""
    if speaker is None:
        return False
    if torch_rank_behind_launcher(speaker):
        return True
    return _TORCHRUN_AGENT_LINE.search(raw) is not None \
        and clean_speaking(raw)[1] != clean_speaking(raw, launcher_ranks=False)[1]


def torch_rank_behind_launcher(speaker: Optional[str]) -> bool:
    """Whether a line's speaker (``clean_speaking``'s third value) is torch's rank or torchrun's tee
    behind an MPI or Slurm launcher's label: from there on, the log's launcher labels name torchrun's
    node, not a rank (``_launcher_rank``)."""
    return speaker is not None and _TORCH_BEHIND_LAUNCHER.search(speaker) is not None


# A line that cleans to one segment that is empty or starts with a blank, told by its bytes alone: after
# GitHub's stamp it starts with a blank and its first word is no ASCII digit (an indented line:
# ``clean_speaking`` cuts no prefix off it), it is no Nix log line, and it holds no ``\r`` (a later segment
# starts anywhere) and no progress bar (checked by ``blank_led_run``: a bar is cut off its segment). No
# rule anchored at "^" before a non-blank matches it: a traceback's frame and source lines.
_BLANK_LED_LINES = lazy(
    rb"(?:(?:" + _STAMP + rb")? (?!      > )(?! *[0-9\x80-\xff])[^\r\n]{0,%d}\n)+" % 4000
)
# The same test at line starts alone (``blank_led_run``): ``_BLANK_LED_LINES`` reads every byte of the run
# through its class, a tenth of a scan of logged tracebacks; "\n" then the head of a line that is no such
# line is found by ``re``'s fast search for its literal "\n", and "\r" and long lines by ``bytes.find``.
_BLANK_LED_HEAD = rb"(?:" + _STAMP + rb")? (?!      > )(?! *[0-9\x80-\xff])"
_BLANK_LED_START = lazy(_BLANK_LED_HEAD)
_UNBLANK_LED_NEXT = lazy(rb"\n(?!" + _BLANK_LED_HEAD + rb")")
_BLANK_LED_LONG = 4000  # a line's bytes after its head, at most (``_BLANK_LED_LINES``)
_BAR_MARKS = (b"%|", b"it [")  # what ``split_segments`` looks for before it cuts a bar


# The same lines behind a process's prefix with nothing between its parts, up to three: torchrun --tee's
# "[default0]:" (``_LOGGER_PREFIX``'s tee group) and torch's "[rank3]:" (``_RANK``), which ``clean_speaking``
# cuts whole with one blank after it and names as the line's speaker, the prefix's own bytes. A second blank
# keeps the rest blank-led; after that blank it reads as an unprefixed run's line after its first. Every
# line of a run has the first line's prefix (the backreference). Blanks then "> " are no such line: behind
# a prefix they are a Nix build's mark (``_NIX_BEHIND_PREFIX``), cut.
_SPEAKER_UNITS = rb"(?:\[(?:rank\d+|(?:[A-Za-z_]\w*?)?\d+)\]:){1,3}"
_SPEAKER_LED_REST = rb"  (?! *> )(?! *[0-9\x80-\xff])[^\r\n]{0,%d}\n" % 4000
_SPEAKER_LED_LINES = lazy(
    rb"(?:" + _STAMP + rb")?(?P<speaker>" + _SPEAKER_UNITS + rb")" + _SPEAKER_LED_REST
    + rb"(?:(?:" + _STAMP + rb")?(?P=speaker)" + _SPEAKER_LED_REST + rb")*"
)


def speaker_led_run(buf: bytes, pos: int, limit: int) -> Tuple[int, Optional[str]]:
    """``blank_led_run`` for lines behind one process's prefix (``_SPEAKER_LED_LINES``): the end of the run
    from ``buf[pos]`` within ``buf[:limit]``, and the speaker ``clean_speaking`` gives each of its lines;
    ``(pos, None)`` when the line there is not one."""
    m = _SPEAKER_LED_LINES.match(buf, pos, limit)
    if m is None:
        return pos, None
    end = _unbarred(buf, pos, m.end())
    return (end, m.group("speaker").decode("ascii")) if end > pos else (pos, None)


def blank_led_run(buf: bytes, pos: int, limit: int) -> int:
    """The end of the run of whole lines from ``buf[pos]`` (a line's start), within ``buf[:limit]``,
    that each clean to blank-led text (see ``_BLANK_LED_LINES``; lines of at most about 4,000 bytes);
    ``pos`` when the line there is not one. A shorter run than the longest is no error: its caller
    reads the lines after it as usual."""
    if _BLANK_LED_START.match(buf, pos, limit) is None:
        return pos
    end = buf.rfind(b"\n", pos, limit) + 1  # the run's lines end within ``limit``
    unblank = _UNBLANK_LED_NEXT.search(buf, pos, end)
    if unblank is not None:
        end = unblank.end()
    cr = buf.find(b"\r", pos, end)
    if cr != -1:
        end = buf.rfind(b"\n", pos, cr) + 1
    # A line that may run past ``_BLANK_LED_LONG`` bytes (measured without its head, so a line a little
    # longer may still count) is read by ``_BLANK_LED_LINES`` from there: the lines before it are the run's.
    at = pos
    while end - at > _BLANK_LED_LONG:
        nl = buf.rfind(b"\n", at, at + _BLANK_LED_LONG + 1)
        if nl == -1:
            m = _BLANK_LED_LINES.match(buf, at, end)
            end = at if m is None else m.end()
            break
        at = nl + 1
    return _unbarred(buf, pos, end) if end > pos else pos


def _unbarred(buf: bytes, pos: int, end: int) -> int:
    """The end of the run ``buf[pos:end]`` cut before its first line that holds a progress bar's mark."""
    for mark in _BAR_MARKS:
        at = buf.find(mark, pos, end)
        if at != -1:
            end = max(pos, buf.rfind(b"\n", pos, at) + 1)
    return end


def _unemphasised(text: str) -> str:
    """A whole line pasted as Markdown emphasis (``_Killed_``, ``**Segmentation fault**``), or its start
    in bold, without the markers; a marker must touch the words, so pytest's ``_ test_x _`` header and
    glibc's ``*** Error ***`` stay."""
    for mark in ("**", "__", "*", "_"):
        inner = text[len(mark):-len(mark)]
        if (len(text) > 2 * len(mark) + 1 and text.startswith(mark) and text.endswith(mark)
                and inner[0] not in " *_" and inner[-1] not in " *_"):
            return inner
    # Only the start in bold: "**RuntimeError: CUDA out of memory.** Tried to allocate ..."
    for mark in ("**", "__"):
        close = text.find(mark, len(mark) + 1)
        if (close > 0 and text.startswith(mark) and text[len(mark)] not in " *_"
                and text[close - 1] not in " *_"):
            return text[len(mark):close] + text[close + len(mark):]
    # A bold span over several lines (CommonMark's emphasis may hold line breaks, and GitHub renders a
    # pasted traceback between "**" and "**" so): its opening starts one line, its closing ends a later
    # one, each the only "**" of its line ("**Traceback (most recent call last):" ... "_queue.Empty**").
    if text.count("**") == 1:
        if text.startswith("**") and text[2:3] not in ("", " ", "*", "_"):
            return text[2:]
        if text.endswith("**") and text[-3:-2] not in ("", " ", "*", "_"):
            return text[:-2]
    return text


def clean_line(raw: bytes) -> Tuple[str, Optional[int]]:
    """Return the text rules match for one raw line, and its rank: N from torch's ``[rankN]:`` prefix, else
    an MPI or Slurm launcher's label (``_launcher_rank``), else None.

    Decoding is lenient (invalid UTF-8 becomes ``\\xNN`` text); inner ``\\r`` are kept as segment
    separators (see the module docstring). Never raises on any input.
    """
    return clean_stripped(strip_controls(raw))


def split_segments(text: str) -> List[str]:
    """The ``\\r``-separated states of a cleaned line, each matched on its own; a progress bar another
    message was glued to is cut off that message."""
    segments = text.split("\r") if "\r" in text else [text]
    if "%|" in text or "it [" in text:
        segments = [_unglued(segment) for segment in segments]
    return segments


def _unglued(segment: str) -> str:
    bar = _PROGRESS_BAR.match(segment)
    return segment[bar.end():] if bar is not None and bar.end() < len(segment) else segment


def visible_excerpt(raw_stripped: bytes) -> str:
    """One line for an excerpt: the original text (timestamp kept) without its line ending."""
    if raw_stripped.endswith(b"\n"):
        raw_stripped = raw_stripped[:-1]
    while raw_stripped.endswith(b"\r"):
        raw_stripped = raw_stripped[:-1]
    return raw_stripped.decode("utf-8", "backslashreplace")


# What may follow a log's last word and still leave it the end (``last_content_line``): a blank line, a
# Markdown fence, a shell prompt (``(venv) user@host:~/dir$``, ``[user@host dir]$``, ``$``), and a
# traceback's head, frames and source lines that never reached their exception (another rank cut off).
_TRAILER = lazy(
    r"^\s*(?:(?:```|~~~)[\w+-]*|(?:\([\w.-]+\)\s*)?\[?[\w.-]+@[\w.-]+(?:[:\s][^\s$#%\]]*)?\]?\s?[$#%]|[$#%>])?\s*$"
)
# rich's panel (rich/traceback.py) is a head too, and the lines of its box ("│ file.py:12 in f │", the bottom
# border) are a cut traceback's under it, as indented frames are under Python's own head.
_TRAILER_HEAD = lazy(
    r"^(?:Traceback \(most recent call last\):|[╭┌]─+ Traceback \(most recent call last\) ─+[╮┐])\s*$"
)
_TRAILER_INDENTED = lazy(r"^(?:\s+\S|[│╰└])")
# Ray's log deduplicator prints a line other workers printed too once, then, at the end of its window,
# that line with " [repeated 3x across cluster]" and (the first time) its hint "(Ray deduplicates logs by
# default. Set RAY_DEDUP_LOGS=0 ...)" (ray/_private/ray_logging/__init__.py, LogDeduplicator). After an
# exception that ends the log such lines are the other workers' copies of the same traceback.
_RAY_COPY = lazy(rb"\[repeated \d+x across cluster\](?: \(Ray deduplicates logs by default\..*)?\r?$")
_TRACEBACK_SHAPED = lazy(
    r"^(?:\s*File \"[^\"]+\", line \d+|\s{3,}\S|\s{0,2}(?:[A-Za-z_]\w*\.)*[A-Z]\w*"
    r"(?:Error|Exception|Exit|Interrupt|Failure|Fault)(?::\s|\s*$)|Traceback \(most recent call last\):|"
    r"During handling of the above exception|The above exception was the direct cause)"
)
_TRAILER_LOOK_BACK = 400  # lines: a longer run of indented lines is content, not a cut traceback


def last_content_line(buf: bytes, first_line: int, last_line: Optional[int] = None) -> int:
    """The number of the last line of ``buf`` (its first line is ``first_line``) that says something
    (see ``_TRAILER``), or 0 when none does. Indented lines count as a cut traceback's only under its
    ``Traceback (most recent call last):`` head; looked for at most ``_TRAILER_LOOK_BACK`` lines back,
    from the end (the window is not split). Rows of a multi-line exception message that close its
    brackets count as the exception line's (``_message_start``). ``last_line``: the number of ``buf``'s
    last line when the caller has counted its lines already (the scanner has), else they are counted
    here."""
    end = len(buf) - 1 if buf.endswith(b"\n") else len(buf)
    # the number of the line that ends at ``end``
    last = last_line if last_line is not None else first_line + buf.count(b"\n", 0, end)
    found = _last_content(buf, first_line, last, end, copies_trail=True)
    if found < 0:  # Ray's copies of traceback lines, after no exception line of the log's own
        found = _last_content(buf, first_line, last, end, copies_trail=False)
    return found


def _last_content(buf: bytes, first_line: int, last: int, end: int, copies_trail: bool) -> int:
    """``last_content_line``'s reading from line ``last`` (ending at ``end``) up. ``copies_trail``: Ray's
    deduplicated copies of traceback lines (``_RAY_COPY``) at the end are trailers when the line that
    says something above them is an exception line, the traceback they copy; -1 when they were read as
    such and it is not."""
    pending = 0  # the last indented line seen, until a traceback's head above it says whose it is
    copies = False  # lines read as other workers' copies
    row_below = False  # the last row of a copy a terminal folded was read: its first row is the next
    for number in range(last, max(first_line, last - _TRAILER_LOOK_BACK + 1) - 1, -1):
        start = buf.rfind(b"\n", 0, end) + 1
        raw = buf[start:end]
        text = clean_line(raw)[0]
        end = start - 1
        if _TRAILER.match(text) and not row_below:
            continue
        if row_below:  # a copy's first row: the suffix went onto the row below it
            row_below = False
            if _TRACEBACK_SHAPED.match(text):
                continue
            return -1
        if copies_trail and not pending and b"x across cluster]" in raw \
                and _RAY_COPY.search(strip_controls(raw)):
            copies = True
            row_below = not _TRACEBACK_SHAPED.match(text)
            continue
        if copies and (pending or not _HEADLESS_EXC.match(text)):
            return -1
        if _TRAILER_HEAD.match(text):
            pending = 0
        elif _TRAILER_INDENTED.match(text):
            pending = pending or number
        else:
            return _ended(buf, first_line, last, pending or number)
    if copies or row_below:
        return -1
    looked_at_all = last - _TRAILER_LOOK_BACK + 1 <= first_line
    return pending or (0 if looked_at_all else last - _TRAILER_LOOK_BACK)


def _ended(buf: bytes, first_line: int, last: int, found: int) -> int:
    """``found`` (the last line that says something), or the exception line above it whose message
    it ends (``_message_start``, ``_wrapped_by_rich``)."""
    return _message_start(buf, first_line, last, found) or _wrapped_by_rich(buf, first_line, last, found) \
        or found


# rich prints the exception line under its panel (rich/traceback.py) and wraps it at the console's width, the
# panel's: "FileNotFoundError: [Errno 2] No such file or directory: " then "'/nonexistent/path'". A row
# continues the line above it when its first word would not have fitted after that line in the panel.
_RICH_BOTTOM = lazy(r"^[╰└]─+[╯┘]$")
RICH_WRAP_ROWS = 8  # the most rows of one wrapped exception line (also ``rich_wrapped_message``'s)
RICH_CORNERS = ("╰".encode(), "└".encode())  # looked for in the window's last _RICH_TAIL_BYTES first
_RICH_TAIL_BYTES = 16384


def _wrapped_by_rich(buf: bytes, first_line: int, last: int, found: int) -> int:
    """The number of the exception line right under a rich panel whose wrapped message ends at line
    ``found`` of ``buf`` (its first line is ``first_line``, its last ``last``), or 0."""
    tail = buf[-_RICH_TAIL_BYTES:]
    if found <= first_line or found > last or (RICH_CORNERS[0] not in tail and RICH_CORNERS[1] not in tail):
        return 0
    end = len(buf) - 1 if buf.endswith(b"\n") else len(buf)
    for _ in range(last - found):  # to the end of line ``found``
        end = buf.rfind(b"\n", 0, end)
    rows: List[str] = []  # from line ``found`` up
    for number in range(found, max(first_line, found - RICH_WRAP_ROWS - 1) - 1, -1):
        start = buf.rfind(b"\n", 0, end) + 1
        text = clean_line(buf[start:end])[0]
        end = start - 1
        if _RICH_BOTTOM.match(text):
            # "KeyError: " alone on its row, its message folded below: cleaning took the blank after ":"
            if len(rows) < 2 or not _MESSAGE_EXC.match(rows[-1] + " "):
                return 0
            return number + 1 if _rich_rows_continue(rows[::-1], len(text)) else 0
        rows.append(text)
        if start == 0:
            break
    return 0


def rich_wrapped_message(
    buf: bytes, first_line: int, exc_line: int, last_line: Optional[int] = None
) -> Optional[str]:
    """The whole exception line that rich wrapped onto the rows below line ``exc_line`` of ``buf`` (its
    first line is ``first_line``; ``last_line``: the number of its last line when counted already), its
    rows joined; None when ``exc_line`` is no exception line right under a rich panel with such rows, or
    lies more than ``_TRAILER_LOOK_BACK`` lines before ``buf``'s end. rich prints the line as one Text
    (rich/traceback.py:685-693, Traceback.__rich_console__: ``Text.assemble((f"{stack.exc_type}: ", ...),
    highlighter(stack.exc_value))``) that the console wraps at its width (rich/_wrap.py, divide_line): at
    a blank between words, dropped where it fell past the edge, or, for a word longer than the width,
    folded onto rows of exactly the width with no blank in them, starting on a row of its own. So a row as
    wide as the panel with no blank in it was folded mid-word and joins the next without one; any other
    row ended at a blank. The rows are those below whose first words did not fit on the row above
    (``_rich_rows_continue``): a line the program printed after the exception is no row of it."""
    end = len(buf) - 1 if buf.endswith(b"\n") else len(buf)
    last = last_line if last_line is not None else first_line + buf.count(b"\n", 0, end)
    if exc_line <= first_line or exc_line > last or last - exc_line > _TRAILER_LOOK_BACK:
        return None
    lines: List[str] = []  # from the log's last line up to the one above ``exc_line``
    for _ in range(min(last - exc_line, RICH_WRAP_ROWS + 1), last - exc_line):  # past the rows read
        end = buf.rfind(b"\n", 0, end)
    for _ in range(min(last - exc_line, RICH_WRAP_ROWS + 1) + 2):
        start = buf.rfind(b"\n", 0, end) + 1
        lines.append(clean_line(buf[start:end])[0])
        end = start - 1
        if start == 0:
            break
    lines.reverse()
    if len(lines) < 3 or not _RICH_BOTTOM.match(lines[0]) or not _MESSAGE_EXC.match(lines[1] + " "):
        return None
    width, rows = len(lines[0]), lines[1:2]
    for row in lines[2:]:
        if not row.strip() or _TRAILER.match(row) or not _rich_rows_continue(rows + [row], width):
            break
        rows.append(row)
    if len(rows) < 2:
        return None
    message = rows[0]
    for above, row in zip(rows, rows[1:]):
        folded = len(above) >= width and " " not in above
        message += ("" if folded else " ") + row.strip()
    return message


def _rich_rows_continue(lines: List[str], width: int) -> bool:
    """Whether each of ``lines`` after the first continues the one above it as rich wraps a line at
    ``width``: its first word would not have fitted after that line."""
    return not any(len(above.rstrip()) + 1 + len(row.split(" ", 1)[0]) <= width
                   for above, row in zip(lines, lines[1:]))


# An exception's message that spans lines: CPython prints ``str(exc)`` whole after "Name: "
# (Lib/traceback.py, TracebackException.format_exception_only), so a KeyError raised for a tensor key
# prints the tensor's rows under it ("KeyError: tensor([[ 0,  1,  2,  3],", then "        [ 4, ...]])"),
# and the log's last words are the rows, not the exception line. Read back at most _MESSAGE_LOOK_BACK
# lines for an exception line whose brackets the rows below it close, on the last row and not before.
_MESSAGE_LOOK_BACK = 64
# The most lines above a log's last line (so far) that ``last_content_line`` and ``headless_traceback`` read:
# the trailers looked back over, then a message's rows above the line found (``_message_start``, and rich's
# fewer, ``_wrapped_by_rich``). A scanner that reads them after this many of the lines before its window
# reads the same lines whatever its windows' size.
READ_BACK_LINES = _TRAILER_LOOK_BACK + _MESSAGE_LOOK_BACK + 1
_MESSAGE_EXC = lazy(r"^\s{0,2}(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault):\s")
# Literal searches over those lines first (a regex alternation tried at every byte took 2.4 ms a window of
# the 64 MB gpu-job bench; most windows end in no message).
_MESSAGE_NAMES = (b"Error: ", b"Exception: ", b"Exit: ", b"Interrupt: ", b"Failure: ", b"Fault: ")
_OPENERS, _CLOSERS = "([{", ")]}"


def _message_start(buf: bytes, first_line: int, last: int, found: int) -> int:
    """The number of the exception line whose multi-line message ends at line ``found`` of ``buf``
    (its first line is ``first_line``, its last ``last``), or 0 when ``found`` ends none."""
    if found <= first_line or found > last:
        return 0
    end = len(buf) - 1 if buf.endswith(b"\n") else len(buf)
    for _ in range(last - found):  # to the end of line ``found``
        end = buf.rfind(b"\n", 0, end)
    reach = end  # to the start of the highest line read below
    for _ in range(min(_MESSAGE_LOOK_BACK, found - first_line) + 1):
        reach = buf.rfind(b"\n", 0, reach)
        if reach < 0:
            break
    if all(buf.find(name, max(reach, 0), end) < 0 for name in _MESSAGE_NAMES):
        return 0
    rows: List[str] = []  # from line ``found`` up
    for number in range(found, max(first_line, found - _MESSAGE_LOOK_BACK) - 1, -1):
        start = buf.rfind(b"\n", 0, end) + 1
        text = clean_line(buf[start:end])[0]
        end = start - 1
        if number == found and not any(char in _CLOSERS for char in text):
            return 0  # the message's last row closes what its first line opened
        if number < found and _MESSAGE_EXC.match(text):
            return number if _closes_last(text, rows) else 0
        if _HEADLESS_FRAME.match(text) or _TRAILER_HEAD.match(text):
            return 0  # a traceback's frames are no exception's message
        rows.append(text)
        if start == 0:
            break
    return 0


def _closes_last(head: str, rows: List[str]) -> bool:
    """Whether the brackets ``head`` opens stay open over ``rows`` (bottom up) and close on the last."""
    depth = 0
    for i, text in enumerate([head] + rows[::-1]):
        for char in text:
            if char in _OPENERS:
                depth += 1
            elif char in _CLOSERS:
                depth -= 1
        if depth <= 0:
            return depth == 0 and i == len(rows)
    return False


# A traceback's last lines without its head (``headless_traceback``): the exception line (a class's name that
# ends like an exception's, indented at most two blanks as a page may leave it), the code and caret lines
# above it (three blanks or more) and its frames ("File ..., line N, in f"; faulthandler's have no comma).
_HEADLESS_EXC = lazy(
    r"^\s{0,2}(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault)(?::\s.*)?)\s*$"
)
_HEADLESS_FRAME = lazy(r'^\s*File "[^"]+", line \d+, in \S')
_HEADLESS_CODE = lazy(r"^\s{3,}\S")
# vLLM logs a caught exception's traceback with logger.exception, each line behind its prefix at ERROR
# ("(VllmWorker rank=0 pid=1) ERROR 04-30 16:21:27 [multiproc_executor.py:380] "), which the cleaner cuts,
# level and all. A paste of such frames that stops before the exception line still says error: the level
# (searched in the raw line: a runner's stamp or docker compose's "service  | " may come first).
_ERROR_LOGGED = lazy(rb"(?:^|[\s)|])ERROR \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./-]+:\d+\] ")
_CUT_AT_ERROR_FRAMES = 2  # frames logged at ERROR before the cut: one is a line, two are a stack


def headless_traceback(
    buf: bytes, first_line: int, last_line: int, rejoined: bool = False, buf_last: Optional[int] = None
) -> Optional[Tuple[int, int, str, str]]:
    """The traceback a log's last words are when its head is lost: ``(first frame's line, exception's line,
    exception, excerpt)`` when the last line that says something (``last_line``, ``last_content_line``'s)
    is an exception line with code lines and at least one frame above it, and no "Traceback (most recent
    call last):" head above those (a whole traceback is the rules'); else None. A paste that kept the last
    frames has no head, nor has Ray's log deduplication, which prints each repeated line once. ``rejoined``:
    ``buf`` is a wrapped window's view, whose empty lines are the rows of a line joined above them.
    ``buf_last``: the number of ``buf``'s last line when the caller has counted its lines already (the
    scanner has: counting them again was 0.03 of 0.21 s on 8 MB of short lines), else they are counted
    here."""
    lines: List[Tuple[int, str, str]] = []  # (number, cleaned, raw) from the exception line up
    end = len(buf) - 1 if buf.endswith(b"\n") else len(buf)
    last = buf_last if buf_last is not None else first_line + buf.count(b"\n", 0, end)
    frames, cut = 0, False
    for number in range(last, max(first_line, last - _TRAILER_LOOK_BACK + 1) - 1, -1):
        start = buf.rfind(b"\n", 0, end) + 1
        raw = buf[start:end]
        end = start - 1
        if number > last_line:
            continue
        text = clean_line(raw)[0]
        if rejoined and not raw:
            continue  # a row of the line joined above it (``attribution_view``)
        if number == last_line:
            m = _HEADLESS_EXC.match(text)
            if m is not None:
                exc = m.group("exc")
            elif not (_HEADLESS_FRAME.match(text) or _HEADLESS_CODE.match(text)):
                return None
            elif not _ERROR_LOGGED.search(raw):
                return None
            else:
                exc, cut = CUT_SHORT_GROUP, True  # frames logged at ERROR, the paste cut before the exception
                frames += 1 if _HEADLESS_FRAME.match(text) else 0
        elif cut and not _ERROR_LOGGED.search(raw):
            break  # the cut traceback is the run of lines the logger wrote at ERROR
        elif _HEADLESS_FRAME.match(text):
            frames += 1
        elif not _HEADLESS_CODE.match(text):
            if frames == 0 or _TRAILER_HEAD.match(text):
                return None
            break
        lines.append((number, text, raw.decode("utf-8", "backslashreplace").rstrip("\r")))
        if start == 0:
            break
    if frames < (_CUT_AT_ERROR_FRAMES if cut else 1):
        return None
    lines.reverse()
    first = next(n for n, text, _ in lines if _HEADLESS_FRAME.match(text))
    excerpt = "\n".join(raw for n, _, raw in lines if n >= first)
    return first, last_line, exc, excerpt


# When the kernel logged a line, by the stamp before its words (the line as the log shows it, after
# GitHub's stamp if any): dmesg's seconds since boot "[ 1399.140318] ", dmesg -T's "[Fri Aug 30 11:43:09
# 2024] ", syslog's and journalctl's "Apr 19 13:16:41 host kernel: " (its precise form with microseconds
# too; before a dmesg stamp, the dmesg stamp tells), and --time-format iso's
# "2025-01-25T10:34:54,859532+00:00".
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_KERNEL_CLOCK = lazy(
    r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z )?"
    r"(?:(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) (?P<hms>\d\d:\d\d:\d\d(?:\.\d+)?) \S+ kernel: )?"
    r"(?:\[ *(?P<boot>\d+\.\d+)\]"
    r"|\[[A-Z][a-z]{2} (?P<cmon>[A-Z][a-z]{2}) +(?P<cday>\d{1,2}) (?P<chms>\d\d:\d\d:\d\d) (?P<cyear>\d{4})\]"
    r"|(?P<iso>\d{4}-\d\d-\d\d)T(?P<ihms>\d\d:\d\d:\d\d(?:[.,]\d+)?))?"
)


def kernel_clock(line: str) -> Optional[Tuple[str, float]]:
    """The kind of a kernel line's stamp ("boot", "ctime", "iso", "journal": only stamps of one kind
    compare) and its seconds, or None when the line has none. Never raises."""
    m = _KERNEL_CLOCK.match(line)
    if m is None:
        return None
    if m.group("boot"):
        return "boot", float(m.group("boot"))
    if m.group("chms"):
        year, day = int(m.group("cyear")), int(m.group("cday"))
        return "ctime", _seconds(year, m.group("cmon"), day, m.group("chms"))
    if m.group("iso"):
        year, month, day = (int(part) for part in m.group("iso").split("-"))
        return "iso", _seconds(year, _MONTHS[min(max(month, 1), 12) - 1], day, m.group("ihms"))
    if m.group("hms"):
        return "journal", _seconds(0, m.group("mon"), int(m.group("day")), m.group("hms"))
    return None


def _seconds(year: int, month: str, day: int, hms: str) -> float:
    """Seconds from a fixed origin of a calendar stamp (every month 31 days long: stamps a day apart or
    more stay at least a day apart; stamps of one day differ by their true distance)."""
    hours, minutes, seconds = hms.replace(",", ".").split(":")
    months = _MONTHS.index(month) if month in _MONTHS else 0
    days = year * 372 + months * 31 + day
    return ((days * 24 + int(hours)) * 60 + int(minutes)) * 60 + float(seconds)
