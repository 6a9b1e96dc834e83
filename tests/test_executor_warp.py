"""Warp primitives on the CPU executor (shuffles, votes, __activemask, __syncwarp), warp-synchronous shared memory
(a race without __syncwarp(), none with it), and atomics on shared memory and atomicCAS: values against NumPy,
and the faults CUDA leaves undefined (a mask naming lanes that are elsewhere, a width that is no power of 2)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.executor import CudaCError, KernelFault, Program

RNG = np.random.default_rng(26)


def launch(source: str, name: str, grid: int, block: int, *args: object) -> object:
    return Program(source).launch(name, (grid,), (block,), args)


# ------------------------------------------------------------------------------------------------ shuffles


WARP_SUM = '''
extern "C" __global__ void warp_sum(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffff, v, d);
    if (threadIdx.x % 32 == 0) out[i / 32] = v;
}'''


@pytest.mark.parametrize(("block", "n"), [(32, 32), (64, 64), (256, 1000)])
def test_a_warp_sum_with_shfl_down_matches_numpy(block, n):
    x = RNG.standard_normal(n).astype(np.float32)
    grid = -(-n // block)
    out = np.zeros(grid * block // 32, np.float32)
    run = launch(WARP_SUM, "warp_sum", grid, block, x, out, np.int32(n))
    padded = np.zeros(grid * block, np.float32)
    padded[:n] = x
    np.testing.assert_allclose(out, padded.reshape(-1, 32).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert run.counters.shuffles == 5 * grid * block // 32  # five steps, one shuffle per warp each


def test_a_partial_last_warp_sums_its_lanes_with_the_active_mask():
    src = '''
extern "C" __global__ void k(const int* x, int* out) {
    int t = threadIdx.x;
    unsigned m = __activemask();
    int v = x[t];
    for (int d = 8; d > 0; d /= 2) v += __shfl_xor_sync(m, v, d, 16);  // within each half warp
    if (m == 0xffffffffu) v += __shfl_xor_sync(m, v, 16);
    if (t % 32 == 0) out[t / 32] = v;
}'''
    x = np.arange(48, dtype=np.int32)
    out = np.zeros(2, np.int32)
    launch(src, "k", 1, 48, x, out)  # 48 threads: the second warp has lanes 0 to 15 only
    assert out.tolist() == [int(x[:32].sum()), int(x[32:].sum())]


def test_an_off_by_one_delta_gives_a_wrong_sum_that_numpy_catches():
    wrong = WARP_SUM.replace("d = 16; d > 0; d /= 2", "d = 16; d > 1; d /= 2")  # the last step, d = 1, is lost
    x = np.ones(64, np.float32)
    out = np.zeros(2, np.float32)
    launch(wrong, "warp_sum", 1, 64, x, out, np.int32(64))
    assert not np.allclose(out, [32, 32])
    assert out.tolist() == [16.0, 16.0]


def test_a_butterfly_with_shfl_xor_gives_every_lane_the_sum():
    src = '''
extern "C" __global__ void k(const double* x, double* out) {
    double v = x[threadIdx.x];
    for (int m = 16; m >= 1; m /= 2) v += __shfl_xor_sync(0xffffffff, v, m);
    out[threadIdx.x] = v;
}'''
    x = RNG.standard_normal(64)
    out = np.zeros(64)
    launch(src, "k", 1, 64, x, out)
    np.testing.assert_allclose(out, np.repeat(x.reshape(2, 32).sum(axis=1), 32), rtol=1e-12)
    assert out.dtype == np.float64


def test_an_inclusive_scan_with_shfl_up_matches_cumsum():
    src = '''
extern "C" __global__ void k(const int* x, int* out) {
    int lane = threadIdx.x % 32;
    int v = x[threadIdx.x];
    for (int d = 1; d < 32; d *= 2) {
        int up = __shfl_up_sync(0xffffffff, v, d);
        if (lane >= d) v += up;
    }
    out[threadIdx.x] = v;
}'''
    x = RNG.integers(-50, 50, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    launch(src, "k", 1, 64, x, out)
    assert out.tolist() == np.cumsum(x.reshape(2, 32), axis=1).ravel().tolist()


def test_shfl_broadcasts_a_lane_and_takes_the_source_modulo_width():
    src = '''
extern "C" __global__ void k(const unsigned long long* x, unsigned long long* a, unsigned long long* b,
                             unsigned long long* c) {
    unsigned long long v = x[threadIdx.x];
    a[threadIdx.x] = __shfl_sync(0xffffffff, v, 3);
    b[threadIdx.x] = __shfl_sync(0xffffffff, v, 35);       // 35 % 32 = 3
    c[threadIdx.x] = __shfl_sync(0xffffffff, v, 5, 16);    // lane 5 of each group of 16
}'''
    x = (np.arange(32, dtype=np.uint64) + np.uint64(2**63))
    a, b, c = (np.zeros(32, np.uint64) for _ in range(3))
    launch(src, "k", 1, 32, x, a, b, c)
    assert (a == x[3]).all() and (b == x[3]).all()
    assert c.tolist() == [int(x[5])] * 16 + [int(x[21])] * 16


def test_width_16_sums_each_half_warp_and_keeps_own_values_at_the_group_edge():
    src = '''
extern "C" __global__ void k(const float* x, float* sums, float* down) {
    float v = x[threadIdx.x];
    down[threadIdx.x] = __shfl_down_sync(0xffffffff, v, 8, 16);
    for (int d = 8; d > 0; d /= 2) v += __shfl_down_sync(0xffffffff, v, d, 16);
    sums[threadIdx.x] = v;
}'''
    x = np.arange(32, dtype=np.float32)
    sums, down = np.zeros(32, np.float32), np.zeros(32, np.float32)
    launch(src, "k", 1, 32, x, sums, down)
    assert sums[0] == x[:16].sum() and sums[16] == x[16:].sum()
    want = [x[i + 8] if i % 16 < 8 else x[i] for i in range(32)]  # lanes 8-15 and 24-31 keep their own value
    assert down.tolist() == want


def test_a_width_that_is_no_power_of_two_is_a_fault():
    src = '''
extern "C" __global__ void k(float* x) { x[threadIdx.x] = __shfl_down_sync(0xffffffff, x[threadIdx.x], 1, 12); }'''
    with pytest.raises(KernelFault, match="width 12: the width must be a power of 2 from 1 to 32") as fault:
        launch(src, "k", 1, 32, np.zeros(32, np.float32))
    assert fault.value.kind == "bad shuffle width" and fault.value.line == 2


# ------------------------------------------------------------------------------------------------ masks


def test_a_full_mask_inside_a_divergent_branch_is_a_fault_naming_the_absent_lane():
    src = '''
extern "C" __global__ void k(float* x) {
    float v = x[threadIdx.x];
    if (threadIdx.x < 16) {
        v += __shfl_down_sync(0xffffffff, v, 1);
    }
    x[threadIdx.x] = v;
}'''
    with pytest.raises(KernelFault) as fault:
        launch(src, "k", 1, 32, np.zeros(32, np.float32))
    e = fault.value
    assert e.kind == "warp divergence" and e.thread == (0, 0, 0) and e.line == 5
    assert "__shfl_down_sync with mask 0xffffffff, which names lane 16 (thread (16,)), which is not at this call " \
           "(it took another branch)" in str(e)
    assert "use __activemask() or a mask of the lanes that are here" in str(e)
    fixed = src.replace("0xffffffff, v, 1)", "0x0000ffff, v, 1, 16)")  # lane 15 keeps its own value
    x = np.arange(32, dtype=np.float32)
    launch(fixed, "k", 1, 32, x)
    assert x[:16].tolist() == [2 * i + 1 for i in range(15)] + [30]


def test_a_full_mask_may_name_lanes_that_returned_but_reading_from_one_is_a_fault():
    """CUDA's rule: the mask's non-exited lanes must call; a lane that returned (or a partial warp's missing one)
    may be named, but a shuffle that reads from it gets an undefined value."""
    returned = '''
extern "C" __global__ void k(int* x, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    x[i] = __shfl_xor_sync(0xffffffff, x[i], 1);
}'''
    x = np.arange(48, dtype=np.int32)
    launch(returned, "k", 1, 32, x, np.int32(20))  # lanes 0-19 swap in pairs, inside the 20
    assert x[:20].tolist() == [i ^ 1 for i in range(20)] and x[20:].tolist() == list(range(20, 48))
    with pytest.raises(KernelFault, match=r"would read lane 21 \(thread \(21,\)\), which has returned") as fault:
        launch(returned, "k", 1, 32, np.zeros(32, np.int32), np.int32(21))
    assert fault.value.thread == (20, 0, 0) and fault.value.kind == "shuffle from a lane that is not here"
    x = np.arange(48, dtype=np.int32)
    launch(returned, "k", 1, 48, x, np.int32(48))  # the second warp has 16 threads: they swap among themselves
    assert x.tolist() == [i ^ 1 for i in range(48)]
    down = returned.replace("__shfl_xor_sync(0xffffffff, x[i], 1)", "__shfl_down_sync(0xffffffff, x[i], 15)")
    with pytest.raises(KernelFault, match="would read lane 16, which is past the end of the block"):
        launch(down, "k", 1, 48, np.zeros(48, np.int32), np.int32(48))


def test_a_lane_outside_its_own_mask_and_a_source_outside_the_mask_are_faults():
    own = 'extern "C" __global__ void k(int* x) { x[threadIdx.x] = __shfl_sync(0x1, x[threadIdx.x], 0); }'
    with pytest.raises(KernelFault, match="mask 0x00000001, which leaves out its own lane 1") as fault:
        launch(own, "k", 1, 2, np.zeros(2, np.int32))
    assert fault.value.kind == "bad warp mask" and fault.value.thread == (1, 0, 0)
    source = 'extern "C" __global__ void k(int* x) { x[threadIdx.x] = __shfl_sync(0x3, x[threadIdx.x], 2); }'
    with pytest.raises(KernelFault, match="would read lane 2, but its mask 0x00000003 leaves that lane out") as fault:
        launch(source, "k", 1, 2, np.zeros(2, np.int32))
    assert fault.value.kind == "shuffle from a lane outside the mask"
    differ = '''
extern "C" __global__ void k(int* x) {
    unsigned m = threadIdx.x == 0 ? 0x3u : 0xffffffffu;
    x[threadIdx.x] = __shfl_sync(m, x[threadIdx.x], 0);
}'''
    with pytest.raises(KernelFault, match="mask 0x00000003, but lane 1 .thread .1,.., which that mask names, calls it "
                                          "with mask 0xffffffff"):
        launch(differ, "k", 1, 32, np.zeros(32, np.int32))


def test_two_half_warps_may_shuffle_with_their_own_masks():
    src = '''
extern "C" __global__ void k(int* x) {
    int t = threadIdx.x;
    if (t < 16) x[t] = __shfl_sync(0x0000ffffu, x[t], 0);
    else x[t] = __shfl_sync(0xffff0000u, x[t], 16);
}'''
    x = np.arange(32, dtype=np.int32)
    launch(src, "k", 1, 32, x)
    assert x.tolist() == [0] * 16 + [16] * 16


# ------------------------------------------------------------------------------------------------ votes


def test_ballot_any_all_and_activemask():
    src = '''
extern "C" __global__ void k(const int* x, unsigned int* ballot, int* any, int* all, unsigned int* active) {
    int t = threadIdx.x;
    ballot[t] = __ballot_sync(0xffffffff, x[t] > 0);
    any[t] = __any_sync(0xffffffff, x[t] > 5);
    all[t] = __all_sync(0xffffffff, x[t] >= 0);
    if (t % 3 == 0) active[t] = __activemask();
}'''
    x = np.zeros(64, np.int32)
    x[[1, 4, 31, 40]] = [1, 7, 2, 3]
    ballot, active = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    anyv, allv = np.zeros(64, np.int32), np.zeros(64, np.int32)
    launch(src, "k", 1, 64, x, ballot, anyv, allv, active)
    assert ballot[:32].tolist() == [(1 << 1) | (1 << 4) | (1 << 31)] * 32 and (ballot[32:] == 1 << 8).all()
    assert anyv.tolist() == [1] * 32 + [0] * 32
    assert (allv == 1).all()
    thirds = sum(1 << k for k in range(32) if k % 3 == 0), sum(1 << k for k in range(32) if (k + 32) % 3 == 0)
    assert (active[0:32:3] == thirds[0]).all() and (active[33:64:3] == thirds[1]).all()


def test_a_vote_with_a_subset_mask_sees_only_those_lanes():
    src = '''
extern "C" __global__ void k(const int* x, int* all, unsigned int* ballot) {
    int t = threadIdx.x;
    if (t < 8) {
        all[t] = __all_sync(0xffu, x[t] > 0);
        ballot[t] = __ballot_sync(0xffu, x[t] > 1);
    }
}'''
    x = np.concatenate([np.full(8, 2, np.int32), np.zeros(24, np.int32)])
    all_, ballot = np.zeros(32, np.int32), np.zeros(32, np.uint32)
    launch(src, "k", 1, 32, x, all_, ballot)
    assert all_[:8].tolist() == [1] * 8 and ballot[:8].tolist() == [0xff] * 8


# ------------------------------------------------------------------------------------------------ __syncwarp


def last_warp(steps: str) -> str:
    return f'''
extern "C" __global__ void reduce(const float* x, float* out) {{
    __shared__ float s[64];
    int tid = threadIdx.x;
    s[tid] = x[blockIdx.x * 64 + tid];
    __syncthreads();
    if (tid < 32) {{
{steps}
        if (tid == 0) out[blockIdx.x] = s[0];
    }}
}}'''


UNSYNCED = last_warp("\n".join(f"        s[tid] += s[tid + {d}];" for d in (32, 16, 8, 4, 2, 1)))
SYNCED = last_warp("        float v = s[tid] + s[tid + 32];\n        __syncwarp();\n        s[tid] = v;\n"
                   "        __syncwarp();\n" + "".join(f"        v += s[tid + {d}];\n        __syncwarp();\n"
                                                     "        s[tid] = v;\n        __syncwarp();\n"
                                                     for d in (16, 8, 4, 2, 1)))


VOLATILE = last_warp("        volatile float* vs = s;\n" + "\n".join(f"        vs[tid] += vs[tid + {d}];"
                                                                   for d in (32, 16, 8, 4, 2, 1)))


def test_warp_synchronous_code_without_syncwarp_is_a_race_that_names_syncwarp():
    x = RNG.standard_normal(128).astype(np.float32)
    with pytest.raises(KernelFault) as fault:
        launch(VOLATILE, "reduce", 2, 64, x, np.zeros(2, np.float32))
    e = fault.value
    assert e.kind == "race" and e.line == 10 and e.thread == (0, 0, 0)
    assert "will read s[16], which thread (16,) of the block wrote at line 9" in str(e)
    assert "threads (16,) and (0,) are in the same warp, but since Volta (independent thread scheduling) a warp's " \
           "lanes need not run in step: put __syncwarp() between the write and the read" in str(e)


def test_the_same_code_without_volatile_is_told_apart_as_the_worse_bug():
    x = RNG.standard_normal(128).astype(np.float32)
    with pytest.raises(KernelFault) as fault:
        launch(UNSYNCED, "reduce", 2, 64, x, np.zeros(2, np.float32))
    e = fault.value
    assert e.kind == "race" and e.line == 9 and "since Volta (independent" not in str(e)
    assert "s is not read through a volatile pointer, so the compiler may keep its elements in registers" in str(e)
    assert "wrong on every GPU, before Volta too" in str(e)


def test_the_same_reduction_with_syncwarp_between_steps_is_correct():
    x = RNG.standard_normal(128).astype(np.float32)
    out = np.zeros(2, np.float32)
    launch(SYNCED, "reduce", 2, 64, x, out)
    np.testing.assert_allclose(out, x.reshape(2, 64).sum(axis=1), rtol=1e-5)


def test_a_read_and_write_in_one_statement_race_even_with_syncwarp_around_it():
    steps = "".join(f"        s[tid] += s[tid + {d}];\n        __syncwarp();\n" for d in (32, 16, 8, 4, 2, 1))
    with pytest.raises(KernelFault, match=r"will write s\[16\], which other threads of the block read at line 10 "
                                          r".*put __syncwarp\(\) between the read and the write \(this one statement"):
        launch(last_warp(steps), "reduce", 1, 64, np.ones(64, np.float32), np.zeros(1, np.float32))


def test_syncwarp_orders_only_the_lanes_its_mask_names_and_threads_of_two_warps_still_need_syncthreads():
    src = '''
extern "C" __global__ void k(int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = t;
    if (t < 16) __syncwarp(0x0000ffffu); else __syncwarp(0xffff0000u);
    out[t] = s[t ^ PARTNER];
}'''
    out = np.zeros(32, np.int32)
    launch(src.replace("PARTNER", "1"), "k", 1, 32, out)  # partners inside each half: ordered
    assert out.tolist() == [t ^ 1 for t in range(32)]
    with pytest.raises(KernelFault, match=r"will read s\[16\], which thread \(16,\) of the block wrote at line 5 .*"
                                          r"same warp"):
        launch(src.replace("PARTNER", "16"), "k", 1, 32, out)  # lane 0 reads lane 16's write: no common __syncwarp
    whole = src.replace("if (t < 16) __syncwarp(0x0000ffffu); else __syncwarp(0xffff0000u);", "__syncwarp();")
    launch(whole.replace("PARTNER", "16"), "k", 1, 32, out)
    assert out.tolist() == [t ^ 16 for t in range(32)]
    with pytest.raises(KernelFault, match=r"wrote at line 5 with no __syncthreads\(\) in between"):
        launch(whole.replace("PARTNER", "32"), "k", 1, 64, np.zeros(64, np.int32))  # lane 0 reads warp 1's write


def test_syncwarp_in_a_device_function_and_its_argument_count():
    src = '''
__device__ void pass(float* s, int t) { s[t] = (float)t; __syncwarp(); }
extern "C" __global__ void k(float* out) {
    __shared__ float s[32];
    pass(s, threadIdx.x);
    out[threadIdx.x] = s[31 - threadIdx.x];
}'''
    out = np.zeros(32, np.float32)
    launch(src, "k", 1, 32, out)
    assert out.tolist() == [float(31 - t) for t in range(32)]
    with pytest.raises(CudaCError, match="__syncwarp.. takes at most one argument"):
        Program('extern "C" __global__ void k() { __syncwarp(1, 2); }')


# ------------------------------------------------------------------------------------------------ atomics


HISTOGRAM = '''
extern "C" __global__ void hist(const int* x, unsigned int* out, int n) {
    __shared__ unsigned int bins[16];
    int t = threadIdx.x;
    if (t < 16) bins[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) atomicAdd(&bins[x[i] % 16], 1u);
    __syncthreads();
    if (t < 16) atomicAdd(&out[t], bins[t]);
}'''


def test_a_shared_memory_histogram_with_atomic_add_matches_bincount():
    x = RNG.integers(0, 1000, 1000).astype(np.int32)
    out = np.zeros(16, np.uint32)
    run = launch(HISTOGRAM, "hist", 8, 128, x, out, np.int32(1000))
    assert out.tolist() == np.bincount(x % 16, minlength=16).tolist()
    assert run.counters.atomics == 1000 + 8 * 16


def test_shared_atomics_on_unwritten_bins_or_racing_a_plain_write_are_faults():
    with pytest.raises(KernelFault, match=r"read bins\[\d+\], which no thread has written yet") as fault:
        launch(HISTOGRAM.replace("if (t < 16) bins[t] = 0;", ""), "hist", 1, 32, np.arange(32, dtype=np.int32),
               np.zeros(16, np.uint32), np.int32(32))
    assert fault.value.kind == "uninitialised read"
    with pytest.raises(KernelFault, match=r"will update bins\[1\], which thread \(1,\) of the block wrote at line 5 "
                                          r"with nothing ordering the two.*or __syncthreads\(\)"):
        launch(HISTOGRAM.replace("    __syncthreads();\n    int i", "    int i", 1), "hist", 1, 64,
               np.full(64, 1, np.int32), np.zeros(16, np.uint32), np.int32(64))


def test_atomic_cas_builds_a_lock_free_float_max_and_the_bitwise_atomics_work():
    src = '''
extern "C" __global__ void fmax_cas(const float* x, int* best, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    int old = *best;
    int assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) break;
        old = atomicCAS(best, assumed, __float_as_int(v));
    } while (assumed != old);
}
extern "C" __global__ void bits(unsigned int* w, unsigned int* counter) {
    __shared__ unsigned int s[3];
    int t = threadIdx.x;
    if (t == 0) { s[0] = 0xffffffffu; s[1] = 0; s[2] = 0; }
    __syncthreads();
    atomicAnd(&s[0], ~(1u << t));
    atomicOr(&s[1], 1u << t);
    atomicXor(&s[2], 3u);
    atomicInc(&counter[0], 9u);
    atomicDec(&counter[1], 100u);
    __syncthreads();
    if (t == 0) { w[0] = s[0]; w[1] = s[1]; w[2] = s[2]; }
}'''
    x = RNG.standard_normal(1000).astype(np.float32)
    best = np.array([-np.inf], np.float32).view(np.int32)
    program = Program(src)
    program.launch("fmax_cas", (8,), (128,), (x, best, np.int32(1000)))
    assert best.view(np.float32)[0] == x.max()
    w, counter = np.zeros(3, np.uint32), np.array([0, 5], np.uint32)
    program.launch("bits", (1,), (31,), (w, counter))
    assert w.tolist() == [1 << 31, (1 << 31) - 1, 3]  # 31 xors of 3: 3
    assert counter.tolist() == [31 % 10, 100 - (31 - 6)]  # inc wraps to 0 after 9; dec wraps to 100 after 0


def test_atomic_cas_on_shared_memory_adds_and_atomics_of_the_wrong_type_are_refused():
    src = '''
extern "C" __global__ void k(int* out) {
    __shared__ int total[1];
    if (threadIdx.x == 0) total[0] = 0;
    __syncthreads();
    int old = total[0];
    int assumed;
    do { assumed = old; old = atomicCAS(&total[0], assumed, assumed + (int)threadIdx.x); } while (old != assumed);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = atomicAdd(total, 0);
}'''
    out = np.zeros(1, np.int32)
    Program(src).launch("k", (1,), (64,), (out,))
    assert out[0] == sum(range(64))
    with pytest.raises(CudaCError, match="atomicOr on a float: CUDA has atomicOr for int, unsigned int"):
        Program('extern "C" __global__ void k(float* x) { atomicOr(&x[0], 1.0f); }')
    with pytest.raises(CudaCError, match="atomicInc on an int: CUDA has atomicInc for unsigned int only"):
        Program('extern "C" __global__ void k(int* x) { atomicInc(&x[0], 3); }')
