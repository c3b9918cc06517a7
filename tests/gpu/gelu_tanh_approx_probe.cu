// gelu_tanh_approx_probe.cu: measures, on a CUDA GPU, how far a GELU computed with the hardware
// tanh.approx.f32 (inline PTX) and rounded to bf16 is from the exact GELU, over every bf16 x in
// [-100, 100], against the gelu task's tolerance (atol 2e-5, rtol 5e-3): the numbers behind the
// correction of tasks/L1/gelu's tolerance note. Also the raw error of tanh.approx.f32 itself.
// Build and run on a GPU machine: nvcc -O2 -o probe tests/gpu/gelu_tanh_approx_probe.cu && ./probe
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_bf16.h>

__device__ float tanh_approx(float z)
{
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(z));
    return t;
}

__global__ void gelu_probe(const float *x, float *y_fast, float *t_fast, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    float z = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    float t = tanh_approx(z);
    t_fast[i] = t;
    y_fast[i] = __bfloat162float(__float2bfloat16_rn(0.5f * v * (1.0f + t)));
}

static float bf16_bits_to_float(unsigned short b)
{
    unsigned int u = (unsigned int)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

int main()
{
    static float xs[65536];
    int n = 0;
    for (unsigned b = 0; b < 65536; b++) {
        float f = bf16_bits_to_float((unsigned short)b);
        if (std::isfinite(f) && f >= -100.0f && f <= 100.0f)
            xs[n++] = f;
    }
    float *dx, *dy, *dt;
    cudaMalloc(&dx, n * 4);
    cudaMalloc(&dy, n * 4);
    cudaMalloc(&dt, n * 4);
    cudaMemcpy(dx, xs, n * 4, cudaMemcpyHostToDevice);
    gelu_probe<<<(n + 255) / 256, 256>>>(dx, dy, dt, n);
    static float ys[65536], ts[65536];
    cudaMemcpy(ys, dy, n * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(ts, dt, n * 4, cudaMemcpyDeviceToHost);
    double worst = 0, worst_x = 0, max_abs = 0, max_abs_x = 0, worst_t_abs = 0, worst_t_x = 0;
    int fails = 0;
    for (int i = 0; i < n; i++) {
        double x = xs[i];
        double z = 0.7978845608028654 * (x + 0.044715 * x * x * x);
        double ref = 0.5 * x * (1.0 + tanh(z));
        double err = fabs(ys[i] - ref), tol = 2e-5 + 5e-3 * fabs(ref);
        if (err / tol > worst) {
            worst = err / tol;
            worst_x = x;
        }
        if (err > max_abs) {
            max_abs = err;
            max_abs_x = x;
        }
        fails += err > tol;
        double te = fabs(ts[i] - tanh((double)(float)(0.7978845608028654f * ((float)x + 0.044715f * (float)x * (float)x * (float)x))));
        if (te > worst_t_abs) {
            worst_t_abs = te;
            worst_t_x = x;
        }
    }
    printf("bf16 x in [-100, 100]: %d values, %d outside the tolerance\n", n, fails);
    printf("worst error / tolerance %.3f at x = %g; max abs error %.3g at x = %g\n", worst, worst_x, max_abs, max_abs_x);
    printf("tanh.approx.f32 max abs error %.3g at x = %g\n", worst_t_abs, worst_t_x);
    for (float x : {-3.0f, -4.0f, -5.0f, -6.0f, -2.0f, -1.0f}) {
        for (int i = 0; i < n; i++)
            if (xs[i] == x) {
                double z = 0.7978845608028654 * (x + 0.044715 * x * x * x);
                double ref = 0.5 * x * (1.0 + tanh(z));
                printf("x = %g: y %.6g, exact %.6g, error/tolerance %.3f, tanh error %.3g\n", x, ys[i], ref,
                       fabs(ys[i] - ref) / (2e-5 + 5e-3 * fabs(ref)), fabs(ts[i] - tanh(z)));
            }
    }
    return 0;
}
