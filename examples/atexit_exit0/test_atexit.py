"""Tests pass, then an atexit handler raises; CPython prints the traceback and still exits 0.

This is how a distributed job that never shut down its process group "passes" in CI: the error only
appears after the test runner printed its verdict.
"""

import atexit


class FakeProcessGroup:
    """Stands in for a NCCL process group whose teardown fails after the tests are done."""

    def _prepare_to_exit(self):
        raise RuntimeError("NCCL communicator was aborted on rank 0 while destroying the process group")


_GROUP = FakeProcessGroup()
atexit.register(_GROUP._prepare_to_exit)


def test_forward():
    assert sum([1, 2, 3]) == 6


def test_backward():
    assert max([1, 5, 3]) == 5
