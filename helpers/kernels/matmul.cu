// C = A @ B for n x n row-major float32 matrices, two ways. Launch with 16 x 16 threads per block and
// ceil(n / 16) x ceil(n / 16) blocks: thread (x, y) of the grid computes C[row = y][col = x].

#define TILE 16

// Naive: every thread reads a whole row of A and a whole column of B from global memory:
// 2n loads for 2n FLOPs, and neighbouring threads load the same numbers again and again.
extern "C" __global__ void matmul_naive(const float* A, const float* B, float* C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) {
            sum += A[row * n + k] * B[k * n + col];
        }
        C[row * n + col] = sum;
    }
}

// Tiled: the block copies a TILE x TILE tile of A and one of B into shared memory (on-chip, shared by
// the block's threads), then every thread uses each loaded number TILE times. Global loads drop TILE-fold.
extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, int n) {
    __shared__ float tileA[TILE][TILE];
    __shared__ float tileB[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int start = 0; start < n; start += TILE) {
        // Each thread loads one number of each tile; zeros pad the tiles that stick out of the matrix.
        int a_col = start + threadIdx.x;
        int b_row = start + threadIdx.y;
        tileA[threadIdx.y][threadIdx.x] = (row < n && a_col < n) ? A[row * n + a_col] : 0.0f;
        tileB[threadIdx.y][threadIdx.x] = (b_row < n && col < n) ? B[b_row * n + col] : 0.0f;
        __syncthreads();  // wait until the whole tile is loaded before anyone reads it
        for (int k = 0; k < TILE; ++k) {
            sum += tileA[threadIdx.y][k] * tileB[k][threadIdx.x];
        }
        __syncthreads();  // wait until everyone is done with this tile before it is overwritten
    }
    if (row < n && col < n) {
        C[row * n + col] = sum;
    }
}
