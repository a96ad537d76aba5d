"""zsh's words for a death by signal name the signal, so what another line told first is one crash.

zsh prints its own message for every signal but SIGINT and SIGPIPE (Src/signames2.awk's table, Src/jobs.c
printjob): "zsh: abort", "illegal hardware instruction", "trace trap", and on Linux "IOT instruction"
for SIGABRT. A glog FATAL line (which aborts) followed by "zsh: abort", or faulthandler's "Fatal Python
error: Aborted" followed by "zsh: IOT instruction", is one crash told twice.
"""

from __future__ import annotations

import pytest

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_paths
from analyzer.scan.same_event import signal_of
from analyzer.scan.match import Match
from tests.scan.test_engine_helpers import ENGINES

BUILTIN = load_catalogue()

# zsh 5.9's messages (Src/signames2.awk) of the signals whose default action ends a process
ZSH_WORDS = [
    ("abort", "SIGABRT"), ("IOT instruction", "SIGABRT"), ("alarm", "SIGALRM"), ("bus error", "SIGBUS"),
    ("cpu limit exceeded", "SIGXCPU"), ("file size limit exceeded", "SIGXFSZ"),
    ("floating point exception", "SIGFPE"), ("hangup", "SIGHUP"), ("illegal hardware instruction", "SIGILL"),
    ("invalid system call", "SIGSYS"), ("killed", "SIGKILL"), ("quit", "SIGQUIT"),
    ("segmentation fault", "SIGSEGV"), ("terminated", "SIGTERM"), ("trace trap", "SIGTRAP"),
    ("user-defined signal 1", "SIGUSR1"), ("user-defined signal 2", "SIGUSR2"),
    ("virtual time alarm", "SIGVTALRM"), ("profile signal", "SIGPROF"),
]


@pytest.mark.parametrize("word, name", ZSH_WORDS)
def test_each_zsh_word_names_its_signal(word, name):
    (rule,) = [r for r in BUILTIN.rules if r.id == "zsh-crash-report"]
    match = Match(rule=rule, path="log", line=1, end_line=1, text="zsh: %s  python x.py" % word, excerpt="",
                  groups={"what": word, "command": "python x.py"}, seq=0)
    assert signal_of(match) == name


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("crash, shell", [
    # rbgirshick/py-faster-rcnn#912: glog's FATAL line, then zsh's job report of the abort it caused
    ("F0827 19:55:39.568928 17377 math_functions.cu:26] Check failed: status == CUBLAS_STATUS_SUCCESS (13 vs."
     " 0)  CUBLAS_STATUS_EXECUTION_FAILED", "[2]    17377 abort (core dumped)  ./tools/demo.py"),
    ("Fatal Python error: Aborted", "zsh: IOT instruction  python3 -X faulthandler -c "),
    ("Fatal Python error: Illegal instruction", "zsh: illegal hardware instruction  python3 -c "),
])
def test_a_crash_and_zshs_report_of_it_are_one_finding(tmp_path, engine, crash, shell):
    log = tmp_path / "terminal.log"
    log.write_text("loading the checkpoint\n%s\n\n%s\n" % (crash, shell))
    (finding,) = scan_paths([str(log)], BUILTIN, engine=engine)
    assert (finding.line, finding.severity) == (2, Severity.ERROR)


def test_a_trace_trap_alone_is_the_shells_finding(tmp_path):
    log = tmp_path / "terminal.log"
    log.write_text("attaching the debugger hook\nzsh: trace trap  python3 -c \n")
    (finding,) = scan_paths([str(log)], BUILTIN, engine="python")
    assert finding.rule == "zsh-crash-report" and finding.message.endswith("died: trace trap")
