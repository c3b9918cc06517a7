/* cuda_smoke.c: a smoke test of the CUDA backend on a real GPU, through temper_cuda_ops alone.
 * It opens device 0, moves memory, compiles and runs kernels (one with 64 KiB of dynamic shared
 * memory), times them, and checks that compile errors and kernel faults come back as the right
 * errors. The fault (__trap) is the last step, since it leaves the context unusable.
 * Exit status: 0 all passed, 1 a step failed, 77 no CUDA device (skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"

extern const struct temper_device_ops temper_cuda_ops;

static const struct temper_device_ops *ops = &temper_cuda_ops;
static int failures;

/* Prints one step's result and counts failures; returns ok. */
static int step(int ok, const char *name, const char *detail)
{
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail && *detail ? ": " : "", detail ? detail : "");
    if (!ok)
        failures++;
    return ok;
}

static const char vector_add_src[] =
    "extern \"C\" __global__ void vector_add(float *c, const float *a, const float *b, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n";

/* Each block stages SMEM_FLOATS floats of x in dynamic shared memory and writes them reversed. */
static const char smem_src[] =
    "extern \"C\" __global__ void reverse_blocks(float *y, const float *x)\n"
    "{\n"
    "    extern __shared__ float tile[];\n"
    "    const float *src = x + (size_t)blockIdx.x * SMEM_FLOATS;\n"
    "    float *dst = y + (size_t)blockIdx.x * SMEM_FLOATS;\n"
    "    for (int i = threadIdx.x; i < SMEM_FLOATS; i += blockDim.x)\n"
    "        tile[i] = src[i];\n"
    "    __syncthreads();\n"
    "    for (int i = threadIdx.x; i < SMEM_FLOATS; i += blockDim.x)\n"
    "        dst[i] = tile[SMEM_FLOATS - 1 - i];\n"
    "}\n";

static const char trap_src[] =
    "extern \"C\" __global__ void boom(float *y)\n"
    "{\n"
    "    if (threadIdx.x == 0)\n"
    "        __trap();\n"
    "    y[threadIdx.x] = 1.0f;\n"
    "}\n";

static const char broken_src[] =
    "extern \"C\" __global__ void broken(float *y)\n"
    "{\n"
    "    y[threadIdx.x] = undeclared_name;\n"
    "}\n";

/* Compiles and loads source; *mod owned by the caller (module_free). Returns 0 on success. */
static int build(void *ctx, const struct temper_device_info *info, const char *name, const char *src,
                 const char *options, struct temper_dmodule **mod)
{
    char msg[512] = "", detail[1024];
    struct temper_buf log;
    temper_buf_init(&log, 1 << 20);
    void *bin = NULL;
    size_t bin_size = 0;
    int err = ops->compile(info, src, options, &log, &bin, &bin_size, msg, sizeof msg);
    snprintf(detail, sizeof detail, "%zu bytes%s%s%s%s", bin_size, err ? ", " : "", err ? msg : "",
             err && log.data ? "\n" : "", err && log.data ? log.data : "");
    char title[128];
    snprintf(title, sizeof title, "compile %s", name);
    step(err == 0 && bin && bin_size > 0, title, detail);
    temper_buf_free(&log);
    if (err) {
        free(bin);
        return err;
    }
    err = ops->load(ctx, bin, bin_size, mod, msg, sizeof msg);
    free(bin);
    snprintf(title, sizeof title, "load %s", name);
    step(err == 0, title, err ? msg : "");
    return err;
}

/* Fills buf with patterns of every size and reads them back. */
static void check_fill(void *ctx, struct temper_dbuf *buf, size_t bytes)
{
    char msg[512] = "";
    unsigned char *host = malloc(bytes);
    const unsigned char pattern[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    const size_t sizes[] = {1, 2, 4, 8};
    for (int s = 0; s < 4; s++) {
        size_t ps = sizes[s];
        /* an odd offset for bytes, an aligned one otherwise; 8 also goes through the staged path */
        size_t offset = ps == 1 ? 3 : ps * 5, len = bytes - offset - 64;
        len -= len % ps;
        int err = ops->fill(ctx, buf, offset, len, pattern, ps, msg, sizeof msg);
        if (!err)
            err = ops->read(ctx, buf, offset, host, len, msg, sizeof msg);
        int ok = err == 0;
        for (size_t i = 0; ok && i < len; i++)
            ok = host[i] == pattern[i % ps];
        char title[64];
        snprintf(title, sizeof title, "fill with a %zu-byte pattern (%zu bytes)", ps, len);
        step(ok, title, err ? msg : "");
    }
    /* 8-byte misaligned range: the staged path */
    int err = ops->fill(ctx, buf, 4, 8 * 1000, pattern, 8, msg, sizeof msg);
    if (!err)
        err = ops->read(ctx, buf, 4, host, 8 * 1000, msg, sizeof msg);
    int ok = err == 0;
    for (size_t i = 0; ok && i < 8 * 1000; i++)
        ok = host[i] == pattern[i % 8];
    step(ok, "fill with an 8-byte pattern at a 4-byte offset", err ? msg : "");
    err = ops->fill(ctx, buf, 0, 6, pattern, 4, msg, sizeof msg);
    step(err == TEMPER_EINVALID, "fill of a length that is not a multiple of the pattern is refused", msg);
    free(host);
}

int main(void)
{
    char msg[1024] = "", detail[2048];
    int n = 0;
    int err = ops->count(&n, msg, sizeof msg);
    if (err || n == 0) {
        printf("SKIP: no CUDA device: %s\n", msg[0] ? msg : temper_strerror(err));
        return 77;
    }
    printf("PASS count: %d device(s)\n", n);

    void *ctx = NULL;
    err = ops->open(0, &ctx, msg, sizeof msg);
    if (!step(err == 0, "open device 0", err ? msg : ""))
        return 1;
    struct temper_device_info info;
    ops->info(ctx, &info);
    printf("  name %s, vendor %s, platform %s, driver %s, compiler %s, arch %s (cc %d.%d)\n", info.name,
           info.vendor, info.platform, info.driver_version, info.compiler_version, info.arch, info.cc_major,
           info.cc_minor);
    printf("  %d SMs, %d MHz, memory %d MHz x %d bits, %llu MiB, shared %llu / %llu (opt-in) bytes, L2 %llu "
           "bytes, %zu threads per block, views aligned to %zu bytes\n",
           info.compute_units, info.clock_mhz, info.mem_clock_mhz, info.mem_bus_bits,
           (unsigned long long)(info.global_mem_bytes >> 20), (unsigned long long)info.local_mem_bytes,
           (unsigned long long)info.local_mem_optin_bytes, (unsigned long long)info.cache_bytes, info.max_work_group,
           info.base_align_bytes);
    step(strcmp(info.backend, "cuda") == 0 && info.is_gpu && info.compute_units > 0 && info.global_mem_bytes > 0 &&
             strncmp(info.arch, "sm_", 3) == 0 && info.max_work_group >= 256 && info.local_mem_bytes > 0 &&
             info.cache_bytes > 0 && strncmp(info.compiler_version, "NVRTC ", 6) == 0 && info.driver_version[0],
         "info is filled", "");
    printf("  language %s, caps 0x%x, uuid %s, pci %s\n", info.language, info.caps, info.uuid, info.pci_bus_id);
    unsigned a_, b_, c_, d_;
    step(strcmp(info.language, "cuda") == 0 &&
             info.caps == (TEMPER_DEVICE_CAP_OFFLINE_COMPILE | TEMPER_DEVICE_CAP_EXPERT) &&
             strlen(info.uuid) == 36 && info.uuid[8] == '-' &&
             sscanf(info.pci_bus_id, "%4x:%2x:%2x.%1x", &a_, &b_, &c_, &d_) == 4,
         "language, capabilities, UUID and PCI bus id are filled", "");

    /* ---- memory ---- */
    const int N = 1000003; /* not a multiple of any block size */
    size_t bytes = (size_t)N * sizeof(float);
    struct temper_dbuf *a = NULL, *b = NULL, *c = NULL;
    err = ops->alloc(ctx, bytes, &a, msg, sizeof msg);
    if (!err)
        err = ops->alloc(ctx, bytes, &b, msg, sizeof msg);
    if (!err)
        err = ops->alloc(ctx, bytes + 4096, &c, msg, sizeof msg);
    if (!step(err == 0, "alloc", err ? msg : ""))
        return 1;
    float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes + 4096);
    for (int i = 0; i < N; i++) {
        ha[i] = (float)(i % 1000) * 0.5f;
        hb[i] = (float)(i % 777) * -0.25f + 3.0f;
    }
    err = ops->write(ctx, a, 0, ha, bytes, msg, sizeof msg);
    if (!err)
        err = ops->write(ctx, b, 0, hb, bytes, msg, sizeof msg);
    if (!err)
        err = ops->read(ctx, a, 0, hc, bytes, msg, sizeof msg);
    step(err == 0 && memcmp(ha, hc, bytes) == 0, "write and read back", err ? msg : "");
    err = ops->write(ctx, a, 8, ha, bytes, msg, sizeof msg);
    step(err == TEMPER_EINVALID && msg[0], "a write past the end is refused", msg);
    err = ops->read(ctx, a, bytes + 1, hc, 0, msg, sizeof msg);
    step(err == TEMPER_EINVALID, "a read starting past the end is refused", msg);
    check_fill(ctx, c, bytes + 4096);

    struct temper_dbuf *view = NULL;
    err = ops->view(ctx, c, 100, 64, &view, msg, sizeof msg);
    step(err == TEMPER_EINVALID, "a misaligned view is refused", msg);
    err = ops->view(ctx, c, 4096, bytes + 1, &view, msg, sizeof msg);
    step(err == TEMPER_EINVALID, "a view past the end is refused", msg);
    err = ops->view(ctx, c, 4096, bytes, &view, msg, sizeof msg);
    step(err == 0, "view of [4096, 4096 + N*4)", err ? msg : "");

    /* ---- vector add into the view, with guard bytes before it ---- */
    struct temper_dmodule *mod = NULL;
    struct temper_dkernel *k = NULL;
    if (view && build(ctx, &info, "vector_add", vector_add_src, "-use_fast_math", &mod) == 0) {
        err = ops->kernel(ctx, mod, "vector_add", &k, msg, sizeof msg);
        step(err == 0, "kernel vector_add", err ? msg : "");
        struct temper_dkernel *missing = NULL;
        err = ops->kernel(ctx, mod, "no_such_kernel", &missing, msg, sizeof msg);
        step(err != 0 && strstr(msg, "no_such_kernel") != NULL, "a missing kernel is named", msg);
        const float guard_pattern = -7.0f;
        ops->fill(ctx, c, 0, bytes + 4096, &guard_pattern, 4, msg, sizeof msg);
        struct temper_karg args[4] = {{TEMPER_KARG_BUFFER, {.buf = view}},
                                      {TEMPER_KARG_BUFFER, {.buf = a}},
                                      {TEMPER_KARG_BUFFER, {.buf = b}},
                                      {TEMPER_KARG_I32, {.i32 = N}}};
        struct temper_launch_dims dims = {{((size_t)N + 255) / 256, 1, 1}, {256, 1, 1}, 0};
        double ms = -1;
        err = ops->flush_cache(ctx, msg, sizeof msg);
        step(err == 0, "flush_cache", err ? msg : "");
        if (!err)
            err = ops->timer_start(ctx, msg, sizeof msg);
        for (int rep = 0; !err && rep < 10; rep++)
            err = ops->launch(ctx, k, &dims, 4, args, msg, sizeof msg);
        if (!err)
            err = ops->timer_stop(ctx, &ms, msg, sizeof msg);
        snprintf(detail, sizeof detail, "%s%.4f ms for 10 launches (%.1f GB/s)", err ? msg : "", ms,
                 ms > 0 ? 10.0 * 3 * bytes / (ms * 1e6) : 0);
        step(err == 0 && ms > 0, "launch and time vector_add", detail);
        err = ops->sync(ctx, msg, sizeof msg);
        step(err == 0, "sync", err ? msg : "");
        err = ops->read(ctx, c, 0, hc, bytes + 4096, msg, sizeof msg);
        int bad = err ? -1 : 0;
        for (int i = 0; !err && i < N; i++)
            if (hc[1024 + i] != ha[i] + hb[i])
                bad++;
        int guard_ok = 1;
        for (int i = 0; !err && i < 1024; i++)
            guard_ok &= hc[i] == guard_pattern;
        snprintf(detail, sizeof detail, "%d mismatches%s %s", bad, guard_ok ? "" : ", guard bytes changed",
                 err ? msg : "");
        step(err == 0 && bad == 0 && guard_ok, "vector_add result", detail);

        struct temper_launch_dims empty = {{0, 1, 1}, {256, 1, 1}, 0};
        err = ops->launch(ctx, k, &empty, 4, args, msg, sizeof msg);
        step(err == 0, "a launch of zero blocks does nothing", err ? msg : "");
    }
    ops->release(ctx, view);
    ops->module_free(ctx, mod);
    mod = NULL;

    /* ---- 64 KiB of dynamic shared memory ---- */
    const int smem_floats = 16384, blocks = 40;
    char opts[64];
    snprintf(opts, sizeof opts, "-DSMEM_FLOATS=%d", smem_floats);
    if (build(ctx, &info, "reverse_blocks (64 KiB shared)", smem_src, opts, &mod) == 0) {
        err = ops->kernel(ctx, mod, "reverse_blocks", &k, msg, sizeof msg);
        struct temper_karg args[2] = {{TEMPER_KARG_BUFFER, {.buf = c}}, {TEMPER_KARG_BUFFER, {.buf = a}}};
        struct temper_launch_dims dims = {{(size_t)blocks, 1, 1}, {512, 1, 1}, (size_t)smem_floats * 4};
        if (!err)
            err = ops->launch(ctx, k, &dims, 2, args, msg, sizeof msg);
        if (!err)
            err = ops->sync(ctx, msg, sizeof msg);
        if (!err)
            err = ops->read(ctx, c, 0, hc, (size_t)blocks * smem_floats * 4, msg, sizeof msg);
        int bad = err ? -1 : 0;
        for (int blk = 0; !err && blk < blocks; blk++)
            for (int i = 0; i < smem_floats; i++)
                if (hc[blk * smem_floats + i] != ha[blk * smem_floats + smem_floats - 1 - i])
                    bad++;
        snprintf(detail, sizeof detail, "%d mismatches %s", bad, err ? msg : "");
        step(err == 0 && bad == 0, "launch with 64 KiB of dynamic shared memory", detail);

        struct temper_launch_dims too_much = dims;
        too_much.smem_bytes = (size_t)info.local_mem_optin_bytes + 1024;
        err = ops->launch(ctx, k, &too_much, 2, args, msg, sizeof msg);
        step(err == TEMPER_ELAUNCH && msg[0], "shared memory above the opt-in limit is refused", msg);
        struct temper_launch_dims huge_block = dims;
        huge_block.block[0] = 4096;
        err = ops->launch(ctx, k, &huge_block, 2, args, msg, sizeof msg);
        step(err == TEMPER_ELAUNCH && msg[0], "a block of 4096 threads is refused at launch", msg);
        err = ops->sync(ctx, msg, sizeof msg);
        step(err == 0, "the context survives refused launches", err ? msg : "");
    }
    ops->module_free(ctx, mod);
    mod = NULL;

    /* ---- compile error ---- */
    {
        struct temper_buf log;
        temper_buf_init(&log, 1 << 20);
        void *bin = NULL;
        size_t bin_size = 0;
        err = ops->compile(&info, broken_src, "", &log, &bin, &bin_size, msg, sizeof msg);
        snprintf(detail, sizeof detail, "%s; log: %.200s", msg, log.data ? log.data : "(empty)");
        step(err == TEMPER_ECOMPILE && log.len > 0 && log.data && strstr(log.data, "undeclared_name") && !bin,
             "a compile error gives TEMPER_ECOMPILE and a log", detail);
        temper_buf_free(&log);
        free(bin);
    }

    /* ---- a kernel fault, last: the context is unusable afterwards ---- */
    if (build(ctx, &info, "boom (__trap)", trap_src, "", &mod) == 0) {
        err = ops->kernel(ctx, mod, "boom", &k, msg, sizeof msg);
        struct temper_karg args[1] = {{TEMPER_KARG_BUFFER, {.buf = c}}};
        struct temper_launch_dims dims = {{4, 1, 1}, {64, 1, 1}, 0};
        if (!err)
            err = ops->launch(ctx, k, &dims, 1, args, msg, sizeof msg);
        step(err == 0, "a trapping kernel launches", err ? msg : "");
        msg[0] = '\0';
        err = ops->sync(ctx, msg, sizeof msg);
        step(err == TEMPER_ELAUNCH && strstr(msg, "CUDA_ERROR_") != NULL, "__trap() gives TEMPER_ELAUNCH at sync",
             msg);
        msg[0] = '\0';
        err = ops->read(ctx, c, 0, hc, 64, msg, sizeof msg);
        step(err == TEMPER_ELAUNCH && msg[0], "later calls fail with the fault", msg);
    }
    ops->module_free(ctx, mod);
    ops->release(ctx, a);
    ops->release(ctx, b);
    ops->release(ctx, c);
    ops->close(ctx);
    free(ha);
    free(hb);
    free(hc);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
