"""Cooperative groups (<cooperative_groups.h>, <cooperative_groups/reduce.h>) with CUDA's semantics: how a call or
a method translates, and what the translated code calls.

A thread_block is the block: sync() is __syncthreads(), thread_rank() the thread's linear index in it. A
thread_block_tile<N> (N a power of 2 up to 32) from tiled_partition<N>(block) is N consecutive threads by rank,
inside one warp: its collectives (sync, shfl, shfl_up, shfl_down, shfl_xor, any, all, ballot, and cg::reduce) are
the warp primitives with the tile's lanes as the mask and N as the width, so CUDA's rule holds: every thread of
the tile must make the call (a divergent one is a fault naming the lane). A grid_group (this_grid()) gives each
thread its rank in the whole launch; grid.sync() needs a cooperative launch, which the executor does not run.
Group values are handles with nothing in them: every method translates from the variable's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pycparser import c_ast

from .c_types import DTYPES, UINT, VECTORS, CType, promote
from .counters import WARP
from .errors import CudaCError, UnsupportedSyntax
from .masks import _eff
from .runtime import Lanes
from .warp import SHUFFLED, _shfl

BLOCK, GRID = CType("__cg_thread_block"), CType("__cg_grid_group")
ULL = CType("unsigned long long")
VOID = CType("void")
#: The tile methods that are warp primitives: the primitive and the name of its third argument.
_SHUFFLES = {"shfl": "__shfl_sync", "shfl_down": "__shfl_down_sync", "shfl_up": "__shfl_up_sync",
             "shfl_xor": "__shfl_xor_sync"}
_VOTES = {"any": "__any_sync", "all": "__all_sync", "ballot": "__ballot_sync"}
#: The methods whose value is a dim3 of the built-ins: member -> built-in (threadIdx, blockIdx, blockDim, gridDim).
DIM3 = {"group_index": "blockIdx", "thread_index": "threadIdx", "group_dim": "blockDim", "dim_threads": "blockDim",
        "block_index": "blockIdx", "dim_blocks": "gridDim"}
#: cg::reduce's operators: the C++ functor's name -> what combines two lanes' values.
OPERATORS = {"__cg_plus": "np.add", "__cg_less": "np.minimum", "__cg_greater": "np.maximum",
             "__cg_bit_and": "np.bitwise_and", "__cg_bit_or": "np.bitwise_or", "__cg_bit_xor": "np.bitwise_xor"}


def is_group(ctype: CType) -> bool:
    return ctype.name.startswith("__cg_") and not ctype.pointer and not ctype.dims


def tile_size(ctype: CType) -> int | None:
    """N of a thread_block_tile<N>, else None."""
    return int(ctype.name.rsplit("_", 1)[1]) if ctype.name.startswith("__cg_tile_") else None


def _shown(ctype: CType) -> str:
    n = tile_size(ctype)
    return f"thread_block_tile<{n}>" if n else ctype.name.removeprefix("__cg_")


# ------------------------------------------------------------------------------------------------ translation


def function(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    """cg::this_thread_block(), cg::this_grid(), cg::tiled_partition<N>(g), cg::sync(g), cg::reduce(g, v, op)."""
    if name == "__cg_this_thread_block":
        t.arity("this_thread_block", args, 0, line)
        return "None", BLOCK
    if name == "__cg_this_grid":
        t.arity("this_grid", args, 0, line)
        return "None", GRID
    if name.startswith("__cg_tiled_partition_"):
        n = int(name.rsplit("_", 1)[1])
        t.arity("tiled_partition", args, 1, line)
        parent = t.type_of(args[0])
        if n not in (1, 2, 4, 8, 16, 32):
            raise UnsupportedSyntax(f"tiled_partition<{n}>: the executor runs tiles of 1, 2, 4, 8, 16 or 32 threads "
                                    "(larger ones need cg::block_tile_memory)", line)
        if parent != BLOCK and (tile_size(parent) or 0) < n:
            raise CudaCError(f"tiled_partition<{n}> of a {_shown(parent)}: partition the thread_block, or a larger "
                             "tile", line)
        name_ = f"__cg_tile_{n}"
        return "None", CType(name_)
    if name == "__cg_sync":
        t.arity("cg::sync", args, 1, line)
        return method(t, "sync", t.type_of(args[0]), [], line)
    if name == "__cg_reduce":
        return _reduce(t, args, line)
    if name == "__cg_tiled_partition":
        raise UnsupportedSyntax("tiled_partition(group, n) (a thread_group whose size is known only at run time): "
                                "write tiled_partition<32>(block), a thread_block_tile", line)
    raise UnsupportedSyntax(f"cooperative_groups::{name.removeprefix('__cg_')}: the executor runs thread_block, "
                            "thread_block_tile<N>, this_grid()'s ranks, sync and reduce", line)


def method(t: Any, name: str, group: CType, args: list[Any], line: int | None) -> tuple[str, CType]:
    """A group's method, from its type: block.sync(), tile.shfl_down(v, 1), grid.thread_rank(), ..."""
    n = tile_size(group)
    if group == BLOCK:
        return _block_method(t, name, args, line)
    if group == GRID:
        return _grid_method(t, name, args, line)
    if n is None:
        raise UnsupportedSyntax(f"the group type {_shown(group)}", line)
    if name in _SHUFFLES:
        if len(args) != 2:
            raise CudaCError(f"tile.{name}() takes 2 arguments (value, {'lane' if name == 'shfl' else 'delta'}); "
                             f"got {len(args)}", line)
        code, ctype = t.expr(args[0])
        vtype = promote(ctype)
        if vtype.pointer or vtype.dims or vtype.name not in SHUFFLED:
            raise CudaCError(f"tile.{name} moves a number (int, unsigned, long long, float, double); this is a "
                             f"{ctype}", line)
        third = t.convert(args[1], UINT if name in ("shfl_up", "shfl_down") else CType("int"), line)
        return (f"_shfl(_c, {_SHUFFLES[name]!r}, _tile_mask(_c, {n}), {t.cast(code, ctype, vtype, line)}, {third}, "
                f"{n}, {DTYPES[vtype.name]!r}, {line}, {t.mask}, shown='tile.{name}')", vtype)
    if name in _VOTES:
        t.arity(f"tile.{name}", args, 1, line)
        vote = (f"_vote(_c, {_VOTES[name]!r}, _tile_mask(_c, {n}), {t.condition(args[0], line)}, {line}, {t.mask}, "
                f"shown='tile.{name}')")
        if name == "ballot":
            return f"_tile_bits(_c, {vote}, {n})", UINT
        return vote, CType("int")
    t.arity(f"tile.{name}", args, 0, line)
    simple = {"sync": (f"_syncwarp(_c, _tile_mask(_c, {n}), {line}, {t.mask}, shown='tile.sync')", VOID),
              "thread_rank": (f"(_c.rank % {n})", UINT), "meta_group_rank": (f"(_c.rank // {n})", UINT),
              "size": (str(n), UINT), "num_threads": (str(n), UINT),
              "meta_group_size": (f"_to_unsigned_int(-(-(_c.threads) // {n}))", UINT)}
    if name not in simple:
        raise UnsupportedSyntax(f"thread_block_tile's {name}(): the executor runs sync, thread_rank, size, "
                                "num_threads, meta_group_rank, meta_group_size, shfl, shfl_up, shfl_down, shfl_xor, "
                                "any, all and ballot", line)
    return simple[name]


def _block_method(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    t.arity(f"block.{name}", args, 0, line)
    if name == "sync":
        t.barriers = True
        return f"_c.barrier({line}, {t.mask})", VOID
    simple = {"thread_rank": ("_c.rank", UINT), "size": ("_c.bd", UINT), "num_threads": ("_c.bd", UINT)}
    if name in DIM3:
        raise CudaCError(f"block.{name}() is a dim3: use one of its members, block.{name}().x", line)
    if name not in simple:
        raise UnsupportedSyntax(f"thread_block's {name}(): the executor runs sync, thread_rank, size, num_threads, "
                                "group_index, thread_index, group_dim and dim_threads", line)
    return simple[name]


def _grid_method(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    t.arity(f"grid.{name}", args, 0, line)
    if name == "sync":
        raise UnsupportedSyntax("grid.sync(): a grid-wide barrier needs a cooperative launch "
                                "(cudaLaunchCooperativeKernel), which the CPU executor does not run; end the kernel "
                                "there and launch a second one", line)
    simple = {"thread_rank": ("_to_unsigned_long_long(_c.gid)", ULL),
              "size": ("(_c.bd * _c.blocks_in_grid)", ULL), "num_threads": ("(_c.bd * _c.blocks_in_grid)", ULL),
              "block_rank": ("_to_unsigned_long_long(_c.gid // _c.threads)", ULL),
              "num_blocks": ("_c.blocks_in_grid", ULL)}
    if name not in simple:
        raise UnsupportedSyntax(f"grid_group's {name}(): the executor runs thread_rank, size, num_threads, "
                                "block_rank and num_blocks", line)
    return simple[name]


def _reduce(t: Any, args: list[Any], line: int | None) -> tuple[str, CType]:
    """cg::reduce(tile, value, cg::plus<T>()): every thread of the tile gets the tile's values combined."""
    t.arity("cg::reduce", args, 3, line)
    n = tile_size(t.type_of(args[0]))
    if n is None:
        raise CudaCError("cg::reduce's first argument is a thread_block_tile<N> (tiled_partition<32>(block))", line)
    operator = args[2]
    op_name = operator.name.name if hasattr(operator, "name") and hasattr(operator.name, "name") else ""
    if isinstance(operator, c_ast.ID) and operator.name in t.functions:
        return _reduce_with(t, n, args[1], t.functions[operator.name], line)
    if op_name not in OPERATORS:
        raise UnsupportedSyntax("cg::reduce's operator: the executor runs cg::plus, cg::less, cg::greater, "
                                "cg::bit_and, cg::bit_or and cg::bit_xor", line)
    code, ctype = t.expr(args[1])
    vtype = promote(ctype)
    if vtype.pointer or vtype.dims or vtype.name not in SHUFFLED:
        raise CudaCError(f"cg::reduce of a {ctype}: the executor reduces numbers", line)
    if op_name.startswith("__cg_bit") and not vtype.name.endswith(("int", "long")):
        raise CudaCError(f"cg::{op_name.removeprefix('__cg_')} of a {vtype}: bit operators need whole numbers", line)
    if op_name == "__cg_plus" and vtype.name in ("float", "double"):
        t.flops += 1
    return (f"_cg_reduce(_c, {t.cast(code, ctype, vtype, line)}, {n}, {OPERATORS[op_name]}, "
            f"{DTYPES[vtype.name]!r}, {line}, {t.mask})", vtype)


def _reduce_with(t: Any, n: int, value: Any, fn: Any, line: int | None) -> tuple[str, CType]:
    """cg::reduce(tile, value, f) with the source's own __device__ function f(a, b) (a struct too, as llm.c's
    online softmax merges (max, sum) pairs): the same butterfly, f combining each lane's value with its partner's."""
    code, ctype = t.expr(value)
    if len(fn.params) != 2 or any(p != ctype for _, p in fn.params) or fn.returns != ctype:
        raise CudaCError(f"cg::reduce's operator {fn.name} must take two {ctype} and return one", line)
    dtypes = _leaves(ctype)
    if dtypes is None:
        raise CudaCError(f"cg::reduce of a {ctype}: the executor reduces numbers, vectors and structs of them", line)
    return (f"_cg_reduce_with(_c, {code}, {n}, {fn.py_name}, {dtypes!r}, {line}, {t.mask})", ctype)


def _leaves(ctype: CType) -> list[str] | None:
    """The dtypes of a value's numbers in order (a struct's members, a vector's), None for a pointer or array."""
    if ctype.pointer or ctype.dims:
        return None
    if ctype.fields:
        found = [_leaves(member) for _, member in ctype.fields]
        return None if None in found else [d for leaf in found for d in leaf]  # type: ignore[union-attr]
    if ctype.name in VECTORS:
        element, count = VECTORS[ctype.name]
        return [DTYPES[element]] * count
    return [DTYPES[ctype.name]] if ctype.name in DTYPES else None


# ------------------------------------------------------------------------------------------------ runtime


def _tile_mask(c: Lanes, n: int) -> np.ndarray:
    """Each lane's tile as a warp mask: the n lanes of its tile, one bit each."""
    lane = np.arange(c.lanes, dtype=np.int64) % WARP
    return ((((1 << n) - 1) << (lane // n * n)) & 0xFFFF_FFFF).astype(np.uint32)


def _tile_bits(c: Lanes, ballot: np.ndarray, n: int) -> np.ndarray:
    """A tile's ballot: bit k for the tile's thread k (the warp's ballot shifted to the tile)."""
    lane = np.arange(c.lanes, dtype=np.int64) % WARP
    return ((ballot.astype(np.int64) >> (lane // n * n)) & ((1 << n) - 1)).astype(np.uint32)


def _cg_reduce(c: Lanes, value: Any, n: int, combine: Any, dtype: str, line: int, m: Any, b: Any) -> np.ndarray:
    """cg::reduce over tiles of n lanes, as a butterfly of shuffles (each checked as __shfl_xor_sync is)."""
    mask = _tile_mask(c, n)
    total = np.broadcast_to(np.asarray(value, dtype), (c.lanes,)).copy()
    step = n // 2
    while step:
        total = combine(total, _shfl(c, "__shfl_xor_sync", mask, total, step, n, dtype, line, m, b,
                                     shown="cg::reduce")).astype(dtype)
        step //= 2
    return total


def _cg_reduce_with(c: Lanes, value: Any, n: int, fn: Any, dtypes: list[str], line: int, m: Any, b: Any) -> Any:
    """cg::reduce with the source's own function: each round, every number of the value shuffled from the partner
    lane (checked as __shfl_xor_sync is), then fn(mine, partner's) for the active lanes."""
    mask = _tile_mask(c, n)
    total, step = value, n // 2
    while step:
        total = fn(c, _eff(m, b), total, _partner(c, total, iter(dtypes), mask, step, n, line, m, b))
        step //= 2
    return total


def _partner(c: Lanes, v: Any, leaves: Any, mask: np.ndarray, step: int, n: int, line: int, m: Any, b: Any) -> Any:
    """Each number of `v` (a struct or vector: member by member) from the lane `step` away in its tile."""
    if isinstance(v, tuple):
        return tuple(_partner(c, x, leaves, mask, step, n, line, m, b) for x in v)
    return _shfl(c, "__shfl_xor_sync", mask, v, step, n, next(leaves), line, m, b, shown="cg::reduce")


#: Names the translated code may call (merged into the runtime's namespace).
RUNTIME: dict[str, Any] = {"_tile_mask": _tile_mask, "_tile_bits": _tile_bits, "_cg_reduce": _cg_reduce,
                           "_cg_reduce_with": _cg_reduce_with, "np": np}
