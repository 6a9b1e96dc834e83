"""The series' glossary: every term of art the chapters use, the forms that count as a use, and a plain definition.

    python -m helpers.learning.glossary      # rewrites docs/glossary.md from TERMS

`h.glossary.define("warp")` prints one entry in a notebook. tests/test_glossary.py reads the chapters' prose in
order and requires each term's first use to be bold (defined on the spot) or a link to its glossary entry, and
keeps docs/glossary.md in step with TERMS. The site builds the page into the book.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.files import replace_file
from ..core.notebook_file import read_notebook
from ..core.project import CHAPTERS, ROOT

PAGE = ROOT / "docs" / "glossary.md"
#: A chapter's header cell and its "What you will learn" list preview what is coming: they are not first uses.
PREVIEW = "## What you will learn"


@dataclass(frozen=True)
class Term:
    """One glossary entry: its name, the regexes that count as a use of it, and its definition.

    `code` says whether a use inside an inline `code` span counts (for names such as `blockIdx`)."""

    name: str
    forms: tuple[str, ...]
    definition: str
    code: bool = False

    @property
    def anchor(self) -> str:
        """The entry's anchor in docs/glossary.md (and the book's glossary page)."""
        return re.sub(r"[^\w\- ]", "", self.name.lower()).replace(" ", "-")  # as GitHub makes a heading's

    def pattern(self) -> re.Pattern[str]:
        """One regex matching any of the term's forms (a form's leading (?i) applies to that form alone; a space
        matches any run of white space, a line break included)."""
        forms = [form.replace(" ", r"\s+") for form in self.forms]
        return re.compile("|".join(f"(?i:{form[4:]})" if form.startswith("(?i)") else f"(?:{form})" for form in forms))


TERMS: tuple[Term, ...] = (
    # Measuring
    Term("FLOP", (r"\b[GMT]?FLOP",), "A floating-point operation: one multiply or one add. FLOP/s counts them per "
         "second; GFLOP/s is 10^9 a second, TFLOP/s 10^12."),
    Term("peak", (r"\bpeak\b",), "The most FLOP/s (or bytes a second) a chip can do, from its design: units x clock "
         "x operations per unit per cycle. A ceiling real code approaches, never a measurement."),
    Term("IQR", (r"\bIQR\b",), "Interquartile range: the spread of the middle half of the timing samples. A small IQR "
         "means a steady measurement."),
    Term("roofline", (r"(?i)\broofline",), "A model of a program's speed: the slower of doing its FLOPs at the "
         "peak FLOP/s and moving its bytes at the memory bandwidth."),
    Term("arithmetic intensity", (r"(?i)\barithmetic intensity",), "FLOPs done per byte moved to or from memory. "
         "Low intensity: memory-bound. High intensity: compute-bound."),
    Term("ridge point", (r"(?i)\bridge\b",), "Where a roofline's two roofs meet: the arithmetic intensity (peak "
         "FLOP/s over bandwidth) above which a program is compute-bound."),
    Term("memory-bound", (r"(?i)\b(?:memory|compute)[-\s]bound",), "Limited by moving bytes (memory-bound) or by "
         "doing arithmetic (compute-bound): whichever of the two takes longer sets the time."),
    Term("bandwidth", (r"(?i)\bbandwidth",), "How many bytes a second a memory or a link can deliver (GB/s)."),
    # The CPU
    Term("core", (r"(?i)\bcores?\b",), "One processor on a chip, with its own instruction stream: a CPU has a few, a "
         "GPU thousands of simple ones."),
    Term("clock", (r"(?i)\bclock\b", r"\bGHz\b"), "How many cycles a second pace a core, in GHz: each unit can start "
         "one operation a cycle."),
    Term("multiply-add", (r"(?i)\bmultiply-(?:add|accumulat)",), "a * b + c, the step of every matrix product, "
         "counted as 2 FLOPs."),
    Term("interpreter", (r"(?i)\binterpret(?:er|ed|s)?\b", r"(?i)\bbytecode"), "The program that runs Python: it "
         "reads each bytecode instruction, checks the types of its operands, then acts, for every single operation."),
    Term("SIMD", (r"\bSIMD\b",), "Single instruction, multiple data: one CPU instruction works on a short vector of "
         "numbers at once."),
    Term("lane", (r"\blanes?\b",), "One slot of a SIMD vector (or one thread of a GPU warp): a 512-bit AVX-512 "
         "register holds 16 float32 lanes."),
    Term("FMA", (r"\bFMAs?\b", r"(?i)fused multiply-add"), "Fused multiply-add: a * b + c as one instruction, "
         "counted as 2 FLOPs."),
    Term("AVX2, AVX-512", (r"\bAVX(?:2|-512)",), "x86 CPUs' vector instruction sets: AVX2 works on 256 bits (8 "
         "float32 lanes), AVX-512 on 512 bits (16 lanes)."),
    Term("page fault", (r"(?i)\bpage faults?",), "The first touch of a fresh page of memory: the program stops while "
         "the operating system supplies a zeroed page."),
    Term("heap", (r"(?i)\bheap\b",), "The memory a program asks for piece by piece while it runs (every Python "
         "object lives there), as opposed to the fixed slots of a function's own variables."),
    Term("allocator", (r"(?i)\ballocators?\b",), "The library code that hands a program memory and takes it back "
         "(glibc's malloc on Linux): it may reuse what was freed, or give it back to the operating system."),
    Term("cache", (r"(?i)\bcaches?\b",), "A small, fast memory on the chip that keeps recently used data close to the "
         "cores, so a second use does not wait for main memory."),
    Term("register", (r"(?i)\bregisters?\b",), "The few values a core holds right at its arithmetic units; a "
         "register file is all of them."),
    Term("BLAS", (r"\bBLAS\b",), "Basic Linear Algebra Subprograms: the tuned library (OpenBLAS, MKL, Accelerate) "
         "that NumPy calls for a matrix product."),
    Term("thread", (r"(?i)\bthreads?\b",), "One sequence of instructions the hardware runs. A CPU runs a few; a GPU "
         "runs one copy of a kernel per thread, thousands at once."),
    Term("vectorised", (r"(?i)\bvectori[sz](?:ed|e|es|ing|ation)\b",), "Written as whole-array operations (z = 2 "
         "* x + 3 * y) that a library runs in compiled loops, instead of a Python loop over elements."),
    # Number formats
    Term("float32", (r"\bfloat32\b", r"\bFP32\b"), "A 32-bit floating-point number: about 7 significant decimal "
         "digits. The series' default."),
    Term("mantissa", (r"(?i)\bmantissa",), "The bits of a floating-point number that hold its digits (the rest "
         "are its sign and exponent). Stored: 23 in float32, 10 in TF32, 7 in bfloat16; a leading 1 is implied, not "
         "stored, so the significant bits are one more: 24, 11 and 8."),
    Term("float64", (r"\bfloat64\b", r"\bFP64\b"), "A 64-bit floating-point number: about 16 significant "
         "decimal digits. Python's own float."),
    Term("bfloat16", (r"\bbf16\b", r"\bbfloat16\b"), "A 16-bit float with float32's 8 exponent bits, so its "
         "range, but only 7 stored mantissa bits (8 significant with the implied leading 1): 2 to 3 significant "
         "digits. What a TPU's MXU multiplies."),
    Term("TF32", (r"\bTF32\b",), "TensorFloat-32: float32's range with 10 stored mantissa bits (11 significant "
         "with the implied leading 1, about 3 digits), what NVIDIA tensor cores use for a float32 product since the "
         "A100."),
    # Accelerators in general
    Term("host", (r"\bhost\b",), "The CPU and its memory, which drive an accelerator: the program runs there and "
         "sends work and data to the device."),
    Term("device", (r"\bdevices?\b",), "An accelerator (a GPU or TPU) with its own memory, driven by the host; "
         "JAX also calls the CPU a device."),
    Term("PCIe", (r"\bPCIe\b",), "The link between the host and a GPU: tens of GB/s, far slower than the GPU's own "
         "memory."),
    Term("kernel", (r"\bkernels?\b",), "A function that runs on an accelerator: on a GPU, one copy per thread; in "
         "JAX, what XLA compiles; in a BLAS, its innermost hand-tuned routines. (A Jupyter kernel is the Python "
         "process that runs a notebook.)"),
    Term("launch", (r"(?i)\blaunch(?:es|ed|ing)?\b",), "Starting a kernel on the device: the host sends the kernel, "
         "its grid and its arguments. A fixed cost of microseconds, paid every call."),
    Term("jit", (r"\bjit(?:ted|ting)?\b", r"(?i)just-in-time"), "Just-in-time compilation: JAX traces a Python "
         "function the first time it is called and compiles it to machine code for the device.", code=True),
    Term("softmax", (r"(?i)\bsoftmax",), "Turns a list of scores into probabilities: exponentiate each, divide by "
         "their sum."),
    Term("trace", (r"(?i)\btrac(?:e|es|ed|ing)\b",), "What JAX does at a function's first call: runs the Python "
         "once with placeholder values to record its array operations, which XLA then compiles."),
    Term("XLA", (r"\bXLA\b",), "The compiler JAX (and TensorFlow) hands a traced function to; it fuses operations "
         "and writes the kernels for CPU, GPU or TPU."),
    Term("dispatch", (r"(?i)\bdispatch",), "The fixed work a library does per call before any arithmetic: check the "
         "arguments, find the compiled code, start it."),
    Term("fusion", (r"(?i)\bfus(?:e|es|ed|ing|ion)\b(?!\W*multiply)",), "Compiling several operations into one "
         "kernel, so intermediate results stay in registers instead of going to memory and back."),
    # The GPU
    Term("CUDA", (r"\bCUDA\b",), "NVIDIA's platform for GPU programs: CUDA C is C++ with a few keywords for "
         "kernels and threads."),
    Term("driver", (r"(?i)\bdrivers?\b",), "The operating system's program for a device: NVIDIA's driver is what "
         "CUDA, CuPy and JAX talk to when they copy data to the GPU or start a kernel."),
    Term("cuBLAS", (r"\bcuBLAS\b",), "NVIDIA's BLAS for its GPUs: what CuPy calls for a matrix product."),
    Term("NVRTC", (r"\bNVRTC\b",), "NVIDIA's runtime compiler: turns CUDA C source into GPU code from a running "
         "program, no GPU needed to compile."),
    Term("compute capability", (r"\bsm_\d+", r"(?i)compute capability"), "A GPU generation's version number, "
         "which its code is compiled for: sm_75 is Turing (the T4), sm_90 Hopper (the H100).", code=True),
    Term("thread block", (r"(?i)\bthread blocks?\b", r"(?i)\bblocks? of threads\b"), "A group of GPU threads (up to "
         "1,024) that run on one SM and can share memory and wait for each other."),
    Term("threadIdx", (r"\bthreadIdx\b",), "A CUDA thread's number within its block (threadIdx.x).", code=True),
    Term("blockIdx", (r"\bblockIdx\b",), "A CUDA block's number within the grid (blockIdx.x).", code=True),
    Term("blockDim", (r"\bblockDim\b",), "How many threads a CUDA block has (blockDim.x).", code=True),
    Term("gridDim", (r"\bgridDim\b",), "How many blocks a CUDA grid has (gridDim.x).", code=True),
    Term("grid-stride loop", (r"(?i)\bgrid-stride",), "A kernel loop in which each thread handles element i, then "
         "i + (all threads in the grid), ...: any array size works with any number of threads."),
    Term("warp", (r"\bwarps?\b",), "32 GPU threads that run in lock step: one instruction at a time for all 32."),
    Term("coalesced", (r"(?i)\bcoalesc(?:e|es|ed|ing)\b",), "A warp's memory access whose 32 addresses lie side "
         "by side, so the GPU serves them with the fewest 32-byte sectors: 4 for 32 neighbouring floats."),
    Term("sector", (r"(?i)\bsectors?\b",), "The 32 bytes a GPU's memory system moves at a time: a warp's request "
         "costs as many sectors as its addresses touch."),
    Term("bank conflict", (r"(?i)\bbank conflicts?\b", r"(?i)\bconflict-free\b"), "Shared memory is 32 banks, "
         "each serving one 4-byte word per clock: two lanes of a warp wanting different words of one bank wait one "
         "pass each."),
    Term("wavefront", (r"(?i)\bwavefronts?\b",), "One pass of a shared-memory or L1 request, in Nsight Compute's "
         "words: the unit serves one a clock, and a request with a bank conflict takes several."),
    Term("warp scheduler", (r"(?i)\bschedulers?\b",), "One of the 4 units of an SM that, every clock, pick a warp "
         "that is ready and issue one of its instructions."),
    Term("issue", (r"(?i)\bissu(?:e|es|ed|ing)\b",), "To hand an instruction to the units that run it: a warp "
         "scheduler issues at most one a clock, and a warp waiting for a load cannot issue the instruction that "
         "needs it."),
    Term("occupancy", (r"(?i)\boccupancy\b",), "How many warps an SM holds at once, of the most it can: its blocks' "
         "threads, shared memory and registers limit it. More warps hide more waiting."),
    Term("divergence", (r"(?i)\bdiverg(?:e|es|ed|ence|ent|ing)\b",), "Threads of one warp taking different branches: "
         "the warp runs each path in turn, with the other lanes idle."),
    Term("SM", (r"\bSMs?\b", r"(?i)streaming multiprocessor"), "Streaming multiprocessor: one of a GPU's cores "
         "proper (40 on a T4), each running many warps at once."),
    Term("shared memory", (r"(?i)\bshared memory\b",), "A small, fast memory on each SM that the threads of one "
         "block share, written and read by the kernel itself."),
    Term("__syncthreads", (r"__syncthreads",), "A barrier: every thread of the block waits there until all have "
         "reached it.", code=True),
    Term("race", (r"(?i)\brac(?:e|es) (?:between|condition)", r"(?i)\bdata races?\b"), "A data race: two threads "
         "touching the same memory, at least one of them writing, with nothing ordering them; the result depends "
         "on which gets there first."),
    Term("L2 cache", (r"\bL2\b",), "The GPU's (or CPU's) last cache before main memory, shared by all its cores."),
    Term("L1 cache", (r"\bL1\b",), "Each SM's own small cache in front of global memory: every load request looks "
         "up its 128-byte lines there first."),
    Term("DRAM", (r"\bDRAM\b",), "Dynamic RAM: the memory chips a computer's or a GPU's main memory is made of, "
         "outside the processor's own chip (HBM is DRAM stacked beside it)."),
    Term("global memory", (r"(?i)\bglobal memory\b",), "A GPU's DRAM as a kernel sees it: every thread can read "
         "and write it, through the L1 and L2 caches."),
    Term("Little's law", (r"(?i)\blittle's law\b",), "What is in flight equals the rate times how long each item "
         "takes: to keep a memory busy at B bytes a second when a load takes t seconds to come back, B x t bytes "
         "must be on their way at every moment."),
    Term("float4", (r"\bfloat4\b",), "CUDA's vector of four floats: one 16-byte load or store moves all four.",
         code=True),
    Term("CUDA graph", (r"(?i)\bCUDA graphs?\b",), "A recorded sequence of GPU kernels that the GPU starts one after "
         "another without waiting for the host: XLA replays a jitted program's kernels so."),
    Term("HBM", (r"\bHBM\d?e?\b",), "High-bandwidth memory: stacked DRAM beside the chip, the main memory of "
         "datacentre GPUs and TPUs (TB/s)."),
    Term("tensor core", (r"(?i)\btensor cores?\b",), "A GPU unit that multiplies small matrix tiles in one step, "
         "in reduced precision (FP16, bf16, TF32)."),
    Term("fp16", (r"\bfp16\b", r"\bFP16\b", r"(?i)\bhalf precision\b"), "IEEE half precision (float16, CUDA's "
         "`half`): 16 bits, 11 significant bits (about 3 digits), largest finite number 65,504; what a T4's tensor "
         "cores multiply."),
    Term("WMMA", (r"\bWMMA\b",), "Warp matrix multiply-accumulate (`nvcuda::wmma`, `#include <mma.h>`): CUDA C++'s "
         "way to the tensor cores, in which the 32 threads of a warp load, multiply and store 16 x 16 tiles "
         "together."),
    Term("fragment", (r"(?i)\bfragments?\b",), "A WMMA tile (16 x 16 for fp16) held in the registers of a warp's "
         "32 threads, each holding a few of its elements in an order CUDA leaves unspecified."),
    Term("stream", (r"\bstreams?\b",), "A queue of GPU work that runs in order; work in different streams may "
         "overlap, such as a copy beside a kernel."),
    Term("CUDA event", (r"(?i)\bCUDA events?\b", r"\bcudaEvent"), "A marker put in a stream; the GPU records when "
         "it got there, so two events time the GPU work between them."),
    Term("pinned memory", (r"(?i)\bpinned\b", r"(?i)page-locked"), "Host memory the OS may not move, so the GPU "
         "copies from it directly at the link's full rate."),
    Term("pageable memory", (r"(?i)\bpageable\b",), "Ordinary host memory, which the OS may move: a copy to the GPU "
         "goes through a pinned staging buffer, at a fraction of the link's rate."),
    Term("double buffering", (r"(?i)double[-\s]buffer",), "Using two buffers so the next piece of data is copied "
         "while the current one is computed on."),
    # The TPU
    Term("systolic array", (r"(?i)\bsystolic\b",), "A grid of multiply-accumulate cells: each value fetched once "
         "is passed from cell to cell, with no trip back to a register file."),
    Term("weight-stationary", (r"(?i)\bweight[-\s]stationary",), "A systolic array's design in which each cell "
         "keeps one weight while the activations flow past it."),
    Term("MXU", (r"\bMXUs?\b",), "Matrix multiply unit: the TPU's systolic array, 128 x 128 multiply-accumulators "
         "(256 x 256 on v6e)."),
    Term("Pallas", (r"\bPallas\b",), "JAX's language for writing a kernel yourself, in Python: the kernel works on "
         "one block of each array per step of a grid, and BlockSpecs say which block each step gets."),
    Term("VMEM", (r"\bVMEM\b",), "A TPU core's vector memory: on-chip, 128 MiB per core on a v5e or v6e, where a "
         "Pallas kernel's blocks are copied from HBM before it works on them."),
    Term("BlockSpec", (r"\bBlockSpecs?\b",), "In Pallas, the shape of the block a kernel sees of one array, and the "
         "index map from a grid step to that block's position."),
    Term("ref", (r"\brefs?\b",), "In Pallas, a reference to a block in memory (VMEM on a TPU), not an array: a "
         "kernel reads it with `x_ref[...]` and writes it with `z_ref[...] = value`."),
    Term("scratch buffer", (r"(?i)\bscratch\b",), "Memory a kernel gets for its own use, kept from one step of its "
         "grid to the next and never copied to or from HBM: in Pallas, `scratch_shapes`, such as a float32 "
         "accumulator in VMEM."),
    Term("scoped VMEM limit", (r"(?i)\bscoped VMEM\b",), "The VMEM the TPU compiler lets one kernel take (its block "
         "buffers and its scratch), below what the core has; a Pallas kernel may raise its own with "
         "`vmem_limit_bytes`."),
    Term("epilogue", (r"(?i)\bepilogues?\b",), "Work a kernel does on its result before writing it out, such as "
         "adding a bias and applying a ReLU, so that the result makes no extra trip through memory."),
    Term("vector unit", (r"(?i)\bvector units?\b", r"\bVPU\b"), "The part of a core that does SIMD arithmetic "
         "on short vectors: a CPU core's SIMD units; on a TPU, the unit beside the MXU for elementwise work (adds, "
         "activations), far slower than the MXU."),
    Term("cache blocking", (r"(?i)\bcache blocking",), "Splitting a matrix product into tiles that stay in a cache "
         "while each is used many times."),
    Term("register blocking", (r"(?i)\bregister blocking",), "Each thread computes several outputs and keeps the "
         "numbers it reuses in its registers, so it reads shared memory less per multiply-add."),
    Term("tile", (r"(?i)\btiles?\b", r"(?i)\btiled\b", r"(?i)\btiling\b"), "A block of a matrix small enough to "
         "sit in fast memory (a GPU's shared memory, a TPU's VMEM) while it is used many times."),
    Term("sharding", (r"(?i)\bshard(?:s|ed|ing)?\b",), "Splitting an array across several devices, each holding "
         "and computing on its own piece."),
    Term("all-reduce", (r"(?i)\ball-reduce",), "Summing values held on several devices so that every device gets "
         "the total."),
    # Training and choosing
    Term("ReLU", (r"\bReLU\b",), "Rectified linear unit: a layer's activation that sets negative values to zero "
         "and keeps positive ones."),
    Term("loss", (r"\bloss(?:es)?\b", r"(?i)cross-entropy"), "The number training lowers: how wrong the network's "
         "answers are (softmax cross-entropy: minus the log of the probability it gives the right class)."),
    Term("logits", (r"(?i)\blogits?\b",), "A network's raw output scores, one per class, before softmax turns them "
         "into probabilities."),
    Term("one-hot", (r"(?i)\bone-?hot\b",), "A vector of zeros with a 1 at the position of the right class."),
    Term("learning rate", (r"(?i)learning rate",), "The step size of SGD: each weight moves by it times its "
         "gradient."),
    Term("epoch", (r"(?i)\bepochs?\b",), "One pass of training over every example of the training set."),
    Term("batch", (r"(?i)\bbatch(?:es)?\b", r"(?i)\bmini-batch"), "The examples one training step (or one "
         "inference call) works on together."),
    Term("gradient", (r"(?i)\bgradients?\b",), "How the loss changes as each weight changes; training moves the "
         "weights against it."),
    Term("SGD", (r"\bSGD\b", r"(?i)stochastic gradient descent"), "Stochastic gradient descent: after each batch, "
         "every weight -= learning rate x its gradient."),
    Term("chain rule", (r"(?i)\bchain rule\b",), "The slope of a composition of functions is the product of the "
         "slopes of its parts: how a backward pass carries a gradient from the loss back through every layer."),
    Term("cache line", (r"(?i)\bcache lines?\b",), "The block of memory a cache holds and looks up as one: 64 bytes "
         "on most CPUs, 128 bytes in an NVIDIA GPU's L1."),
    Term("worklog", (r"(?i)\bworklogs?\b",), "An engineer's public write-up of making one kernel faster step by "
         "step, with the timing of each step: chapter 07 checks its model against four of them."),
    Term("pointer chasing", (r"(?i)\bpointer chasing\b",), "A chain of loads, each of an address the one before "
         "returned: no load can start early, so the time per load is memory's latency, not its bandwidth."),
    Term("momentum", (r"(?i)\bmomentum\b",), "An optimizer's memory of its last steps: each parameter keeps a "
         "velocity, mu times its last value plus the gradient, and moves along it, so gradients that agree add up."),
    Term("mixed precision", (r"(?i)mixed precision",), "Matrix products in bfloat16 (or float16), weights and "
         "loss kept in float32."),
    Term("latency", (r"(?i)\blatency",), "How long one request waits for its answer, as opposed to throughput: "
         "how many answers a second."),
    Term("throughput", (r"(?i)\bthroughput",), "How much work a second gets done (samples/s, GFLOP/s), however "
         "long each piece waits."),
    Term("optimizer", (r"(?i)\boptimi[sz]er",), "The rule that turns each batch's gradients into the weights' "
         "update: SGD steps against the gradient; Adam also keeps running averages for each weight."),
    Term("Adam", (r"\bAdam\b",), "An optimiser that keeps, for each weight, running averages of its gradient and "
         "of the gradient's square, and steps from them: in float32, 16 bytes a weight with the weight itself."),
    Term("inference", (r"(?i)\binference\b",), "Using a trained model: a forward pass, no gradients."),
    Term("token", (r"(?i)\btokens?\b",), "A piece of text a language model reads or writes (a word or part of "
         "one); it writes one token at a time, each depending on the ones before."),
    Term("scan", (r"(?i)\bscan\b", r"(?i)\bassociative scan"), "A loop in which each step needs the previous "
         "step's result (a recurrence); an associative scan combines the steps in a tree, with more work but few "
         "sequential steps."),
    Term("Amdahl's law", (r"Amdahl",), "If a share s of a program must run serially, no number of cores makes it "
         "more than 1/s times faster."),
    Term("on-demand price", (r"(?i)\bon-demand\b",), "The cloud's list rate for a machine that stays yours until "
         "you stop it."),
    Term("vCPU", (r"\bvCPUs?\b",), "A cloud's virtual CPU: one hardware thread. Where a processor runs two threads "
         "per core, as Google Cloud's do unless told otherwise, two vCPUs are one physical core."),
    Term("spot price", (r"(?i)\bspot[-\s](?:price|pricing|rate|instance|VM|machine)s?\b",), "The cloud's cheaper "
         "rate for a machine it may take back at short notice."),
)


#: A fenced code block (a solution, an example) and a heading (the section's body defines its terms): not uses.
FENCED = re.compile(r"^```.*?^```|^#+ [^\n]*", re.S | re.M)
#: An inline code span: a use only of terms that are names in code (`Term.code`).
CODE_SPAN = re.compile(r"`[^`\n]+`")
#: Bold text, and a link whose target is a glossary entry: where a first use may stand.
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.S)
GLOSSARY_LINK = re.compile(r"\[[^\]]+\]\([^)]*glossary[^)]*\)")


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with every match of `pattern` replaced by spaces, so positions stay where they were."""
    return pattern.sub(lambda m: " " * len(m.group()), text)


def first_uses(cells: list[tuple[str, str]]) -> dict[str, tuple[str, int, bool]]:
    """Where each term is first used in `cells` ((place, markdown source) in reading order): term name -> (place,
    offset in that cell, whether that use is bold or a glossary link). Terms never used are left out."""
    found: dict[str, tuple[str, int, bool]] = {}
    for place, source in cells:
        prose = _blank(source, FENCED)
        plain = _blank(prose, CODE_SPAN)
        marked = [m.span() for pattern in (BOLD, GLOSSARY_LINK) for m in pattern.finditer(prose)]
        for term in TERMS:
            if term.name in found:
                continue
            use = term.pattern().search(prose if term.code else plain)
            if use:
                found[term.name] = (place, use.start(), any(a <= use.start() < b for a, b in marked))
    return found


def chapter_prose(folder: Path = ROOT / "notebooks") -> list[tuple[str, str]]:
    """The chapters' markdown cells in reading order, as (place, source), less each header and learning list."""
    cells = []
    for chapter in CHAPTERS:
        notebook = read_notebook(folder / chapter.file)
        for index, cell in enumerate(notebook["cells"]):
            source = "".join(cell["source"])
            if (cell["cell_type"] == "markdown" and "header" not in cell.get("metadata", {}).get("tags", [])
                    and not source.startswith(PREVIEW)):
                cells.append((f"{chapter.file} cell {index} (id {cell.get('id')})", source))
    return cells


def undefined(cells: list[tuple[str, str]]) -> list[str]:
    """One line for each term whose first use in `cells` is neither bold nor a glossary link, and for each term
    the cells never use (the glossary should not list what the series does not say)."""
    found = first_uses(cells)
    lines = []
    for term in TERMS:
        if term.name not in found:
            lines.append(f"{term.name}: never used in the chapters' prose (use it, or drop it from the glossary)")
        elif not found[term.name][2]:
            place, offset, _ = found[term.name]
            source = dict(cells)[place]
            context = " ".join(source[max(0, offset - 40):offset + 40].split())
            lines.append(f"{term.name}: first used in {place}, not bold: ...{context}... (make that use bold and "
                         f"define it there, or link it to docs/glossary.md#{term.anchor})")
    return lines


def by_name(name: str) -> Term:
    """The term called `name` (any case), or a ValueError listing the terms there are."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a glossary term's name as a string, such as 'warp'; got {type(name).__name__} "
                         f"{name!r:.40}")
    wanted = name.strip().lower() if len(name) <= MAX_NAME else None  # a longer name is no term's: not even read
    for term in TERMS:
        if wanted in (term.name.lower(), term.anchor):
            return term
    raise ValueError(f"no glossary term {name!r:.60}; the glossary has: {', '.join(t.name for t in TERMS)}")


#: The longest name by_name looks up (the longest term's is under 40 characters).
MAX_NAME = 200


def define(name: str) -> None:
    """Print one term's definition (`h.glossary.define("warp")`)."""
    term = by_name(name)
    print(f"{term.name}: {term.definition}")


def page() -> str:
    """docs/glossary.md as it should read: every term with its definition, grouped by topic."""
    lines = ["# Glossary", "",
             "Every term of art the chapters use, in plain words. Each is also defined, in bold, where the series "
             "first uses it.",
             "This page is written by `python -m helpers.learning.glossary` from `helpers/learning/glossary.py`; a "
             "test keeps them in step.", ""]
    for term in TERMS:
        lines += [f"## {term.name}", "", term.definition, ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Rewrite docs/glossary.md (no arguments)."""
    if argv:
        print("usage: python -m helpers.learning.glossary   (rewrites docs/glossary.md)", file=sys.stderr)
        return 2
    replace_file(PAGE, page().encode("utf-8"))  # a link there is replaced, never written through
    print(f"wrote {PAGE.relative_to(ROOT)}: {len(TERMS)} terms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
