"""The TPU: a systolic array simulated cycle by cycle (systolic), many devices and how arrays are laid out on
them (sharding), and chapter 04's Pallas kernel with its checks and costs (pallas).

It may import helpers.core, helpers.measuring, helpers.model and helpers.learning.
"""
