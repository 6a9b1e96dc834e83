"""A stand-in for Colab's `google.colab`, for the Colab-versions run (tests/colab/run.py).

Colab's kernel imports `google.colab` before the first cell, and the series' set-up cell and plots look for it
there. This stand-in offers only what the series calls. `google/` has no __init__.py on purpose: it merges with
the installed `google.*` packages (protobuf, auth, ...) as a namespace package, as on Colab.
"""

from . import output

__all__ = ["output"]
