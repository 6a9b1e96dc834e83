"""The Colab-versions run (tests/colab/run.py, run by .ci/run): what it counts as a failure, and its pins.

The run itself needs Python 3.13 and the package index, so CI runs it as its own step; these tests check the
judgements it makes on executed notebooks, on real claim outputs from a kernel.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from helpers import claims, project, upkeep

COLAB = Path(__file__).resolve().parent / "colab"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"colab_{name}", COLAB / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _load("run")
refresh = _load("refresh_pins")


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
    executed.cells.append(_afterwards(run.VENV / "lib" / "helpers" / "__init__.py"))
    assert run.problems(executed) == [
        "cell 1: claim printed False: the loop agrees with NumPy",
        "cell 2: printed 'all good: False'",
        "cell 3: ValueError: boom",
    ]


def test_the_run_fails_when_helpers_did_not_come_from_the_set_up_install() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), _afterwards(Path(upkeep.__file__), 0)])
    assert run.problems(nb) == [
        f"helpers were imported from {upkeep.__file__}, not from the environment the set-up cell installed into",
        "the set-up cell enabled Colab's widget manager 0 times, not once"]
    assert run.problems(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(run.AFTERWARDS)])) == [
        "the notebook did not run to its end"]


def test_an_upgraded_or_removed_preinstalled_package_fails_an_added_one_does_not() -> None:
    before = {"numpy": "2.1.3", "jax": "0.7.2", "keras": "3.13.2"}
    after = {"numpy": "2.5.5", "jax": "0.7.2", "nvidia-cuda-nvrtc-cu12": "12.9.86"}
    assert run.changed(before, after) == ["keras 3.13.2 -> removed", "numpy 2.1.3 -> 2.5.5"]


def test_the_set_up_cell_is_pointed_at_this_checkout() -> None:
    nb = nbformat.read(Path(__file__).resolve().parent.parent / "notebooks" / project.CHAPTERS[0].file, 4)
    setup = run.pointed_at_checkout(nb, "0123abc").cells[1].source
    assert f"@ git+file://{run.ROOT}@0123abc" in setup and project.REPO_URL not in setup
    with pytest.raises(run.Failed, match="expected one set-up cell"):
        run.pointed_at_checkout(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), "0123abc")


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


def test_the_stored_pins_are_exact_and_sourced() -> None:
    text = run.PINS.read_text(encoding="utf-8")
    pins = [line for line in text.splitlines() if not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s=]+", line) for line in pins)
    assert re.search(r"^# https://github.com/googlecolab/backend-info at commit [0-9a-f]{40} \(\d{4}-\d\d-\d\d\)",
                     text, re.MULTILINE)
    assert "# Refresh: " in text and run._python_version() == "3.13"
    names = {line.split("==")[0].lower() for line in pins}
    assert {"numpy", "jax", "jaxlib", "keras", "plotly", "ipywidgets", "scikit-learn", "ipykernel", "ipython",
            "jupyter_client", "nbformat"} <= names
