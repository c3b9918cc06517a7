// stream_floor.cu: how fast can one kernel read B bytes on this GPU under temper's timing protocol
// (outputs poisoned and the L2 cleaned untimed: 2x L2 written, another 2x L2 read; then CUDA
// events around the one launch)? It times three ways of reading: a grid-stride loop of 16-byte
// loads, one contiguous slice per block, and bulk asynchronous copies (the copy engine of sm_90,
// cp.async.bulk) into a ring of shared-memory stages; plus a grid-stride copy and an empty kernel.
// Each row of the table is the median of REPS timed launches; the share is of the copy bandwidth
// of a 1 GiB copy (read + write bytes), as temper calibrate measures it.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o stream_floor bench/stream_floor.cu
//   ./stream_floor [MB ...]        (default: 117.5 and 470)
#include "floor_protocol.cuh"

__global__ void empty_k(unsigned *sink)
{
    if (threadIdx.x == 1023)
        sink[0] = 1;
}

/* A: a grid-stride loop, U loads in flight per thread */
template <int U> __global__ void read_gs(const uint4 *p, size_t n, unsigned key, unsigned *sink)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = ld_stream(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += stride) {
        uint4 v = ld_stream(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    sink_if(acc, key, sink);
}

/* B: block b reads the contiguous slice [n b / G, n (b + 1) / G), U loads in flight per thread */
template <int U> __global__ void read_slice(const uint4 *p, size_t n, unsigned key, unsigned *sink)
{
    const size_t lo = n * blockIdx.x / gridDim.x, hi = n * (blockIdx.x + 1) / gridDim.x;
    const size_t T = blockDim.x;
    size_t i = lo + threadIdx.x;
    unsigned acc = 0;
    for (; i + (U - 1) * T < hi; i += U * T) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = ld_stream(p + i + u * T);
#pragma unroll
        for (int u = 0; u < U; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < hi; i += T) {
        uint4 v = ld_stream(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    sink_if(acc, key, sink);
}

/* D: gemv's pattern without the arithmetic: rows of R 16-byte words, WPR warps per row (a warp
 * reads every WPR-th 512-byte segment of its row, U loads in flight); warp slot w of the grid takes
 * rows w / WPR, w / WPR + slots / WPR, ... */
template <int U> __global__ void read_rows(const uint4 *p, size_t n, int R, int WPR, unsigned key, unsigned *sink)
{
    const int lane = threadIdx.x % 32;
    const size_t gw = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32, nw = (size_t)gridDim.x * blockDim.x / 32;
    const size_t rows = n / R, step = 32 * (size_t)WPR;
    unsigned acc = 0;
    for (size_t r = gw / WPR; r < rows; r += nw / WPR) {
        const uint4 *row = p + r * R;
        size_t j = (gw % WPR) * 32 + lane;
        for (; j + (U - 1) * step < (size_t)R; j += U * step) {
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                v[u] = ld_stream(row + j + u * step);
#pragma unroll
            for (int u = 0; u < U; u++)
                acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
        for (; j < (size_t)R; j += step) {
            uint4 v = ld_stream(row + j);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
    sink_if(acc, key, sink);
}

/* E: chunks of U consecutive 512-byte segments, chunk c read by warp c mod (warps in the grid) */
template <int U> __global__ void read_chunks(const uint4 *p, size_t n, unsigned key, unsigned *sink)
{
    const int lane = threadIdx.x % 32;
    const size_t gw = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32, nw = (size_t)gridDim.x * blockDim.x / 32;
    unsigned acc = 0;
    size_t c = gw;
    for (; (c + 1) * U * 32 <= n; c += nw) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = ld_stream(p + c * U * 32 + u * 32 + lane);
#pragma unroll
        for (int u = 0; u < U; u++)
            acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (size_t i = c * U * 32 + lane; i < n; i += 32) {
        uint4 v = ld_stream(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    sink_if(acc, key, sink);
}

/* F: a linear sweep: block b reads the tile of U * blockDim.x words at b * U * blockDim.x (U loads in
 * flight per thread, coalesced), one tile per block, blocks issued in order */
template <int U> __global__ void read_tiles(const uint4 *p, size_t n, unsigned key, unsigned *sink)
{
    const size_t base = blockIdx.x * (size_t)U * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++)
        v[u] = base + u * blockDim.x < n ? ld_stream(p + base + u * blockDim.x) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; u++)
        acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    sink_if(acc, key, sink);
}

/* C: bulk copies. Warp 0 (one lane) copies chunks of CH bytes of the block's slice into a ring of
 * ST stages; the other warps read each stage from shared memory and release it. */
__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity)
{
    unsigned ok = 0;
    while (!ok)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok)
                     : "r"(smem_u32(bar)), "r"(parity)
                     : "memory");
}

__global__ void read_bulk(const uint4 *p, size_t n, unsigned key, unsigned *sink, int CH, int ST)
{
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) uint64_t full[16], empty[16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nc = blockDim.x / 32 - 1;
    const size_t lo = n * blockIdx.x / gridDim.x * 16, hi = n * (blockIdx.x + 1) / gridDim.x * 16; /* bytes */
    const size_t chunks = (hi - lo + CH - 1) / CH;
    if (threadIdx.x == 0) {
        for (int s = 0; s < ST; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(&empty[s])), "r"(nc));
        }
        asm volatile("fence.mbarrier_init.release.cluster;");
    }
    __syncthreads();
    unsigned acc = 0;
    if (warp == 0) {
        if (lane == 0)
            for (size_t k = 0; k < chunks; k++) {
                const int s = k % ST;
                if (k >= (size_t)ST)
                    mbar_wait(&empty[s], ((k / ST) - 1) & 1);
                const size_t off = lo + k * CH;
                const unsigned bytes = (unsigned)(hi - off < (size_t)CH ? hi - off : (size_t)CH);
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&full[s])),
                             "r"(bytes)
                             : "memory");
                asm volatile(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                        smem_u32(ring + (size_t)s * CH)),
                    "l"((const unsigned char *)p + off), "r"(bytes), "r"(smem_u32(&full[s]))
                    : "memory");
            }
    } else {
        const int t = threadIdx.x - 32, nt = nc * 32;
        for (size_t k = 0; k < chunks; k++) {
            const int s = k % ST;
            mbar_wait(&full[s], (k / ST) & 1);
            const size_t off = lo + k * CH;
            const int words = (int)((hi - off < (size_t)CH ? hi - off : (size_t)CH) / 16);
            const uint4 *st = (const uint4 *)(ring + (size_t)s * CH);
            for (int i = t; i < words; i += nt) {
                uint4 v = st[i];
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
            __syncwarp();
            if (lane == 0)
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(&empty[s])) : "memory");
        }
    }
    sink_if(acc, key, sink);
}

typedef floor_gpu gpu;

/* the median launch, in us */
template <typename F> static double time_med(gpu &g, F launch)
{
    return floor_time_ms(g, launch) * 1e3;
}

static void row(const char *what, double mb, double us, double copy_gbs)
{
    const double gbs = mb * 1e6 / (us * 1e-6) / 1e9;
    printf("| %-38s | %7.1f | %8.2f | %6.0f | %6.1f %% |\n", what, mb, us, gbs, 100 * gbs / copy_gbs);
}

int main(int argc, char **argv)
{
    gpu g{};
    floor_init(g);
    const cudaDeviceProp &prop = g.prop;
    CK(cudaFuncSetAttribute(read_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));

    const double copy_gbs = floor_copy_gbs(g);
    printf("%s, %d SMs, L2 %zu MB; copy bandwidth (1 GiB, best of 10 of each of two kernels): %.0f GB/s\n\n", prop.name,
           g.sms, g.l2 >> 20, copy_gbs);
    printf("| kernel | MB | us (median of %d) | GB/s | share of copy |\n| --- | ---: | ---: | ---: | ---: |\n", REPS);
    printf("| empty kernel (events around one launch) | %7.1f | %8.2f | | |\n", 0.0,
           time_med(g, [&] { empty_k<<<1, 32>>>(g.sink); }));

    std::vector<double> sizes;
    for (int i = 1; i < argc; i++)
        sizes.push_back(atof(argv[i]));
    if (sizes.empty())
        sizes = {117.5, 470.0};
    for (double mb : sizes) {
        const size_t n = (size_t)(mb * 1e6) / 16;
        mb = n * 16 / 1e6;
        uint4 *src, *dst;
        CK(cudaMalloc(&src, n * 16));
        CK(cudaMalloc(&dst, n * 16));
        CK(cudaMemset(src, 0x11, n * 16));
        char name[96];
        for (int per : {8, 16})
            for (int t : {256, 512}) {
                if (per * t > 2048)
                    continue;
                snprintf(name, sizeof(name), "copy, grid-stride, %dx%d x %d", g.sms, per, t);
                row(name, 2 * mb, time_med(g, [&] { copy_k<<<g.sms * per, t>>>(dst, src, n); }), copy_gbs);
            }
        struct cfg {
            int per, t;
        };
        for (cfg c : {cfg{2, 1024}, cfg{4, 512}, cfg{16, 128}}) {
            const int G = g.sms * c.per;
            snprintf(name, sizeof(name), "read, grid-stride, U=4, %dx%d x %d", g.sms, c.per, c.t);
            row(name, mb, time_med(g, [&] { read_gs<4><<<G, c.t>>>(src, n, 0x5eed, g.sink); }), copy_gbs);
            snprintf(name, sizeof(name), "read, grid-stride, U=8, %dx%d x %d", g.sms, c.per, c.t);
            row(name, mb, time_med(g, [&] { read_gs<8><<<G, c.t>>>(src, n, 0x5eed, g.sink); }), copy_gbs);
            snprintf(name, sizeof(name), "read, slice per block, U=4, %dx%d x %d", g.sms, c.per, c.t);
            row(name, mb, time_med(g, [&] { read_slice<4><<<G, c.t>>>(src, n, 0x5eed, g.sink); }), copy_gbs);
            snprintf(name, sizeof(name), "read, slice per block, U=8, %dx%d x %d", g.sms, c.per, c.t);
            row(name, mb, time_med(g, [&] { read_slice<8><<<G, c.t>>>(src, n, 0x5eed, g.sink); }), copy_gbs);
        }
        snprintf(name, sizeof(name), "copy, one word per thread, x 256");
        row(name, 2 * mb, time_med(g, [&] { copy_one<<<(unsigned)((n + 255) / 256), 256>>>(dst, src, n); }), copy_gbs);
        for (int t : {128, 256, 512, 1024}) {
            snprintf(name, sizeof(name), "read, tiles in order, U=1, x %d", t);
            row(name, mb,
                time_med(g, [&] { read_tiles<1><<<(unsigned)((n + t - 1) / t), t>>>(src, n, 0x5eed, g.sink); }),
                copy_gbs);
            snprintf(name, sizeof(name), "read, tiles in order, U=2, x %d", t);
            row(name, mb,
                time_med(g,
                         [&] { read_tiles<2><<<(unsigned)((n + 2 * t - 1) / (2 * t)), t>>>(src, n, 0x5eed, g.sink); }),
                copy_gbs);
            snprintf(name, sizeof(name), "read, tiles in order, U=4, x %d", t);
            row(name, mb,
                time_med(g,
                         [&] { read_tiles<4><<<(unsigned)((n + 4 * t - 1) / (4 * t)), t>>>(src, n, 0x5eed, g.sink); }),
                copy_gbs);
            snprintf(name, sizeof(name), "read, tiles in order, U=8, x %d", t);
            row(name, mb,
                time_med(g,
                         [&] { read_tiles<8><<<(unsigned)((n + 8 * t - 1) / (8 * t)), t>>>(src, n, 0x5eed, g.sink); }),
                copy_gbs);
        }
        const int R = 14336 * 2 / 16; /* gemv's rows: 14336 bf16 */
        for (int wpr : {1, 2})
            for (int t : {128, 256, 512}) {
                const int G = (int)((n / R) * wpr * 32 / t);
                snprintf(name, sizeof(name), "read, rows (one wave), %d warp/row, U=2, x %d", wpr, t);
                row(name, mb, time_med(g, [&] { read_rows<2><<<G, t>>>(src, n, R, wpr, 0x5eed, g.sink); }), copy_gbs);
                snprintf(name, sizeof(name), "read, rows (one wave), %d warp/row, U=4, x %d", wpr, t);
                row(name, mb, time_med(g, [&] { read_rows<4><<<G, t>>>(src, n, R, wpr, 0x5eed, g.sink); }), copy_gbs);
                snprintf(name, sizeof(name), "read, rows (one wave), %d warp/row, U=8, x %d", wpr, t);
                row(name, mb, time_med(g, [&] { read_rows<8><<<G, t>>>(src, n, R, wpr, 0x5eed, g.sink); }), copy_gbs);
            }
        for (int per : {4, 8, 16}) {
            snprintf(name, sizeof(name), "read, rows strided, 1 warp/row, U=4, %dx%d x 128", g.sms, per);
            row(name, mb, time_med(g, [&] { read_rows<4><<<g.sms * per, 128>>>(src, n, R, 1, 0x5eed, g.sink); }),
                copy_gbs);
        }
        for (cfg c : {cfg{2, 1024}, cfg{4, 512}, cfg{8, 256}, cfg{16, 128}}) {
            const int G = g.sms * c.per;
            snprintf(name, sizeof(name), "read, 2 KB chunks per warp, %dx%d x %d", g.sms, c.per, c.t);
            row(name, mb, time_med(g, [&] { read_chunks<4><<<G, c.t>>>(src, n, 0x5eed, g.sink); }), copy_gbs);
            snprintf(name, sizeof(name), "read, 4 KB chunks per warp, %dx%d x %d", g.sms, c.per, c.t);
            row(name, mb, time_med(g, [&] { read_chunks<8><<<G, c.t>>>(src, n, 0x5eed, g.sink); }), copy_gbs);
        }
        struct bcfg {
            int per, ch, st, warps;
        };
        for (bcfg c : {bcfg{2, 16384, 6, 5}, bcfg{3, 16384, 4, 5}}) {
            const int smem = c.ch * c.st;
            if (smem * c.per > 220 * 1024)
                continue;
            snprintf(name, sizeof(name), "read, bulk copy %dK x %d stages, %dx%d", c.ch >> 10, c.st, g.sms, c.per);
            row(name, mb,
                time_med(g,
                         [&] { read_bulk<<<g.sms * c.per, 32 * c.warps, smem>>>(src, n, 0x5eed, g.sink, c.ch, c.st); }),
                copy_gbs);
        }
        CK(cudaFree(src));
        CK(cudaFree(dst));
    }
    return 0;
}
