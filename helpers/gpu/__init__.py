"""The GPU: CUDA C compiled by NVRTC with or without a GPU, chapter 03's CUDA C as text (sources), what the
compiler made of a kernel (compiled, machine_code, shared_passes), chapter 03's kernels run on CuPy or on the CPU
executor (cuda, cupy_checked), and the thread grid drawn on the CPU (grid).

It may import helpers.core, helpers.measuring, helpers.model and helpers.executor.
"""
