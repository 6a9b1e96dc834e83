// One thread per pixel: count how many steps z -> z*z + c takes to leave the circle |z| = 2, for the
// point c = (re, im) at the pixel's place in the rectangle [x0, x1] x [y0, y1]. Launch a 2-D grid of
// 16 x 16-thread blocks covering width x height pixels.

extern "C" __global__ void mandelbrot(int* counts, int width, int height, float x0, float x1, float y0,
                                      float y1, int max_steps) {
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height) {
        return;
    }
    float c_re = x0 + (x1 - x0) * px / (width - 1);
    float c_im = y0 + (y1 - y0) * py / (height - 1);
    float z_re = 0.0f, z_im = 0.0f;
    int step = 0;
    while (step < max_steps && z_re * z_re + z_im * z_im <= 4.0f) {
        float next_re = z_re * z_re - z_im * z_im + c_re;
        z_im = 2.0f * z_re * z_im + c_im;
        z_re = next_re;
        ++step;
    }
    counts[py * width + px] = step;
}
