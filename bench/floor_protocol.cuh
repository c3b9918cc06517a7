// floor_protocol.cuh: what bench/stream_floor.cu and bench/transpose_floor.cu share, so that both
// floors are measured alike: temper's timing protocol for one launch (the L2 cleaned untimed, 2x
// L2 written and another 2x L2 read; then CUDA events around the launch; the median of REPS), and
// the copy bandwidth as temper calibrate measures it (1 GiB copies, the best of 10 of each of two
// kernels), which both report shares of.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                        \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

enum { REPS = 40 };

__global__ void fill_k(uint4 *p, size_t n, unsigned v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = make_uint4(v, v, v, v);
}

__device__ __forceinline__ uint4 ld_stream(const uint4 *p)
{
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
}

/* the sink is written only if the xor of everything read equals key: never, for the data here */
__device__ __forceinline__ void sink_if(unsigned acc, unsigned key, unsigned *sink)
{
    if (acc == key)
        sink[blockIdx.x & 1023] = acc;
}

/* the L2 cleaner's read half */
__global__ void touch_k(const uint4 *p, size_t n, unsigned key, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = ld_stream(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    sink_if(acc, key, sink);
}

__global__ void copy_k(uint4 *dst, const uint4 *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

__global__ void copy_one(uint4 *dst, const uint4 *src, size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

/* The device, the cleaner's buffers and the events. */
struct floor_gpu {
    cudaDeviceProp prop;
    int sms;
    size_t l2;
    uint4 *flush_w, *flush_r;
    size_t flush_n;
    unsigned *sink;
    cudaEvent_t e0, e1;
    unsigned gen;
};

static void floor_init(floor_gpu &g)
{
    CK(cudaGetDeviceProperties(&g.prop, 0));
    g.sms = g.prop.multiProcessorCount;
    g.l2 = g.prop.l2CacheSize;
    g.flush_n = 2 * g.l2 / 16;
    CK(cudaMalloc(&g.flush_w, g.flush_n * 16));
    CK(cudaMalloc(&g.flush_r, g.flush_n * 16));
    CK(cudaMemset(g.flush_r, 0, g.flush_n * 16));
    CK(cudaMalloc(&g.sink, 4096));
    CK(cudaEventCreate(&g.e0));
    CK(cudaEventCreate(&g.e1));
}

/* the L2 cleaned, untimed: 2x L2 written, another 2x L2 read */
static void floor_clean(floor_gpu &g)
{
    fill_k<<<g.sms * 8, 512>>>(g.flush_w, g.flush_n, ++g.gen);
    touch_k<<<g.sms * 8, 512>>>(g.flush_r, g.flush_n, 0x5eed, g.sink);
}

/* the median of REPS launches, each after a clean, in ms */
template <typename F> static double floor_time_ms(floor_gpu &g, F launch)
{
    std::vector<float> t;
    for (int r = 0; r < REPS; r++) {
        floor_clean(g);
        CK(cudaEventRecord(g.e0));
        launch();
        CK(cudaEventRecord(g.e1));
        CK(cudaEventSynchronize(g.e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, g.e0, g.e1));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* the copy bandwidth (read + write bytes, GB/s) as temper calibrate has it: 1 GiB copies, uncleaned,
 * the best of 10 of each of a grid-stride copy and a one-vector-per-thread copy */
static double floor_copy_gbs(floor_gpu &g)
{
    const size_t cn = ((size_t)1 << 30) / 16;
    uint4 *ca, *cb;
    CK(cudaMalloc(&ca, cn * 16));
    CK(cudaMalloc(&cb, cn * 16));
    CK(cudaMemset(cb, 0, cn * 16));
    double best = 1e30;
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 10; r++) {
            CK(cudaEventRecord(g.e0));
            if (k == 0)
                copy_k<<<g.sms * 16, 256>>>(ca, cb, cn);
            else
                copy_one<<<(unsigned)(cn / 256), 256>>>(ca, cb, cn);
            CK(cudaEventRecord(g.e1));
            CK(cudaEventSynchronize(g.e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, g.e0, g.e1));
            best = std::min(best, (double)ms);
        }
    CK(cudaFree(ca));
    CK(cudaFree(cb));
    return 2.0 * cn * 16 / (best * 1e-3) / 1e9;
}
