"""Chapter code meant for one device runs there when JAX's default device is another, and says where it ran.

On Colab's GPU runtime JAX's default device is the T4. There is no GPU here, so a second CPU device stands in
for it: JAX's default device is set to it, and what a chapter pins to jax.devices("cpu")[0] must not move.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import jax
import numpy as np
import pytest

from helpers.core import backend

ROOT = Path(__file__).resolve().parents[1]


def _cell(notebook: str, marker: str) -> str:
    cells = json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
    found = [c for c in cells if c["cell_type"] == "code" and marker in "".join(c["source"])]
    assert len(found) == 1, f"{notebook}: {len(found)} code cells hold {marker!r}"
    return "".join(found[0]["source"])


def test_chapter_03s_fusion_on_this_cpu_stays_on_the_cpu_when_jaxs_default_device_is_elsewhere() -> None:
    cell = _cell("03_gpu_cupy.ipynb", "N_FUSE = ")
    cell = cell[:cell.index("display(fusion)")]  # this CPU's half; the GPU's half needs the chapter's kernels
    program = "\n".join([
        "import os",
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=2'",
        "import jax, numpy as np",
        "import helpers as h",
        "jax.config.update('jax_default_device', jax.devices()[1])  # the stand-in for a GPU runtime's default",
        "h.set_timing_budget(0.01)",
        cell.replace("N_FUSE = 4_000_000", "N_FUSE = 1_000"),
        "placed = [sorted(d.id for d in a.devices()) for a in (x_cpu, y_cpu)]",
        "print(json.dumps({'placed': placed, 'names': names}))",
    ])
    ran = subprocess.run([sys.executable, "-c", "import json\n" + program], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    facts = json.loads(ran.stdout.strip().splitlines()[-1])
    assert facts["placed"] == [[0], [0]], "the arrays timed as 'this CPU' must be on jax.devices('cpu')[0]"
    assert facts["names"] == ["NumPy, 3 passes (this CPU)", "JAX jit, fused (this CPU)"]


def test_where_names_the_device_an_array_lives_on(monkeypatch) -> None:
    assert backend.where(np.ones(3)) == "this CPU"
    assert backend.where(jax.numpy.ones(3)) == "this CPU"
    t4 = types.SimpleNamespace(platform="gpu", id=0, device_kind="Tesla T4")
    on_gpu = types.SimpleNamespace(devices=lambda: [t4])  # a set, in JAX; any collection will do
    monkeypatch.setattr(backend, "backend_of", lambda x: "jax" if x is on_gpu else None)
    assert backend.where(on_gpu) == "GPU 0 (Tesla T4)"
    with pytest.raises(TypeError, match="NumPy, JAX or CuPy array"):
        backend.where([1, 2])


def test_chapter_03_reads_cupys_profiler_as_cupy_times_it() -> None:
    """cupyx.profiler.benchmark records its GPU events around the whole call (cupyx/profiler/_time.py), so the GPU
    time includes the launch gaps: it is never far below the CPU time, and equal to it when launches bind."""
    cells = json.loads((ROOT / "notebooks" / "03_gpu_cupy.ipynb").read_text())["cells"]
    text = " ".join(" ".join("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    assert "GPU time is far below the CPU time" not in text
    assert "never much below the CPU time" in text
    assert "A GPU time close to the CPU time means the launches are the bottleneck" in text


def test_chapter_05_times_keras_on_the_host_cpu_and_on_the_accelerator_each_where_it_says() -> None:
    """The chapter's Keras cell on a stand-in GPU runtime: JAX's default device is a second CPU device, which the
    helper takes for the accelerator. The model built for 'the host CPU' must train on jax.devices('cpu')[0], the
    other on the default device, and the speed-up printed must be the CPU's median over the accelerator's."""
    cell = _cell("05_training.ipynb", "h.training.keras_cpu_vs_accelerator(")
    program = "\n".join([
        "import os, json",
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=2'",
        "import jax, numpy as np",
        "import helpers as h",
        "host, standin = jax.devices()",
        "jax.config.update('jax_default_device', standin)  # the stand-in for a GPU runtime's default",
        "h.set_timing_budget(0.01)",
        "from helpers.chapters import epochs, keras_devices  # patched where the names are looked up",
        "keras_devices.accelerator = lambda devices: standin  # it is a CPU device: say it is the accelerator",
        "epochs.where = lambda x: 'this CPU' if {d.id for d in x.devices()} == {0} else 'stand-in GPU 1'",
        "models, build = [], h.mlp.keras_model",
        "h.mlp.keras_model = lambda *args: models.append(build(*args)) or models[-1]",
        "data = h.mlp.load_digits_split()",
        "params, order, LR = h.mlp.init_params(), h.mlp.batch_order(1347, 256, 1), 0.2",
        "predicted = {'keras': h.training.predict_epoch('NVIDIA T4', 256, 64, 5, kind='keras', host_seconds=1e-4)}",
        cell,
        "placed = [sorted({d.id for w in m.weights for d in w.value.devices()}) for m in models]",
        "k = keras_devices",
        "print(json.dumps({'placed': placed, 'text': str(k), 'speedup': k.speedup,",
        "                  'ratio': k.cpu.median / k.accelerator.median}))",
    ])
    ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    facts = json.loads(ran.stdout.strip().splitlines()[-1])
    assert facts["placed"] == [[0], [1]], "Keras on the host CPU must train on device 0, then on the accelerator"
    assert "predict" not in facts["text"].lower(), "an accelerator is here: both epochs measured, none predicted"
    assert "  this CPU: " in facts["text"] and "  stand-in GPU 1: " in facts["text"]
    assert facts["speedup"] == facts["ratio"]
