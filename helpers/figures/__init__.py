"""What the learner sees drawn: speed-up bars, scaling and roofline plots (plots) and the explorer that
re-measures at every change (widgets). Their look is helpers.core.style, so lower layers can draw too.

It may import helpers.core, helpers.measuring and helpers.model.
"""
