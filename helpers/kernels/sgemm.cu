// Chapter 07's ladder: C = A @ B for n x n row-major float32 matrices (SGEMM), seven kernels, each one step
// faster than the one before. helpers/chapters/make_it_fast.py holds how each is launched (its grid and block); the
// chapter reads every kernel from here. Rungs 1 to 3 take any n; rungs 4 to 7 assume n is a multiple of their
// block's tile of C (64 or 128), as the published worklogs' kernels do, and their launcher refuses other sizes.

// 1. Naive: one thread per element of C. Thread x of a block takes a ROW of C, so the 32 threads of a warp
//    read A at 32 different rows, n floats apart: 32 sectors (and 32 cache lines) per load.
extern "C" __global__ void sgemm_naive(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.x * 32 + threadIdx.x;
    int col = blockIdx.y * 32 + threadIdx.y;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) {
            sum += A[row * n + k] * B[k * n + col];
        }
        C[row * n + col] = sum;
    }
}

// 2. Coalesced: the same arithmetic, but thread x takes a COLUMN of C. A warp's 32 threads now read one number
//    of A (all 32 threads the same one, a broadcast) and 32 neighbouring numbers of B, side by side in memory.
extern "C" __global__ void sgemm_coalesced(const float* A, const float* B, float* C, int n) {
    int col = blockIdx.x * 32 + threadIdx.x;
    int row = blockIdx.y * 32 + threadIdx.y;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) {
            sum += A[row * n + k] * B[k * n + col];
        }
        C[row * n + col] = sum;
    }
}

// 3. Shared-memory tiles: the block's 32 x 32 threads copy a 32 x 32 tile of A and one of B into shared
//    memory, then each thread reads its row and column from there: every number loaded from global memory is
//    used 32 times. Now each multiply-add needs two shared-memory reads.
#define TILE 32

extern "C" __global__ void sgemm_shared(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < n && col < n) ? B[(t + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            sum += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < n && col < n) {
        C[row * n + col] = sum;
    }
}

// 4. 1D block tiling: a block of 512 threads computes a 64 x 64 tile of C, each thread a column of TM1 = 8
//    outputs. A thread reads one number of B from shared memory and uses it 8 times, from a register: 9 shared
//    reads per 8 multiply-adds instead of 16.
#define BM1 64
#define BN1 64
#define BK1 8
#define TM1 8

extern "C" __global__ void sgemm_1d(const float* A, const float* B, float* C, int n) {
    __shared__ float As[BM1][BK1];
    __shared__ float Bs[BK1][BN1];
    int tcol = threadIdx.x % BN1;  // the thread's column of the block's tile
    int trow = threadIdx.x / BN1;  // and its rows: trow * TM1 to trow * TM1 + TM1 - 1
    const float* a = A + blockIdx.y * BM1 * n;
    const float* b = B + blockIdx.x * BN1;
    int arow = threadIdx.x / BK1, acol = threadIdx.x % BK1;  // the element of As this thread copies
    int brow = threadIdx.x / BN1, bcol = threadIdx.x % BN1;  // and of Bs
    float sums[TM1] = {0.0f};
    for (int t = 0; t < n; t += BK1) {
        As[arow][acol] = a[arow * n + t + acol];
        Bs[brow][bcol] = b[(t + brow) * n + bcol];
        __syncthreads();
        for (int k = 0; k < BK1; ++k) {
            float bk = Bs[k][tcol];
#pragma unroll
            for (int i = 0; i < TM1; ++i) {
                sums[i] += As[trow * TM1 + i][k] * bk;
            }
        }
        __syncthreads();
    }
    for (int i = 0; i < TM1; ++i) {
        C[(blockIdx.y * BM1 + trow * TM1 + i) * n + blockIdx.x * BN1 + tcol] = sums[i];
    }
}

// 5. 2D block tiling (register blocking): each thread computes a TM x TN patch of C. Per step k it reads TM
//    numbers of A and TN of B into registers and does TM * TN multiply-adds with them: 16 shared reads per 64
//    multiply-adds at TM = TN = 8. A template: the tile sizes are chosen where it is instantiated
//    (cupy.RawModule(..., name_expressions=["sgemm_2d<128, 128, 8, 8, 8>"])). (BM / TM) * (BN / TN) threads.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_2d(const float* A, const float* B, float* C, int n) {
    __shared__ float As[BM * BK];  // As[m * BK + k]: the block's BM rows of A, BK columns
    __shared__ float Bs[BK * BN];  // Bs[k * BN + j]
    const int threads = (BM / TM) * (BN / TN);
    int tcol = threadIdx.x % (BN / TN);
    int trow = threadIdx.x / (BN / TN);
    const float* a = A + blockIdx.y * BM * n;
    const float* b = B + blockIdx.x * BN;
    float sums[TM * TN] = {0.0f};
    float regM[TM];
    float regN[TN];
    for (int t = 0; t < n; t += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += threads) {
            As[i] = a[(i / BK) * n + t + i % BK];
        }
        for (int i = threadIdx.x; i < BK * BN; i += threads) {
            Bs[i] = b[(t + i / BN) * n + i % BN];
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int m = 0; m < TM; ++m) {
                regM[m] = As[(trow * TM + m) * BK + k];
            }
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                regN[j] = Bs[k * BN + tcol * TN + j];
            }
#pragma unroll
            for (int m = 0; m < TM; ++m) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    sums[m * TN + j] += regM[m] * regN[j];
                }
            }
        }
        __syncthreads();
    }
    for (int m = 0; m < TM; ++m) {
        for (int j = 0; j < TN; ++j) {
            C[(blockIdx.y * BM + trow * TM + m) * n + blockIdx.x * BN + tcol * TN + j] = sums[m * TN + j];
        }
    }
}

// 6. Vectorised: the same tiles, moved 16 bytes (a float4) per instruction. A is stored TRANSPOSED in shared
//    memory (As[k * BM + m]) so that a thread's TM numbers of A lie side by side and come in two float4 reads,
//    as its TN numbers of B do: 4 shared reads per 64 multiply-adds. TM and TN must be multiples of 4.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_vectorized(const float* A, const float* B, float* C, int n) {
    __shared__ float As[BK * BM];
    __shared__ float Bs[BK * BN];
    const int threads = (BM / TM) * (BN / TN);
    int tcol = threadIdx.x % (BN / TN);
    int trow = threadIdx.x / (BN / TN);
    const float* a = A + blockIdx.y * BM * n;
    const float* b = B + blockIdx.x * BN;
    float sums[TM * TN] = {0.0f};
    float regM[TM];
    float regN[TN];
    for (int t = 0; t < n; t += BK) {
        for (int i = threadIdx.x; i < BM * BK / 4; i += threads) {
            int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
            float4 v = reinterpret_cast<const float4*>(&a[r * n + t + c])[0];
            As[(c + 0) * BM + r] = v.x;
            As[(c + 1) * BM + r] = v.y;
            As[(c + 2) * BM + r] = v.z;
            As[(c + 3) * BM + r] = v.w;
        }
        for (int i = threadIdx.x; i < BK * BN / 4; i += threads) {
            int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
            reinterpret_cast<float4*>(&Bs[r * BN + c])[0] = reinterpret_cast<const float4*>(&b[(t + r) * n + c])[0];
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int m = 0; m < TM; m += 4) {
                float4 v = reinterpret_cast<const float4*>(&As[k * BM + trow * TM + m])[0];
                regM[m] = v.x; regM[m + 1] = v.y; regM[m + 2] = v.z; regM[m + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = reinterpret_cast<const float4*>(&Bs[k * BN + tcol * TN + j])[0];
                regN[j] = v.x; regN[j + 1] = v.y; regN[j + 2] = v.z; regN[j + 3] = v.w;
            }
#pragma unroll
            for (int m = 0; m < TM; ++m) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    sums[m * TN + j] += regM[m] * regN[j];
                }
            }
        }
        __syncthreads();
    }
    for (int m = 0; m < TM; ++m) {
        for (int j = 0; j < TN; j += 4) {
            float4 out = make_float4(sums[m * TN + j], sums[m * TN + j + 1], sums[m * TN + j + 2], sums[m * TN + j + 3]);
            reinterpret_cast<float4*>(&C[(blockIdx.y * BM + trow * TM + m) * n + blockIdx.x * BN + tcol * TN + j])[0] = out;
        }
    }
}

// 7. Bank-conflict free: rung 6 has two conflicts. Its transposed stores into As put the two float4 columns a
//    thread copies 4 * BM words apart, in the same banks: PAD extra words per row of As move them 4 * PAD banks
//    apart. And its float4 reads of B give neighbouring threads columns 8 floats apart, two words per bank:
//    here a thread's TN columns are TN / 4 float4s spread BN / (TN / 4) apart, so neighbouring threads read
//    neighbouring float4s. Same arithmetic, fewer shared-memory passes.
#define PAD 4

template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_conflict_free(const float* A, const float* B, float* C, int n) {
    __shared__ float As[BK * (BM + PAD)];
    __shared__ float Bs[BK * BN];
    const int threads = (BM / TM) * (BN / TN);
    const int spread = BN / (TN / 4);  // columns between a thread's float4s of B and of C
    int tcol = threadIdx.x % (BN / TN);
    int trow = threadIdx.x / (BN / TN);
    const float* a = A + blockIdx.y * BM * n;
    const float* b = B + blockIdx.x * BN;
    float sums[TM * TN] = {0.0f};
    float regM[TM];
    float regN[TN];
    for (int t = 0; t < n; t += BK) {
        for (int i = threadIdx.x; i < BM * BK / 4; i += threads) {
            int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
            float4 v = reinterpret_cast<const float4*>(&a[r * n + t + c])[0];
            As[(c + 0) * (BM + PAD) + r] = v.x;
            As[(c + 1) * (BM + PAD) + r] = v.y;
            As[(c + 2) * (BM + PAD) + r] = v.z;
            As[(c + 3) * (BM + PAD) + r] = v.w;
        }
        for (int i = threadIdx.x; i < BK * BN / 4; i += threads) {
            int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
            reinterpret_cast<float4*>(&Bs[r * BN + c])[0] = reinterpret_cast<const float4*>(&b[(t + r) * n + c])[0];
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int m = 0; m < TM; m += 4) {
                float4 v = reinterpret_cast<const float4*>(&As[k * (BM + PAD) + trow * TM + m])[0];
                regM[m] = v.x; regM[m + 1] = v.y; regM[m + 2] = v.z; regM[m + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = reinterpret_cast<const float4*>(&Bs[k * BN + (j / 4) * spread + tcol * 4])[0];
                regN[j] = v.x; regN[j + 1] = v.y; regN[j + 2] = v.z; regN[j + 3] = v.w;
            }
#pragma unroll
            for (int m = 0; m < TM; ++m) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    sums[m * TN + j] += regM[m] * regN[j];
                }
            }
        }
        __syncthreads();
    }
    for (int m = 0; m < TM; ++m) {
        for (int j = 0; j < TN; j += 4) {
            float4 out = make_float4(sums[m * TN + j], sums[m * TN + j + 1], sums[m * TN + j + 2], sums[m * TN + j + 3]);
            int col = blockIdx.x * BN + (j / 4) * spread + tcol * 4;
            reinterpret_cast<float4*>(&C[(blockIdx.y * BM + trow * TM + m) * n + col])[0] = out;
        }
    }
}
