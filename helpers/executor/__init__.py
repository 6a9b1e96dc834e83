"""The CPU executor for CUDA C: run, check and count a kernel's threads without a GPU.

    from helpers.executor import Program
    run = Program(source).launch("vector_add", (4,), (256,), (a, b, out, np.int32(n)))
    run.counters.sectors_per_request

Its parts, one module each: `front` (the source as text and as a tree), `c_types` (C's types and conversions),
`translate` (C to lock-step Python), `runtime` (lanes, masks, barriers), `memory` (allocations and every check on
them), `counters` (what a launch did, warp by warp), `arguments` (a launch's shape and arguments), `program`
(translate once, launch many times). helpers.cupy_cpu puts CuPy's face on it.
"""

from .arguments import MAX_BLOCK_THREADS, MAX_LAUNCH_THREADS, WARP_SIZE
from .c_types import CType
from .counters import Counters
from .errors import KernelFault
from .front import CudaCError, UnsupportedSyntax, kernel_names
from .program import Launch, Program, check_launch

__all__ = ["MAX_BLOCK_THREADS", "MAX_LAUNCH_THREADS", "WARP_SIZE", "CType", "Counters", "CudaCError", "KernelFault",
           "Launch", "Program", "UnsupportedSyntax", "check_launch", "kernel_names"]
