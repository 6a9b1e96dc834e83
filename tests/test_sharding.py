"""helpers.tpu.sharding: 8 host devices asked for in time, a loud refusal when too late, layouts, the exercise judge.

The device count is fixed when JAX starts its backends, once per process, so these run in fresh interpreters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers.learning import checks
from helpers.tpu import sharding


def run(program: str, env: dict[str, str] | None = None) -> str:
    """Run `program` in a fresh Python; its stdout. Fails the test, with stderr, if it exits non-zero."""
    environ = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    environ["JAX_PLATFORMS"] = "cpu"  # the same answer on a machine with a GPU
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(program)], capture_output=True, text=True,
                          timeout=120, env={**environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_in_time_gives_8_devices_then_shards_rows_and_replicates() -> None:
    out = run("""
        from helpers.tpu import sharding
        print(sharding.use_host_devices(8))
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        print(len(jax.devices("cpu")))
        print(sharding.use_host_devices(8))  # again, after JAX started: nothing to change
        choice = sharding.devices(8)
        print(choice.platform, choice.simulated, len(choice.devices))
        print(choice)
        mesh = Mesh(np.array(choice.devices), ("batch",))
        x = jax.device_put(jnp.arange(32.0).reshape(16, 2), NamedSharding(mesh, P("batch", None)))
        w = jax.device_put(jnp.ones((2, 3)), NamedSharding(mesh, P()))
        print(sharding.layout(x))
        print(sharding.layout(w))
        y = jax.jit(lambda x, w: x @ w)(x, w)
        expected = np.arange(32.0).reshape(16, 2) @ np.ones((2, 3))
        print("right:", sharding.row_sharding_problem(y, expected))
        print("one device:", sharding.row_sharding_problem(jnp.asarray(expected), expected))
        print("columns:", sharding.row_sharding_problem(
            jax.device_put(jnp.asarray(np.ones((16, 8))), NamedSharding(mesh, P(None, "batch"))), np.ones((16, 8))))
        print("values:", sharding.row_sharding_problem(y + 1, expected))
        print("numpy:", sharding.row_sharding_problem(expected, expected))
        grad = jax.grad(lambda w, x: jnp.sum(x @ w))  # sums over the sharded batch: one all-reduce
        print("talk:", sharding.collectives(jax.jit(grad).lower(w, x).compile().as_text()))
        print("no talk:", sharding.collectives(jax.jit(lambda x, w: x @ w).lower(x, w).compile().as_text()))
    """)
    lines = out.splitlines()
    assert lines[0] == "JAX will split this machine's CPU into 8 devices (set before JAX started)."
    assert lines[1] == "8"
    assert lines[2] == "JAX already runs with 8 CPU devices: nothing to change."
    assert lines[3] == "cpu True 8"
    assert lines[4].startswith("8 simulated CPU devices. They share this machine's cores")
    assert lines[5:14] == ["(16, 2) over 8 devices: 8 pieces of shape (2, 2)"] + [
        f"  device {i}: rows {2 * i}:{2 * i + 2}, columns 0:2" for i in range(8)]
    assert lines[14] == "(2, 3) over 8 devices: 8 copies of shape (2, 3)"
    assert lines[15] == "  device 0: rows 0:2, columns 0:3"
    tail = "\n".join(lines[23:])
    assert "right: None" in tail
    assert "one device: the result lives on 1 device, expected all 8" in tail
    assert "columns: the devices hold [16] rows each, expected 2" in tail
    assert "values: the values differ from the single-device result (largest difference 1)" in tail
    assert "numpy: expected a JAX array, got ndarray" in tail
    assert "talk: ['all-reduce']" in tail  # the gradient of a batch-sharded sum needs the devices to add up
    assert "no talk: []" in tail  # a batch-parallel product does not


def test_collectives_reads_plain_and_asynchronous_forms() -> None:
    cpu = """ENTRY %main {
  %dot.1 = f32[4,2]{1,0} dot(%p0, %p1), lhs_contracting_dims={0}
  %all-reduce = f32[4,2]{1,0} all-reduce(%dot.1), channel_id=1, to_apply=%add.clone
  ROOT %copy = f32[4,2]{1,0} copy(%all-reduce)
}"""
    gpu_tpu = """  %all-reduce-start = f32[256,512]{1,0} all-reduce-start(%fusion), channel_id=1, to_apply=%add
  %all-reduce-done = f32[256,512]{1,0} all-reduce-done(%all-reduce-start)
  %all-gather-start.2 = (f32[8,4]{1,0}, f32[64,4]{1,0}) all-gather-start(%param.0), dimensions={0}
  %all-gather-done.2 = f32[64,4]{1,0} all-gather-done(%all-gather-start.2)
  %reduce-scatter.1 = f32[8,4]{1,0} reduce-scatter(%p), dimensions={0}"""
    assert sharding.collectives(cpu) == ["all-reduce"]
    assert sharding.collectives(gpu_tpu) == ["all-reduce", "all-gather", "reduce-scatter"]
    assert sharding.collectives("%add = f32[] add(%x, %y)") == []
    with pytest.raises(TypeError, match="as_text"):
        sharding.collectives(None)


def test_layout_refuses_what_is_not_a_placed_jax_array() -> None:
    with pytest.raises(TypeError, match="layout\\(\\) describes a JAX array.*got ndarray"):
        sharding.layout(np.ones((2, 2)))


@pytest.mark.parametrize("first", ["import jax.numpy as jnp; jnp.ones(3) + 1", "import helpers as h; h.backends()"])
def test_too_late_is_refused_loudly_not_ignored(first: str) -> None:
    out = run(f"""
        {first}
        from helpers.tpu import sharding
        try:
            sharding.use_host_devices(8)
        except sharding.HostDevicesError as exc:
            print("refused:", exc)
        try:
            sharding.devices(8)
        except sharding.HostDevicesError as exc:
            print("refused:", exc)
        import jax
        print(len(jax.devices("cpu")))
    """)
    refusals = [line for line in out.splitlines() if line.startswith("refused:")]
    assert len(refusals) == 2, out
    assert "already started with 1 CPU device" in refusals[0] and "Restart the kernel" in refusals[0]
    assert "use_host_devices(8) first" in refusals[0]
    assert "JAX has 1 CPU device, fewer than the 8 asked for" in refusals[1] and "Restart" in refusals[1]
    assert out.splitlines()[-1] == "1"


def test_the_count_overrides_one_in_xla_flags() -> None:
    out = run("""
        import jax
        from helpers.tpu import sharding
        print(sharding.use_host_devices(8))
        print(len(jax.devices("cpu")))
    """, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert out.splitlines() == ["JAX will split this machine's CPU into 8 devices (set before JAX started).", "8"]


@pytest.mark.parametrize("count", [0, -8, 2.0, True, "8"])
def test_bad_counts_are_refused(count: object) -> None:
    with pytest.raises(ValueError, match="count must be a positive integer"):
        sharding.use_host_devices(count)
    with pytest.raises(ValueError, match="count must be a positive integer"):
        sharding.devices(count)


def test_check_answer_judges_by_a_rule(capsys: pytest.CaptureFixture[str]) -> None:
    def stub(x):
        raise NotImplementedError

    assert not checks.check_answer(stub, lambda f: f(1), "sharded").attempted
    assert not checks.check_answer(..., lambda s: None, "shape").attempted
    assert checks.check_answer((1024, 384), lambda s: None, "shape").passed
    wrong = checks.check_answer((1000, 300), lambda s: "too small", "shape")
    broken = checks.check_answer(5, lambda s: s[0], "shape")
    assert wrong.attempted and not wrong.passed and not broken.passed
    assert capsys.readouterr().out.splitlines() == [
        "⏳ sharded: not attempted yet. Fill in the cell above (replace the ... or the NotImplementedError), run it, "
        "then run this check again.",
        "⏳ shape: not attempted yet. Fill in the cell above (replace the ... or the NotImplementedError), run it, "
        "then run this check again.",
        "✅ shape: right.",
        "❌ shape: too small",
        "❌ shape: could not judge 5: TypeError: 'int' object is not subscriptable",
    ]
