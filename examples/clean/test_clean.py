"""A test run that passes and exits cleanly: the guard must call it a pass."""


def test_addition():
    assert 1 + 1 == 2


def test_matmul_shape():
    rows, inner, cols = 4, 3, 5
    assert (rows, cols) == (4, inner + 2)
