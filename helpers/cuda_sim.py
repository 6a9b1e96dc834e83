"""Run CUDA C kernels on the CPU, thread by thread, and catch what a GPU would not tell you.

    program = cuda_sim.Program(source)                       # compiles every function of the source
    run = program.launch("vector_add", grid=(4,), block=(32,), args=(a, b, out, np.int32(n)))

A launch runs every block of the grid; in a block, each thread is a Python generator that runs to its next
`__syncthreads()`, and the block moves on when all of its threads have arrived (the barrier). Every load and
store is checked: out of bounds (each array argument knows its length), a shared or local element read before
any thread wrote it, two threads of a block touching one shared element between two barriers with at least one
write (a race: what a missing `__syncthreads()` causes), and a barrier reached by only part of a block. The first
fault stops the launch with a KernelFault naming the thread, the block, the element and the line. With
`trace=True` the launch keeps the path each thread took through the branches (warps of 32 threads run those
paths in lock step on a GPU: helpers for pictures of divergence read them).

It is for correctness at small sizes, not for speed: about a million C operations a second.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import cuda_c
from .cuda_c import CONVERSIONS, DTYPES, CType, CudaCError
from .validate import positive_int

#: Threads that run in lock step on an NVIDIA GPU.
WARP_SIZE = 32
#: The most threads a block may have (every NVIDIA GPU since 2010), and per dimension.
MAX_BLOCK_THREADS = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
#: Loop steps a launch may take in all before it is stopped as a loop that never ends.
MAX_STEPS = 5_000_000
#: The most threads one launch may have on the CPU executor (it runs about a million C operations a second).
MAX_LAUNCH_THREADS = 2**18


class KernelFault(RuntimeError):
    """A kernel did something wrong while it ran: `kind` says what ('out-of-bounds read', 'race', ...)."""

    def __init__(self, kind: str, message: str, *, thread: tuple[int, ...] | None = None,
                 block: tuple[int, ...] | None = None, line: int | None = None) -> None:
        self.kind, self.thread, self.block, self.line = kind, thread, block, line
        super().__init__(message)


# ------------------------------------------------------------------------------------------------ memory


class Memory:
    """An array argument, or a block's shared array, or a thread's local array: flat data and its bounds."""

    __slots__ = ("name", "data", "space", "dims", "strides", "written", "readers", "writers", "epoch", "integer")

    def __init__(self, name: str, data: np.ndarray, space: str, dims: tuple[int, ...] = ()) -> None:
        self.name, self.data, self.space = name, data, space
        self.dims = dims or (data.size,)
        self.strides = tuple(int(np.prod(self.dims[i + 1:])) for i in range(len(self.dims)))
        self.integer = data.dtype.kind in "iub"
        self.written = None if space == "global" else np.zeros(data.size, bool)
        # shared memory: per element, who read and wrote it since the last barrier (epoch)
        self.readers: dict[int, tuple[int, int, int]] = {}  # element -> (epoch, thread or -2 for several, line)
        self.writers: dict[int, tuple[int, int, int]] = {}
        self.epoch = -1


@dataclass(frozen=True)
class Pointer:
    """Where a pointer points: an array argument and an element offset into it."""

    memory: Memory
    offset: int


class _Unset:
    """The value of a variable declared without one: using it is reported."""

    __slots__ = ("name", "line")

    def __init__(self, name: str, line: int) -> None:
        self.name, self.line = name, line

    def _fail(self, *args: Any) -> Any:
        raise KernelFault("uninitialised variable", f"the variable {self.name} (declared at line {self.line} "
                          "without a value) is used before it is given one", line=self.line)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __neg__ = __bool__ = __float__ = __int__ = _fail
    __index__ = __and__ = __or__ = __xor__ = __lshift__ = __rshift__ = __invert__ = __abs__ = _fail
    __floordiv__ = __mod__ = __hash__ = _fail
    __rand__ = __ror__ = __rxor__ = __rlshift__ = __rrshift__ = __rfloordiv__ = __rmod__ = __pow__ = __rpow__ = _fail


@dataclass(slots=True)
class Thread:
    """One thread's coordinates (`_c` in the translated code) and what the launch keeps of it."""

    tx: int
    ty: int
    tz: int
    bx: int
    by: int
    bz: int
    bdx: int
    bdy: int
    bdz: int
    gdx: int
    gdy: int
    gdz: int
    tid: int  # linear index in its block: x + y * blockDim.x + z * blockDim.x * blockDim.y
    blk: int  # linear index of its block in the grid
    run: Launch
    shared: dict[tuple[str, str, tuple[int, ...]], Memory]
    path: list[tuple[int, int]] | None = None

    @property
    def thread(self) -> tuple[int, int, int]:
        return (self.tx, self.ty, self.tz)

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.bx, self.by, self.bz)

    def fault(self, kind: str, what: str, line: int) -> KernelFault:
        where = f"thread {_xyz(self.thread, self.run.block)} of block {_xyz(self.block, self.run.grid)}"
        return KernelFault(kind, f"{kind} at line {line}: {where} {what}", thread=self.thread, block=self.block,
                           line=line)


def _xyz(t: tuple[int, ...], shape: tuple[int, int, int]) -> str:
    """A thread's or block's coordinates in as many dimensions as the launch has: (5,) or (5, 2)."""
    used = 3 if shape[2] > 1 else 2 if shape[1] > 1 else 1
    return "(" + ", ".join(map(str, t[:used])) + (",)" if used == 1 else ")")


def _element(memory: Memory, flat: int) -> str:
    if len(memory.dims) == 1:
        return f"{memory.name}[{flat}]"
    index, rest = [], flat
    for stride in memory.strides:
        index.append(rest // stride)
        rest %= stride
    return memory.name + "".join(f"[{i}]" for i in index)


def _value(memory: Memory, flat: int) -> Any:
    value = memory.data[flat]
    return int(value) if memory.integer else value


def _check_pointer(c: Thread, p: Any, index: int, line: int, verb: str) -> tuple[Memory, int]:
    if not isinstance(p, Pointer):
        raise c.fault("bad pointer", "used a pointer that points nowhere", line)
    memory, flat = p.memory, p.offset + index
    if not 0 <= flat < memory.data.size:
        raise c.fault(f"out-of-bounds {verb}", f"{verb} {memory.name}[{flat}], but {memory.name} has "
                      f"{memory.data.size} elements (0 to {memory.data.size - 1}): is a bounds check such as "
                      "if (i < n) missing or wrong?", line)
    return memory, flat


def _ld(c: Thread, p: Pointer, index: int, line: int) -> Any:
    memory, flat = _check_pointer(c, p, index, line, "read")
    wrote = memory.writers.get(flat)
    if wrote is not None and _unordered(c, wrote):
        raise _global_race(c, memory, flat, line, "read", wrote)
    return _value(memory, flat)


def _st(c: Thread, p: Pointer, index: int, value: Any, line: int) -> None:
    memory, flat = _check_pointer(c, p, index, line, "write")
    wrote = memory.writers.get(flat)
    if wrote is not None and _unordered(c, wrote):
        raise _global_race(c, memory, flat, line, "write", wrote)
    memory.writers[flat] = (c.run.epoch, c.tid, line, c.blk)
    _write(c, memory, flat, value, line)


def _unordered(c: Thread, wrote: tuple[int, int, int, int]) -> bool:
    """Whether another thread's earlier write to global memory is unordered with this access: it came from
    another block (no barrier orders blocks), or from this block with no __syncthreads() in between."""
    epoch, tid, _, blk = wrote
    return blk != c.blk or (epoch == c.run.epoch and tid != c.tid)


def _global_race(c: Thread, memory: Memory, flat: int, line: int, doing: str,
                 wrote: tuple[int, int, int, int]) -> KernelFault:
    epoch, tid, at, blk = wrote
    grid = c.run.grid
    block = (blk % grid[0], blk // grid[0] % grid[1], blk // (grid[0] * grid[1]))
    who = f"thread {_xyz(_thread_of(c, tid), c.run.block)} of " + (
        "the same block" if blk == c.blk else f"block {_xyz(block, grid)}")
    return c.fault("race", f"will {doing} {memory.name}[{flat}], which {who} wrote at line {at} in this launch "
                   "with nothing ordering the two: on a GPU the result depends on which runs first (several "
                   "threads adding into one element need atomicAdd)", line)


def _flat(c: Thread, memory: Memory, index: tuple[int, ...], line: int, verb: str) -> int:
    flat = 0
    for i, (size, stride) in enumerate(zip(memory.dims, memory.strides, strict=True)):
        if not 0 <= index[i] < size:
            text = memory.name + "".join(f"[{j}]" for j in index)
            raise c.fault(f"out-of-bounds {verb}", f"{verb} {text}, but dimension {i + 1} of {memory.name} has "
                          f"{size} elements (0 to {size - 1})", line)
        flat += index[i] * stride
    return flat


def _lda(c: Thread, memory: Memory, index: tuple[int, ...], line: int) -> Any:
    flat = _flat(c, memory, index, line, "read")
    if not memory.written[flat]:
        raise c.fault("uninitialised read", f"read {_element(memory, flat)}, which no thread has written yet"
                      + (" (shared memory starts with garbage: write every element before any thread reads it, "
                         "with a __syncthreads() between the writes and the reads)"
                         if memory.space == "shared" else ""), line)
    if memory.space == "shared":
        _race(c, memory, flat, line, write=False)
    return _value(memory, flat)


def _sta(c: Thread, memory: Memory, index: tuple[int, ...], value: Any, line: int) -> None:
    flat = _flat(c, memory, index, line, "write")
    if memory.space == "shared":
        _race(c, memory, flat, line, write=True)
    memory.data[flat] = value
    memory.written[flat] = True


def _race(c: Thread, memory: Memory, flat: int, line: int, *, write: bool) -> None:
    """Record a shared access; two threads on one element since the last barrier, one of them writing: a race."""
    epoch = c.run.epoch
    me = c.tid
    wrote = memory.writers.get(flat)
    if wrote is not None and wrote[0] == epoch and wrote[1] != me:
        raise _race_fault(c, memory, flat, line, "wrote", wrote, "write" if write else "read")
    if write:
        read = memory.readers.get(flat)
        if read is not None and read[0] == epoch and read[1] != me:
            raise _race_fault(c, memory, flat, line, "read", read, "write")
        memory.writers[flat] = (epoch, me, line)
    else:
        read = memory.readers.get(flat)
        if read is None or read[0] != epoch:
            memory.readers[flat] = (epoch, me, line)
        elif read[1] != me:
            memory.readers[flat] = (epoch, -2, read[2])  # several readers: any later writer races with one


def _race_fault(c: Thread, memory: Memory, flat: int, line: int, did: str, earlier: tuple[int, int, int],
                doing: str) -> KernelFault:
    who = "other threads" if earlier[1] == -2 else f"thread {_xyz(_thread_of(c, earlier[1]), c.run.block)}"
    return c.fault("race", f"will {doing} {_element(memory, flat)}, which {who} of the block {did} at line "
                   f"{earlier[2]} with no __syncthreads() in between: the result depends on which thread runs "
                   "first (is a __syncthreads() missing?)", line)


def _thread_of(c: Thread, tid: int) -> tuple[int, int, int]:
    return (tid % c.bdx, tid // c.bdx % c.bdy, tid // (c.bdx * c.bdy))


def _offset(c: Thread, p: Any, index: int, line: int) -> Pointer:
    if not isinstance(p, Pointer):
        raise c.fault("bad pointer", "did arithmetic on a pointer that points nowhere", line)
    return Pointer(p.memory, p.offset + index)


def _shared(c: Thread, name: str, ctype: str, dims: tuple[int, ...]) -> Memory:
    key = (name, ctype, dims)
    memory = c.shared.get(key)
    if memory is None:
        memory = c.shared[key] = _array(name, ctype, dims, "shared")
    return memory


def _local(c: Thread, name: str, ctype: str, dims: tuple[int, ...]) -> Memory:
    return _array(name, ctype, dims, "local")


def _array(name: str, ctype: str, dims: tuple[int, ...], space: str) -> Memory:
    size = int(np.prod(dims))
    if size > 1 << 16:
        raise CudaCError(f"the {space} array {name} has {size:,} elements; the executor (and a GPU's 48 KB of "
                         "shared memory per block) allows far fewer")
    return Memory(name, np.zeros(size, DTYPES[ctype]), space, dims)


def _atomic(c: Thread, op: str, p: Any, value: Any, line: int) -> Any:
    memory, flat = _check_pointer(c, p, 0, line, "atomic update of")
    old = _value(memory, flat)
    new = {"atomicAdd": lambda: old + value, "atomicSub": lambda: old - value, "atomicExch": lambda: value,
           "atomicMax": lambda: max(old, value), "atomicMin": lambda: min(old, value)}[op]()
    if memory.integer:  # a GPU's integer atomics wrap around, as C's unsigned arithmetic does
        new = WRAP[memory.data.dtype.name](new)
    _write(c, memory, flat, new, line)
    return old


#: Integer wrap-around for each integer dtype an array may hold.
WRAP = {"int32": cuda_c.CONVERSIONS["_to_int"], "uint32": cuda_c.CONVERSIONS["_to_unsigned_int"],
        "int64": cuda_c.CONVERSIONS["_to_long_long"], "uint64": cuda_c.CONVERSIONS["_to_unsigned_long_long"],
        "bool": cuda_c.CONVERSIONS["_to_bool"]}


def _write(c: Thread, memory: Memory, flat: int, value: Any, line: int) -> None:
    """Store one element; an argument the caller made read-only is reported, not a NumPy traceback."""
    try:
        memory.data[flat] = value
    except ValueError:
        if memory.data.flags.writeable:
            raise
        raise c.fault("write to a read-only array", f"writes {memory.name}[{flat}], but the array passed as "
                      f"{memory.name} is read-only (its flags.writeable is False): pass a writable copy, "
                      "a.copy()", line) from None


def _shift(c: Thread, a: Any, op: str, b: Any, bits: int, line: int) -> int:
    """a << b or a >> b, with C's rule that the count is from 0 to the width less 1 (anything else is undefined:
    a GPU gives one answer, a CPU another)."""
    if not 0 <= b < bits:
        raise c.fault("shift count out of range", f"computes {a} {op} {b}, a shift of a {bits}-bit integer by "
                      f"{b}; C allows 0 to {bits - 1} (anything else is undefined behaviour: a GPU and a CPU give "
                      "different answers)", line)
    return a << b if op == "<<" else a >> b


def _branch(c: Thread, line: int, value: Any) -> bool:
    taken = bool(value)
    if c.path is not None:
        c.path.append((line, taken))
    return taken


def _loop(c: Thread, line: int, value: Any) -> bool:
    run = c.run
    run.steps += 1
    if run.steps > run.max_steps:
        raise c.fault("step limit", f"was still looping after {run.max_steps:,} loop steps in all: is there a loop "
                      "that never ends? (the executor is for small sizes: pass max_steps= for a bigger launch)",
                      line)
    return _branch(c, line, value)


def _idiv(bits: int, signed: bool) -> tuple[Any, Any]:
    wrap = CONVERSIONS[{(32, True): "_to_int", (32, False): "_to_unsigned_int", (64, True): "_to_long_long",
                        (64, False): "_to_unsigned_long_long"}[bits, signed]]

    def quotient(a: int, b: int, line: int) -> int:
        if b == 0:
            raise KernelFault("division by zero", f"division by zero at line {line}", line=line)
        q = abs(a) // abs(b)
        return wrap(q if (a < 0) == (b < 0) else -q)

    def remainder(a: int, b: int, line: int) -> int:
        return wrap(a - b * quotient(a, b, line))
    return quotient, remainder


def _fell_off() -> None:
    raise KernelFault("missing return", "a __device__ function that returns a value ended without a return")


def _round(x: Any) -> Any:
    """C's roundf/round: halves away from zero (NumPy rounds them to even)."""
    return np.copysign(np.floor(np.abs(x) + type(x)(0.5)), x)


def _namespace() -> dict[str, Any]:
    """What the translated code may call."""
    names: dict[str, Any] = dict(CONVERSIONS)
    for bits, signed, type_name in ((32, True, "int"), (32, False, "unsigned_int"), (64, True, "long_long"),
                                    (64, False, "unsigned_long_long")):
        names[f"_idiv_{type_name}"], names[f"_imod_{type_name}"] = _idiv(bits, signed)
    math = {"exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
            "rsqrt": lambda x: type(x)(1) / np.sqrt(x), "fabs": np.abs, "sin": np.sin, "cos": np.cos,
            "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "round": _round, "trunc": np.trunc,
            "exp2": np.exp2, "fmax": np.fmax, "fmin": np.fmin, "pow": np.power, "atan2": np.arctan2,
            "fmod": np.fmod}
    for name, fn in math.items():
        names[f"_m_{name}"] = fn
        names[f"_m_{name}f"] = fn
    names.update(_m___expf=np.exp, _m___fdividef=lambda a, b: a / b, min=min, max=max, abs=abs)
    names.update(_ld=_ld, _st=_st, _lda=_lda, _sta=_sta, _offset=_offset, _shared=_shared, _local=_local,
                 _atomic=_atomic, _shift=_shift, _branch=_branch, _loop=_loop, _Unset=_Unset, _fell_off=_fell_off)
    return names


# ------------------------------------------------------------------------------------------------ launches


@dataclass
class Launch:
    """One launch: what it ran and, with trace=True, every thread's path through the branches."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    max_steps: int
    steps: int = 0
    epoch: int = 0  # barriers passed by the current block: shared accesses are compared within one epoch
    paths: dict[tuple[tuple[int, int, int], tuple[int, int, int]], list[tuple[int, int]]] = field(
        default_factory=dict)

    def warps(self, block: tuple[int, int, int] = (0, 0, 0)) -> list[list[list[tuple[int, int]]]]:
        """The paths of `block`'s threads, warp by warp (32 threads in order of x, then y, then z)."""
        bx, by, bz = self.block
        ordered = [self.paths[(block, (x, y, z))] for z in range(bz) for y in range(by) for x in range(bx)]
        return [ordered[i:i + WARP_SIZE] for i in range(0, len(ordered), WARP_SIZE)]


class Program:
    """Every function of a CUDA C source, translated once; `launch` runs one of its kernels."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.functions, self.kernels = cuda_c.translate(source)
        namespace = _namespace()
        code = "\n\n".join(f.python for f in self.functions.values())
        try:
            compiled = compile(code, "<kernel>", "exec")
        except (SyntaxError, RecursionError, MemoryError):  # Python's nesting limits, met by valid C
            raise CudaCError(cuda_c.TOO_DEEP) from None
        exec(compiled, namespace)  # noqa: S102 - our translation of the learner's C
        self._namespace = namespace

    def params(self, name: str) -> list[tuple[str, CType]]:
        """The parameters of kernel `name`, with their C types."""
        return self._kernel(name).params

    def _kernel(self, name: str) -> cuda_c.Function:
        if name not in self.kernels:
            kernels = ", ".join(self.kernels)
            raise CudaCError(f"no kernel called {name!r} in this source; its kernels: {kernels} (a kernel needs "
                             'extern "C" __global__ before it, and the exact name)')
        kernel = self.functions[name]
        if not kernel.exported:
            raise CudaCError(f'the kernel {name} is not declared extern "C": C++ renames it, so CuPy cannot find it '
                             f'by its name (on a GPU: "named symbol not found"); write extern "C" __global__ void '
                             f"{name}(...)")
        return kernel

    def launch(self, name: str, grid: Sequence[int] | int, block: Sequence[int] | int, args: Sequence[Any], *,
               trace: bool = False, max_steps: int = MAX_STEPS) -> Launch:
        """Run kernel `name` on a grid of blocks of threads, as `kernel<<<grid, block>>>(args...)` would.

        Array arguments are NumPy arrays, written in place; scalars are NumPy scalars of the parameter's type.
        """
        kernel = self._kernel(name)
        grid3, block3 = _executor_shape(grid, block)
        values = _arguments(name, kernel.params, args)
        run = Launch(name, grid3, block3, positive_int("max_steps", max_steps, "loop steps a launch may take"))
        fn = self._namespace[cuda_c._fn(name)]
        with np.errstate(all="ignore"):
            for bz in range(grid3[2]):
                for by in range(grid3[1]):
                    for bx in range(grid3[0]):
                        self._block(fn, kernel.barriers, run, (bx, by, bz), values, trace)
        return run

    @staticmethod
    def _block(fn: Any, barriers: bool, run: Launch, b: tuple[int, int, int], values: list[Any],
               trace: bool) -> None:
        shared: dict[Any, Memory] = {}
        (bdx, bdy, bdz), (gdx, gdy, gdz) = run.block, run.grid
        threads = []
        for tz in range(bdz):
            for ty in range(bdy):
                for tx in range(bdx):
                    c = Thread(tx, ty, tz, *b, bdx, bdy, bdz, gdx, gdy, gdz, tx + bdx * (ty + bdy * tz),
                               b[0] + gdx * (b[1] + gdy * b[2]), run, shared, [] if trace else None)
                    if trace:
                        run.paths[(b, (tx, ty, tz))] = c.path
                    threads.append(c)
        run.epoch += 1
        if not barriers:
            for c in threads:
                fn(c, *values)
            return
        live = [(c, fn(c, *values)) for c in threads]
        while live:
            waiting, done = [], []
            for c, thread in live:
                try:
                    waiting.append((c, thread, next(thread)))
                except StopIteration:
                    done.append(c)
            if waiting and done:
                c, _, line = waiting[0]
                gone = _xyz(done[0].thread, run.block)
                raise c.fault("barrier divergence", f"waits at the __syncthreads() of line {line}, which "
                              f"{len(waiting)} of the block's {len(threads)} threads reached; thread {gone} had "
                              "already returned: every thread of a block must reach each __syncthreads() (keep it "
                              "outside if and return)", line)
            lines = sorted({line for _, _, line in waiting})
            if len(lines) > 1:
                c = next(c for c, _, line in waiting if line == lines[1])
                raise c.fault("barrier divergence", f"waits at the __syncthreads() of line {lines[1]} while other "
                              f"threads of its block wait at line {lines[0]}: a __syncthreads() inside an if or a "
                              "loop that not every thread takes", lines[1])
            run.epoch += 1
            live = [(c, thread) for c, thread, _ in waiting]


def _launch_shape(grid: Any, block: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The grid and the block as (x, y, z); a clear error for what no GPU launches."""
    grid3, block3 = _dims("grid", grid, MAX_GRID), _dims("block", block, MAX_BLOCK)
    threads = block3[0] * block3[1] * block3[2]
    if threads > MAX_BLOCK_THREADS:
        shown = block3[:len(block)] if isinstance(block, tuple | list) else block3[:1]
        raise ValueError(f"a block of {' x '.join(map(str, shown))} = {threads:,} threads: a block "
                         f"has at most {MAX_BLOCK_THREADS} threads; use more blocks instead")
    return grid3, block3


def _executor_shape(grid: Any, block: Any) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """_launch_shape, and no more threads than the CPU executor runs in reasonable time."""
    grid3, block3 = _launch_shape(grid, block)
    total = int(np.prod(grid3)) * int(np.prod(block3))
    if total > MAX_LAUNCH_THREADS:
        raise ValueError(f"{total:,} threads in one launch: the CPU executor (no GPU here) runs at most "
                         f"{MAX_LAUNCH_THREADS:,}, checking every access; use a smaller size here")
    return grid3, block3


def _dims(what: str, value: Sequence[int] | int, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    items = (value,) if isinstance(value, int | np.integer) else value
    ok = isinstance(items, tuple | list) and 1 <= len(items) <= 3 and all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 1 for v in items)
    if not ok:
        raise ValueError(f"{what} must be a tuple of 1 to 3 positive whole numbers, e.g. (4,) or (8, 8); got "
                         f"{value!r:.60}")
    dims = (*(int(v) for v in items), 1, 1)[:3]
    for axis, (v, limit) in enumerate(zip(dims, limits, strict=True)):
        if v > limit:
            raise ValueError(f"{what} {'xyz'[axis]} = {v:,}: at most {limit:,} in that dimension")
    return dims  # type: ignore[return-value]


def _arguments(name: str, params: list[tuple[str, CType]], args: Sequence[Any], *, run: bool = True) -> list[Any]:
    """The values the kernel's parameters get: arrays as pointers, NumPy scalars as C values; a clear error when
    an argument does not match its parameter (what CuPy would pass silently, and the GPU read wrongly).
    run=False only checks, and takes any array with a dtype (a CuPy array, for a launch on a GPU)."""
    if not isinstance(args, tuple | list):
        raise TypeError(f"the kernel's arguments are a tuple, e.g. (a, b, out, np.int32(n)); got {args!r:.60}")
    if len(args) != len(params):
        wanted = ", ".join(f"{t} {p}" for p, t in params)
        raise TypeError(f"{name} takes {len(params)} arguments ({wanted}); got {len(args)}")
    values = []
    for i, ((pname, ctype), arg) in enumerate(zip(params, args, strict=True), 1):
        where = f"argument {i} ({ctype} {pname}) of {name}"
        want = np.dtype(DTYPES[ctype.name])
        if getattr(arg, "ndim", None) == 0 and not isinstance(arg, np.generic):  # CuPy passes any array by pointer
            raise TypeError(f"{where}: got a 0-d array; pass "
                            + (f"an array of {want} with one element or more (a.reshape(1))" if ctype.pointer
                               else f"a NumPy scalar, np.{want}(a.item()): CuPy would pass the array's address"))
        if ctype.pointer:
            array = arg if isinstance(arg, np.ndarray) or (not run and _device_array(arg)) else None
            if array is None:
                raise TypeError(f"{where}: expected an array of {want}, got {type(arg).__name__} {arg!r:.40}")
            if run and type(array) is not np.ndarray:  # np.matrix, a masked array: they index their own way
                raise TypeError(f"{where}: a {type(array).__name__}, not a plain NumPy array; pass np.asarray(a)")
            if array.dtype != want:
                raise TypeError(f"{where}: an array of {array.dtype}, but the kernel reads {want}: pass "
                                f"a.astype(np.{want}) (on a GPU the kernel would read the bytes as {want}: "
                                "wrong numbers, no error)")
            if not array.flags.c_contiguous:
                raise TypeError(f"{where}: the array is not contiguous (a transposed or sliced view?): pass "
                                "an ascontiguousarray(a) copy")
            values.append(Pointer(Memory(pname, array.reshape(-1), "global"), 0) if run else array)
        else:
            values.append(_scalar(where, ctype, want, arg))
    return values


def _device_array(arg: Any) -> bool:
    """Whether `arg` looks like an array on a GPU (CuPy's): a dtype, a shape and contiguity flags."""
    return not isinstance(arg, np.generic) and all(hasattr(arg, a) for a in ("dtype", "shape", "flags"))


def check_launch(source: str, name: str, grid: Any, block: Any, args: Sequence[Any]) -> None:
    """Raise, with the executor's message, what a launch of kernel `name` of `source` with these arguments would
    get wrong on a GPU (a block over 1024 threads, a Python int for an int, an array of the wrong dtype), so a
    GPU launch is refused as the CPU executor would refuse it. CUDA C outside the executor's subset is not
    checked here (CuPy, its compiler and the driver check what they can)."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C, a string; got {type(source).__name__} {source!r:.40}")
    for what, dims in (("grid", grid), ("block", block)):
        if not isinstance(dims, tuple):
            raise TypeError(f"{what} must be a tuple such as (4,) or (8, 8), as CuPy wants; got {dims!r:.40}")
    try:
        program = _program(source)
    except cuda_c.CudaCError:  # outside the executor's subset (or not C): CuPy's compiler will say what it sees
        return
    params = program.params(name)
    _launch_shape(grid, block)
    _arguments(name, params, args, run=False)


@functools.lru_cache(maxsize=64)
def _program(source: str) -> Program:
    return Program(source)


def _scalar(where: str, ctype: CType, want: np.dtype, arg: Any) -> Any:
    """A scalar argument as the kernel sees it. NumPy scalars must have the parameter's exact type; a Python int
    only fits a 64-bit integer and a Python float only a double, because that is how CuPy passes them."""
    python = {int: ("long long", "unsigned long long"), float: ("double",), bool: ("bool",)}
    if type(arg) in python:
        if ctype.name not in python[type(arg)]:
            raise TypeError(f"{where}: got the Python {type(arg).__name__} {arg!r}, which CuPy passes as a "
                            f"{'64-bit integer' if type(arg) is int else 'double' if type(arg) is float else 'bool'}"
                            f"; the kernel wants {ctype}: pass np.{want}({arg!r})")
        return CONVERSIONS[f"_to_{cuda_c._id(ctype.name)}"](arg)
    if isinstance(arg, np.generic):
        got = np.asarray(arg).dtype
        if got != want:
            raise TypeError(f"{where}: got a {got} scalar; the kernel wants {ctype}: pass np.{want}(...)")
        return CONVERSIONS[f"_to_{cuda_c._id(ctype.name)}"](np.asarray(arg)[()])
    raise TypeError(f"{where}: expected a NumPy scalar np.{want}(...), got {type(arg).__name__} {arg!r:.40}")
