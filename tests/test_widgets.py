"""helpers.figures.widgets.explorer: it measures at creation, re-measures on every change, and rejects bad arguments."""

from __future__ import annotations

import ipywidgets
import pytest

from helpers.core import project
from helpers.core.backend import backends
from helpers.figures import widgets

TINY = dict(sizes=(8, 16), budget=0.01)


def test_explorer_measures_at_creation_and_on_every_change():
    ex = widgets.explorer("matmul", backends=("numpy",), size=8, **TINY)
    assert isinstance(ex, ipywidgets.VBox)
    assert ex.size_slider in ex.children[1].children and ex.plot_output in ex.children
    assert ex.latest["numpy"].n == 8 and ex.latest["numpy"].dtype == "float32"
    assert ex.latest["numpy"].flops == 2 * 8**3
    assert ex.message.value.startswith("n=8, float32") and "GFLOP/s" in ex.message.value
    assert len(ex.figures) == 2  # GFLOP/s bars and the running log-log chart
    assert ex.figures[1].layout.xaxis.type == "log"
    assert repr(ex).startswith("<explorer: matmul, n 8 to 16, float32/float64, python/numpy")  # no numbers saved

    ex.size_slider.value = 16  # what dragging the slider does
    assert ex.latest["numpy"].n == 16
    assert ex.message.value.startswith("n=16, float32")
    assert sorted(t.n for t in ex.timings) == [8, 16]
    assert list(ex.figures[1].data[0].x) == [8, 16]  # the running chart keeps every point

    ex.dtype_toggle.value = "float64"
    assert ex.latest["numpy"].dtype == "float64" and ex.latest["numpy"].bytes == 3 * 16 * 16 * 8
    assert "n=16, float64" in ex.message.value
    assert {(t.dtype, t.n) for t in ex.timings} == {("float32", 8), ("float32", 16), ("float64", 16)}


def test_ticking_a_backend_measures_it():
    ex = widgets.explorer("axpby", backends=("numpy",), sizes=(1000,), budget=0.01)
    assert set(ex.latest) == {"numpy"}
    ex.backend_boxes["python"].value = True
    assert set(ex.latest) == {"numpy", "python"}
    assert ex.latest["python"].dtype == "float64"  # Python floats are 64-bit, whatever the toggle says
    assert "python (loops)" in ex.message.value
    ex.backend_boxes["numpy"].value = False
    ex.backend_boxes["python"].value = False
    assert ex.latest == {} and "tick at least one backend" in ex.message.value


def test_only_usable_backends_are_offered_and_unusable_ones_are_explained():
    ex = widgets.explorer("axpby", backends=("numpy", "cupy"), sizes=(1000,), budget=0.01)
    assert set(ex.backend_boxes) == {"python", *backends().usable()}
    if not backends()["cupy"].usable:
        assert "cupy" not in ex.backend_boxes
        assert "cupy is not usable here" in ex.message.value


def test_loops_are_skipped_at_large_sizes_with_an_estimate(monkeypatch):
    monkeypatch.setitem(widgets.LOOPS_MAX_N, "axpby", 1000)
    ex = widgets.explorer("axpby", backends=("python", "numpy"), sizes=(1000, 4000), size=4000, budget=0.01)
    assert "python" not in ex.latest and "numpy" in ex.latest
    assert "loops skipped at this size: would take ~" in ex.message.value
    ex.size_slider.value = 1000
    assert ex.latest["python"].n == 1000 and "loops skipped" not in ex.message.value


@pytest.mark.parametrize("kwargs, match", [
    (dict(op="conv"), "unknown op 'conv'; accepted: matmul, axpby"),
    (dict(backends=("torch",)), "unknown backend 'torch'; accepted: python, numpy, jax, cupy"),
    (dict(backends=()), "backends is empty"),
    (dict(dtypes=("float16",)), "unknown dtype 'float16'; accepted: float32, float64"),
    (dict(sizes=()), "sizes is empty"),
    (dict(sizes=(8, 0)), "positive integers"),
    (dict(sizes=(8, 16), size=12), "size 12 is not one of the sizes: 8, 16"),
    (dict(budget=0), "budget"),
])
def test_bad_arguments_say_what_is_accepted(kwargs, match):
    with pytest.raises(ValueError, match=match):
        widgets.explorer(**kwargs)


def test_a_stored_explorer_gets_a_static_snapshot_and_says_how_to_use_it(monkeypatch):
    from helpers.book import upkeep

    ex = widgets.explorer("matmul", backends=("numpy",), size=8, **TINY)
    assert repr(ex).endswith(f": {widgets.RUN_TO_USE}>")
    monkeypatch.delenv(project.STATIC_ENV, raising=False)
    assert project.SNAPSHOT not in ex._repr_mimebundle_()  # a learner's kernel sends the widget alone
    monkeypatch.setenv(project.STATIC_ENV, "1")
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and len(bundle[project.SNAPSHOT]["figures"]) == 2
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("display_data", data=bundle)])])
    assert upkeep.add_static_images(nb, render=lambda fig: b"PNG") == 2
    data = nb.cells[0].outputs[0].data
    assert project.SNAPSHOT not in data and data["text/html"].count('src="data:image/png;base64,UE5H"') == 2
    assert widgets.RUN_TO_USE in data["text/html"] and "application/vnd.jupyter.widget-view+json" in data
