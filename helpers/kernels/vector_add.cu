// out[i] = a[i] + b[i] for i < n: the "hello world" of CUDA C.
// One thread per element: the grid has ceil(n / blockDim.x) blocks of blockDim.x threads.

extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // this thread's element
    if (i < n) {                                      // the last block may stick out past the end
        out[i] = a[i] + b[i];
    }
}

// The same sum with a grid-stride loop: any number of threads covers any n.
// Each thread starts at its own index and jumps by the total number of threads in the grid. The index is
// 64-bit (long long): near n = 2^31 a 32-bit one would wrap around before the loop ends.
extern "C" __global__ void vector_add_grid_stride(const float* a, const float* b, float* out, int n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a[i] + b[i];
    }
}
