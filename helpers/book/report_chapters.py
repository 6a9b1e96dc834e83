"""Each chapter's cases for a gpu-report: what chapters 03 to 07 measure beside a prediction, at their sizes.

Every case is made with the chapter's own helpers (cuda.GPU, training, choosing, make_it_fast, ...), so a row
times exactly what the chapter times; each chapter's builder gives no case when its accelerator is not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..chapters import mandelbrot, mlp
from ..core.backend import to_backend
from ..gpu import cuda
from ..measuring import specs, workloads
from ..measuring.hardware import jax_matmul_roof
from ..measuring.timing import Timing, benchmark
from ..model import roofline
from .report_case import AXPBY_FUSED, EMA_ALPHA, MXU_PASSES, TRAINING, Case, Here, Sizes, make_case

# --------------------------------------------------------------------------------------------------------------
# Chapter 03: CuPy on the GPU


def round_trip(cupy: Any, alpha: float, x_host: np.ndarray, beta: float, y_host: np.ndarray) -> np.ndarray:
    """axpby with its inputs copied to the GPU and its answer copied back, every call (chapter 03)."""
    return cupy.asnumpy(workloads.axpby(alpha, cupy.asarray(x_host), beta, cupy.asarray(y_host)))


def chapter03(here: Here, sizes: Sizes) -> list[Case]:
    """Chapter 03's GPU measurements with a prediction beside them (none without a GPU CuPy can use)."""
    if here.gpu is None:
        return []
    return [*_copies(here.gpu, sizes), *_sweep(here.gpu, sizes), *_roofline_points(here.gpu, sizes),
            *_fusion(here.gpu, sizes), *_matmul_kernels(here.gpu, sizes), *_reductions(here.gpu, sizes),
            _mandelbrot(here.gpu, sizes)]


def _copies(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """A copy to the GPU; axpby with its data on the GPU, and copied in and out every call."""
    cupy, nbytes, n = cuda.cupy(), sizes.copy_mib * 2**20, sizes.axpby

    def copy() -> Timing:
        host = np.ones(nbytes // 4, dtype=np.float32)
        return gpu.measure(lambda: cupy.asarray(host), bytes=nbytes, label="copy to the GPU")

    def pinned_copy() -> Timing:
        pinned = cuda.cupyx().empty_pinned(nbytes // 4, np.float32)
        pinned[...] = 1.0
        on_gpu = cupy.empty(pinned.shape, pinned.dtype)
        return gpu.measure(lambda: on_gpu.set(pinned), bytes=nbytes, label="copy from pinned memory")

    def stays() -> Timing:
        return gpu.measure(workloads.axpby, *workloads.make_inputs("axpby", n, "float32", "cupy"))

    def trip() -> Timing:
        alpha, x, beta, y = workloads.make_inputs("axpby", n, "float32", "numpy")
        return gpu.measure(lambda: round_trip(cupy, alpha, x, beta, y))

    on = (gpu.name, gpu.spec)
    return [
        make_case("03", f"host -> GPU, {sizes.copy_mib} MiB", f"{nbytes:,} bytes, one cupy.asarray", *on,
                  "GPU.predict_copy_seconds (pageable NumPy memory, at most the host's copy rate)", copy,
                  lambda: gpu.predict_copy_seconds(nbytes)),
        make_case("03", f"host -> GPU, {sizes.copy_mib} MiB, from pinned memory",
                  f"{nbytes:,} bytes, cupyx.empty_pinned then .set", *on, "roofline.predict_copy_seconds (pinned)",
                  pinned_copy, lambda: gpu.predict_copy_seconds(nbytes, memory="pinned")),
        make_case("03", "axpby, data stays on the GPU", f"n = {n:,} float32, 3 CuPy kernels", *on,
                  "GPU.predict_cupy_axpby", stays, lambda: gpu.predict_cupy_axpby(n)),
        make_case("03", "axpby, copied in and out every call", f"n = {n:,} float32, x and y in, z out", *on,
                  "GPU.predict_cupy_axpby(copies=12 n)", trip, lambda: gpu.predict_cupy_axpby(n, copies=3 * n * 4)),
    ]


def _sweep(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """axpby on the GPU against size: where the launches' fixed cost gives way to memory."""
    return [make_case("03", f"axpby sweep, n = {n:,}", f"n = {n:,} float32, 3 CuPy kernels", gpu.name, gpu.spec,
                      "GPU.predict_cupy_axpby", lambda n=n: workloads.measure("axpby", "cupy", n, label=f"axpby {n:,}"),
                      lambda n=n: gpu.predict_cupy_axpby(n))
            for n in sizes.sweep]


def _roofline_points(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """The two points chapter 03 puts on the GPU's roofline, beside the roofline's bound for each."""
    n_axpby, n_mm = gpu.beyond_l2(sizes.stream, bytes_per_element=12), sizes.roof_matmul
    work = {"axpby": (n_axpby, workloads.axpby_flops(n_axpby), workloads.axpby_traffic(n_axpby, 4, "cupy")),
            "matmul": (n_mm, workloads.matmul_flops(n_mm), workloads.matmul_bytes(n_mm, 4))}
    return [make_case("03", f"roofline point: {op} {n:,}", f"{flops:,} FLOPs, {nbytes:,} bytes, float32", gpu.name,
                      gpu.spec, "roofline.roofline_seconds (the roofline's bound: FLOPs / attainable)",
                      lambda op=op, n=n: workloads.measure(op, "cupy", n, label=f"{op} {n:,}"),
                      lambda flops=flops, nbytes=nbytes: roofline.roofline_seconds(gpu.spec, flops=flops, bytes=nbytes))
            for op, (n, flops, nbytes) in work.items()]


def _fusion_inputs(n: int) -> tuple[Any, ...]:
    """Chapter 03's inputs of the fused kernel: float32 scalars (its C types) and x, y on the GPU."""
    cupy = cuda.cupy()
    x = cupy.asarray(np.random.default_rng(1).standard_normal(n, dtype=np.float32))
    y = cupy.asarray(np.random.default_rng(2).standard_normal(n, dtype=np.float32))
    return np.float32(2.0), x, np.float32(3.0), y


def _fusion(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """CuPy's three passes against one ElementwiseKernel, on arrays 4x the L2 or more."""
    n = gpu.beyond_l2(sizes.stream, bytes_per_element=12)
    return [
        make_case("03", "fusion: CuPy, 3 passes", f"n = {n:,} float32", gpu.name, gpu.spec, "GPU.predict_cupy_axpby",
                  lambda: gpu.measure(workloads.axpby, *_fusion_inputs(n)), lambda: gpu.predict_cupy_axpby(n)),
        make_case("03", "fusion: ElementwiseKernel, 1 pass", f"n = {n:,} float32", gpu.name, gpu.spec,
                  "GPU.predict_seconds(3 n FLOPs, 12 n bytes)",
                  lambda: gpu.measure(AXPBY_FUSED.on_gpu(), *_fusion_inputs(n)),
                  lambda: gpu.predict_seconds(3 * n, 3 * 4 * n)),
    ]


def _matmul_kernels(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """matmul.cu's naive and tiled kernels (priced by chapter 07's kernel model) and cuBLAS (a tuned matmul)."""
    n, tile = sizes.matmul_kernels, cuda.MATMUL_TILE
    flops = workloads.matmul_flops(n)
    runs: list[Callable[[Any, Any], Any]] = [lambda a, b: cuda.matmul_kernel(a, b, "matmul_naive"),
                                             lambda a, b: cuda.matmul_kernel(a, b, "matmul_tiled"), workloads.matmul]

    def measure(label: str, fn: Callable[[Any, Any], Any]) -> Timing:
        return gpu.measure(fn, *workloads.make_inputs("matmul", n, "float32", "cupy"), flops=flops, label=label)

    kernels = ("matmul_naive", "matmul_tiled", None)  # None: cuBLAS, priced as a tuned matmul

    def predict(intensity: float, kernel: str | None) -> float:
        if kernel is None:
            return gpu.predict_seconds(flops, flops / intensity, matmul=True)
        return cuda.pipelined(cuda.predict_matmul_kernel(gpu.spec, kernel, n).seconds)

    return [make_case("03", f"matmul: {label}", f"n = {n:,} float32, {intensity:.3g} FLOP/byte", gpu.name, gpu.spec,
                      "GPU.predict_seconds(FLOPs, FLOPs / intensity, matmul=True)" if kernel is None else
                      f"cuda.predict_matmul_kernel({kernel!r}): chapter 07's kernel model",
                      lambda label=label, fn=fn: measure(label, fn),
                      lambda intensity=intensity, kernel=kernel: predict(intensity, kernel))
            for (label, (intensity, _)), fn, kernel in zip(cuda.matmul_ways(n, tile).items(), runs, kernels,
                                                           strict=True)]


def _reductions(gpu: cuda.GPU, sizes: Sizes) -> list[Case]:
    """cupy.sum against reduce_sum.cu's two launches, on an array 4x the L2 or more."""
    n = gpu.beyond_l2(sizes.stream, bytes_per_element=4)
    nbytes = 4 * n

    def measure(fn: Callable[[Any], Any]) -> Timing:
        x = cuda.cupy().asarray(np.random.default_rng(5).random(n, dtype=np.float32))
        return gpu.measure(fn, x, bytes=nbytes)

    return [
        make_case("03", "sum: cupy.sum", f"n = {n:,} float32", gpu.name, gpu.spec, "GPU.predict_seconds(n, 4 n)",
                  lambda: measure(lambda x: x.sum()), lambda: gpu.predict_seconds(n, nbytes)),
        make_case("03", "sum: our block_sum kernel, 2 launches", f"n = {n:,} float32", gpu.name, gpu.spec,
                  "cuda.predict_reduce_sum: chapter 07's kernel model", lambda: measure(cuda.reduce_sum),
                  lambda: cuda.predict_reduce_sum(gpu.spec, n)),
    ]


def _mandelbrot(gpu: cuda.GPU, sizes: Sizes) -> Case:
    """mandelbrot.cu over the chapter's image: compute-bound, its FLOPs counted from the escape steps."""
    width, height = sizes.image

    def predict() -> float:
        return cuda.pipelined(mandelbrot.predict_gpu(gpu.spec, width, height).seconds)

    return make_case("03", "Mandelbrot: CUDA kernel", f"{width} x {height} pixels, float32", gpu.name, gpu.spec,
                     "mandelbrot.predict_gpu: chapter 07's kernel model",
                     lambda: gpu.measure(mandelbrot.mandelbrot_gpu, width, height, label="CUDA kernel"), predict)


# --------------------------------------------------------------------------------------------------------------
# Chapter 04: JAX on the TPU (or the GPU)


def _jax_matmul(n: int, dtype: str) -> Timing:
    """Chapter 04's timing of the jitted matmul: inputs made on JAX's device in float32, then cast to `dtype`."""
    import jax

    a, b = (x.astype(dtype) for x in workloads.make_inputs("matmul", n, "float32", "jax"))
    return benchmark(jax.jit(workloads.matmul), a, b, flops=workloads.matmul_flops(n),
                     bytes=workloads.matmul_bytes(n, a.dtype.itemsize), n=n, label=f"{dtype}, n = {n}")


def chapter04(here: Here, sizes: Sizes) -> list[Case]:
    """Chapter 04's jitted matmuls by size and dtype; on a TPU also padding to the MXU and the precisions."""
    if here.jax_kind is None or here.jax_spec is None:
        return []
    spec = here.jax_spec
    roofs = {dtype: jax_matmul_roof(spec, dtype) for dtype in ("float32", "bfloat16")}
    def predict(n: int, roof: str) -> float:
        if here.jax_kind != "gpu":  # a TPU's calls: the model's fitted synced cost (OVERHEADS['jax_tpu'])
            return roofline.predict_matmul_seconds(spec, n, n, n, roof)
        # benchmark queues the calls: each costs the larger of the host's dispatch (measured here) and the work
        return roofline.predict_matmul_seconds(spec, n, n, n, roof, timed="pipelined",
                                               call_seconds=here.calls(2, 1).jax)

    model = "roofline.predict_matmul_seconds(dtype={!r}" + (", a call's cost measured here)" if here.jax_kind == "gpu"
                                                             else ")")
    cases = [make_case("04", f"jit matmul {dtype}, n = {n:,}", f"({n}, {n}) @ ({n}, {n}) {dtype}", here.jax_name, spec,
                       model.format(roof), lambda n=n, dtype=dtype: _jax_matmul(n, dtype),
                       lambda n=n, roof=roof: predict(n, roof))
             for dtype, roof in roofs.items() for n in sizes.jax_matmul]
    if here.jax_kind == "tpu":
        cases += [*_padding(here, sizes), *_precisions(here, sizes)]
    return cases


def _padding(here: Here, sizes: Sizes) -> list[Case]:
    """bf16 matmuls at a multiple of the MXU side, one more, and the next multiple: the MXUs compute padded sides."""
    spec, base = here.jax_spec, sizes.pad_base
    assert spec is not None
    side = roofline.mxu_side(spec)
    return [make_case("04", f"padding: bf16 matmul, n = {n:,}", f"({n}, {n}) @ ({n}, {n}) bfloat16, MXU side {side}",
                      here.jax_name, spec, "roofline.predict_matmul_seconds (each side padded to the MXU's)",
                      lambda n=n: _jax_matmul(n, "bfloat16"),
                      lambda n=n: roofline.predict_matmul_seconds(spec, n, n, n, "bfloat16"))
            for n in (base, base + 1, base + side)]


def _precision_versions() -> dict[str, tuple[Callable[..., Any], str]]:
    """Chapter 04's three float32 products: label -> (the function, the dtype of its inputs)."""
    import jax
    import jax.numpy as jnp

    return {
        "float32, precision DEFAULT": (lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.DEFAULT),
                                       "float32"),
        "float32, precision HIGHEST": (lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST),
                                       "float32"),
        "bf16 inputs, float32 sums (one MXU pass)": (
            lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32), "bfloat16"),
    }


def _precisions(here: Here, sizes: Sizes) -> list[Case]:
    """DEFAULT, HIGHEST (6 bf16 passes) and one bf16 pass, each predicted at its MXU passes."""
    spec, n = here.jax_spec, sizes.precision
    assert spec is not None
    flops = workloads.matmul_flops(n)

    def measure(label: str) -> Timing:
        import jax

        fn, dtype = _precision_versions()[label]
        a, b = (x.astype(dtype) for x in workloads.make_inputs("matmul", n, "float32", "jax"))
        return benchmark(jax.jit(fn), a, b, flops=flops, label=label)

    def predict(label: str) -> float:
        nbytes = workloads.matmul_bytes(n, 2 if label.startswith("bf16") else 4)
        return roofline.predict_seconds(spec, flops=MXU_PASSES[label] * flops, bytes=nbytes, dtype="bfloat16",
                                        call="jax_tpu", matmul=True)

    return [make_case("04", f"precision: {label}", f"({n}, {n}) @ ({n}, {n}), {passes} bf16 MXU pass(es)",
                      here.jax_name, spec, "roofline.predict_seconds(passes x FLOPs, bf16 roof, call='jax_tpu')",
                      lambda label=label: measure(label), lambda label=label: predict(label))
            for label, passes in MXU_PASSES.items()]


# --------------------------------------------------------------------------------------------------------------
# Chapter 05: one epoch per backend


def chapter05(here: Here, sizes: Sizes) -> list[Case]:
    """One epoch of chapter 05's training with CuPy (on a GPU) and JAX and Keras (on JAX's GPU or TPU), and the
    epoch against the hidden width and against the batch, each beside training.predict_epoch for the device."""
    on = ([("cupy", here.gpu.name, here.gpu.spec)] if here.gpu is not None else []) + (
        [("jax", here.jax_name, here.jax_spec)] if here.jax_spec is not None else [])
    if not on:
        return []
    data = mlp.load_digits_split(test_fraction=0.25, seed=0)
    cfg, extra = TRAINING, []
    if here.jax_spec is not None:
        extra = [(kind, here.jax_name, here.jax_spec) for kind in ("jax-scan", "keras")
                 if kind != "keras" or _keras_installed()]
    measured: dict[str, Timing] = {}  # the chapter's epochs by kind: Keras's prediction takes its host time from them
    cases = [_epoch(data, kind, device, spec, cfg.hidden, cfg.batch, f"one epoch: {_EPOCH_LABELS[kind]}", here,
                    measured) for kind, device, spec in on + extra]
    cases += [_epoch(data, kind, device, spec, hidden, cfg.batch, f"epoch by width: {_EPOCH_LABELS[kind]}, "
                     f"hidden {hidden:,}", here) for kind, device, spec in on for hidden in sizes.widths]
    return cases + [_epoch(data, kind, device, spec, cfg.wide, batch, f"epoch by batch: {_EPOCH_LABELS[kind]}, "
                           f"batch {batch:,}", here) for kind, device, spec in on for batch in sizes.batch_sweep]


def _epoch(data: mlp.Digits, kind: str, device: str, spec: specs.DeviceSpec, hidden: int, batch: int, label: str,
           here: Here, measured: dict[str, Timing] | None = None) -> Case:
    """One epoch (the first of chapter 05's batch order) timed by training.time_epoch, predicted by predict_epoch."""
    from ..chapters import training

    params = mlp.init_params(data.n_features, hidden, data.n_classes, seed=0)
    idx = mlp.batch_order(len(data.y_train), batch, TRAINING.epochs, seed=0)[0]
    steps = idx.shape[0]
    kept = {} if measured is None else measured

    def measure() -> Timing:
        with _highest_precision():  # as the chapter sets it: float32 means float32 on a TF32 GPU too
            kept[kind] = training.time_epoch(training.trainer(kind, TRAINING.lr), data, params, idx, label=label)
        return kept[kind]

    def predict() -> float:
        host = max(kept["keras"].median - kept["jax"].median, 0.0) / steps if kind == "keras" else None
        calls = here.calls(6, 5) if spec.kind == "gpu" else None  # this host's call costs, for the GPU here
        return training.predict_epoch(spec, batch, hidden, steps, data.n_features, data.n_classes, kind=kind,
                                      host_seconds=host, calls=calls).seconds

    model = "training.predict_epoch" + (" (Keras's own host time per step measured here)" if kind == "keras" else "")
    model += ", with this host's call costs" if spec.kind == "gpu" else ""
    return make_case("05", label, f"{steps} steps of {batch}, {data.n_features}-{hidden}-{data.n_classes} network, "
                     "float32", device, spec, model, measure, predict)


_EPOCH_LABELS = {"cupy": "CuPy", "jax": "JAX, jit per step", "jax-scan": "JAX, one jit per epoch", "keras": "Keras"}


def _keras_installed() -> bool:
    """Whether Keras can be imported (chapter 05's Keras row needs it)."""
    import importlib.util

    return importlib.util.find_spec("keras") is not None


def _highest_precision() -> Any:
    """A context in which JAX's float32 matmuls are true float32 (chapter 05's setting)."""
    import jax

    return jax.default_matmul_precision("highest")


# --------------------------------------------------------------------------------------------------------------
# Chapter 06: a recurrence, and one sample through a small network


def ema_scan(x: Any) -> Any:
    """Chapter 06's moving average inside one compiled program: jax.lax.scan carries the state."""
    import jax
    import jax.numpy as jnp

    def step(state: Any, value: Any) -> tuple[Any, Any]:
        state = (1 - EMA_ALPHA) * state + EMA_ALPHA * value
        return state, state

    return jax.lax.scan(step, jnp.zeros((), x.dtype), x)[1]


def ema_associative(x: Any) -> Any:
    """The same average as a tree of combines: about 2 log2(n) rounds, each over many pairs at once."""
    import jax
    import jax.numpy as jnp

    def combine(left: tuple[Any, Any], right: tuple[Any, Any]) -> tuple[Any, Any]:
        (a1, b1), (a2, b2) = left, right
        return a1 * a2, a2 * b1 + b2

    return jax.lax.associative_scan(combine, (jnp.full_like(x, 1 - EMA_ALPHA), EMA_ALPHA * x))[1]


def chapter06(here: Here, sizes: Sizes) -> list[Case]:
    """Chapter 06's JAX measurements on JAX's GPU or TPU: the recurrence by scan and associative scan, inference."""
    if here.jax_spec is None:
        return []
    from ..chapters import choosing

    spec, name = here.jax_spec, here.jax_name
    methods = {"scan": ema_scan, "associative scan": ema_associative}

    def recurrence(method: str, n: int) -> Timing:
        import jax

        x = to_backend(np.random.default_rng(1).standard_normal(n, dtype=np.float32), "jax")
        return benchmark(jax.jit(methods[method]), x, n=n, label=method, max_time=30)

    def inference(batch: int) -> Timing:
        import jax

        x = np.random.default_rng(5).standard_normal((batch, 64), dtype=np.float32)
        return benchmark(jax.jit(mlp.logits), to_backend(mlp.init_params(), "jax"), to_backend(x, "jax"), n=batch,
                         label="JAX jit")

    cases = [make_case("06", f"recurrence: {method}, n = {n:,}", f"{n:,} steps, float32", name, spec,
                       "choosing.predict_recurrence" + (" (a lower bound)" if choosing.is_lower_bound(spec.name, method)
                                                    else ""), lambda m=method, n=n: recurrence(m, n),
                   lambda m=method, n=n: choosing.predict_recurrence(spec.name, n, m))
             for method in methods for n in sizes.steps if method != "scan" or n <= sizes.longest_scan]
    return cases + [make_case("06", f"inference: batch {b:,}", f"64-64-10 forward pass, a batch of {b:,}, float32",
                              name, spec, "choosing.predict_inference (pipelined; a TPU's: the slow end of its range)",
                              lambda b=b: inference(b),
                              lambda b=b: choosing.predict_inference(spec.name, b))
                    for b in sizes.batches]


def left_out(here: Here, sizes: Sizes) -> list[str]:
    """The chapters' measurements the report leaves out at these sizes, each with why."""
    if here.jax_spec is None:
        return []
    return [f"ch06 recurrence: scan, n = {n:,}: a scan's steps run one after another, so its time grows in "
            f"proportion to n; n = {sizes.longest_scan:,} gives the same cost per step in a tenth of the time or "
            "less (chapter 06 times it)" for n in sizes.steps if n > sizes.longest_scan]


def chapter07(here: Here, sizes: Sizes) -> list[Case]:
    """Every rung of chapter 07's SGEMM ladder at its size, beside roofline.predict_kernel's time for it."""
    if here.gpu is None:
        return []
    from ..chapters import make_it_fast  # the CPU executor's translator (pycparser) loads only when a GPU is here

    gpu, n = here.gpu, sizes.ladder
    spec = make_it_fast.device_spec(gpu)
    kernels = make_it_fast.gpu_kernels(cuda.cupy())
    return [make_case("07", f"SGEMM rung {r.label}", f"n = {n:,} float32, {r.kernel}", gpu.name, spec,
                      "make_it_fast.predict (roofline.predict_kernel, from the executor's counts)",
                      lambda r=r: make_it_fast.measure(gpu, r, n, kernels[r.label]),
                      lambda r=r: make_it_fast.predict(r.label, spec, n).seconds)
            for r in make_it_fast.RUNGS]


#: Every chapter's cases, in the order they run; each gives none when its accelerator is not here.
CHAPTERS: dict[str, Callable[[Here, Sizes], list[Case]]] = {
    "03": chapter03, "04": chapter04, "05": chapter05, "06": chapter06, "07": chapter07}


