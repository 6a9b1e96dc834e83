"""Copies over the host link: pinned at the link's rate, pageable at a fraction of it, each a call."""

from __future__ import annotations

from ..core.validate import positive_int
from ..measuring import specs
from .arguments import _amount, _choice
from .costs import OVERHEADS, TIMINGS, Cost
from .roofs import Device, roofs


def host_link(device: Device) -> tuple[float, str]:
    """(bytes/s, source) of the link between the host and `device`; a ValueError if none is on file."""
    r = roofs(device)
    found = specs.host_link(r.device)
    if found is None:
        known = ", ".join(specs.HOST_LINKS)
        raise ValueError(f"no host link on file for {r.device}; known: {known}")
    return found


#: Ordinary host memory is *pageable*: the OS may move it, so the GPU cannot copy from it directly. CUDA (and
#: cupy.asarray, jax.device_put) first copies it into a pinned staging buffer, at a fraction of the link's rate.
PAGEABLE_FRACTION = Cost(0.27, "fraction of the pinned host-link bandwidth a copy from ordinary (pageable) host "
                         "memory reaches",
                         "fitted: the geometric mean of the two published ratios found, both A100 hosts, CUDA's "
                         "bandwidthTest, 32 MB host to device: a DGX A100, pageable 10.0 GB/s against pinned 25.7 "
                         "(0.39), and a Dell A100 80GB PCIe server, 3.3 against 17.3 (0.19) (https://github.com/gengwg/"
                         "gpu/blob/54e9b29dd04137191a140917917658bf216b1d74/nvda_gpu_benchmark.md); none was found "
                         "for a T4, and the ratio depends on the host's memory and CPU")
#: Where a copy's host-side data lives: ordinary NumPy arrays are "pageable"; "pinned" is page-locked memory
#: (cupyx.empty_pinned), which the GPU's copy engine reads directly, at the link's rate (HOST_LINKS).
MEMORIES = ("pageable", "pinned")


def predict_copy_seconds(device: Device, bytes: float, *, calls: int = 1, timed: str = "synced",  # noqa: A002
                         memory: str = "pageable", host_bandwidth: float | None = None) -> float:
    """Seconds to move `bytes` between host memory and `device` in `calls` copies: each a CuPy call plus the link
    (timed="kernel": the transfer alone, as CUDA's bandwidthTest times it), from `memory` (MEMORIES): a NumPy
    array is pageable, and crosses at PAGEABLE_FRACTION of the pinned rate. host_bandwidth: this host's own copy
    rate, measured (h.hardware().cpu.peak_bandwidth), for the GPU that is here: a pageable copy is first copied by
    the host into a pinned buffer, so it goes no faster than that (the H200 run's host, a virtual machine, moved
    5.7 GB/s, 0.13 of its link's rate, below both published hosts' 0.19 and 0.39)."""
    calls = positive_int("calls", calls)
    overhead = 0.0 if _choice("timed", timed, TIMINGS) == "kernel" else OVERHEADS["cupy"].value
    pageable = _choice("memory", memory, MEMORIES) == "pageable"
    rate = host_link(device)[0] * (PAGEABLE_FRACTION.value if pageable else 1.0)
    if pageable and host_bandwidth is not None:
        rate = min(rate, _amount("host_bandwidth", host_bandwidth, positive=True))
    return calls * overhead + _amount("bytes", bytes) / rate
