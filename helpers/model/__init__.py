"""The performance model: how long work should take on a device, from its roofs and the cost of each call.

One model for every prediction the series prints. Its public surface is `roofline` (h.roofline.X), which holds no
code and re-exports the parts; everything outside the model imports it through `roofline`, and the parts import
one another directly, in this order (each only from those above it), never through `roofline`:
- arguments: the model's checks of its arguments (one-line errors naming what is accepted);
- costs: what the roofs leave out: a call's host cost, a kernel's fixed cost, the efficiencies, with sources;
- roofs: a device's roofs (bandwidth, compute peaks, their sources) and the clock a GPU holds;
- seconds: seconds for work: the roofs at their efficiencies, kernel floors, calls synced or pipelined;
- matmuls: a library matmul (padded to a TPU's MXUs, in waves over a GPU's SMs) and a blocked Pallas matmul;
- copies: copies over the host link, pinned or pageable;
- decision: `decide`, a workload on this CPU and on published devices, term by term, and the winner;
- multiprocessor: one SM of a GPU: its units' rates and latencies, occupancy, the per-capability tables;
- kernels: chapter 07's kernel model: a kernel's time from its counters, unit by unit;
- caches: a matmul kernel's cache model: the bytes that reach DRAM, and its written assumptions.
It may import helpers.core and helpers.measuring (the peaks, and what a call costs here); never a chapter, a
figure, plotly, or the gpu or tpu sub-packages.
"""
