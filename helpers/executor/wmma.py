"""WMMA (<mma.h>, nvcuda::wmma): the tensor cores' warp-wide matrix operations, with CUDA's rules, and __half.

A fragment is one warp's tile of a matrix: matrix_a (m x k), matrix_b (k x n) or an accumulator (m x n), for the
shapes the CUDA C++ Programming Guide lists for half precision (16x16x16, 32x8x16, 8x32x16), of half (or float
for an accumulator). fill_fragment, load_matrix_sync, mma_sync and store_matrix_sync are warp-collective: every
lane of the warp must make the call, with the same pointer, leading dimension and layout (a divergent call is a
fault naming the lane). A pointer must be 32-byte (256-bit) aligned and the leading dimension a multiple of 16
bytes (8 halves, 4 floats), as the guide requires. A load goes through the executor's checked loads (bounds,
races), one element a lane at a time; mma_sync computes D = A x B + C per warp with products and sums in float32
(an fp16 accumulator rounds to fp16) and counts one tensor-core operation per warp. Reading D before anything filled
C is a fault.

A load or store is counted as the compiled code moves the tile (NVRTC 12.9's machine code for sm_75, sm_80 and
sm_90, read by NVIDIA's disassembler; tests/test_tensor_cores.py holds it to that code): the tile in 8 x 8 blocks of
its rows in memory (its columns for a column-major tile), each 8 rows of 8 elements. In global memory each block is
one request (a 32-bit load per lane for halves, LDG.E; 64 bits for floats, STG.E.64), with the sectors and lines its
8 rows touch. In shared memory a half tile is one ldmatrix request (LDSM) per 4 blocks, served a block a phase, each
phase in as many passes as the most words one bank holds; a float tile one 64-bit request per block, in 2 phases.

How a fragment's elements map to lanes (frag.x[i]) is unspecified in CUDA: the executor numbers them one way or
another (`Lanes.mapping`, 0 or 1), and a launch whose source reads or writes frag.x runs under both and compares
its results (helpers.executor.program), so a kernel that depends on the mapping is a fault, not a silent pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import counters as counting
from .c_types import DTYPES, FLOAT, INT, CType
from .counters import WARP
from .errors import CudaCError, UnsupportedSyntax
from .masks import _eff
from .memory import Pointer, SharedRef
from .runtime import Lanes
from .warp import FULL, _check, _here

#: The half-precision shapes the CUDA C++ Programming Guide lists (m, n, k), and the element types.
SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
ELEMENTS = {"matrix_a": ("half",), "matrix_b": ("half",), "accumulator": ("half", "float")}
HALF = CType("half")
VOID = CType("void")
#: cuda_fp16.h's functions the executor runs: name -> (argument types, result type, what it computes).
HALF_FUNCTIONS = {"__float2half": ((FLOAT,), HALF), "__float2half_rn": ((FLOAT,), HALF),
                  "__half2float": ((HALF,), FLOAT), "__hadd": ((HALF, HALF), HALF), "__hsub": ((HALF, HALF), HALF),
                  "__hmul": ((HALF, HALF), HALF), "__hdiv": ((HALF, HALF), HALF),
                  "__hfma": ((HALF, HALF, HALF), HALF), "__int2half_rn": ((INT,), HALF),
                  "__half2int_rn": ((HALF,), INT)}
HALF_CODE = {"__hadd": "({0} + {1})", "__hsub": "({0} - {1})", "__hmul": "({0} * {1})", "__hdiv": "({0} / {1})",
              "__hfma": "_to_half(_fma(_to_float({0}), _to_float({1}), _to_float({2})))", "__half2int_rn":
              "_to_int(np.rint({0}))"}


def is_fragment(ctype: CType) -> bool:
    return ctype.name.startswith("__wmma_frag_") and not ctype.pointer and not ctype.dims


def bind(ctype: CType, typedefs: dict[str, CType]) -> CType:
    """A fragment type whose element is a template's type parameter (fragment<accumulator, 16, 16, 16, T>), with
    the type the instance binds it to (T -> float); any other fragment type as it is."""
    use_shape, _, element = ctype.name.rpartition("_") if ctype.name.startswith("__wmma_frag_accumulator") else \
        ("", "", "")
    bound = typedefs.get(element)
    if bound is None or bound.pointer or bound.dims:
        return ctype
    return CType(f"{use_shape}_{bound.name}")


def parts(ctype: CType, line: int | None) -> tuple[str, int, int, int, str, str]:
    """A fragment type's use, m, n, k, element type and layout ('' for an accumulator), checked."""
    words = ctype.name.removeprefix("__wmma_frag_").split("_")
    use = "_".join(words[:2]) if words[0] == "matrix" else words[0]
    rest = words[2:] if words[0] == "matrix" else words[1:]
    m, n, k = (int(x) for x in rest[:3])
    element, layout = rest[3], "_".join(rest[4:])
    if use not in ELEMENTS:
        raise CudaCError(f"fragment<{use}, ...>: the use is matrix_a, matrix_b or accumulator", line)
    if (m, n, k) not in SHAPES:
        raise UnsupportedSyntax(f"a {m}x{n}x{k} fragment: the executor runs the half-precision shapes the "
                                "programming guide lists, 16x16x16, 32x8x16 and 8x32x16", line)
    if element not in ELEMENTS[use]:
        raise UnsupportedSyntax(f"a {use} fragment of {element}: the executor runs half inputs with a half or float "
                                "accumulator (bf16 and tf32 need sm_80, past the T4)", line)
    if (use == "accumulator") == bool(layout) or layout not in ("", "row_major", "col_major"):
        raise CudaCError(f"a {use} fragment {'takes no layout' if use == 'accumulator' else 'needs a layout, '}"
                         f"{'' if use == 'accumulator' else 'row_major or col_major'}", line)
    return use, m, n, k, element, layout


def _rows(use: str, m: int, n: int, k: int) -> tuple[int, int]:
    return {"matrix_a": (m, k), "matrix_b": (k, n), "accumulator": (m, n)}[use]


# ------------------------------------------------------------------------------------------------ translation


def declare(t: Any, ctype: CType, line: int) -> str:
    """The code that makes a fragment variable's storage: one tile per warp of the batch, unfilled."""
    use, m, n, k, element, layout = parts(ctype, line)
    return f"_Fragment(_c, {use!r}, {m}, {n}, {k}, {DTYPES[element]!r}, {layout!r}, {line})"


def call(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    """wmma::fill_fragment, load_matrix_sync, store_matrix_sync and mma_sync."""
    op = name.removeprefix("__wmma_")
    t.unit.wmma = True
    if op == "fill_fragment":
        t.arity("fill_fragment", args, 2, line)
        frag = _fragment(t, args[0], line)
        value = t.convert(args[1], CType(parts(frag[1], line)[4]), line)
        return f"_wmma_fill(_c, {frag[0]}, {value}, {line}, {t.mask})", VOID
    if op in ("load_matrix_sync", "store_matrix_sync"):
        load = op == "load_matrix_sync"
        if len(args) not in (3, 4):
            raise CudaCError(f"{op}() takes (fragment, pointer, ldm) or, for an accumulator, a layout too; got "
                             f"{len(args)} arguments", line)
        frag = _fragment(t, args[0] if load else args[1], line)
        use, *_, element, _ = parts(frag[1], line)
        pointer, ptype = t.expr(args[1] if load else args[0])
        if ptype.dims and ptype.name == element:  # a shared array: a pointer to its first element
            pointer, ptype = t.cast(pointer, ptype, CType(element, pointer=True), line), CType(element, pointer=True)
        if not ptype.pointer or ptype.name != element:
            raise CudaCError(f"{op} of a {element} fragment needs a pointer to {element}; got a {ptype} (NVRTC: no "
                             f"instance of function \"{op}\" matches)", line)
        if not load and ptype.const:
            raise CudaCError("store_matrix_sync through a pointer to const: it writes there", line)
        ldm = t.convert(args[2], CType("unsigned int"), line)
        layout = _layout(args[3], line) if len(args) == 4 else None
        if (use == "accumulator") != (layout is not None):
            what = "an accumulator needs a" if use == "accumulator" else "a matrix_a or matrix_b takes no"
            raise CudaCError(f"{op} of {what} layout argument (wmma::mem_row_major or wmma::mem_col_major)", line)
        fn = "_wmma_load" if load else "_wmma_store"
        return f"{fn}(_c, {frag[0]}, {pointer}, {ldm}, {layout!r}, {line}, {t.mask})", VOID
    if op == "mma_sync":
        t.arity("mma_sync", args, 4, line)
        d, a, b, c = (_fragment(t, x, line) for x in args)
        _shapes(d[1], a[1], b[1], c[1], line)
        return f"_wmma_mma(_c, {d[0]}, {a[0]}, {b[0]}, {c[0]}, {line}, {t.mask})", VOID
    raise UnsupportedSyntax(f"wmma::{op}: the executor runs fill_fragment, load_matrix_sync, mma_sync and "
                            "store_matrix_sync", line)


def _fragment(t: Any, node: Any, line: int | None) -> tuple[str, CType]:
    code, ctype = t.expr(node)
    if not is_fragment(ctype):
        raise CudaCError(f"a wmma::fragment is wanted here; got a {ctype}", line)
    return code, ctype


def _layout(node: Any, line: int | None) -> str:
    name = getattr(node, "name", "")
    if name not in ("__wmma_mem_row_major", "__wmma_mem_col_major"):
        raise CudaCError("an accumulator's layout is wmma::mem_row_major or wmma::mem_col_major", line)
    return name.removeprefix("__wmma_mem_")


def _shapes(d: CType, a: CType, b: CType, c: CType, line: int | None) -> None:
    """mma_sync(d, a, b, c): a matrix_a, a matrix_b and two accumulators of one shape."""
    uses = [parts(x, line) for x in (d, a, b, c)]
    if [u[0] for u in uses] != ["accumulator", "matrix_a", "matrix_b", "accumulator"] or \
            len({u[1:4] for u in uses}) != 1:
        raise CudaCError("mma_sync(d, a, b, c) takes an accumulator d, a matrix_a a, a matrix_b b and an accumulator "
                         "c, all of one shape (NVRTC: no instance of function \"mma_sync\" matches)", line)


def element(t: Any, node: Any, line: int | None) -> tuple[str, CType] | None:
    """frag.x[i] (a read), or None when `node` is not one."""
    found = _element_of(t, node, line)
    if found is None:
        return None
    frag, ctype, index = found
    t.unit.fragment_elements = True
    return f"_wmma_get(_c, {frag}, {index}, {line}, {t.mask})", CType(parts(ctype, line)[4])


def assign_element(t: Any, node: Any, value: Any, op: str, line: int | None) -> str | None:
    """frag.x[i] = v (and op=): the statement, or None when `node` is not frag.x[i]."""
    found = _element_of(t, node, line)
    if found is None:
        return None
    frag, ctype, index = found
    t.unit.fragment_elements = True
    target = c_ast_binary(op, node, value)
    converted = t.convert(target, CType(parts(ctype, line)[4]), line)
    return f"_wmma_set(_c, {frag}, {index}, {converted}, {line}, {t.mask})"


def c_ast_binary(op: str, target: Any, value: Any) -> Any:
    """The value `target op= value` stores (the value itself for =)."""
    from pycparser import c_ast

    return value if op == "=" else c_ast.BinaryOp(op[:-1], target, value, target.coord)


def _element_of(t: Any, node: Any, line: int | None) -> tuple[str, CType, str] | None:
    from pycparser import c_ast

    if not (isinstance(node, c_ast.ArrayRef) and isinstance(node.name, c_ast.StructRef)
            and node.name.field.name == "x"):
        return None
    code, ctype = t.expr(node.name.name)
    if not is_fragment(ctype):
        return None
    return code, ctype, t.index(node.subscript, line)


def num_elements(ctype: CType, line: int | None) -> int:
    use, m, n, k, _, _ = parts(ctype, line)
    rows, cols = _rows(use, m, n, k)
    return rows * cols // WARP


# ------------------------------------------------------------------------------------------------ runtime


class _Fragment:
    """One fragment variable: a tile per warp of the batch, and whether each warp's tile has been filled."""

    def __init__(self, c: Lanes, use: str, m: int, n: int, k: int, dtype: str, layout: str, line: int) -> None:
        self.use, self.shape, self.layout, self.line = use, (m, n, k), layout, line
        self.rows, self.cols = _rows(use, m, n, k)
        warps = c.lanes // WARP
        self.data = np.zeros((warps, self.rows * self.cols), dtype)
        self.filled = np.zeros(warps, bool)
        self.per_lane = self.rows * self.cols // WARP

    def where(self, c: Lanes, i: Any) -> np.ndarray:
        """The tile element (flat, row-major) that lane l's x[i] is, under the launch's mapping."""
        lane = np.arange(c.lanes, dtype=np.int64) % WARP
        if c.mapping == 0:
            return lane * self.per_lane + i
        return np.asarray(i, np.int64) * WARP + lane


def _warps(c: Lanes, name: str, m: Any, b: Any, line: int, *same: tuple[str, Any]) -> np.ndarray:
    """The warps that make a warp-collective call: every live lane of each must be here, with the same values."""
    here = _here(c, m, b)
    _check(c, f"wmma::{name}", FULL, here, line)  # every lane of the warp: CUDA's rule for the *_sync operations
    warps = np.flatnonzero(here.reshape(-1, WARP).any(axis=1))
    for what, value in same:
        v = np.broadcast_to(np.asarray(value), (c.lanes,)).reshape(-1, WARP)
        for w in warps.tolist():
            lanes = here.reshape(-1, WARP)[w]
            seen = v[w][lanes]
            if (seen != seen[0]).any():
                k = int(np.flatnonzero(seen != seen[0])[0])
                raise c.fault("warp divergence", f"calls wmma::{name} with a {what} its warp's other lanes do not "
                              "share: every lane of the warp passes the same one", line,
                              w * WARP + int(np.flatnonzero(lanes)[k]))
    return warps


def _wmma_fill(c: Lanes, f: _Fragment, value: Any, line: int, m: Any, b: Any) -> None:
    warps = _warps(c, "fill_fragment", m, b, line)
    v = np.broadcast_to(np.asarray(value, f.data.dtype), (c.lanes,)).reshape(-1, WARP)
    for e in range(f.per_lane):
        at = f.where(c, e).reshape(-1, WARP)
        for w in warps.tolist():
            f.data[w, at[w]] = v[w]
    f.filled[warps] = True


def _aligned(c: Lanes, pointer: Any, ldm: Any, f: _Fragment, line: int, lane: int, name: str) -> None:
    """The programming guide's rules: a 256-bit aligned pointer, a leading dimension a multiple of 16 bytes that
    holds a row (or column) of the tile."""
    itemsize = f.data.itemsize
    offset = int(np.broadcast_to(pointer.offset, (c.lanes,))[lane])
    base = pointer.array.base if isinstance(pointer, SharedRef) else 0
    if (base + offset * itemsize) % 32:
        raise c.fault("misaligned address", f"calls wmma::{name} with a pointer {offset * itemsize} bytes into its "
                      "array, not a multiple of 32: the pointer must be 256-bit (32-byte) aligned", line, lane)
    step = int(np.broadcast_to(ldm, (c.lanes,))[lane])
    if (step * itemsize) % 16:
        raise c.fault("bad leading dimension", f"calls wmma::{name} with ldm = {step}: the leading dimension must be "
                      f"a multiple of 16 bytes ({16 // itemsize} elements of this type)", line, lane)


def _places(f: _Fragment, e: Any, layout: str, ldm: Any) -> tuple[Any, Any]:
    """Row and column of tile element e (flat, row-major), and its offset in memory of this layout."""
    row, col = e // f.cols, e % f.cols
    return row, (row * ldm + col) if layout == "row_major" else (col * ldm + row)


def _memory(c: Lanes, name: str, f: _Fragment, pointer: Any, ldm: Any, layout: str | None, line: int, m: Any,
            b: Any) -> tuple[np.ndarray, str]:
    """The warps of a load or store, checked (the same pointer, ldm and layout in each, aligned), and the layout."""
    if not isinstance(pointer, Pointer | SharedRef):
        raise c.fault("bad pointer", f"calls wmma::{name} with a pointer that points nowhere", line,
                      c.first(_eff(m, b)))
    warps = _warps(c, name, m, b, line, ("pointer", pointer.offset), ("leading dimension", ldm))
    for w in warps.tolist():
        _aligned(c, pointer, ldm, f, line, w * WARP + int(np.argmax(_here(c, m, b).reshape(-1, WARP)[w])), name)
    return warps, layout or f.layout


def _wmma_load(c: Lanes, f: _Fragment, pointer: Any, ldm: Any, layout: str | None, line: int, m: Any,
               b: Any) -> None:
    warps, layout = _memory(c, "load_matrix_sync", f, pointer, ldm, layout, line, m, b)
    step = np.asarray(ldm, np.int64)
    for e in range(f.per_lane):
        at = f.where(c, e)
        _, offset = _places(f, at, layout, step)
        values = np.broadcast_to(c.ld(pointer, offset, line, m, b, count=False), (c.lanes,)).reshape(-1, WARP)
        at = at.reshape(-1, WARP)
        for w in warps.tolist():
            f.data[w, at[w]] = values[w]
    f.filled[warps] = True
    _count(c, f, pointer, step, layout, warps, True, _here(c, m, b))
    c.counters.tensor_loads += int(warps.size)


#: Elements along each side of the blocks a tile moves in: 8 rows of 8 (ldmatrix's 8 x 8 matrices).
BLOCK = 8
#: ldmatrix's blocks per request (LDSM.16.M88.4 on sm_80 and sm_90; sm_75 makes two .2 requests: the same passes).
BLOCKS_PER_LDSM = 4


def _blocks(f: _Fragment, layout: str) -> tuple[int, int]:
    """(rows in memory, elements along each): a row-major tile's rows, a column-major tile's columns."""
    return (f.rows, f.cols) if layout == "row_major" else (f.cols, f.rows)


def _block_bytes(f: _Fragment, start: int, ldm: int, layout: str) -> np.ndarray:
    """The byte address of each 8-element row of each 8 x 8 block of the tile: [block, row]."""
    rows, width = _blocks(f, layout)
    r = np.arange(rows).reshape(-1, 1, BLOCK, 1)  # [block row, 1, row in block, 1]
    q = np.arange(0, width, BLOCK).reshape(1, -1, 1, 1)
    first = (start + (r // BLOCK * BLOCK + r % BLOCK) * ldm + q) * f.data.itemsize
    return first.reshape(-1, BLOCK)


def _count(c: Lanes, f: _Fragment, pointer: Any, ldm: np.ndarray, layout: str, warps: np.ndarray, load: bool,
           here: np.ndarray) -> None:
    """Count a warp-wide load or store of fragment f as the compiled code moves it (see the module's note)."""
    offsets = np.broadcast_to(np.asarray(pointer.offset, np.int64), (c.lanes,)).reshape(-1, WARP)
    steps = np.broadcast_to(ldm, (c.lanes,)).reshape(-1, WARP)
    lanes = [int(np.argmax(row)) for row in here.reshape(-1, WARP)[warps]]  # a calling lane of each warp
    chunk = BLOCK * f.data.itemsize  # bytes of one row of a block: 16 for halves, 32 for floats
    k = c.counters
    for w, first in zip(warps.tolist(), lanes, strict=True):
        rows = _block_bytes(f, int(offsets[w, first]), int(steps[w, first]), layout)
        if isinstance(pointer, SharedRef):
            _count_shared(k, rows + pointer.array.base, chunk, load)
            continue
        ends = rows + chunk - 1
        sectors = [len(set((rows[i] >> 5).tolist()) | set((ends[i] >> 5).tolist())) for i in range(len(rows))]
        lines = sum(len(set((rows[i] >> 7).tolist()) | set((ends[i] >> 7).tolist())) for i in range(len(rows)))
        k.worst_sectors = max(k.worst_sectors, *sectors)
        if load:
            k.global_load_requests += len(rows)
            k.global_load_sectors += sum(sectors)
            k.global_load_lines += lines
            k.global_load_bytes += rows.size * chunk
        else:
            k.global_store_requests += len(rows)
            k.global_store_sectors += sum(sectors)
            k.global_store_lines += lines
            k.global_store_bytes += rows.size * chunk


def _count_shared(k: Any, rows: np.ndarray, chunk: int, load: bool) -> None:
    """One request per 4 blocks of halves (ldmatrix), a block a phase; one per block of floats, in 2 phases of 4
    rows (64-bit accesses): each phase in as many passes as the most distinct words one bank holds."""
    words = (rows[:, :, None] + np.arange(0, chunk, 4)) >> 2  # [block, row, word]
    phases = words.reshape(len(rows), -1) if chunk == 16 else words.reshape(2 * len(rows), -1)
    passes = sum(counting.wavefronts(phase, None, WARP)[1] for phase in phases)
    requests = -(-len(rows) // BLOCKS_PER_LDSM) if chunk == 16 else len(rows)
    if load:
        k.shared_load_requests += requests
        k.shared_load_wavefronts += passes
        k.shared_load_phases += len(phases)
    else:
        k.shared_store_requests += requests
    k.shared_wavefronts += passes
    k.shared_phases += len(phases)


def _wmma_store(c: Lanes, f: _Fragment, pointer: Any, ldm: Any, layout: str | None, line: int, m: Any,
                b: Any) -> None:
    warps, layout = _memory(c, "store_matrix_sync", f, pointer, ldm, layout, line, m, b)
    _filled(c, f, warps, "store_matrix_sync", line)
    step = np.asarray(ldm, np.int64)
    for e in range(f.per_lane):
        at = f.where(c, e)
        _, offset = _places(f, at, layout, step)
        values = f.data[np.arange(c.lanes) // WARP, at]
        c.st(pointer, offset, values, line, m, b, count=False)
    _count(c, f, pointer, step, layout, warps, False, _here(c, m, b))
    c.counters.tensor_stores += int(warps.size)


def _filled(c: Lanes, f: _Fragment, warps: np.ndarray, name: str, line: int) -> None:
    empty = warps[~f.filled[warps]]
    if empty.size:
        article = "an" if f.use[0] == "a" else "a"
        raise c.fault("unfilled fragment", f"calls wmma::{name} with {article} {f.use} fragment (declared at line "
                      f"{f.line}) "
                      "that nothing has filled: give it values first (wmma::fill_fragment(acc, 0.0f) for an "
                      "accumulator, or load_matrix_sync)", line, int(empty[0]) * WARP)


def _wmma_mma(c: Lanes, d: _Fragment, a: _Fragment, b_: _Fragment, acc: _Fragment, line: int, m: Any,
              b: Any) -> None:
    """D = A x B + C for each warp that makes the call: products and sums in float32 (tensor cores multiply fp16
    exactly and add in at least fp32), rounded to D's type."""
    warps = _warps(c, "mma_sync", m, b, line)
    for f in (a, b_, acc):
        _filled(c, f, warps, "mma_sync", line)
    rows, inner, cols = a.rows, a.cols, b_.cols
    left = a.data[warps].reshape(-1, rows, inner).astype(np.float32)
    right = b_.data[warps].reshape(-1, inner, cols).astype(np.float32)
    total = np.matmul(left, right) + acc.data[warps].reshape(-1, rows, cols).astype(np.float32)
    d.data[warps] = total.reshape(warps.size, -1).astype(d.data.dtype)
    d.filled[warps] = True
    c.counters.tensor_ops += int(warps.size)
    c.counters.flops += int(warps.size) * 2 * rows * inner * cols
    c.counters.tensor_flops += int(warps.size) * 2 * rows * inner * cols


def _wmma_get(c: Lanes, f: _Fragment, i: Any, line: int, m: Any, b: Any) -> np.ndarray:
    """frag.x[i] for each lane (which tile element that is depends on the mapping)."""
    _index(c, f, i, line, m, b)
    at = np.clip(f.where(c, i), 0, f.data.shape[1] - 1)
    return f.data[np.arange(c.lanes) // WARP, at]


def _wmma_set(c: Lanes, f: _Fragment, i: Any, value: Any, line: int, m: Any, b: Any) -> None:
    """frag.x[i] = value by the active lanes."""
    _index(c, f, i, line, m, b)
    here = _here(c, m, b)
    lanes = np.flatnonzero(here)
    at = np.broadcast_to(f.where(c, i), (c.lanes,))[lanes]
    f.data[lanes // WARP, at] = np.broadcast_to(np.asarray(value, f.data.dtype), (c.lanes,))[lanes]
    f.filled[np.unique(lanes // WARP)] = True


def _index(c: Lanes, f: _Fragment, i: Any, line: int, m: Any, b: Any) -> None:
    bad = _here(c, m, b) & ((np.broadcast_to(i, (c.lanes,)) < 0) | (np.broadcast_to(i, (c.lanes,)) >= f.per_lane))
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        raise c.fault("out-of-bounds read", f"uses x[{int(np.broadcast_to(i, (c.lanes,))[lane])}] of a fragment "
                      f"whose num_elements is {f.per_lane} here", line, lane)


#: Names the translated code may call (merged into the runtime's namespace).
RUNTIME: dict[str, Any] = {"_Fragment": _Fragment, "_wmma_fill": _wmma_fill, "_wmma_load": _wmma_load,
                           "_wmma_store": _wmma_store, "_wmma_mma": _wmma_mma, "_wmma_get": _wmma_get,
                           "_wmma_set": _wmma_set}
