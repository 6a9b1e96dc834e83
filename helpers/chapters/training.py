"""Train the network of `helpers.chapters.mlp` on any backend, time its epochs honestly, and predict a missing GPU.

Every backend gets the same start, the same mini-batches in the same order and the same learning rate, so
loss curves and accuracies can be compared; speed is one epoch timed with `benchmark` (first call, with any
compilation, apart). What a GPU would do is a prediction by `helpers.model.roofline`, the series' one performance
model, for each way of running the step: CuPy (every traced array operation is one call and one kernel), JAX
(XLA's compiled step, its kernels counted from the compiled program), one jit per epoch, and Keras.

    tr = h.training.trainer("jax", lr=0.2)             # or "numpy", "cupy", "jax-scan", "keras"
    run = h.training.train(tr, data, params, order)    # losses per step, test accuracy, final weights
    t = h.training.time_epoch(tr, data, params, order[0])   # a Timing of one epoch
    h.training.predict_epoch("NVIDIA T4", batch=32, hidden=64, steps=42, kind="jax")   # helpers.model.roofline
    h.training.keras_cpu_vs_accelerator(data, params, order[0], 0.2, prediction)   # the same Keras on both

This module is chapter 05's face: it gathers what the chapter calls as `h.training.X` from the modules that do
each job: trainers (a Trainer per backend), epochs (train, time_epoch), step_trace (the step's work, operation
by operation), xla_step (the kernels of XLA's compiled step), epoch_predictions (predict_epoch and its report),
keras_devices (Keras on the host CPU and on the accelerator), sweeps, and training_figures (figures, the table).
"""

from __future__ import annotations

from .epoch_predictions import (
    MEASURED_AS,
    PREDICTED,
    Prediction,
    cupy_kind,
    epoch_workload,
    fused_bytes,
    predict_epoch,
    predictions_report,
)
from .epochs import Run, accuracy, device_name, samples_per_second, time_epoch, train
from .keras_devices import (
    KERAS_WIDTHS,
    KERAS_WIDTHS_BATCH,
    KerasOnDevices,
    KerasWidths,
    accelerator,
    keras_cpu_vs_accelerator,
    keras_widths,
)
from .step_trace import Kernel, StepWork, trace_step
from .sweeps import Sweep, sweep, sweep_report
from .trainers import KINDS, Trainer, trainer
from .training_figures import Row, loss_figure, summary_table, sweep_figure
from .xla_step import NOT_KERNELS, KernelCount, xla_kernels

__all__ = ["KERAS_WIDTHS", "KERAS_WIDTHS_BATCH", "KINDS", "KerasOnDevices", "KerasWidths", "Kernel", "KernelCount",
           "MEASURED_AS", "NOT_KERNELS", "PREDICTED", "Prediction", "Row", "Run", "StepWork", "Sweep", "Trainer",
           "accelerator", "accuracy", "cupy_kind", "device_name", "epoch_workload", "fused_bytes",
           "keras_cpu_vs_accelerator", "keras_widths", "loss_figure", "predict_epoch", "predictions_report",
           "samples_per_second", "summary_table", "sweep", "sweep_figure", "sweep_report", "time_epoch",
           "trace_step", "train", "trainer", "xla_kernels"]
