"""The chapters' own pieces: each chapter's workloads, models of its examples and its exercises' checkers
(training and mlp for chapter 05, choosing for 06, make_it_fast and tensor_cores for 07, ...).

It may import helpers.core, helpers.measuring, helpers.model, helpers.learning, helpers.executor, helpers.gpu,
helpers.tpu and helpers.figures: everything but the book.
"""
