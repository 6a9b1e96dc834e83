"""The performance model: how long work should take on a device, from its roofs and the cost of each call.

One model for every prediction the series prints. It may import helpers.core and helpers.measuring (the peaks,
and what a call costs here); never a chapter, a figure or a GPU or TPU library.
"""
