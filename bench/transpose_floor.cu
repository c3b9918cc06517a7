// transpose_floor.cu: is the DRAM address stream of a tiled transpose itself slower than a copy
// (issue 14: transpose's goal, 1.05x torch.compile at 16384 x 16384 fp32, is 0.5205 ms, 95.8 % of
// the calibrated copy; fast.cu's best is 94.2 %, tma.cu's 88.8 %)? At N x N 4-byte elements (default
// 16384: 1 GiB each way) it times, under temper's protocol (the L2 cleaned untimed before every
// launch: 2x L2 written, another 2x L2 read; CUDA events around the one launch; the median of REPS):
//   copy      plain copies of x into y (the reference);
//   pattern   tile-pattern copies: tile (bi, bj) of x (TR x rows by TC x columns, read as TR row
//             pieces of TC * 4 bytes) is written, in its row-major element order and without any
//             transposing, over y's tile (bj, bi) (TC y rows by TR y columns: TC row pieces of
//             TR * 4 bytes). Every 16-byte vector goes straight from a load to a store; no shared
//             memory. This is the address stream a tiled transpose sends to DRAM, less the in-tile
//             shuffle and its barrier;
//   tiled     the same tiles written back to their own place in y (the same blocks and loads in
//             flight, no transposed placement);
//   rd-tile   x read by tiles, y written as one contiguous TR * TC chunk per tile (the read side of
//             the pattern alone); wr-tile: the write side alone (x read by contiguous chunks);
//   lin       x read and y written by contiguous chunks by the same kernel (its structure alone);
//   NAME/1024 the same at 64 x 64 by 1024-thread blocks, one load per thread (the others: 64-256
//             threads, 4-8 loads each; stream_floor's fastest read had one or two per thread);
//   transpose real transposes through shared memory (swizzle.cu's scheme: 4 x 4 micro-tiles by
//             16-byte loads, transposed in registers, an XOR-swizzled shared tile, 16-byte stores;
//             dynamic shared memory, so up to 256 x 128).
// Loads in flight: a pattern copy's thread issues U (up to 8) 16-byte loads, then their stores; a
// transpose's thread all 4 * MT (up to 16) of its tile's loads before its first shared store. Both
// by plain coherent loads before stores that may alias them (generic stores, for the shared tile),
// so ptxas keeps the loads together: with __ldg and STS it sank them among the stores to save
// registers (cuobjdump -sass, nvcc 13), which would have timed latency, not the address stream.
// Orders (which tile block b takes): rows = x's row-major tile order (fast.cu's GROUP = 0); Gn =
// down the tile columns of n tile rows at a time (fast.cu's GROUP = n); cols = down whole tile
// columns (GROUP = N / TR). One block per tile.
// Every variant runs once, untimed, into a poisoned y (all bits set), and a check kernel compares
// every element of y with the value its definition puts there (x[i] = i, so the expected value is
// the source index: the inverse of each mapping, computed independently of the kernels); the table
// says "ok" or the number of wrong elements. Shares are of the copy bandwidth as temper calibrate
// measures it (1 GiB copies without cleaning, the best of 10 of each of two kernels), the base of
// the goal's 95.8 %.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o transpose_floor bench/transpose_floor.cu
//   ./transpose_floor [N]          (N a multiple of 256; default 16384)
#include "floor_protocol.cuh"

/* how a pattern kernel reads x and writes y (and what the check expects) */
enum { RD_TILE = 0, RD_LIN = 1 };
enum { WR_TRANS = 0, WR_SAME = 1, WR_LIN = 2 };
enum { KIND_COPY = 0, KIND_PATTERN = 1, KIND_TRANSPOSE = 2 };

__global__ void iota_k(unsigned *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned)i;
}

/* The origin (row0, col0) in x of tile t, tiles of TR x TC, nbx tiles per tile row, nby per tile
 * column: group 0 row-major, group g > 0 down the tile columns of g tile rows at a time (fast.cu) */
__device__ __forceinline__ void tile_origin(int t, int TR, int TC, int nbx, int nby, int group, int *row0, int *col0)
{
    if (group > 0) {
        const int per = group * nbx, first = t / per * group, rows = min(group, nby - first), w = t % per;
        *row0 = (first + w % rows) * TR;
        *col0 = w / rows * TC;
    } else {
        *row0 = t / nbx * TR;
        *col0 = t % nbx * TC;
    }
}

/* a pattern copy's threads and loads per thread: NT0 threads (0: a quarter of the tile's vectors,
 * 64 to 256), at most 8 loads each */
template <int TR, int TC, int NT0> struct pat_shape {
    static constexpr int F4 = TR * TC / 4; /* 16-byte vectors per tile */
    static constexpr int NT = NT0 ? NT0 : (F4 / 4 < 64 ? 64 : (F4 / 4 > 256 ? 256 : F4 / 4)); /* threads */
    static constexpr int U = F4 / NT < 8 ? F4 / NT : 8; /* loads in flight per thread */
    static constexpr int CHUNKS = F4 / (NT * U);
    /* blocks per SM asked of ptxas: 64 registers, but 85 at 256 x 256 (its addresses spill at 64) */
    static constexpr int MINB = NT >= 1024 ? 1 : (TR * TC >= 65536 ? 3 : 1024 / NT);
};

/* A pattern copy: block b moves tile b (in the given order); element k of the tile (k in
 * row-major order of the TR x TC tile) is read from x at RD's place and stored at WR's. Each thread
 * issues U 16-byte loads, then their U stores, CHUNKS times. */
template <int TR, int TC, int RD, int WR, int NT0>
__global__ void __launch_bounds__(pat_shape<TR, TC, NT0>::NT, pat_shape<TR, TC, NT0>::MINB)
    pattern_k(unsigned *y, const unsigned *x, int N, int group)
{
    using S = pat_shape<TR, TC, NT0>;
    const int nbx = N / TC, nby = N / TR;
    int row0, col0;
    tile_origin(blockIdx.x, TR, TC, nbx, nby, group, &row0, &col0);
    const size_t lin0 = ((size_t)(row0 / TR) * nbx + col0 / TC) * (TR * TC); /* the tile's contiguous chunk */
#pragma unroll 1
    for (int c = 0; c < S::CHUNKS; c++) {
        uint4 v[S::U];
#pragma unroll
        for (int u = 0; u < S::U; u++) {
            const int k = 4 * ((c * S::U + u) * S::NT + (int)threadIdx.x);
            const size_t src = RD == RD_TILE ? (size_t)(row0 + k / TC) * N + col0 + k % TC : lin0 + k;
            v[u] = *(const uint4 *)(x + src); /* not __ldg, not restrict: no load may sink past a store */
        }
#pragma unroll
        for (int u = 0; u < S::U; u++) {
            const int k = 4 * ((c * S::U + u) * S::NT + (int)threadIdx.x);
            const size_t dst = WR == WR_TRANS  ? (size_t)(col0 + k / TR) * N + row0 + k % TR
                               : WR == WR_SAME ? (size_t)(row0 + k / TC) * N + col0 + k % TC
                                               : lin0 + k;
            *(uint4 *)(y + dst) = v[u];
        }
    }
}

template <int TR, int TC> struct tr_shape {
    static constexpr int MR = TR / 4, MC = TC / 4;        /* micro-tile rows, columns */
    static constexpr int MICRO = MR * MC;                 /* 4 x 4 micro-tiles per tile */
    static constexpr int NT = MICRO < 256 ? MICRO : 256;  /* threads */
    static constexpr int MT = MICRO / NT < 4 ? MICRO / NT : 4; /* micro-tiles per thread per chunk */
    static constexpr int CHUNKS = MICRO / (NT * MT);
    static constexpr int SMEM = TR * TC * 4;
    static constexpr int FIT = 227 * 1024 / (SMEM + 1024); /* blocks per SM that shared memory allows */
    /* blocks per SM asked of ptxas: all that fit, or (with MT = 4) about half, so that none spills */
    static constexpr int MINB = 2048 / NT < FIT ? 2048 / NT : FIT / 2 + 1;
};

/* A real transpose (swizzle.cu's scheme, full tiles only: N is a multiple of 256). Chunk by chunk,
 * a thread loads MT micro-tiles (4 rows of 16 bytes each), transposes them in registers and puts
 * their columns into the shared tile laid out as y's rows (row j = x column col0 + j; 16-byte chunk
 * a at a ^ ((j / 4) % 8)); after the barrier it stores 16-byte pieces of those rows into y. */
/* a generic pointer to p that the compiler cannot see is shared: stores through it may alias global
 * memory, so ptxas keeps every earlier (coherent) global load ahead of them */
__device__ __forceinline__ uint4 *opaque(uint4 *p)
{
    uint4 *q;
    asm("mov.b64 %0, %1;" : "=l"(q) : "l"(p));
    return q;
}

template <int TR, int TC>
__global__ void __launch_bounds__(tr_shape<TR, TC>::NT, tr_shape<TR, TC>::MINB) transpose_k(unsigned *y, const unsigned *x, int N, int group)
{
    using S = tr_shape<TR, TC>;
    extern __shared__ uint4 smem[];
    uint4 *tile = opaque(smem); /* TC rows of MR chunks */
    const int nbx = N / TC, nby = N / TR;
    int row0, col0;
    tile_origin(blockIdx.x, TR, TC, nbx, nby, group, &row0, &col0);
#pragma unroll 1
    for (int c = 0; c < S::CHUNKS; c++) {
        uint4 v[S::MT][4];
#pragma unroll
        for (int k = 0; k < S::MT; k++) {
            const int m = (c * S::MT + k) * S::NT + threadIdx.x, a = m / S::MC, b = m % S::MC;
            const unsigned *p = x + (size_t)(row0 + 4 * a) * N + col0 + 4 * b;
#pragma unroll
            for (int r = 0; r < 4; r++)
                v[k][r] = *(const uint4 *)(p + (size_t)r * N); /* coherent loads: see opaque() */
        }
#pragma unroll
        for (int k = 0; k < S::MT; k++) {
            const int m = (c * S::MT + k) * S::NT + threadIdx.x, a = m / S::MC, b = m % S::MC, s = a ^ (b & 7);
            tile[(4 * b + 0) * S::MR + s] = make_uint4(v[k][0].x, v[k][1].x, v[k][2].x, v[k][3].x);
            tile[(4 * b + 1) * S::MR + s] = make_uint4(v[k][0].y, v[k][1].y, v[k][2].y, v[k][3].y);
            tile[(4 * b + 2) * S::MR + s] = make_uint4(v[k][0].z, v[k][1].z, v[k][2].z, v[k][3].z);
            tile[(4 * b + 3) * S::MR + s] = make_uint4(v[k][0].w, v[k][1].w, v[k][2].w, v[k][3].w);
        }
    }
    __syncthreads();
#pragma unroll 8
    for (int m = threadIdx.x; m < TC * S::MR; m += S::NT) {
        const int j = m / S::MR, i = m % S::MR;
        *(uint4 *)(y + (size_t)(col0 + j) * N + row0 + 4 * i) = smem[j * S::MR + (i ^ ((j >> 2) & 7))];
    }
}

/* Counts the elements of y that differ from what the variant defines (x[i] = i: the value is the
 * source index), by inverting each mapping; bad[1] keeps the smallest wrong index */
__global__ void check_k(const unsigned *y, int N, int kind, int TR, int TC, int rd, int wr, unsigned long long *bad)
{
    const size_t n = (size_t)N * N;
    const int nbx = TC > 0 ? N / TC : 1; /* TC is 0 for copies and transposes, which do not use it */
    unsigned long long nbad = 0, first = ~0ull;
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < n; p += (size_t)gridDim.x * blockDim.x) {
        const int yr = (int)(p / N), yc = (int)(p % N);
        size_t want;
        if (kind == KIND_COPY) {
            want = p;
        } else if (kind == KIND_TRANSPOSE) {
            want = (size_t)yc * N + yr;
        } else {
            int bi, bj, k; /* the x tile (row bi, column bj) and the element's place k in it */
            if (wr == WR_TRANS) {
                bj = yr / TC, bi = yc / TR, k = (yr % TC) * TR + yc % TR;
            } else if (wr == WR_SAME) {
                bi = yr / TR, bj = yc / TC, k = (yr % TR) * TC + yc % TC;
            } else {
                const size_t t = p / ((size_t)TR * TC);
                bi = (int)(t / nbx), bj = (int)(t % nbx), k = (int)(p % ((size_t)TR * TC));
            }
            want = rd == RD_TILE ? (size_t)(bi * TR + k / TC) * N + bj * TC + k % TC
                                 : ((size_t)bi * nbx + bj) * TR * TC + k;
        }
        if (y[p] != (unsigned)want) {
            nbad++;
            first = min(first, (unsigned long long)p);
        }
    }
    if (nbad) {
        atomicAdd(&bad[0], nbad);
        atomicMin(&bad[1], first);
    }
}

struct gpu : floor_gpu {
    int N;
    unsigned *x, *y;
    unsigned long long *bad;
    double copy_gbs; /* the calibrate-style copy bandwidth: 100 % */
    double best_pattern_ms, best_transpose_ms;
    int failures;
};

template <typename F>
static void verify(gpu &g, F launch, int kind, int TR, int TC, int rd, int wr, char *verdict, size_t cap)
{
    const size_t n = (size_t)g.N * g.N;
    fill_k<<<g.sms * 8, 512>>>((uint4 *)g.y, n / 4, 0xffffffffu);
    launch();
    CK(cudaGetLastError());
    unsigned long long init[2] = {0, ~0ull}, got[2];
    CK(cudaMemcpy(g.bad, init, sizeof(init), cudaMemcpyHostToDevice));
    check_k<<<g.sms * 8, 512>>>(g.y, g.N, kind, TR, TC, rd, wr, g.bad);
    CK(cudaMemcpy(got, g.bad, sizeof(got), cudaMemcpyDeviceToHost));
    if (got[0] == 0) {
        snprintf(verdict, cap, "ok");
    } else {
        snprintf(verdict, cap, "WRONG: %llu (first at %llu)", got[0], got[1]);
        g.failures++;
    }
}

static void row(gpu &g, const char *kernel, int TR, int TC, const char *order, double ms, const char *verdict)
{
    const double gbs = 2.0 * g.N * (double)g.N * 4 / (ms * 1e-3) / 1e9;
    char tile[32] = "-";
    if (TR > 0)
        snprintf(tile, sizeof(tile), "%d x %d", TR, TC);
    printf("| %-12s | %-9s | %-5s | %7.4f | %6.0f | %6.1f %% | %s |\n", kernel, tile, order, ms, gbs,
           100 * gbs / g.copy_gbs, verdict);
    fflush(stdout);
}

static void order_name(int group, int nby, char *out, size_t cap)
{
    if (group == 0)
        snprintf(out, cap, "rows");
    else if (group >= nby)
        snprintf(out, cap, "cols");
    else
        snprintf(out, cap, "G%d", group);
}

template <int TR, int TC, int RD, int WR, int NT0 = 0> static void pattern(gpu &g, const char *name, int group)
{
    using S = pat_shape<TR, TC, NT0>;
    const int tiles = (g.N / TR) * (g.N / TC);
    auto launch = [&] { pattern_k<TR, TC, RD, WR, NT0><<<tiles, S::NT>>>(g.y, g.x, g.N, group); };
    char verdict[96], order[16];
    verify(g, launch, KIND_PATTERN, TR, TC, RD, WR, verdict, sizeof(verdict));
    const double ms = floor_time_ms(g, launch);
    if (RD == RD_TILE && WR == WR_TRANS)
        g.best_pattern_ms = std::min(g.best_pattern_ms, ms);
    order_name(group, g.N / TR, order, sizeof(order));
    row(g, name, TR, TC, order, ms, verdict);
}

template <int TR, int TC> static void transpose(gpu &g, int group)
{
    using S = tr_shape<TR, TC>;
    CK(cudaFuncSetAttribute(transpose_k<TR, TC>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM));
    const int tiles = (g.N / TR) * (g.N / TC);
    auto launch = [&] { transpose_k<TR, TC><<<tiles, S::NT, S::SMEM>>>(g.y, g.x, g.N, group); };
    char verdict[96], order[16];
    verify(g, launch, KIND_TRANSPOSE, TR, TC, 0, 0, verdict, sizeof(verdict));
    const double ms = floor_time_ms(g, launch);
    g.best_transpose_ms = std::min(g.best_transpose_ms, ms);
    order_name(group, g.N / TR, order, sizeof(order));
    row(g, "transpose", TR, TC, order, ms, verdict);
}

/* the pattern copy of one tile shape in the orders rows, G32 (and G8, cols where all is set) */
template <int TR, int TC> static void patterns(gpu &g, bool all)
{
    pattern<TR, TC, RD_TILE, WR_TRANS>(g, "pattern", 0);
    pattern<TR, TC, RD_TILE, WR_TRANS>(g, "pattern", 32);
    if (all) {
        pattern<TR, TC, RD_TILE, WR_TRANS>(g, "pattern", 8);
        pattern<TR, TC, RD_TILE, WR_TRANS>(g, "pattern", g.N / TR);
    }
}

int main(int argc, char **argv)
{
    gpu g{};
    g.N = argc > 1 ? atoi(argv[1]) : 16384;
    if (g.N < 256 || g.N % 256 != 0) {
        fprintf(stderr, "transpose_floor: N must be a positive multiple of 256, not %s\n", argv[1]);
        return 2;
    }
    floor_init(g);
    const cudaDeviceProp &prop = g.prop;
    CK(cudaMalloc(&g.bad, 2 * sizeof(unsigned long long)));
    const size_t n = (size_t)g.N * g.N;
    CK(cudaMalloc(&g.x, n * 4));
    CK(cudaMalloc(&g.y, n * 4));
    iota_k<<<g.sms * 8, 512>>>(g.x, n);
    CK(cudaDeviceSynchronize());
    g.best_pattern_ms = g.best_transpose_ms = 1e30;

    g.copy_gbs = floor_copy_gbs(g); /* as temper calibrate has it */
    const double bytes = 2.0 * n * 4;
    const double goal_ms = 0.5205; /* issue 14: 1.05x torch.compile's transpose on the H200 */
    printf("%s, %d SMs, L2 %d MB; %d x %d fp32 (%.0f MiB each way); copy bandwidth (1 GiB, best of 10 of each of two "
           "kernels, uncleaned): %.0f GB/s = 100 %%; the goal %.4f ms is %.1f %% of it%s\n\n",
           prop.name, g.sms, prop.l2CacheSize >> 20, g.N, g.N, n * 4 / 1048576.0, g.copy_gbs, goal_ms,
           100 * bytes / (goal_ms * 1e-3) / 1e9 / g.copy_gbs, g.N == 16384 ? "" : " (at 16384 only)");
    printf("| kernel | tile (x rows x cols) | order | ms (median of %d) | GB/s | %% of copy | checked |\n"
           "| --- | --- | --- | ---: | ---: | ---: | --- |\n",
           REPS);

    const unsigned n4 = (unsigned)(n / 4);
    char verdict[96];
    {
        auto gs = [&] { copy_k<<<g.sms * 16, 256>>>((uint4 *)g.y, (const uint4 *)g.x, n / 4); };
        verify(g, gs, KIND_COPY, 0, 0, 0, 0, verdict, sizeof(verdict));
        row(g, "copy", 0, 0, "gs", floor_time_ms(g, gs), verdict);
        auto one = [&] { copy_one<<<(n4 + 255) / 256, 256>>>((uint4 *)g.y, (const uint4 *)g.x, n / 4); };
        verify(g, one, KIND_COPY, 0, 0, 0, 0, verdict, sizeof(verdict));
        row(g, "copy", 0, 0, "1/thr", floor_time_ms(g, one), verdict);
    }
    /* the same kernel structure without strides, then without transposed placement */
    pattern<64, 64, RD_LIN, WR_LIN>(g, "lin", 0);
    pattern<64, 64, RD_LIN, WR_LIN, 1024>(g, "lin/1024", 0);
    pattern<128, 128, RD_LIN, WR_LIN>(g, "lin", 0);
    pattern<32, 32, RD_TILE, WR_SAME>(g, "tiled", 0);
    pattern<64, 64, RD_TILE, WR_SAME>(g, "tiled", 0);
    pattern<128, 128, RD_TILE, WR_SAME>(g, "tiled", 0);
    pattern<256, 256, RD_TILE, WR_SAME>(g, "tiled", 0);
    /* one side of the pattern at a time */
    pattern<64, 64, RD_TILE, WR_LIN>(g, "rd-tile", 0);
    pattern<64, 64, RD_LIN, WR_TRANS>(g, "wr-tile", 0);
    pattern<128, 128, RD_TILE, WR_LIN>(g, "rd-tile", 0);
    pattern<128, 128, RD_LIN, WR_TRANS>(g, "wr-tile", 0);
    /* the transpose's address stream */
    patterns<32, 32>(g, true);
    patterns<64, 64>(g, true);
    pattern<64, 64, RD_TILE, WR_TRANS, 1024>(g, "pattern/1024", 0);
    pattern<64, 64, RD_TILE, WR_TRANS, 1024>(g, "pattern/1024", 32);
    patterns<128, 128>(g, true);
    patterns<256, 256>(g, true);
    patterns<32, 64>(g, false);
    patterns<64, 32>(g, false);
    patterns<64, 128>(g, false);
    patterns<128, 64>(g, false);
    patterns<32, 128>(g, false);
    patterns<128, 32>(g, false);
    patterns<64, 256>(g, false);
    patterns<256, 64>(g, false);
    patterns<128, 256>(g, false);
    patterns<256, 128>(g, false);
    /* real transposes */
    for (int group : {0, 32}) {
        transpose<32, 32>(g, group);
        transpose<64, 64>(g, group);
        transpose<128, 64>(g, group);
        transpose<64, 128>(g, group);
        transpose<128, 128>(g, group);
        transpose<256, 64>(g, group);
        transpose<64, 256>(g, group);
        transpose<256, 128>(g, group);
        transpose<128, 256>(g, group);
    }
    auto share = [&](double ms) { return 100 * bytes / (ms * 1e-3) / 1e9 / g.copy_gbs; };
    printf("\nbest pattern copy %.4f ms (%.1f %% of copy), best transpose here %.4f ms (%.1f %%); the goal %.4f ms "
           "(%.1f %%): %s; %s\n",
           g.best_pattern_ms, share(g.best_pattern_ms), g.best_transpose_ms, share(g.best_transpose_ms), goal_ms,
           share(goal_ms),
           g.best_pattern_ms <= goal_ms ? "some tile pattern copy reaches it"
                                        : "no tile pattern copy reaches it (the DRAM pattern is the floor)",
           g.failures ? "SOME VARIANTS WRONG" : "every variant checked ok");
    return g.failures ? 1 : 0;
}
