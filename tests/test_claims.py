"""h.claim: the one way a chapter prints a fact that must hold (how notebooks carry it: test_colab_run.py)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import claim


def test_a_claim_prints_its_statement_and_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert claim("loops and NumPy agree", np.allclose([1.0], [1.0])) is None
    claim("the GPU was faster", False)
    assert capsys.readouterr().out == "loops and NumPy agree: True\nthe GPU was faster: False\n"


@pytest.mark.parametrize(("statement", "holds", "message"), [
    ("agree", 1, "needs True or False"), ("agree", "yes", "needs True or False"),
    ("agree", np.array([True]), "needs True or False"), ("", True, "non-empty string"), (None, True, "string")])
def test_a_claim_needs_a_statement_and_a_boolean(statement: object, holds: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        claim(statement, holds)
