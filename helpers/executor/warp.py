"""Warp primitives (__shfl_*_sync, __ballot_sync, __any_sync, __all_sync, __activemask, __syncwarp): how a call
translates, and what the translated code calls. A warp is 32 lanes in a row of the lock-step batch (blocks padded
to whole warps), so a thread's lane is its linear index in the block modulo 32.

CUDA's rule for the *_sync primitives, checked on every call: each calling thread is in its own `mask`, and every
lane the mask names that has not exited calls the same primitive with the same mask (a lane that took another branch
breaks it: CUDA leaves the result undefined, so it is a fault here; one that returned from the kernel, or lies past
the end of a partial last warp, may be named). A shuffle reads only from lanes of the caller's mask that call it:
reading from a lane that returned or does not exist is a fault too (its value is undefined). A shuffle's `width` (a
power of 2 from 1 to 32) splits the warp into groups of that many lanes: __shfl_sync's srcLane is taken modulo width
within the caller's group; __shfl_up_sync and __shfl_down_sync give the caller its own value where lane -/+ delta
leaves the group; __shfl_xor_sync may read from its own or an earlier group, and gets its own value from a later one
(as the PTX shfl.sync instruction has it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .c_types import DTYPES, INT, UINT, CType, promote
from .counters import WARP
from .errors import CudaCError
from .masks import _eff
from .runtime import Lanes

FULL = 0xFFFF_FFFF
_BITS = np.arange(WARP, dtype=np.int64)
#: The types a shuffle moves; bool, char and short are promoted to int first (the result has that type).
SHUFFLED = ("int", "unsigned int", "long long", "unsigned long long", "float", "double")
#: What a shuffle's third argument is called, by primitive: for messages.
_THIRD = {"__shfl_sync": "srcLane", "__shfl_up_sync": "delta", "__shfl_down_sync": "delta",
          "__shfl_xor_sync": "laneMask"}
VOID = CType("void")

Translation = Callable[[Any, list[Any], "int | None"], tuple[str, CType]]


# ------------------------------------------------------------------------------------------------ translation


def _shuffle_call(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    """__shfl_*_sync(mask, var, srcLane / delta / laneMask, width = warpSize): the result has var's type."""
    if len(args) not in (3, 4):
        raise CudaCError(f"{name}() takes 3 or 4 arguments (mask, var, {_THIRD[name]}, width = warpSize); got "
                         f"{len(args)}", line)
    mask = t.convert(args[0], UINT, line)
    code, ctype = t.expr(args[1])
    vtype = promote(ctype)
    if vtype.pointer or vtype.dims or vtype.name not in SHUFFLED:
        raise CudaCError(f"{name} moves an int, unsigned int, long long, unsigned long long, float or double; this "
                         f"is a {ctype} (shuffle a vector member by member)", line)
    var = t.cast(code, ctype, vtype, line)
    third = t.convert(args[2], UINT if name in ("__shfl_up_sync", "__shfl_down_sync") else INT, line)
    width = t.convert(args[3], INT, line) if len(args) == 4 else str(WARP)
    return (f"_shfl(_c, {name!r}, {mask}, {var}, {third}, {width}, {DTYPES[vtype.name]!r}, {line}, {t.mask})",
            vtype)


def _vote_call(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    """__ballot_sync(mask, pred) (unsigned int), __any_sync and __all_sync (int)."""
    t.arity(name, args, 2, line)
    mask = t.convert(args[0], UINT, line)
    pred = t.condition(args[1], line)
    return f"_vote(_c, {name!r}, {mask}, {pred}, {line}, {t.mask})", UINT if name == "__ballot_sync" else INT


def _activemask_call(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    """__activemask(): the lanes of the caller's warp that run this call, one bit each."""
    t.arity(name, args, 0, line)
    return f"_activemask(_c, {t.mask})", UINT


def _syncwarp_call(t: Any, name: str, args: list[Any], line: int | None) -> tuple[str, CType]:
    """__syncwarp(mask = 0xffffffff): the lanes the mask names wait for each other; their memory accesses
    before it come before those after it."""
    if len(args) > 1:
        raise CudaCError(f"__syncwarp() takes at most one argument (a mask); got {len(args)}", line)
    mask = t.convert(args[0], UINT, line) if args else str(FULL)
    t.unit.syncwarp = True  # the race check keeps which warp read what only for a source that needs it
    return f"_syncwarp(_c, {mask}, {line}, {t.mask})", VOID


def _named(name: str, fn: Callable[[Any, str, list[Any], int | None], tuple[str, CType]]) -> Translation:
    return lambda t, args, line: fn(t, name, args, line)


# ------------------------------------------------------------------------------------------------ runtime


def _here(c: Lanes, m: Any, b: Any) -> np.ndarray:
    """The lanes that make this call, as a bool per lane of the batch (padding lanes never do)."""
    e = _eff(m, b)
    return np.broadcast_to(e if e is not None else c.real if c.real is not None else True, (c.lanes,))


def _bits(q: np.ndarray) -> np.ndarray:
    """Per warp, the lanes where q holds as bits (lane k: bit k)."""
    return (q.reshape(-1, WARP).astype(np.int64) << _BITS).sum(axis=1)


def _lane_name(c: Lanes, lane: int) -> str:
    tid = lane % c.padded
    return f"lane {lane % WARP} (thread {c.xyz_thread(tid)})" if tid < c.threads else f"lane {lane % WARP}"


def _check(c: Lanes, name: str, mask: Any, here: np.ndarray, line: int) -> np.ndarray:
    """Each lane's mask, after CUDA's rule is checked: the caller is in its mask, and every lane it names is here
    with the same mask."""
    masks = np.broadcast_to(np.asarray(mask).astype(np.int64) & FULL, (c.lanes,))
    rows = np.flatnonzero(here.reshape(-1, WARP).any(axis=1))
    on, mk = here.reshape(-1, WARP)[rows], masks.reshape(-1, WARP)[rows]
    if on.all() and (mk == FULL).all():
        return masks
    named = ((mk[:, :, None] >> _BITS) & 1).astype(bool)  # [warp, caller, lane it names]
    alive = _alive(c).reshape(-1, WARP)[rows]  # a lane that has exited (or never existed) may be named
    for bad, fault in ((on & ~named[:, _BITS, _BITS], _left_out),
                       ((on[:, :, None] & named & ~on[:, None, :] & alive[:, None, :]).any(axis=2), _absent),
                       ((on[:, :, None] & named & (mk[:, :, None] != mk[:, None, :])).any(axis=2), _differs)):
        if bad.any():
            w, k = divmod(int(np.flatnonzero(bad)[0]), WARP)
            lane = int(rows[w]) * WARP + k
            raise fault(c, name, masks, on[w], mk[w], lane, line)
    return masks


def _alive(c: Lanes) -> np.ndarray:
    """The lanes that have not returned from the kernel and are threads of the block (not a warp's padding)."""
    alive = c.alive if c.alive is not None else c.real if c.real is not None else True
    return np.broadcast_to(alive, (c.lanes,)) & (c.real if c.real is not None else True)


def _left_out(c: Lanes, name: str, masks: np.ndarray, on: np.ndarray, mk: np.ndarray, lane: int,
              line: int) -> Exception:
    return c.fault("bad warp mask", f"calls {name} with mask 0x{int(masks[lane]):08x}, which leaves out its own lane "
                   f"{lane % WARP}: every calling thread must be in the mask (use __activemask(), or 0xffffffff when "
                   "the whole warp is here)", line, lane)


def _absent(c: Lanes, name: str, masks: np.ndarray, on: np.ndarray, mk: np.ndarray, lane: int,
            line: int) -> Exception:
    alive = _alive(c)[lane - lane % WARP:lane - lane % WARP + WARP]
    k = int(np.flatnonzero(((int(masks[lane]) >> _BITS) & 1).astype(bool) & ~on & alive)[0])
    other = lane - lane % WARP + k
    return c.fault("warp divergence", f"calls {name} with mask 0x{int(masks[lane]):08x}, which names "
                   f"{_lane_name(c, other)}, which is not at this call (it took another branch): CUDA leaves the "
                   "result undefined; use __activemask() or a mask of the lanes that are here", line, lane)


def _differs(c: Lanes, name: str, masks: np.ndarray, on: np.ndarray, mk: np.ndarray, lane: int,
             line: int) -> Exception:
    k = int(np.flatnonzero(((int(masks[lane]) >> _BITS) & 1).astype(bool) & on & (mk != masks[lane]))[0])
    other = lane - lane % WARP + k
    return c.fault("bad warp mask", f"calls {name} with mask 0x{int(masks[lane]):08x}, but {_lane_name(c, other)}, "
                   f"which that mask names, calls it with mask 0x{int(mk[k]):08x}: every lane a mask names must pass "
                   "the same mask", line, lane)


def _width(c: Lanes, name: str, width: Any, here: np.ndarray, line: int) -> np.ndarray:
    """The shuffle's width per lane: a fault unless a power of 2 from 1 to 32."""
    w = np.broadcast_to(np.asarray(width).astype(np.int64), (c.lanes,))
    bad = here & ((w < 1) | (w > WARP) | ((w & (w - 1)) != 0))
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        raise c.fault("bad shuffle width", f"calls {name} with width {int(w[lane])}: the width must be a power of 2 "
                      "from 1 to 32 (warpSize); the warp is split into groups of that many lanes", line, lane)
    return np.where(here, w, WARP)


def _source(name: str, lane: np.ndarray, arg: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The lane (of the warp, 0 to 31) each lane reads from: its own where the source is outside its group."""
    low = lane & (w - 1)  # the lane's place in its group of w
    if name == "__shfl_sync":
        return lane - low + (arg & (w - 1))
    if name == "__shfl_xor_sync":
        j = lane ^ (arg & (WARP - 1))
        return np.where(j < lane - low + w, j, lane)
    if name == "__shfl_up_sync":
        return np.where(low >= arg, lane - arg, lane)
    return np.where(low + arg < w, lane + arg, lane)


def _shfl(c: Lanes, name: str, mask: Any, var: Any, arg: Any, width: Any, dtype: str, line: int, m: Any,
          b: Any, shown: str = "") -> np.ndarray:
    """A shuffle: each calling lane gets var from the source lane of its warp (see the module's docstring).
    `shown`: the call as the source writes it, for messages (tile.shfl_down, cg::reduce), when not `name`."""
    here = _here(c, m, b)
    masks = _check(c, shown or name, mask, here, line)
    w = _width(c, shown or name, width, here, line)
    every = np.arange(c.lanes, dtype=np.int64)
    lane = every & (WARP - 1)
    j = _source(name, lane, np.broadcast_to(np.asarray(arg).astype(np.int64), (c.lanes,)), w)
    outside = here & (((masks >> j) & 1) == 0)
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise c.fault("shuffle from a lane outside the mask", f"calls {shown or name} and would read lane "
                      f"{int(j[k])}, but its mask 0x{int(masks[k]):08x} leaves that lane out: a thread reads only "
                      "from lanes that take part (CUDA leaves the value undefined); widen the mask or keep the "
                      "source inside it", line, k)
    gone = here & ~here[every - lane + j]
    if gone.any():
        k = int(np.flatnonzero(gone)[0])
        source = int(every[k] - lane[k] + j[k])
        why = "is past the end of the block (blockDim is not a multiple of 32)" if source % c.padded >= c.threads \
            else "has returned" if not _alive(c)[source] else "is not at this call (it took another branch)"
        raise c.fault("shuffle from a lane that is not here", f"calls {shown or name} and would read "
                      f"{_lane_name(c, source)}, which {why}: CUDA leaves the value undefined; keep the source "
                      "among the lanes that call it (or give them a value first)", line, k)
    c.tick(0, m, b)
    c.counters.shuffles += int(here.reshape(-1, WARP).any(axis=1).sum())
    values = np.broadcast_to(np.asarray(var, dtype), (c.lanes,))
    return values[every - lane + j]


def _vote(c: Lanes, name: str, mask: Any, pred: Any, line: int, m: Any, b: Any, shown: str = "") -> np.ndarray:
    """__ballot_sync: the mask's lanes whose pred holds, as bits; __any_sync, __all_sync: whether any or all do."""
    here = _here(c, m, b)
    masks = _check(c, shown or name, mask, here, line)
    ballot = np.repeat(_bits(np.broadcast_to(np.asarray(pred, bool), (c.lanes,)) & here), WARP) & masks
    c.tick(0, m, b)
    if name == "__ballot_sync":
        return ballot.astype(np.uint32)
    return ((ballot != 0) if name == "__any_sync" else (ballot == masks)).astype(np.int32)


def _activemask(c: Lanes, m: Any, b: Any) -> np.ndarray:
    """The lanes of each lane's warp that run this call, as bits."""
    return np.repeat(_bits(_here(c, m, b)), WARP).astype(np.uint32)


def _syncwarp(c: Lanes, mask: Any, line: int, m: Any, b: Any, shown: str = "") -> None:
    """__syncwarp(mask): checked as the other *_sync primitives; it orders the named lanes' shared-memory accesses
    (helpers.executor.batch.WarpSync)."""
    here = _here(c, m, b)
    masks = _check(c, shown or "__syncwarp", mask, here, line)
    lanes = np.flatnonzero(here)
    c.warp_sync.sync(lanes, masks[lanes])


#: C name -> translation: (translator, argument nodes, line) -> (Python code, result CType).
TRANSLATE: dict[str, Translation] = {
    **{name: _named(name, _shuffle_call) for name in _THIRD},
    **{name: _named(name, _vote_call) for name in ("__ballot_sync", "__any_sync", "__all_sync")},
    "__activemask": _named("__activemask", _activemask_call),
    "__syncwarp": _named("__syncwarp", _syncwarp_call),
}
#: Names the translated code may call (merged into the runtime's namespace).
RUNTIME: dict[str, Any] = {"_shfl": _shfl, "_vote": _vote, "_activemask": _activemask, "_syncwarp": _syncwarp}
