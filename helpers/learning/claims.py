"""Facts a chapter states and checks as it runs ("loops and NumPy agree: True"), printed by one helper.

Every such line goes through `claim`, so the tests and CI can find each one in a notebook's outputs (by the
metadata key `CLAIM_KEY`) and fail when one of them printed False on some machine or package version.

    h.claim("loops and NumPy agree", np.allclose(c, a @ b))   # prints: loops and NumPy agree: True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

#: The key under which a claim's display output carries {"statement": ..., "holds": ...}.
CLAIM_KEY = "loops-to-tpus/claim"


def claim(statement: str, holds: Any) -> None:
    """Print `statement: True` (or False); `holds` must be a bool (NumPy's too). Returns nothing, so a claim on
    a cell's last line prints once.

    In a notebook the line is a display output tagged with CLAIM_KEY, so a run can be checked for false claims.
    """
    if not isinstance(statement, str) or not statement.strip():
        raise TypeError(f"claim() needs the statement as a non-empty string, got {statement!r}")
    if not isinstance(holds, bool | np.bool_):
        raise TypeError(f"claim({statement!r}, ...) needs True or False (e.g. np.allclose(...)), "
                        f"got {type(holds).__name__}: {holds!r}")
    holds = bool(holds)
    line = f"{statement}: {holds}"
    if _in_ipython():
        from IPython.display import display

        display({"text/plain": line}, raw=True, metadata={CLAIM_KEY: {"statement": statement, "holds": holds}})
    else:
        print(line)


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def problems(cells: Iterable[Any]) -> list[str]:
    """What a learner would see go wrong in executed notebook cells: an error output, a claim that printed False,
    a traceback on stderr, any other printed line ending in "False". The one rule every run of a chapter is judged
    by (the Colab-versions run, the solutions' run, the GPU suite)."""
    found = []
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            claimed = output.get("metadata", {}).get(CLAIM_KEY)
            text = output.get("text", "") if kind == "stream" else output.get("data", {}).get("text/plain", "")
            if kind == "error":
                found.append(f"cell {index}: {output.get('ename')}: {output.get('evalue')}")
            elif claimed is not None and not claimed["holds"]:
                found.append(f"cell {index}: claim printed False: {claimed['statement']}")
            elif kind == "stream" and output.get("name") == "stderr" and "Traceback" in text:
                found.append(f"cell {index}: a traceback on stderr: {text.strip().splitlines()[-1]}")
            else:
                found += [f"cell {index}: printed {line.strip()!r}" for line in "".join(text).splitlines()
                          if line.rstrip().endswith("False")]
    return found
