"""The Colab-versions run (tests/colab/run.py, run by .ci/run): what it counts as a failure, its images and pins.

The run itself needs Python 3.13 and the package index, so CI runs it as its own step (once per image); these
tests check the judgements it makes on executed notebooks, on real claim outputs from a kernel, which image runs
which chapters with which pins, and how refresh_pins.py writes the pins.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from helpers.book import upkeep
from helpers.book.solutions import with_solutions
from helpers.core import project
from helpers.learning import claims

COLAB = Path(__file__).resolve().parent / "colab"
ROOT = COLAB.parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"colab_{name}", COLAB / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


run = _load("run")
refresh = _load("refresh_pins")
TPU, GPU = run.IMAGES["tpu"], run.IMAGES["gpu"]


def _afterwards(helpers_file: Path, widgets: int = 1) -> nbformat.NotebookNode:
    text = json.dumps({"helpers": str(helpers_file), "widgets": widgets}) + "\n"
    return nbformat.v4.new_code_cell(run.AFTERWARDS, outputs=[nbformat.v4.new_output("stream", text=text)])


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """A notebook run in a real kernel: a true claim, a false one, a printed False, an error."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import helpers as h\nh.claim('two and two make four', 2 + 2 == 4)"),
        nbformat.v4.new_code_cell("h.claim('the loop agrees with NumPy', False)"),
        nbformat.v4.new_code_cell("print('all good: False')\nprint('fine: True')"),
        nbformat.v4.new_code_cell("raise ValueError('boom')"),
    ])
    NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("run"))}}).execute()
    return nb


def test_claims_carry_their_verdict_as_metadata(executed: nbformat.NotebookNode) -> None:
    outputs = [executed.cells[i].outputs[0] for i in (0, 1)]
    assert [o.data["text/plain"] for o in outputs] == ["two and two make four: True",
                                                     "the loop agrees with NumPy: False"]
    assert [o.metadata[claims.CLAIM_KEY] for o in outputs] == [
        {"statement": "two and two make four", "holds": True},
        {"statement": "the loop agrees with NumPy", "holds": False}]


def test_the_run_fails_on_false_claims_printed_false_and_errors(executed: nbformat.NotebookNode) -> None:
    executed.cells.append(_afterwards(TPU.venv / "lib" / "helpers" / "__init__.py"))
    assert run.problems(executed, TPU.venv) == [
        "cell 1: claim printed False: the loop agrees with NumPy",
        "cell 2: printed 'all good: False'",
        "cell 3: ValueError: boom",
    ]


def _check(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell("check()", outputs=[nbformat.v4.new_output("stream", name="stdout", text=text)])


def test_the_run_fails_on_a_filled_in_exercise_whose_check_does_not_pass() -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("def scale(): ..."), _check("✅ scale: right for every size tried\n"),
        nbformat.v4.new_code_cell("def add(): ..."), _check("❌ add: 3 elements differ\n"),
        nbformat.v4.new_code_cell("def mul(): ..."), _check("nothing\n"),
        _afterwards(TPU.venv / "lib" / "helpers" / "__init__.py")])
    assert run.problems(nb, TPU.venv, [1, 3, 5]) == [
        "cell 3: the solution above does not pass its check: ['❌ add: 3 elements differ']",
        "cell 5: the solution above does not pass its check: no verdict printed"]
    assert run.problems(nb, TPU.venv, [1]) == run.problems(nb, TPU.venv) == []


def test_the_tpu_image_runs_every_chapter_with_its_solutions_and_the_gpu_image_as_stored() -> None:
    for chapter in project.CHAPTERS:
        stored = nbformat.read(ROOT / "notebooks" / chapter.file, 4)
        filled, checks = run.with_solutions_filled_in(stored, TPU)
        assert checks == with_solutions(stored)[1] and len(checks) >= 2, chapter.file
        assert filled != stored and all(filled.cells[i] == stored.cells[i] for i in checks), chapter.file
        assert run.with_solutions_filled_in(stored, GPU) == (stored, [])
    with pytest.raises(run.Failed, match="exercise convention broken"):
        run.with_solutions_filled_in(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), TPU)


def test_the_run_fails_when_helpers_did_not_come_from_the_set_up_install() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), _afterwards(Path(upkeep.__file__), 0)])
    assert run.problems(nb, TPU.venv) == [
        f"helpers were imported from {upkeep.__file__}, not from the environment the set-up cell installed into",
        "the set-up cell enabled Colab's widget manager 0 times, not once"]
    unfinished = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(run.AFTERWARDS)])
    assert run.problems(unfinished, TPU.venv) == ["the notebook did not run to its end (its last cell printed '')"]


def test_text_an_earlier_cells_thread_prints_into_the_last_cell_does_not_hide_the_facts() -> None:
    """Seen in CI under load: the last cell's output held a line from elsewhere before the facts."""
    installed = TPU.venv / "lib" / "helpers" / "__init__.py"
    last = _afterwards(installed)
    last.outputs.insert(0, nbformat.v4.new_output("stream", name="stdout", text="\nlate text from a thread\n"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), last])
    assert run.problems(nb, TPU.venv) == []
    last.outputs.insert(0, nbformat.v4.new_output("stream", name="stdout", text="kernels agree: False\n"))
    assert len(run.problems(nb, TPU.venv)) == 1  # late text is judged as every other output is


def test_helpers_must_come_from_the_environment_of_the_image_that_runs() -> None:
    installed = TPU.venv / "lib" / "helpers" / "__init__.py"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), _afterwards(installed)])
    assert run.problems(nb, TPU.venv) == []
    assert run.problems(nb, GPU.venv) == [
        f"helpers were imported from {installed}, not from the environment the set-up cell installed into"]


def test_an_upgraded_or_removed_preinstalled_package_fails_an_added_one_does_not() -> None:
    before = {"numpy": "2.1.3", "jax": "0.7.2", "keras": "3.13.2"}
    after = {"numpy": "2.5.5", "jax": "0.7.2", "nvidia-cuda-nvrtc-cu12": "12.9.86"}
    assert run.changed(before, after) == ["keras 3.13.2 -> removed", "numpy 2.1.3 -> 2.5.5"]


def test_the_versions_are_the_environments_not_those_in_the_working_folder(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    (tmp_path / "planted.egg-info").mkdir()
    (tmp_path / "planted.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: planted\nVersion: 9\n")
    monkeypatch.chdir(tmp_path)  # as the checkout's own loops_to_tpus.egg-info lies in the folder CI runs from
    found = run.versions(Path(sys.executable))
    assert "planted" not in found and "pytest" in found


def test_the_set_up_cell_is_pointed_at_this_checkout() -> None:
    nb = nbformat.read(Path(__file__).resolve().parent.parent / "notebooks" / project.CHAPTERS[0].file, 4)
    setup = run.pointed_at_checkout(nb, "0123abc").cells[1].source
    assert f"@ git+file://{run.ROOT}@0123abc" in setup and project.REPO_URL not in setup
    with pytest.raises(run.Failed, match="expected one set-up cell"):
        run.pointed_at_checkout(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), "0123abc")


def test_the_chapters_come_from_the_commit_the_set_up_cell_installs() -> None:
    commit = run.head_commit()
    nb = run.read_chapter(GPU.chapters[0], commit)
    committed = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:notebooks/{GPU.chapters[0].file}"],
                               capture_output=True, text=True, check=True).stdout
    assert nb == nbformat.reads(committed, as_version=4)
    with pytest.raises(run.Failed, match=f"^commit {commit[:12]} has no notebooks/99_missing.ipynb: "):
        run.read_chapter(project.Chapter("99_missing.ipynb", "Missing", "none", 1), commit)


def test_a_missing_python_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("COLAB_PYTHON", "")
    with pytest.raises(run.Failed, match=re.escape("no Python 3.99 found (Colab's): install one")):
        run.find_python("3.99")
    monkeypatch.setenv("COLAB_PYTHON", sys.executable)
    assert run.find_python(f"{sys.version_info[0]}.{sys.version_info[1]}") == sys.executable


def test_a_failed_install_is_one_clear_line() -> None:
    with pytest.raises(run.Failed, match=r"^cannot install: .*(No such file|not found|error)"):
        run._run([sys.executable, "-c", "import sys; sys.exit('error: No such file: pins.txt')"], "cannot install")


def test_refresh_keeps_every_installable_pin_and_names_what_it_left_out() -> None:
    freeze = ("# generated\nnumpy==2.1.3\nlibtpu==0.0.21.1\njax==0.7.2\n"
              "torch @ https://download.pytorch.org/whl/cpu/torch-2.9.0.whl\nGDAL==3.8.4\n")
    text = refresh.pins(freeze, "3.13", "a" * 40, "2026-08-19")
    assert [line for line in text.splitlines() if not line.startswith("#")] == ["numpy==2.1.3", "jax==0.7.2"]
    assert "# python: 3.13" in text and f"at commit {'a' * 40} (2026-08-19)" in text
    assert "#   libtpu==0.0.21.1 (the TPU runtime library" in text
    assert "#   torch (installed on Colab from https://download.pytorch.org/whl/cpu/torch-2.9.0.whl)" in text
    assert "#   GDAL==3.8.4 (builds only against" in text


def _pins(text: str) -> dict[str, str]:
    """The pinned versions of a pins file's text, by lower-case name."""
    pins = [line for line in text.splitlines() if not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s=]+", line) for line in pins)
    return {name.lower().replace("_", "-"): version for name, version in (line.split("==") for line in pins)}


@pytest.mark.parametrize("image", [TPU, GPU], ids=["tpu", "gpu"])
def test_the_stored_pins_are_exact_and_sourced(image: run.Image) -> None:
    text = image.pins.read_text(encoding="utf-8")
    assert text.startswith(f"# Colab's {image.name.upper()} runtime, as Google publishes it: "
                           f"pip-freeze.{image.name}.txt of\n")
    assert re.search(r"^# https://github.com/googlecolab/backend-info at commit [0-9a-f]{40} \(\d{4}-\d\d-\d\d\)",
                     text, re.MULTILINE)
    assert "# Refresh: " in text and run.python_version(image.pins) == "3.13"
    assert {"numpy", "jax", "jaxlib", "keras", "plotly", "ipywidgets", "scikit-learn", "ipykernel", "ipython",
            "jupyter-client", "nbformat", "rich", "pycparser", "threadpoolctl"} <= set(_pins(text))


def test_the_gpu_pins_add_what_the_series_uses_on_a_gpu_to_the_base_both_runtimes_share() -> None:
    gpu, tpu = _pins(GPU.pins.read_text(encoding="utf-8")), _pins(TPU.pins.read_text(encoding="utf-8"))
    assert set(refresh.GPU_SERIES) == {"cupy-cuda12x", "cuda-pathfinder", "jax-cuda12-plugin", "jax-cuda12-pjrt",
                                       "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-cccl-cu12",
                                       "nvidia-cuda-nvcc-cu12"}
    assert set(gpu) - set(tpu) == set(refresh.GPU_SERIES)
    assert gpu["cupy-cuda12x"].split(".")[0] == "14" and gpu["jax-cuda12-plugin"] == gpu["jax-cuda12-pjrt"]
    assert gpu["jax-cuda12-plugin"] == gpu["jax"] == gpu["jaxlib"]
    assert not {"torch", "tensorflow", "cudf-cu12", "cuml-cu12", "rmm-cu12", "dask-cuda", "nvidia-cublas-cu12",
                "nvidia-cudnn-cu12", "libtpu"} & set(gpu)
    header = GPU.pins.read_text(encoding="utf-8").split("\n# Left out, the GPU runtime's other ")[1]
    assert all(f" {name}," in header for name in ("tensorflow", "cudf-cu12", "nvidia-cublas-cu12", "dask-cuda"))


TPU_FREEZE = "numpy==2.1.3\nlibtpu==0.0.21.1\njax==0.7.2\nchex==0.1.90\ntorch @ https://x.org/torch-2.9.0.whl\n"
GPU_FREEZE = ("# generated\nnumpy==2.1.3\njax==0.7.2\ntorch==2.11.0+cu128\ncupy-cuda12x==14.0.1\n"
              "cuda-pathfinder==1.6.0\njax-cuda12-plugin==0.7.2\njax-cuda12-pjrt==0.7.2\ntensorflow==2.20.0\n"
              "nvidia-cuda-nvrtc-cu12==12.8.93\nnvidia-cuda-runtime-cu12==12.8.90\n"
              "nvidia-cuda-cccl-cu12==12.9.27\nnvidia-cuda-nvcc-cu12==12.8.93\ncudf-cu12==26.2.1\nnvidia-cublas-cu12==12.8.4.1\n"
              "cucim-cu12 @ https://pypi.nvidia.com/cucim-cu12/cucim_cu12-26.2.1.whl\n")


def test_refresh_makes_the_gpu_pins_from_the_shared_base_and_the_series_gpu_packages() -> None:
    text = refresh.gpu_pins(GPU_FREEZE, TPU_FREEZE, "3.13", "a" * 40, "2026-08-19")
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        "numpy==2.1.3", "jax==0.7.2", "cupy-cuda12x==14.0.1", "cuda-pathfinder==1.6.0", "jax-cuda12-plugin==0.7.2",
        "jax-cuda12-pjrt==0.7.2", "nvidia-cuda-nvrtc-cu12==12.8.93", "nvidia-cuda-runtime-cu12==12.8.90",
        "nvidia-cuda-cccl-cu12==12.9.27", "nvidia-cuda-nvcc-cu12==12.8.93"]
    assert text.startswith("# Colab's GPU runtime, as Google publishes it: pip-freeze.gpu.txt of\n")
    assert "# python: 3.13" in text and f"at commit {'a' * 40} (2026-08-19)" in text
    assert "#   cupy-cuda12x (CuPy: chapters 03, 05, 06 and 07)" in text
    assert "#   torch==2.11.0+cu128 (a build from its maker's own index, +cu128, not on PyPI)" in text
    assert "# Left out, the GPU runtime's other 4 packages: " in text
    assert "#   cucim-cu12, cudf-cu12, nvidia-cublas-cu12, tensorflow\n" in text
    with pytest.raises(ValueError, match="pip-freeze.gpu.txt has no installable cupy-cuda12x: update GPU_SERIES"):
        refresh.gpu_pins(GPU_FREEZE.replace("cupy-cuda12x==14.0.1\n", ""), TPU_FREEZE, "3.13", "a" * 40, "2026")


def test_refresh_writes_both_pins_files_from_a_clone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clone = tmp_path / "backend-info"
    clone.mkdir()
    files = {"pip-freeze.tpu.txt": TPU_FREEZE, "pip-freeze.gpu.txt": GPU_FREEZE,
             "os-info-tpu.txt": "Ubuntu 22.04.5 LTS\nPython 3.13.15\n", "os-info-gpu.txt": "Python 3.13.15\n"}
    for name, text in files.items():
        (clone / name).write_text(text, encoding="utf-8")
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(clone), *command], check=True)
    monkeypatch.setattr(refresh, "PINS", tmp_path / "pins-tpu.txt")
    monkeypatch.setattr(refresh, "GPU_PINS", tmp_path / "pins-gpu.txt")
    assert refresh.main([str(clone)]) == 0
    assert _pins((tmp_path / "pins-tpu.txt").read_text(encoding="utf-8")) == {"numpy": "2.1.3", "jax": "0.7.2",
                                                                               "chex": "0.1.90"}
    assert "cupy-cuda12x" in _pins((tmp_path / "pins-gpu.txt").read_text(encoding="utf-8"))


def test_each_image_runs_its_chapters_with_its_pins_in_its_own_environment() -> None:
    assert run.choose_image([]) is TPU and run.choose_image(["--image", "tpu"]) is TPU
    assert run.choose_image(["--image", "gpu"]) is GPU and run.choose_image(["--image=gpu"]) is GPU
    assert TPU.chapters == project.CHAPTERS and TPU.pins.name == "pins-tpu.txt" and TPU.venv == ROOT / ".colab-venv"
    assert [chapter.file for chapter in GPU.chapters] == ["03_gpu_cupy.ipynb", "05_training.ipynb",
                                                          "06_when_to_use_which.ipynb", "07_make_it_fast.ipynb"]
    assert GPU.pins.name == "pins-gpu.txt" and GPU.venv == ROOT / ".colab-venv-gpu"
    # No GPU and no CUDA libraries here: JAX's CUDA plugin skips only its check of the libraries' versions.
    assert TPU.kernel_env == {} and GPU.kernel_env == {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}
    # CI's one run of every chapter's solutions is the TPU image's (tests/test_notebooks.py leaves them out).
    assert TPU.solutions and not GPU.solutions


@pytest.mark.parametrize("argv", [["--image", "cpu"], ["--image"], ["gpu"]])
def test_a_bad_command_line_is_one_clear_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("colab run: FAILED: ")
    assert "usage: tests/colab/run.py [-h] [--image {gpu,tpu}]" in err
    if argv[-1] == "cpu":
        assert "argument --image: invalid choice: 'cpu'" in err


def test_ci_runs_the_chapters_with_both_images_versions() -> None:
    """The TPU image in the foreground (its status kept until the background ends), the GPU image in the background."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert ".venv/bin/python tests/colab/run.py || status=$?" in lines
    assert ".venv/bin/python tests/colab/run.py --image gpu" in lines
