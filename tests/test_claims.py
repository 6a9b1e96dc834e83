"""h.claim: the one way a chapter prints a fact that must hold (how notebooks carry it: test_colab_run.py)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import claim
from helpers.learning import claims


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


def _output(kind: str, **fields: object) -> dict:
    return {"output_type": kind, **fields}


def test_problems_finds_what_a_learner_would_see_go_wrong_and_nothing_else() -> None:
    cells = [
        {"outputs": [_output("display_data", data={"text/plain": "agree: True"},
                             metadata={claims.CLAIM_KEY: {"statement": "agree", "holds": True}})]},
        {"outputs": [_output("display_data", data={"text/plain": "JAX and NumPy agree: False"},
                             metadata={claims.CLAIM_KEY: {"statement": "JAX and NumPy agree", "holds": False}})]},
        {"outputs": [_output("stream", name="stdout", text="fine: True\nsame answer: False\n")]},
        {"outputs": [_output("stream", name="stderr", text="Traceback (most recent call last):\nKeyError: 'x'\n")]},
        {"outputs": [_output("error", ename="ValueError", evalue="boom", traceback=[])]},
        {"outputs": [_output("execute_result", data={"text/plain": "False"}),
                     _output("stream", name="stderr", text="a warning, no traceback\n")]},
        {"cell_type": "markdown"},
    ]
    assert claims.problems(cells) == [
        "cell 1: claim printed False: JAX and NumPy agree",
        "cell 2: printed 'same answer: False'",
        "cell 3: a traceback on stderr: KeyError: 'x'",
        "cell 4: ValueError: boom",
        "cell 5: printed 'False'",
    ]
