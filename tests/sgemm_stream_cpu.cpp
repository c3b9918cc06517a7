// sgemm_stream_cpu.cpp: runs the CUDA source of tasks/L1/sgemm/stream.cu on the CPU, so that the
// kernel itself (its persistent walk, stream-K split and fixup, not only the OpenCL twin's) is
// checked where no GPU is: the threads of a block are fibers of one thread and __syncthreads
// their barrier (tests/cuda_cpu_block.h), shared memory is one array (blocks run one after another, which the kernel allows:
// no block waits for another), atomics and fences are plain operations. Each shape runs at several
// grid sizes P (the kernel's SMS), so that the stream-K tail is split over 1 to 13 blocks,
// twice: blocks in order and in reverse, and the two results must be the same bits (the fixup sums
// in share order, whichever piece finishes last). Shared memory and the scratch partials are
// filled with NaN before the run, so a read of a stage or a partial before it is written shows; C
// is filled with NaN, so an unwritten element shows, and past its end, so a write out of bounds
// shows. A, B and C are 16-byte aligned and, for small shapes, one float off (the scalar paths).
// Built by tests/sgemm_stream_cpu_test.sh with -DKERNEL_FILE="..." and the knobs as -D options.
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
static dim3u gridDim, blockDim;
static inline void __threadfence() {}
static inline int atomicAdd(int *p, int v)
{
    int old = *p;
    *p += v;
    return old;
}
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline void __stcg(T *p, T v) { *p = v; }
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__
alignas(16) float4 smem4[65536]; /* 1 MiB: the dynamic shared memory of the block running */
#include KERNEL_FILE

/* Runs the kernel on one shape with P blocks, in order (rev 0) or in reverse; fills C. Returns how
 * many tiles were split into pieces (their counts, zeroed by sgemm_zero, reached 2 or more). */
static int launch(float *C, const float *A, const float *B, int M, int N, int K, int P, bool rev)
{
    const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    P = min(P, tiles);
    const size_t slots = (size_t)(2 + SKW) * P;
    std::vector<float> ws(slots * BM * BN, NAN);
    std::vector<int> counts(slots, 0x7f7f7f7f);
    gridDim = {(unsigned)P, 1, 1};
    blockDim = {1, 1, 1};
    threadIdx = {0, 0, 0};
    if (SK)
        sgemm_zero(counts.data(), (int)slots);
    blockDim = {NT, 1, 1};
    cpu_block::run(NT, [&](int t) {
        for (int b = 0; b < P; b++) {
            blockIdx = {(unsigned)(rev ? P - 1 - b : b), 0, 0};
            if (t == 0)
                memset(smem4, 0xff, sizeof smem4);
            __syncthreads();
            sgemm_stream(C, A, B, ws.data(), counts.data(), M, N, K);
            __syncthreads();
        }
    });
    int split = 0;
    for (size_t i = 0; i < slots && SK; i++)
        split += counts[i] >= 2;
    return split;
}

static long split_total; /* tiles split into pieces, over all runs */

/* Runs one shape at P blocks both ways; returns the number of wrong elements. */
static long run(int M, int N, int K, int P, bool ints, int mis, std::mt19937 &g)
{
    std::vector<float> Ab(M * (size_t)K + 8), Bb(K * (size_t)N + 8), Cb(M * (size_t)N + 8, NAN),
        Db(M * (size_t)N + 8, NAN);
    float *A = Ab.data() + mis, *B = Bb.data() + mis, *C = Cb.data() + mis, *D = Db.data() + mis;
    std::normal_distribution<float> na(0.5f, 1.0f), nb(-0.25f, 1.0f);
    std::uniform_int_distribution<int> ri(-2, 2);
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = ints ? ri(g) : na(g);
    for (size_t i = 0; i < (size_t)K * N; i++)
        B[i] = ints ? ri(g) : nb(g);
    const int split = launch(C, A, B, M, N, K, P, false);
    launch(D, A, B, M, N, K, P, true);
    split_total += split;
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
    if (memcmp(C, D, (size_t)M * N * sizeof(float)) != 0) {
        printf("  blocks in reverse order gave other bits\n");
        bad++;
    }
    for (size_t i = (size_t)M * N; i < (size_t)M * N + 8 - mis; i++)
        if (!std::isnan(C[i]) || !std::isnan(D[i])) {
            printf("  wrote C past its end\n");
            bad++;
            break;
        }
    printf("%s M=%d N=%d K=%d P=%d, pointers %d floats off 16-byte alignment, %d tiles split\n", bad ? "WRONG" : "ok   ",
           M, N, K, P, mis, split);
    return bad;
}

int main()
{
    std::mt19937 g(7);
    /* the task's check shapes, then shapes of several tiles whose tail splits at these P */
    const int shapes[][3] = {{1, 1, 1},     {7, 13, 17},   {64, 64, 64},   {33, 65, 129},  {127, 96, 257},
                             {1, 300, 700}, {65537, 3, 2}, {3, 65537, 2},  {2, 3, 65537},  {768, 384, 160},
                             {300, 520, 328}, {1024, 512, 64}};
    const int grids[] = {1, 2, 3, 5, 7, 13};
    long bad = 0;
    for (const auto &s : shapes)
        for (int P : grids) {
            const size_t work = (size_t)s[0] * s[1] * s[2];
            const int tiles = ((s[0] + BM - 1) / BM) * ((s[1] + BN - 1) / BN);
            if (P > tiles)
                continue; /* the grid is min(P, tiles): a run as one already made */
            if (work > 2000000 && P != 2 && P != 7)
                continue; /* the larger ones at two grids */
            /* one float off alignment (the scalar loads) at one grid, not at K = 65,537: its 4,097
             * k-steps of 256 threads' barriers take 20 s on two cores for paths the others take */
            for (int mis = 0; mis < 2; mis++)
                if (mis == 0 || (work < 2000000 && s[2] < 65537 && P == min(3, tiles)))
                    bad += run(s[0], s[1], s[2], P, s[2] == 65537, mis, g);
        }
    if (SK && split_total == 0) {
        printf("WRONG no tile was split: the stream-K fixup was not run\n");
        bad++;
    }
    return bad ? 1 : 0;
}
