// sgemm_pipe_cpu.cpp: runs the CUDA source of tasks/L1/sgemm/pipe.cu on the CPU, so that the kernel
// itself (not only its OpenCL twin) is checked where no GPU is: the threads of a block are fibers
// of one thread and __syncthreads their barrier (tests/cuda_cpu_block.h), shared memory is one array (blocks run one after
// another), and cp.async is a plain copy that zero-fills past its source size (the test script
// rewrites the inline PTX into calls of sim_copy; commit and wait become no-ops, so the order of the
// waits is not what is checked here). Shared memory is filled with NaN before each block, so a read
// of a stage before it is written shows; C is filled with NaN, so an unwritten element shows, and
// past its end, so a write out of bounds shows. Every check shape of the task is run, with A, B and C
// 16-byte aligned and one float off (the scalar paths), and shapes whose tiles lie inside the
// matrices (FAST's unchecked loads) and wrap the ring of stages.
// Built by tests/sgemm_pipe_cpu_test.sh with -DKERNEL_FILE="..." and the knobs as -D options.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_cpu_block.h"
using std::max;
using std::min;

struct float4 {
    float x, y, z, w; /* the four lanes */
};
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__
alignas(16) float4 smem4[65536]; /* 1 MiB: the dynamic shared memory of the block running */
static inline unsigned __cvta_generic_to_shared(const void *p)
{
    return (unsigned)((const char *)p - (const char *)smem4);
}
/* cp.async of size bytes (4 or 16) to shared address dst, bytes of them from src, the rest zeros */
static inline void sim_copy(unsigned dst, const float *src, int size, int bytes)
{
    char *d = (char *)smem4 + dst;
    memset(d, 0, size);
    memcpy(d, src, bytes);
}
#include KERNEL_FILE

/* Runs the kernel on one shape; returns the number of wrong elements. */
static long run(int M, int N, int K, bool ints, int mis, std::mt19937 &g)
{
    std::vector<float> Ab(M * (size_t)K + 8), Bb(K * (size_t)N + 8), Cb(M * (size_t)N + 8, NAN);
    float *A = Ab.data() + mis, *B = Bb.data() + mis, *C = Cb.data() + mis;
    std::normal_distribution<float> na(0.5f, 1.0f), nb(-0.25f, 1.0f);
    std::uniform_int_distribution<int> ri(-2, 2);
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = ints ? ri(g) : na(g);
    for (size_t i = 0; i < (size_t)K * N; i++)
        B[i] = ints ? ri(g) : nb(g);
    const unsigned gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM;
    cpu_block::run(NT, [&](int t) {
        for (unsigned by = 0; by < gy; by++)
            for (unsigned bx = 0; bx < gx; bx++) {
                blockIdx = {bx, by, 0};
                if (t == 0)
                    memset(smem4, 0xff, sizeof smem4);
                __syncthreads();
                sgemm_pipe(C, A, B, M, N, K);
                __syncthreads();
            }
    });
    long bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double r = 0;
            for (int p = 0; p < K; p++)
                r += (double)A[(size_t)i * K + p] * B[(size_t)p * N + j];
            double c = C[(size_t)i * N + j];
            if (!(fabs(c - r) <= 5e-4 + 2e-5 * fabs(r))) { /* the task's tolerance; NaN fails */
                if (bad < 3)
                    printf("  C[%d][%d] = %g, want %g\n", i, j, c, r);
                bad++;
            }
        }
    for (size_t i = (size_t)M * N; i < (size_t)M * N + 8 - mis; i++)
        if (!std::isnan(C[i])) {
            printf("  wrote C past its end\n");
            bad++;
            break;
        }
    printf("%s M=%d N=%d K=%d, pointers %d floats off 16-byte alignment\n", bad ? "WRONG" : "ok   ", M, N, K, mis);
    return bad;
}

int main()
{
    std::mt19937 g(7);
    const int shapes[][3] = {{1, 1, 1},     {7, 13, 17},  {64, 64, 64},  {33, 65, 129},  {127, 96, 257},
                             {1, 300, 700}, {65537, 3, 2}, {3, 65537, 2}, {2, 3, 65537}, {512, 256, 80}};
    long bad = 0;
    for (const auto &s : shapes)
        for (int mis = 0; mis < 2; mis++)
            if (mis == 0 || (size_t)s[0] * s[1] * s[2] < 2000000)
                bad += run(s[0], s[1], s[2], s[2] == 65537, mis, g);
    return bad ? 1 : 0;
}
