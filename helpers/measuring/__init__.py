"""Measuring this machine: what it has, what its makers publish it can do, and how fast work runs on it.

The CPU and the accelerators here (cpu, hardware), published peaks with their sources (specs), the precision of a
device's matrix product (precision), honest timing (gathered by timing: record, formats, budget, timer,
judging_peak, disturbed, comparison), the operations every chapter times (operations) and their inputs, counts and
runners (workloads), BLAS threads (threads), the cost of one call here (host_calls) and the bench command (bench).
It may import helpers.core only.
"""
