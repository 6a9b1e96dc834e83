// Sum of x[0..n) in two launches: block_sum(x, partial, n) with many blocks leaves one partial sum per
// block; block_sum(partial, total, blocks) with one block adds those up. blockDim.x must be 256.

#define THREADS 256

extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float partial[THREADS];
    int tid = threadIdx.x;
    // 1. Grid-stride loop: each thread adds up its share of x in a register.
    float sum = 0.0f;
    // (a 64-bit index: near n = 2^31 a 32-bit one would wrap around before the loop ends)
    for (long long i = blockIdx.x * (long long)blockDim.x + tid; i < n; i += (long long)blockDim.x * gridDim.x) {
        sum += x[i];
    }
    partial[tid] = sum;
    __syncthreads();
    // 2. Tree in shared memory: 256 -> 128 -> ... -> 1 values, half the threads idle at each step.
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (tid < half) {
            partial[tid] += partial[tid + half];
        }
        __syncthreads();
    }
    // 3. Thread 0 writes the block's sum.
    if (tid == 0) {
        out[blockIdx.x] = partial[0];
    }
}
