"""The chapters' own pieces: each chapter's workloads, models of its examples and its exercises' checkers
(training and mlp for chapter 05, choosing for 06, make_it_fast and tensor_cores for 07, ...).

It may import every sub-package but helpers.book.
"""
