"""Facts about the project itself: the one place that holds the public repository URL, and the chapter map.

`python -m helpers notebooks sync` writes the badges, the Colab set-up cell and the README chapter map from
here; a test fails when a notebook or the README is out of step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The helpers package, and the clone of the repository around it (an installed package has no notebooks/ or
#: docs/ beside it); its CUDA C sources and data files.
PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
KERNELS = PACKAGE / "kernels"
DATA = PACKAGE / "data"

#: The public repository (the only place this URL is written by hand).
REPO_URL = "https://github.com/from-loops-to-tpus/from-loops-to-tpus"
BRANCH = "main"
#: The pip requirement Colab installs in each notebook's set-up cell.
DISTRIBUTION = "loops-to-tpus"


@dataclass(frozen=True)
class Chapter:
    """One notebook of the series, as listed in the README's chapter map."""

    file: str  # file name under notebooks/
    title: str
    promise: str  # one line: what the learner gets
    minutes: int  # to read it and run it, by the rule of helpers/book/chapter_time.py (a test keeps it so)
    accelerator: str | None = None  # "GPU" or "TPU": the Colab runtime the notebook asks for
    also_on: tuple[str, ...] = ()  # other accelerators it measures on when one is present (chapter 06: a GPU)
    exercise_minutes: int = 0  # for its exercises, by the same rule

    @property
    def uses(self) -> tuple[str, ...]:
        """Every accelerator ("GPU", "TPU") whose measurements the chapter shows when it is present: its Colab
        runtime's and `also_on`. The GPU suite, the Colab GPU image and `notebooks record` run these chapters."""
        return tuple(dict.fromkeys(((self.accelerator,) if self.accelerator else ()) + self.also_on))

    @property
    def time(self) -> str:
        """Its minutes as the chapter maps show them: '45 + 20 min' (reading and running + exercises)."""
        return f"{self.minutes} + {self.exercise_minutes} min"


#: Under every chapter map: what its times mean.
TIME_NOTE = ("Time: minutes to read and run the chapter + minutes for its exercises, by one rule applied to the stored "
             "notebook (the teacher guide, docs/teaching.md, says how: 'How long each chapter takes').")

CHAPTERS: tuple[Chapter, ...] = (
    Chapter("00_start_here.ipynb", "Start here",
            "The map of the series, what this machine has, and CPU vs GPU vs TPU in one page.", 30,
            exercise_minutes=20),
    Chapter("01_cpu_loops.ipynb", "CPU loops",
            "Matrix multiply as Python loops: count the FLOPs, measure them, see how far from peak we are.", 25,
            exercise_minutes=25),
    Chapter("02_vectorised_numpy.ipynb", "Vectorised NumPy",
            "The same work vectorised: SIMD, BLAS and threads, and the CPU roofline.", 65, exercise_minutes=25),
    Chapter("03_gpu_cupy.ipynb", "GPUs with CuPy",
            "NumPy code on a GPU by changing one import, what copies and launches cost, then your own CUDA kernels.",
            105, "GPU", exercise_minutes=60),
    Chapter("04_tpu_jax.ipynb", "TPUs with JAX",
            "JAX compiles array code; matmul in bfloat16 on the TPU's systolic array, one computation over 8 devices, "
            "and a matmul kernel of your own in Pallas.",
            90, "TPU", exercise_minutes=55),
    Chapter("05_training.ipynb", "Training a small network",
            "One network on handwritten digits, trained with NumPy, CuPy, JAX and Keras: accuracy, speed, and why.",
            80, "GPU", exercise_minutes=40),
    Chapter("06_when_to_use_which.ipynb", "When to use which",
            "Where accelerators lose: chains of steps, branches, small work, copies and serial parts; "
            "predict the winner and the bill.", 65, also_on=("GPU",), exercise_minutes=20),
    Chapter("07_make_it_fast.ipynb", "Make it fast",
            "Advanced, after 03: a matmul kernel from naive to register-blocked and onto the tensor cores, "
            "explained by counting what each warp does, predicted for real GPUs and measured against cuBLAS.",
            70, "GPU", exercise_minutes=60),
)


def chapters_using(accelerator: str) -> tuple[Chapter, ...]:
    """The chapters that measure on `accelerator` ("GPU" or "TPU") when it is present (Chapter.uses)."""
    return tuple(chapter for chapter in CHAPTERS if accelerator in chapter.uses)


def github_path(notebook: str) -> str:
    """'owner/repo/blob/branch/notebooks/<notebook>' as Colab's GitHub loader wants it."""
    owner_repo = REPO_URL.removeprefix("https://github.com/")
    return f"{owner_repo}/blob/{BRANCH}/notebooks/{notebook}"


def colab_url(notebook: str) -> str:
    """Open `notebook` from GitHub in Google Colab."""
    return f"https://colab.research.google.com/github/{github_path(notebook)}"


def binder_url(notebook: str) -> str:
    """Open `notebook` in JupyterLab on mybinder.org."""
    owner_repo = REPO_URL.removeprefix("https://github.com/")
    return f"https://mybinder.org/v2/gh/{owner_repo}/{BRANCH}?labpath=notebooks%2F{notebook}"


#: Set (to 1) in the kernels that store the notebooks' outputs (`notebooks execute`): an explorer
#: (helpers.figures.widgets) then also hands over its first figures under SNAPSHOT, which the upkeep turns into the
#: static picture a stored notebook shows. Here, not in widgets, so that the upkeep reads them without loading
#: ipywidgets and plotly.
STATIC_ENV = "LOOPS_TO_TPUS_STATIC"
SNAPSHOT = "application/vnd.loops-to-tpus.snapshot+json"


#: The extras Colab's set-up cell asks for: NVRTC, so chapter 03 compiles CUDA C on every runtime (Colab's CPU and
#: TPU runtimes have none).
COLAB_EXTRAS = ("nvrtc",)


def pip_requirement() -> str:
    """What Colab's set-up cell pip-installs: this package, with COLAB_EXTRAS, from the repository's main branch."""
    return f"{DISTRIBUTION}[{','.join(COLAB_EXTRAS)}] @ git+{REPO_URL}@{BRANCH}"
