"""The loud, once-only notice a notebook shows when the accelerator it is about is missing.

The notebook then carries on with a CPU stand-in, so every chapter still runs top to bottom anywhere.
"""

from __future__ import annotations

import sys
from html import escape

from .backend import backends

_HOW_TO = {
    "gpu": "In Colab: Runtime > Change runtime type > Hardware accelerator: T4 GPU > Save, then Runtime > Run all.",
    "tpu": "In Colab: Runtime > Change runtime type > Hardware accelerator: v5e-1 TPU (or any TPU) > Save, "
           "then Runtime > Run all.",
}
_STAND_IN = {"gpu": "numpy", "tpu": "jax"}
_announced: set[str] = set()


def accelerator_backend(kind: str) -> str:
    """The backend to run a `kind` ('gpu' or 'tpu') chapter on here: the real one, or the CPU stand-in.

    When the accelerator is missing, announce it loudly once per session, with how to get one.
    """
    if not isinstance(kind, str) or kind not in _HOW_TO:
        raise ValueError(f"unknown accelerator kind {kind!r}; accepted: {', '.join(_HOW_TO)}")
    status = backends()
    if kind == "gpu" and status["cupy"].usable:
        return "cupy"
    if kind == "tpu" and status["jax"].usable and status["jax"].device_kind == "tpu":
        return "jax"
    if kind not in _announced:
        _announced.add(kind)
        reason = status["cupy"].detail if kind == "gpu" else f"JAX sees no TPU; it runs on {status['jax'].detail}"
        _show(kind, reason, _STAND_IN[kind])
    return _STAND_IN[kind]


def _show(kind: str, reason: str, stand_in: str) -> None:
    where = "the CPU" if kind == "gpu" else f"JAX on this machine's {backends()['jax'].device_kind.upper()}"
    title = f"No {kind.upper()} here: this notebook runs on {where} instead ({stand_in})."
    lines = [f"What we found: {reason}.", _HOW_TO[kind],
             f"Timings below are measured on {where}; the {kind.upper()}'s numbers are predictions from its "
             "published specs."]
    if "IPython" in sys.modules:
        from IPython import get_ipython
        from IPython.display import HTML, display

        if get_ipython() is not None:
            body = "".join(f"<p style='margin:4px 0'>{escape(line)}</p>" for line in lines)
            display(HTML(f"<div style='border:3px solid #d9534f;background:#fdf2f2;padding:10px 14px;"
                         f"border-radius:6px'><b style='font-size:1.2em'>&#9888; {escape(title)}</b>{body}</div>"))
            return
    print("!" * 80, f"!! {title}", *(f"!! {line}" for line in lines), "!" * 80, sep="\n", file=sys.stderr)
