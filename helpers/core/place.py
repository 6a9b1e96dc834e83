"""Where a notebook runs: Colab, Kaggle, Binder or a machine of the learner's own.

The series' look (style) picks a renderer by it, hardware() reports it and a recorded run stores it.
"""

from __future__ import annotations

import os
import sys


def where_we_run() -> str:
    """'Colab', 'Kaggle', 'Binder' or 'local'."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab"
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
        return "Kaggle"
    if os.environ.get("BINDER_LAUNCH_HOST") or os.environ.get("BINDER_REPO_URL"):
        return "Binder"
    return "local"
