"""An ``error_at_end`` rule's notice is an error when it is its log's last word (json-log-exception: the
exception record nothing followed, json-log-formatter#17), and stays a notice when the program went on."""
from __future__ import annotations

import io

from analyzer.model import Severity
from analyzer.rules.loader import load_catalogue
from analyzer.scan import scan_sources
from analyzer.scan.sources import Source

REAL = load_catalogue()
# the record json-log-formatter's issue 17 quotes
RECORD = (
    '{"message": "Got exception on main handler", "time": "2021-01-22T09:22:46.028294", "exc_info": '
    '"Traceback (most recent call last):\\n  File \\"C:\\\\Users\\\\LLIU82\\\\localtest\\\\test.py\\", '
    'line 9, in <module>\\n    run_my_stuff()\\nNameError: name \'run_my_stuff\' is not defined"}'
)
NEXT = '{"message": "retrying the handler", "time": "2021-01-22T09:22:47.000001"}'


def severities(text: str):
    source = Source("log", lambda: io.BytesIO(text.encode("utf-8")))
    return [(f.rule, f.severity) for f in scan_sources([source], REAL, engine="python")]


def test_an_exception_record_that_ends_the_log_is_the_death_of_the_program():
    assert ("json-log-exception", Severity.ERROR) in severities(RECORD + "\n")
    assert ("json-log-exception", Severity.ERROR) in severities(RECORD + "\n\n```\n$ \n")


def test_an_exception_record_the_program_went_on_from_stays_a_notice():
    assert severities(RECORD + "\n" + NEXT + "\n") == [("json-log-exception", Severity.NOTICE)]


def test_an_error_that_already_tells_the_failure_keeps_the_record_a_notice():
    found = severities(RECORD + "\n##[error]Process completed with exit code 1.\n")
    assert ("json-log-exception", Severity.NOTICE) in found
