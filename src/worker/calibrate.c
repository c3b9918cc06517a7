/* calibrate.c: measures a device's ceilings: the copy bandwidth of a large device-to-device copy
 * (read + write bytes) and FP32 FMA throughput. Each is the best of several runs and of two
 * kernel shapes, so that an honest kernel cannot beat it by much: a time under the roofline
 * floor they give is then a sign that work was skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "eval/worker_impl.h"

#define COMPILE_LOG_MAX (64u << 10)

static const char calibrate_cl[] =
    "__kernel void copy4(__global float4 *dst, __global const float4 *src, long n) {\n"
    "  for (long i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];\n"
    "}\n"
    "#define R4(k) src[g + (k) * stride]\n"
    "__kernel void read4(__global float *dst, __global const float4 *src, long n) {\n"
    "  long g = get_global_id(0), stride = get_global_size(0);\n"
    "  float4 s = R4(0) + R4(1) + R4(2) + R4(3) + R4(4) + R4(5) + R4(6) + R4(7) + R4(8) + R4(9) + R4(10) + R4(11)\n"
    "           + R4(12) + R4(13) + R4(14) + R4(15);\n"
    "  dst[g] = s.x + s.y + s.z + s.w;\n"
    "}\n"
    "__kernel void readrun(__global float *dst, __global const float4 *src, long n) {\n"
    "  long per = n / get_global_size(0) / 4 * 4, g = get_global_id(0);\n"
    "  __global const float4 *p = src + g * per;\n"
    "  float4 s0 = 0, s1 = 0, s2 = 0, s3 = 0;\n"
    "  for (long i = 0; i < per; i += 4) { s0 += p[i]; s1 += p[i + 1]; s2 += p[i + 2]; s3 += p[i + 3]; }\n"
    "  float4 s = s0 + s1 + s2 + s3;\n"
    "  dst[g] = s.x + s.y + s.z + s.w;\n"
    "}\n"
    "__kernel void copy1(__global float4 *dst, __global const float4 *src, long n) {\n"
    "  long i = get_global_id(0); if (i < n) dst[i] = src[i];\n"
    "}\n"
    "__kernel void fma16(__global float *out, int iters, float k) {\n"
    "  float16 a0 = (float16)(get_global_id(0) * 1e-7f), a1 = a0 + 1e-7f, a2 = a0 + 2e-7f, a3 = a0 + 3e-7f;\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    a0 = fma(a0, k, 1e-7f); a1 = fma(a1, k, 1e-7f); a2 = fma(a2, k, 1e-7f); a3 = fma(a3, k, 1e-7f);\n"
    "  }\n"
    "  float16 s = a0 + a1 + a2 + a3;\n"
    "  out[get_global_id(0)] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7 + s.s8 + s.s9 + s.sa + s.sb + "
    "s.sc + s.sd + s.se + s.sf;\n"
    "}\n";

static const char calibrate_cu[] =
    "extern \"C\" __global__ void copy4(float4 *dst, const float4 *src, long long n) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * "
    "blockDim.x) dst[i] = src[i];\n"
    "}\n"
    "extern \"C\" __global__ void read4(float *dst, const float4 *src, long long n) {\n"
    "  long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;\n"
    "  float4 s = make_float4(0, 0, 0, 0);\n"
    "  #pragma unroll\n"
    "  for (int k = 0; k < 16; k++) { float4 v = src[g + k * stride]; s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w; }\n"
    "  dst[g] = s.x + s.y + s.z + s.w;\n"
    "}\n"
    "extern \"C\" __global__ void copy1(float4 *dst, const float4 *src, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) dst[i] = src[i];\n"
    "}\n"
    "extern \"C\" __global__ void fma16(float *out, int iters, float k) {\n"
    "  float a[16];\n"
    "  long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  #pragma unroll\n"
    "  for (int j = 0; j < 16; j++) a[j] = (float)(g + j) * 1e-7f;\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < 16; j++) a[j] = fmaf(a[j], k, 1e-7f);\n"
    "  }\n"
    "  float s = 0; for (int j = 0; j < 16; j++) s += a[j];\n"
    "  out[g] = s;\n"
    "}\n";

/* Best of several timed runs of one launch. The first run on OpenCL gets the first-launch grace:
 * PoCL compiles the kernel for its work-group size then, which on a busy machine can take longer
 * than the launch limit. */
static int best_time(struct worker_state *ws, struct temper_dkernel *k, const struct temper_launch_dims *dims,
                     int nargs, const struct temper_karg *args, int reps, double *best_ms, char *msg, size_t n)
{
    *best_ms = INFINITY;
    for (int r = 0; r < reps; r++) {
        double ms;
        worker_grace(r == 0 && !strcmp(ws->dev.info.language, "opencl") ? WORKER_FIRST_LAUNCH_GRACE_S : 0);
        int err = devcheck_flush(ws, msg, n);
        if (!err)
            err = temper_dev_timer_start(&ws->dev, msg, n);
        if (!err)
            err = temper_dev_launch(&ws->dev, k, dims, nargs, args, msg, n);
        if (!err)
            err = temper_dev_timer_stop(&ws->dev, &ms, msg, n);
        worker_grace(0);
        if (err)
            return err;
        if (r && ms < *best_ms) /* the first run warms up */
            *best_ms = ms;
    }
    return 0;
}

/* Best time of a bf16 GEMM of n^3 through the backend's vendor library, on data that is not
 * zero (zeros run faster than real data). 0 when the library is not there, -1 on a failure. */
static double tensor_probe(struct worker_state *ws, int64_t n, char *msg, size_t msg_size)
{
    struct temper_device *d = &ws->dev;
    size_t bytes = (size_t)(n * n * 2);
    struct temper_dbuf *m[3] = {NULL, NULL, NULL};
    double best = INFINITY;
    int err = 0;
    for (int i = 0; i < 3 && !err; i++)
        err = temper_dev_alloc(d, bytes, &m[i], msg, msg_size);
    uint32_t pattern[3] = {0, 0x3f9a3e4cu, 0xbf1c3fb0u}; /* pairs of bf16 values near +-1 */
    for (int i = 1; i < 3 && !err; i++)
        err = temper_dev_fill(d, m[i], 0, bytes, &pattern[i], 4, msg, msg_size);
    for (int r = 0; r < 13 && !err; r++) {
        double ms;
        err = temper_dev_timer_start(d, msg, msg_size);
        if (!err)
            err = temper_dev_expert(d, "cublas_bf16_probe", 3, m, 1, &n, msg, msg_size);
        if (!err)
            err = temper_dev_timer_stop(d, &ms, msg, msg_size);
        if (!err && r >= 3 && ms < best)
            best = ms;
    }
    for (int i = 0; i < 3; i++)
        temper_dev_release(d, m[i]);
    if (err == TEMPER_EUNSUPPORTED)
        return 0;
    return err ? -1 : best;
}

/* CPU seconds this process (every thread, the OpenCL runtime's included) has used. */
static double self_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return -1;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

/* The calibration kernels, built in one module. */
struct calib_kernels {
    struct temper_dmodule *mod;     /* the module holding them */
    struct temper_dkernel *copy;    /* copy4: a grid-stride float4 copy */
    struct temper_dkernel *copy1;   /* copy1: one float4 per work-item */
    struct temper_dkernel *read4;   /* read4: 16 strided float4 loads per work-item */
    struct temper_dkernel *readrun; /* readrun: each work-item reads a run of its own (OpenCL only) */
    struct temper_dkernel *fma;     /* fma16: chains of FMAs */
};

/* Builds the calibration kernels of the device's language into k. */
static int calib_build(struct worker_state *ws, int cuda, struct temper_buf *log, struct calib_kernels *k, char *msg,
                       size_t msg_size)
{
    struct temper_device *d = &ws->dev;
    const char *src = cuda ? calibrate_cu : calibrate_cl;
    int hit;
    worker_doing(ws->shared, WORKER_BUILDING, "building the calibration kernels");
    int err = worker_build_module(ws, src, strlen(src), "", log, &k->mod, &hit, NULL, msg, msg_size);
    if (!err)
        err = temper_dev_kernel(d, k->mod, "copy4", &k->copy, msg, msg_size);
    if (!err)
        err = temper_dev_kernel(d, k->mod, "copy1", &k->copy1, msg, msg_size);
    if (!err)
        err = temper_dev_kernel(d, k->mod, "read4", &k->read4, msg, msg_size);
    if (!err && !cuda)
        err = temper_dev_kernel(d, k->mod, "readrun", &k->readrun, msg, msg_size);
    if (!err)
        err = temper_dev_kernel(d, k->mod, "fma16", &k->fma, msg, msg_size);
    return err;
}

/* What the bandwidth measurement found. */
struct calib_bandwidth {
    double copy_ms;    /* the best copy of bytes (copy4 or copy1) */
    double read_ms;    /* the best read of read_bytes (read4, or readrun where faster) */
    double read_bytes; /* bytes the best read moved */
};

/* Copy and read bandwidth over a and b (bytes each, b zero), threads work-items a group. */
static int measure_bandwidth(struct worker_state *ws, const struct calib_kernels *k, struct temper_dbuf *a,
                             struct temper_dbuf *b, size_t bytes, size_t threads, struct calib_bandwidth *bw,
                             char *msg, size_t msg_size)
{
    struct temper_device *d = &ws->dev;
    struct temper_karg args[3] = {{TEMPER_KARG_BUFFER, {.buf = a}}, {TEMPER_KARG_BUFFER, {.buf = b}},
                                  {TEMPER_KARG_I64, {.i64 = (int64_t)(bytes / 16)}}};
    struct temper_launch_dims dims = {{(size_t)d->info.compute_units * (d->info.is_gpu ? 16 : 4), 1, 1},
                                      {threads, 1, 1}, 0};
    int err = best_time(ws, k->copy, &dims, 3, args, d->info.is_gpu ? 20 : 6, &bw->copy_ms, msg, msg_size);
    /* One element per thread suits CPUs (PoCL vectorises across work-items); the ceiling is
     * the better of the two, so that no kernel can honestly beat it by much. */
    struct temper_launch_dims one = {{bytes / 16 / threads, 1, 1}, {threads, 1, 1}, 0};
    double one_ms = INFINITY;
    if (!err)
        err = best_time(ws, k->copy1, &one, 3, args, d->info.is_gpu ? 20 : 6, &one_ms, msg, msg_size);
    bw->copy_ms = fmin(bw->copy_ms, one_ms);
    /* Reading alone: a kernel that mostly reads can move bytes faster than a copy, so the
     * test for impossible times uses the faster of the two. a is large enough for the
     * per-thread sums. */
    struct temper_karg rargs[3] = {{TEMPER_KARG_BUFFER, {.buf = a}}, {TEMPER_KARG_BUFFER, {.buf = b}},
                                   {TEMPER_KARG_I64, {.i64 = (int64_t)(bytes / 16)}}};
    struct temper_launch_dims sixteenth = {{bytes / 16 / 16 / threads, 1, 1}, {threads, 1, 1}, 0};
    if (!err)
        err = best_time(ws, k->read4, &sixteenth, 3, rargs, d->info.is_gpu ? 20 : 6, &bw->read_ms, msg, msg_size);
    bw->read_bytes = (double)(bytes / 16 / 16 / threads * threads * 16 * 16);
    /* On a CPU a copy moves three bytes for every two it counts (the destination's lines are
     * read before they are written), so a kernel that only reads can count half as many
     * bytes again per second, and read4's strided loads stream poorly there: each work-item
     * reading a run of its own measures what a reading kernel can reach. */
    if (!err && k->readrun && !d->info.is_gpu) {
        double run_ms = INFINITY;
        err = best_time(ws, k->readrun, &dims, 3, rargs, 6, &run_ms, msg, msg_size);
        double run_bytes = (double)(bytes / 16 / (dims.grid[0] * threads) / 4 * 4 * (dims.grid[0] * threads) * 16);
        if (!err && run_bytes / run_ms > bw->read_bytes / bw->read_ms) {
            bw->read_ms = run_ms;
            bw->read_bytes = run_bytes;
        }
    }
    return err;
}

/* The ceilings as the reply gives them: GB/s and GFLOP/s from the times measured, and on a CPU
 * device the share of the cores the rest of the machine used meanwhile. */
static json_t *calib_reply(const struct temper_device *d, int cuda, size_t bytes, const struct calib_bandwidth *bw,
                           double fma_ms, int iters, size_t fma_threads, double tensor_ms, int64_t tensor_n,
                           double wall0, double busy0, double self0)
{
    double copy_gbs = 2.0 * (double)bytes / (bw->copy_ms * 1e-3) * 1e-9;
    double read_gbs = bw->read_bytes / (bw->read_ms * 1e-3) * 1e-9;
    /* FMAs per thread per iteration: 4 chains of float16 in OpenCL (vectorised by construction,
     * since PoCL cannot vectorise across work-items around a loop), 16 scalar chains in CUDA. */
    double fma_per_iter = cuda ? 16.0 : 64.0;
    double fma_gflops = 2.0 * fma_per_iter * iters * (double)fma_threads / (fma_ms * 1e-3) * 1e-9;
    json_t *r = json_pack("{s:f, s:f, s:f, s:f, s:f}", "copy_gbs", copy_gbs, "read_gbs", read_gbs, "fma_gflops",
                          fma_gflops, "copy_ms", bw->copy_ms, "fma_ms", fma_ms);
    if (tensor_ms > 0)
        json_object_set_new(r, "tensor_bf16_gflops",
                            json_real(2.0 * (double)tensor_n * tensor_n * tensor_n / (tensor_ms * 1e-3) * 1e-9));
    double load;
    int cores;
    double wall = temper_now_s() - wall0, busy1 = temper_machine_busy_s(), self1 = self_cpu_s();
    if (!d->info.is_gpu && busy0 >= 0 && busy1 >= 0 && self0 >= 0 && self1 >= 0 && wall > 0 &&
        temper_machine_load(&load, &cores)) {
        double share = ((busy1 - busy0) - (self1 - self0)) / (wall * cores);
        json_object_set_new(r, "other_cpu_share", json_real(share < 0 ? 0 : share > 1 ? 1 : share));
    }
    return r;
}

json_t *worker_calibrate(struct worker_state *ws, int *fatal)
{
    char msg[2048];
    struct temper_device *d = &ws->dev;
    /* On a CPU device the ceilings are only as good as the cores left to us: what the rest of the
     * machine used meanwhile is measured, so the client can measure again or say so. */
    double wall0 = temper_now_s(), busy0 = temper_machine_busy_s(), self0 = self_cpu_s();
    int cuda = !strcmp(d->info.language, "cuda");
    struct temper_buf log;
    temper_buf_init(&log, COMPILE_LOG_MAX);
    struct calib_kernels k = {NULL, NULL, NULL, NULL, NULL, NULL};
    struct temper_dbuf *a = NULL, *b = NULL;
    int err = calib_build(ws, cuda, &log, &k, msg, sizeof(msg));
    /* Copy: a buffer many times the last-level cache, capped by device memory. */
    size_t bytes = d->info.is_gpu ? (size_t)1 << 30 : (size_t)256 << 20;
    while (bytes > d->info.global_mem_bytes / 4)
        bytes /= 2;
    worker_doing(ws->shared, WORKER_RUNNING, "measuring copy bandwidth with %zu MiB buffers", bytes >> 20);
    if (!err)
        err = temper_dev_alloc(d, bytes, &a, msg, sizeof(msg));
    if (!err)
        err = temper_dev_alloc(d, bytes, &b, msg, sizeof(msg));
    float zero = 0;
    if (!err)
        err = temper_dev_fill(d, b, 0, bytes, &zero, 4, msg, sizeof(msg));
    struct calib_bandwidth bw = {0, 0, 0};
    double fma_ms = 0;
    size_t threads = d->info.max_work_group >= 256 ? 256 : d->info.max_work_group;
    if (!err)
        err = measure_bandwidth(ws, &k, a, b, bytes, threads, &bw, msg, sizeof(msg));
    size_t fma_threads = (size_t)d->info.compute_units * (d->info.is_gpu ? 2048 : 1024);
    int iters = d->info.is_gpu ? 4096 : 1024;
    temper_dev_release(d, a);
    a = NULL;
    worker_doing(ws->shared, WORKER_RUNNING, "measuring FMA throughput");
    if (!err)
        err = temper_dev_alloc(d, fma_threads * 4, &a, msg, sizeof(msg));
    if (!err) {
        struct temper_karg args[3] = {{TEMPER_KARG_BUFFER, {.buf = a}}, {TEMPER_KARG_I32, {.i32 = iters}},
                                      {TEMPER_KARG_F32, {.f32 = 0.999f}}};
        struct temper_launch_dims dims = {{fma_threads / threads, 1, 1}, {threads, 1, 1}, 0};
        err = best_time(ws, k.fma, &dims, 3, args, d->info.is_gpu ? 10 : 4, &fma_ms, msg, sizeof(msg));
    }
    temper_dev_release(d, a);
    temper_dev_release(d, b);
    if (k.mod)
        temper_dev_module_free(d, k.mod);
    temper_buf_free(&log);
    if (err) {
        *fatal = 1;
        return worker_error_reply(msg, err);
    }
    double tensor_ms = 0;
    const int64_t tensor_n = 8192;
    if (d->info.caps & TEMPER_DEVICE_CAP_EXPERT) {
        worker_doing(ws->shared, WORKER_RUNNING, "measuring tensor-core throughput (bf16 GEMM)");
        tensor_ms = tensor_probe(ws, tensor_n, msg, sizeof(msg));
        if (tensor_ms < 0) {
            *fatal = 1;
            return worker_error_reply(msg, TEMPER_EDEVICE);
        }
    }
    return calib_reply(d, cuda, bytes, &bw, fma_ms, iters, fma_threads, tensor_ms, tensor_n, wall0, busy0, self0);
}
