"""What the learner sees drawn: speed-up bars and scaling plots (plots), rooflines (rooflines, which plots
re-exports), the numbers every figure prints (timings) and the explorer that re-measures at every change (widgets).
Their look is helpers.core.style, so lower layers can draw too.

It may import helpers.core, helpers.measuring and helpers.model.
"""
