"""`google.colab.output`: the one call the set-up cell makes, recorded so the run can tell it happened."""

from __future__ import annotations

#: How often the set-up cell asked for Colab's custom widget manager in this kernel.
widget_manager_requests = 0


def enable_custom_widget_manager() -> None:
    """On Colab this lets ipywidgets render; here there is nothing to render to."""
    global widget_manager_requests
    widget_manager_requests += 1
