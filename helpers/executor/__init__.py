"""The CPU executor for CUDA C: run, check and count a kernel's threads without a GPU.

    from helpers.executor import Program
    run = Program(source).launch("vector_add", (4,), (256,), (a, b, out, np.int32(n)))
    run.counters.sectors_per_request

Its parts, one module each. The front: `front` (the source as text and as a tree), `directives` (the
preprocessor), `cxx` (C++ lowered to C), `names` (C++ names: namespaces, using), `errors` (what goes wrong, at
translation or as a kernel runs). The translation, in layers: `c_types` (C's types and conversions), `scopes` (a
function's variables and output), `literals` (constants at translation time), `expressions` (each with its C type),
`calls` (functions, intrinsics, atomics), `translate` (statements: the Translator), `unit` (a source's functions
and templates), with `structs`, `vectors`, `warp`, `groups` and `wmma` (structs, vector types, warp primitives,
cooperative groups, tensor cores: how each translates and runs) and `printing` (printf). The runtime, in layers:
`batch` (who each lane is), `access` (loads and stores), `atomics`, `runtime` (control flow, barriers: `Lanes`),
`masks` (masks and variables per lane), `operators` (C's operators and math on lanes), `memory` (allocations and
every check on them), `counters` (what a launch did, warp by warp). The launch: `arguments` (a launch's shape and
arguments), `program` (translate once, launch many times). CuPy's face: `cupy_cpu` (the cupy module without a
GPU), `cupy_arrays`, `cupy_elementwise`, `cupy_reduction` (their parameters read by helpers.core.cupy_params).
`benchmark` times it against numba's simulator.

It may import helpers.core and helpers.measuring, and nothing else of helpers.
"""

from .arguments import MAX_BLOCK_THREADS, MAX_LAUNCH_THREADS, WARP_SIZE
from .c_types import CType
from .counters import Counters
from .errors import KernelFault
from .front import CudaCError, UnsupportedSyntax, kernel_names
from .program import Launch, Program, check_launch

__all__ = ["MAX_BLOCK_THREADS", "MAX_LAUNCH_THREADS", "WARP_SIZE", "CType", "Counters", "CudaCError", "KernelFault",
           "Launch", "Program", "UnsupportedSyntax", "check_launch", "kernel_names"]
