"""helpers.core.validate: the shared checks on sizes and counts."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.core.validate import positive_int


def test_whole_numbers_from_one_are_returned_as_int() -> None:
    assert positive_int("n", 1) == 1
    got = positive_int("n", np.int64(7))
    assert got == 7 and type(got) is int


@pytest.mark.parametrize("value", [0, -3, 2.0, True, "8", None])
def test_anything_else_is_refused_naming_the_argument(value: object) -> None:
    with pytest.raises(ValueError, match=rf"^rows must be a positive integer \(a matrix dimension\), got {value!r}$"):
        positive_int("rows", value, "a matrix dimension")
