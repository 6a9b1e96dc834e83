// Chapter 07's tensor-core rungs: C = A @ B for n x n row-major matrices, A and B in half precision (fp16), the
// sums in float32, through WMMA (nvcuda::wmma, <mma.h>): a warp hands a 16 x 16 x 16 product to the tensor cores
// in one call. helpers/chapters/tensor_cores.py holds how each is launched; n must be a multiple of the block's tile
// of C (64), as in the published tutorials, and the launcher refuses other sizes.
#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

// 8. Tensor cores: one warp per 16 x 16 tile of C, its fragments loaded straight from global memory. A block is
//    4 warps side by side (threadIdx.y picks the warp), so it computes a 16 x 64 strip of C. Each step along k,
//    the warp loads a 16 x 16 tile of A and one of B (512 bytes each) and the tensor cores multiply them.
extern "C" __global__ void hgemm_wmma(const half* A, const half* B, float* C, int n) {
    int row = blockIdx.y * 16;
    int col = (blockIdx.x * blockDim.y + threadIdx.y) * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum;
    wmma::fill_fragment(sum, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + row * n + k, n);
        wmma::load_matrix_sync(b, B + k * n + col, n);
        wmma::mma_sync(sum, a, b, sum);
    }
    wmma::store_matrix_sync(C + row * n + col, sum, n, wmma::mem_row_major);
}

// 9. Tensor cores fed from shared memory: a block of 8 warps (4 down, 2 across) computes a 64 x 32 tile of C,
//    one 16 x 16 tile per warp. Each step along k, the block's 256 threads copy a 64 x 16 tile of A and a
//    16 x 32 tile of B into shared memory (each number once), and each warp loads its fragments from there: a
//    tile of A now serves 2 warps, a tile of B 4. Acc is the sums' type: float, or half (fp16 sums, which
//    GeForce cards run at twice the rate of float sums).
template <typename Acc>
__global__ void hgemm_shared(const half* A, const half* B, Acc* C, int n) {
    __shared__ half As[64 * 16];
    __shared__ half Bs[16 * 32];
    int tid = threadIdx.y * 32 + threadIdx.x;
    int row = blockIdx.y * 64, col = blockIdx.x * 32;
    int warp_row = threadIdx.y / 2 * 16, warp_col = threadIdx.y % 2 * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> sum;
    wmma::fill_fragment(sum, static_cast<Acc>(0.0f));
    for (int k = 0; k < n; k += 16) {
        for (int i = tid; i < 64 * 16; i += 256) As[i] = A[(row + i / 16) * n + k + i % 16];
        for (int i = tid; i < 16 * 32; i += 256) Bs[i] = B[(k + i / 32) * n + col + i % 32];
        __syncthreads();
        wmma::load_matrix_sync(a, As + warp_row * 16, 16);
        wmma::load_matrix_sync(b, Bs + warp_col, 32);
        wmma::mma_sync(sum, a, b, sum);
        __syncthreads();
    }
    wmma::store_matrix_sync(C + (row + warp_row) * n + col + warp_col, sum, n, wmma::mem_row_major);
}
