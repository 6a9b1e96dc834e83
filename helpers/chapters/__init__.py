"""The chapters' own pieces: each chapter's workloads, models of its examples and its exercises' checkers
(training and mlp for chapter 05, choosing for 06, make_it_fast and tensor_cores for 07, ...). Chapter 05's
training is gathered by training from trainers, epochs, step_trace, xla_step, epoch_predictions, keras_devices,
sweeps and training_figures.

It may import helpers.core, helpers.measuring, helpers.model, helpers.learning, helpers.executor, helpers.gpu,
helpers.tpu and helpers.figures: everything but the book.
"""
