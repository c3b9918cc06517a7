/* cuda.c: the CUDA backend of device.h, on the driver API and NVRTC: counting, opening and
 * describing devices, memory, loading modules, launches, timing, and the ops table.
 * Neither cuda.h nor nvrtc.h is included: the few types, enum values and prototypes used are
 * declared here, and libcuda and libnvrtc are opened with dlopen at run time, so that one binary
 * builds without the CUDA toolkit and runs with or without a GPU.
 * All device work (launches, copies, memsets, timing events, cuBLAS and cuBLASLt calls) goes to
 * the legacy default stream of the device's primary context, so it runs in the order it was queued.
 * cuBLAS and cuBLASLt, used only for expert baselines, are opened the same way, at first use. */
#include "cuda_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dynamic shared memory every kernel may use without opting in. */
#define CUDA_SMEM_DEFAULT_BYTES ((size_t)48 * 1024)
/* Kernel arguments one launch may pass. */
#define CUDA_MAX_KARGS 256
/* Bytes staged from the host when filling with a pattern the memset calls cannot write. */
#define CUDA_FILL_STAGE_BYTES ((size_t)64 * 1024)
/* Scratch written by flush_cache when the device reports no L2 size. */
#define CUDA_FLUSH_FALLBACK_BYTES ((size_t)256 * 1024 * 1024)

/* ---- count, open, close, info ---- */

/* Sets *n to the number of CUDA devices. Zero devices is TEMPER_ENODEVICE too (with *n = 0), and
 * msg then says which libraries were tried or what the driver said. */
static int cuda_count(int *n, char *msg, size_t msg_size)
{
    *n = 0;
    int err = cuda_init(msg, msg_size);
    if (err)
        return err;
    int count = 0;
    CUresult r = cuda_cu.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return cuda_fail(NULL, r, TEMPER_ENODEVICE, msg, msg_size, "cuDeviceGetCount");
    if (count <= 0)
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "the CUDA driver loaded but reports no devices");
    *n = count;
    return 0;
}

/* Reads one integer attribute; 0 where the driver does not know it. */
static int cuda_attr(CUdevice dev, int attrib)
{
    int v = 0;
    if (cuda_cu.cuDeviceGetAttribute(&v, attrib, dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

/* Fills info from the driver and NVRTC. */
static void cuda_fill_info(struct cuda_ctx *c, int index)
{
    struct temper_device_info *in = &c->info;
    memset(in, 0, sizeof *in);
    snprintf(in->backend, sizeof in->backend, "cuda");
    snprintf(in->language, sizeof in->language, "cuda");
    in->caps = TEMPER_DEVICE_CAP_OFFLINE_COMPILE | TEMPER_DEVICE_CAP_EXPERT;
    in->index = index;
    if (cuda_cu.cuDeviceGetName(in->name, (int)sizeof in->name, c->dev) != CUDA_SUCCESS)
        snprintf(in->name, sizeof in->name, "CUDA device %d", index);
    snprintf(in->vendor, sizeof in->vendor, "NVIDIA");
    snprintf(in->platform, sizeof in->platform, "CUDA");
    int v = 0;
    if (cuda_cu.cuDriverGetVersion(&v) == CUDA_SUCCESS)
        snprintf(in->driver_version, sizeof in->driver_version, "%d.%d", v / 1000, (v % 1000) / 10);
    int major = 0, minor = 0;
    if (cuda_nv.nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
        snprintf(in->compiler_version, sizeof in->compiler_version, "NVRTC %d.%d", major, minor);
    in->cc_major = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    in->cc_minor = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(in->arch, sizeof in->arch, "sm_%d", in->cc_major * 10 + in->cc_minor);
    in->is_gpu = 1;
    in->compute_units = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    in->clock_mhz = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
    in->mem_clock_mhz = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000;
    in->mem_bus_bits = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    size_t total = 0;
    if (cuda_cu.cuDeviceTotalMem(&total, c->dev) == CUDA_SUCCESS)
        in->global_mem_bytes = total;
    in->local_mem_bytes = (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    in->local_mem_optin_bytes = (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    if (in->local_mem_optin_bytes < in->local_mem_bytes)
        in->local_mem_optin_bytes = in->local_mem_bytes;
    in->cache_bytes = (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    in->local_mem_per_cu_bytes =
        (uint64_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    in->warp_size = cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    in->max_work_group = (size_t)cuda_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    in->base_align_bytes = 256;
    snprintf(in->language, sizeof in->language, "cuda");
    in->caps = TEMPER_DEVICE_CAP_OFFLINE_COMPILE | TEMPER_DEVICE_CAP_EXPERT;
    unsigned char uuid[16];
    if (cuda_cu.cuDeviceGetUuid(uuid, c->dev) == CUDA_SUCCESS)
        temper_device_format_uuid(uuid, in->uuid, sizeof in->uuid);
    char bus_id[64];
    unsigned domain, bus, device, function;
    /* the driver writes "00000000:1B:00.0"; kept in the lower-case form Linux's sysfs uses */
    if (cuda_cu.cuDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, c->dev) == CUDA_SUCCESS &&
        sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &device, &function) == 4)
        snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%04x:%02x:%02x.%x", domain, bus & 0xffu, device & 0xffu,
                 function & 0xfu);
}

/* Opens device index: retains its primary context and makes it current on this thread. *ctx is
 * owned by the backend; the caller gives it back with close. */
static int cuda_open(int index, void **ctx, char *msg, size_t msg_size)
{
    *ctx = NULL;
    int err = cuda_init(msg, msg_size);
    if (err)
        return err;
    struct cuda_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory opening CUDA device %d", index);
    CUresult r = cuda_cu.cuDeviceGet(&c->dev, index);
    if (r != CUDA_SUCCESS) {
        free(c);
        int count = 0;
        cuda_cu.cuDeviceGetCount(&count);
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "no CUDA device %d (the driver reports %d)", index,
                           count);
    }
    r = cuda_cu.cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
    if (r != CUDA_SUCCESS) {
        free(c);
        return cuda_fail(NULL, r, TEMPER_ENODEVICE, msg, msg_size, "cuDevicePrimaryCtxRetain");
    }
    if ((err = cuda_bind(c, msg, msg_size)) != 0)
        goto fail;
    if ((r = cuda_cu.cuEventCreate(&c->timer_begin, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
        (r = cuda_cu.cuEventCreate(&c->timer_end, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
        err = cuda_fail(NULL, r, TEMPER_EDEVICE, msg, msg_size, "cuEventCreate");
        goto fail;
    }
    cuda_fill_info(c, index);
    *ctx = c;
    return 0;
fail:
    if (c->timer_begin)
        cuda_cu.cuEventDestroy(c->timer_begin);
    cuda_cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
    return err;
}

/* Frees what open made (ctx included). Buffers and modules should be released first; after a
 * kernel fault the driver calls here fail and are ignored, since the process is about to end. */
static void cuda_close(void *ctx)
{
    struct cuda_ctx *c = ctx;
    if (!c)
        return;
    cuda_cu.cuCtxSetCurrent(c->ctx);
    cuda_expert_free(c);
    if (c->flush_ptr)
        cuda_cu.cuMemFree(c->flush_ptr);
    cuda_cu.cuEventDestroy(c->timer_begin);
    cuda_cu.cuEventDestroy(c->timer_end);
    cuda_cu.cuDevicePrimaryCtxRelease(c->dev);
    free(c);
}

/* Copies the device's description (filled at open) into *info, which the caller owns. */
static int cuda_info(void *ctx, struct temper_device_info *info)
{
    const struct cuda_ctx *c = ctx;
    *info = c->info;
    return 0;
}

/* ---- memory ---- */
/* Checks that [offset, offset + bytes) lies in buf. */
static int cuda_check_range(const struct temper_dbuf *buf, size_t offset, size_t bytes, const char *what,
                            char *msg, size_t msg_size)
{
    if (!buf)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: no buffer", what);
    if (offset > buf->size || bytes > buf->size - offset)
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "%s: bytes [%zu, %zu) lie outside the buffer of %zu bytes", what, offset,
                           offset + bytes, buf->size);
    return 0;
}

/* Allocates bytes of device memory (contents undefined). *buf is owned by the caller, who gives it
 * back with release. A request of 0 bytes gives a buffer with no memory behind it. */
static int cuda_alloc(void *ctx, size_t bytes, struct temper_dbuf **buf, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *buf = NULL;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    struct temper_dbuf *b = calloc(1, sizeof *b);
    if (!b)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    if (bytes) {
        CUresult r = cuda_cu.cuMemAlloc(&b->ptr, bytes);
        if (r != CUDA_SUCCESS) {
            free(b);
            char what[64];
            snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
            return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, what);
        }
        b->owns = 1;
    }
    b->size = bytes;
    *buf = b;
    return 0;
}

/* A view of [offset, offset + bytes) of parent (an allocation or a view). *view is owned by the
 * caller and released (before parent) with release; it owns no device memory. */
static int cuda_view(void *ctx, struct temper_dbuf *parent, size_t offset, size_t bytes, struct temper_dbuf **view,
                     char *msg, size_t msg_size)
{
    const struct cuda_ctx *c = ctx;
    *view = NULL;
    int err = cuda_check_range(parent, offset, bytes, "view", msg, msg_size);
    if (err)
        return err;
    if (offset % c->info.base_align_bytes)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "view: offset %zu is not a multiple of %zu bytes",
                           offset, c->info.base_align_bytes);
    struct temper_dbuf *v = calloc(1, sizeof *v);
    if (!v)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    v->ptr = parent->ptr + offset;
    v->size = bytes;
    v->owns = 0;
    *view = v;
    return 0;
}

/* Frees buf (device memory too, when it is an allocation); NULL is a no-op. */
static void cuda_release(void *ctx, struct temper_dbuf *buf)
{
    struct cuda_ctx *c = ctx;
    if (!buf)
        return;
    if (buf->owns && buf->ptr) {
        cuda_cu.cuCtxSetCurrent(c->ctx);
        cuda_cu.cuMemFree(buf->ptr);
    }
    free(buf);
}

/* Copies bytes from host src (borrowed) to buf at offset; ordered after earlier launches. */
static int cuda_write(void *ctx, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes, char *msg,
                      size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_range(buf, offset, bytes, "write", msg, msg_size);
    if (err || !bytes)
        return err;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    CUresult r = cuda_cu.cuMemcpyHtoD(buf->ptr + offset, src, bytes);
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuMemcpyHtoD");
}

/* Copies bytes of buf at offset into host dst (borrowed); waits for earlier work, so a fault of
 * an earlier kernel is reported here as TEMPER_ELAUNCH. */
static int cuda_read(void *ctx, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes, char *msg,
                     size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_range(buf, offset, bytes, "read", msg, msg_size);
    if (err || !bytes)
        return err;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    CUresult r = cuda_cu.cuMemcpyDtoH(dst, buf->ptr + offset, bytes);
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuMemcpyDtoH");
}

/* Fills [dst, dst + bytes) with the pattern where no memset call fits (8-byte patterns and
 * misaligned ranges): writes up to CUDA_FILL_STAGE_BYTES from the host, then doubles the filled
 * prefix with device-to-device copies. bytes is a multiple of size. */
static CUresult cuda_fill_staged(CUdeviceptr dst, size_t bytes, const unsigned char *pattern, size_t size)
{
    size_t first = bytes < CUDA_FILL_STAGE_BYTES ? bytes : CUDA_FILL_STAGE_BYTES - CUDA_FILL_STAGE_BYTES % size;
    unsigned char *stage = malloc(first);
    if (!stage)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < first; i += size)
        memcpy(stage + i, pattern, size);
    CUresult r = cuda_cu.cuMemcpyHtoD(dst, stage, first);
    free(stage);
    /* first is a multiple of size, so every copy keeps the phase of the pattern */
    for (size_t done = first; r == CUDA_SUCCESS && done < bytes;) {
        size_t n = done < bytes - done ? done : bytes - done;
        r = cuda_cu.cuMemcpyDtoD(dst + done, dst, n);
        done += n;
    }
    return r;
}

/* Fills bytes of buf at offset with a repeated pattern of pattern_size (1, 2, 4 or 8) bytes from
 * pattern (borrowed); bytes must be a multiple of pattern_size. Queued in order with launches. */
static int cuda_fill(void *ctx, struct temper_dbuf *buf, size_t offset, size_t bytes, const void *pattern,
                     size_t pattern_size, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_range(buf, offset, bytes, "fill", msg, msg_size);
    if (err)
        return err;
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "fill: pattern of %zu bytes (1, 2, 4 or 8 allowed)",
                           pattern_size);
    if (bytes % pattern_size)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "fill: %zu bytes is not a multiple of the %zu-byte pattern",
                           bytes, pattern_size);
    if (!bytes)
        return 0;
    if ((err = cuda_check_alive(c, msg, msg_size)) != 0)
        return err;
    CUdeviceptr dst = buf->ptr + offset;
    CUresult r;
    if (pattern_size == 1) {
        r = cuda_cu.cuMemsetD8(dst, *(const unsigned char *)pattern, bytes);
    } else if (pattern_size == 2 && dst % 2 == 0) {
        uint16_t v;
        memcpy(&v, pattern, 2);
        r = cuda_cu.cuMemsetD16(dst, v, bytes / 2);
    } else if (pattern_size == 4 && dst % 4 == 0) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        r = cuda_cu.cuMemsetD32(dst, v, bytes / 4);
    } else if (pattern_size == 8 && dst % 4 == 0 && memcmp(pattern, (const char *)pattern + 4, 4) == 0) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        r = cuda_cu.cuMemsetD32(dst, v, bytes / 4);
    } else {
        r = cuda_fill_staged(dst, bytes, pattern, pattern_size);
    }
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "fill");
}

/* ---- loading modules ---- */

/* Loads a CUBIN or PTX made by compile (data borrowed). *mod is owned by the caller, who frees it
 * with module_free. A binary the device cannot run (another architecture) is TEMPER_ECOMPILE. */
static int cuda_load(void *ctx, const void *data, size_t size, struct temper_dmodule **mod, char *msg,
                     size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *mod = NULL;
    if (!data || !size)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "load: empty binary");
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    if (cuda_triton_is_container(data, size)) {
        struct temper_dmodule *t = calloc(1, sizeof *t);
        err = t ? cuda_triton_load(c, data, size, t, msg, msg_size) : TEMPER_ENOMEM;
        if (err)
            free(t);
        else
            *mod = t;
        return err;
    }
    const unsigned char *bytes = data;
    char *ptx = NULL;
    int is_elf = size >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
    if (!is_elf && bytes[size - 1] != '\0') { /* PTX must be NUL-terminated */
        if (!(ptx = malloc(size + 1)))
            return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory loading PTX");
        memcpy(ptx, data, size);
        ptx[size] = '\0';
    }
    struct temper_dmodule *m = calloc(1, sizeof *m);
    if (!m) {
        free(ptx);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    }
    CUresult r = cuda_cu.cuModuleLoadData(&m->mod, ptx ? (const void *)ptx : data);
    free(ptx);
    if (r != CUDA_SUCCESS) {
        free(m);
        return cuda_fail(c, r, TEMPER_ECOMPILE, msg, msg_size, "cuModuleLoadData");
    }
    *mod = m;
    return 0;
}

/* Unloads mod and frees it with its kernels; NULL is a no-op. */
static void cuda_module_free(void *ctx, struct temper_dmodule *mod)
{
    struct cuda_ctx *c = ctx;
    if (!mod)
        return;
    cuda_cu.cuCtxSetCurrent(c->ctx);
    cuda_triton_free(mod);
    for (struct temper_dkernel *k = mod->kernels, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    if (mod->mod)
        cuda_cu.cuModuleUnload(mod->mod);
    free(mod);
}

/* Looks up the kernel name (borrowed) in mod. *kernel is borrowed from mod and freed with it;
 * looking the same name up again gives the same kernel. */
static int cuda_kernel(void *ctx, struct temper_dmodule *mod, const char *name, struct temper_dkernel **kernel,
                       char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *kernel = NULL;
    for (struct temper_dkernel *k = mod->kernels; k; k = k->next) {
        if (strcmp(k->name, name) == 0) {
            *kernel = k;
            return 0;
        }
    }
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUfunction fn = NULL;
    const struct cuda_triton_kernel *t = mod->ntriton ? cuda_triton_find(mod, name) : NULL;
    if (mod->ntriton && !t)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "kernel '%s' is not among the Triton kernels built", name);
    CUresult r = cuda_cu.cuModuleGetFunction(&fn, t ? t->mod : mod->mod, t ? t->symbol : name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND,
                           "kernel '%s' not found in the module (is it declared extern \"C\" __global__?)", name);
    if (r != CUDA_SUCCESS) {
        char what[300];
        snprintf(what, sizeof what, "cuModuleGetFunction(%s)", name);
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, what);
    }
    size_t n = strlen(name);
    struct temper_dkernel *k = calloc(1, sizeof *k + n + 1);
    if (!k)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory");
    k->fn = fn;
    k->triton = t;
    memcpy(k->name, name, n + 1);
    k->next = mod->kernels;
    mod->kernels = k;
    *kernel = k;
    return 0;
}

/* ---- launching, waiting, timing ---- */

/* Encodes argument i's tensor map for kernel `name`: element type, dimensions and strides from
 * the map, 128-byte-or-less swizzle as asked, out-of-bounds elements read as zeros, L2 lines
 * fetched 256 bytes at a time. */
static int cuda_encode_tensormap(struct cuda_ctx *c, const char *name, int i, const struct temper_tensormap *m,
                                 CUtensorMap *out, char *msg, size_t msg_size)
{
    if (!m || !m->buf)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: argument %d's tensor map has no buffer", name,
                           i);
    if (c->info.cc_major < 9)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED,
                           "launch %s: argument %d is a tensor map, which needs compute capability 9.0 or later "
                           "(this device is %d.%d)",
                           name, i, c->info.cc_major, c->info.cc_minor);
    if (!cuda_cu.cuTensorMapEncodeTiled)
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED,
                           "launch %s: argument %d is a tensor map, and this CUDA driver has no "
                           "cuTensorMapEncodeTiled (it needs CUDA 12 or later)",
                           name, i);
    /* Encoding is host work done at every launch of the plan, timed ones included, so maps are
     * kept per context and checked and encoded again only when something differs. */
    struct cuda_tmap_entry probe;
    memset(&probe, 0, sizeof(probe));
    probe.key.dtype = m->dtype;
    probe.key.rank = m->rank;
    probe.key.swizzle = m->swizzle;
    for (int d = 0; d < m->rank && d < TEMPER_TENSORMAP_MAX_RANK; d++) { /* the rank is checked below */
        probe.key.dims[d] = m->dims[d];
        probe.key.strides[d] = d ? m->strides[d] : 0;
        probe.key.box[d] = m->box[d];
    }
    probe.ptr = m->buf->ptr;
    for (int e = 0; e < CUDA_TMAP_CACHE; e++) {
        const struct cuda_tmap_entry *c_e = &c->tmaps[e];
        if (c_e->used && c_e->ptr == probe.ptr && !memcmp(&c_e->key, &probe.key, sizeof(probe.key))) {
            memcpy(out, c_e->map, sizeof(c_e->map));
            return 0;
        }
    }
    /* a new map: TMA's rules first (a cached one passed them when it was encoded) */
    int err = temper_tensormap_check(m, msg, msg_size);
    if (err)
        return err;
    if (m->buf->ptr % 16)
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "launch %s: argument %d's tensor map starts at an address that is not 16-byte aligned",
                           name, i);
    static const int types[TEMPER_DTYPE_COUNT] = {
        [TEMPER_DTYPE_F32] = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, [TEMPER_DTYPE_F16] = CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        [TEMPER_DTYPE_BF16] = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, [TEMPER_DTYPE_I8] = CU_TENSOR_MAP_DATA_TYPE_UINT8,
        [TEMPER_DTYPE_U8] = CU_TENSOR_MAP_DATA_TYPE_UINT8,    [TEMPER_DTYPE_I32] = CU_TENSOR_MAP_DATA_TYPE_INT32,
        [TEMPER_DTYPE_I64] = CU_TENSOR_MAP_DATA_TYPE_INT64,
    };
    int swizzle = m->swizzle == 128 ? 3 : m->swizzle == 64 ? 2 : m->swizzle == 32 ? 1 : CU_TENSOR_MAP_SWIZZLE_NONE;
    uint32_t ones[TEMPER_TENSORMAP_MAX_RANK] = {1, 1, 1, 1, 1};
    CUresult r = cuda_cu.cuTensorMapEncodeTiled(out, types[m->dtype], (unsigned)m->rank, (void *)(uintptr_t)m->buf->ptr,
                                               m->dims, m->strides + 1, m->box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                               swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "launch %s: cuTensorMapEncodeTiled for argument %d", name, i);
        return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, what);
    }
    struct cuda_tmap_entry *slot = &c->tmaps[c->tmap_next];
    c->tmap_next = (c->tmap_next + 1) % CUDA_TMAP_CACHE;
    *slot = probe;
    slot->used = 1;
    memcpy(slot->map, out, sizeof(slot->map));
    return 0;
}

/* Opts kernel into smem bytes of dynamic shared memory where that is over the default 48 KiB and
 * over what it opted into before. */
static int cuda_smem_optin(struct cuda_ctx *c, struct temper_dkernel *kernel, size_t smem, char *msg, size_t msg_size)
{
    if (smem > CUDA_SMEM_DEFAULT_BYTES && smem > kernel->smem_optin_bytes) {
        if (smem > c->info.local_mem_optin_bytes)
            return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                               "launch %s: %zu bytes of dynamic shared memory exceed the device's limit of %llu "
                               "bytes per block",
                               kernel->name, smem, (unsigned long long)c->info.local_mem_optin_bytes);
        CUresult r =
            cuda_cu.cuFuncSetAttribute(kernel->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
        if (r != CUDA_SUCCESS) {
            char what[320];
            snprintf(what, sizeof what, "launch %s: opting into %zu bytes of dynamic shared memory (with the "
                     "kernel's static shared memory it may exceed the device's %llu)", kernel->name,
                     smem, (unsigned long long)c->info.local_mem_optin_bytes);
            return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, what);
        }
        kernel->smem_optin_bytes = smem;
    }
    return 0;
}

/* Queues one launch of kernel on the default stream; args and dims are borrowed (the driver copies
 * the argument values before returning). A grid with a zero dimension has no blocks and queues
 * nothing. Dynamic shared memory above 48 KiB is opted into first. */
static int cuda_launch(void *ctx, struct temper_dkernel *kernel, const struct temper_launch_dims *given, int nargs,
                       const struct temper_karg *args, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    /* A Triton kernel: the shared memory its metadata gives, and two scratch pointers after its
     * arguments (cuda_triton.c). */
    struct temper_launch_dims tdims = *given;
    const struct temper_launch_dims *dims = &tdims;
    CUdeviceptr tscratch[2] = {0, 0};
    if (kernel->triton && nargs >= 0 && nargs + 2 <= CUDA_MAX_KARGS) {
        int terr =
            cuda_triton_prepare(c, kernel, given->grid, given->block, &tdims.smem_bytes, tscratch, msg, msg_size);
        if (terr)
            return terr;
    }
    if (nargs < 0 || nargs + (kernel->triton ? 2 : 0) > CUDA_MAX_KARGS)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: %d arguments (at most %d)", kernel->name,
                           nargs, CUDA_MAX_KARGS);
    for (int d = 0; d < 3; d++) {
        if (dims->block[d] == 0 || dims->block[d] > UINT_MAX || dims->grid[d] > UINT_MAX)
            return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                               "launch %s: grid (%zu, %zu, %zu) block (%zu, %zu, %zu) is out of range", kernel->name,
                               dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1],
                               dims->block[2]);
    }
    /* The limits every CUDA device since compute capability 3.0 has; the driver would only say
     * "invalid argument". */
    static const size_t grid_max[3] = {2147483647u, 65535u, 65535u}, block_max[3] = {1024u, 1024u, 64u};
    int over = dims->block[0] * dims->block[1] * dims->block[2] > 1024u;
    for (int d = 0; d < 3; d++)
        over |= dims->grid[d] > grid_max[d] || dims->block[d] > block_max[d];
    if (over)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                           "launch %s: grid (%zu, %zu, %zu) block (%zu, %zu, %zu) exceeds CUDA's limits: grid "
                           "(2147483647, 65535, 65535), block (1024, 1024, 64), 1024 threads per block",
                           kernel->name, dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1],
                           dims->block[2]);
    if (dims->smem_bytes > UINT_MAX)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH, "launch %s: %zu bytes of shared memory", kernel->name,
                           dims->smem_bytes);
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    if (dims->grid[0] == 0 || dims->grid[1] == 0 || dims->grid[2] == 0)
        return 0;
    if ((err = cuda_smem_optin(c, kernel, dims->smem_bytes, msg, msg_size)))
        return err;
    CUdeviceptr ptrs[CUDA_MAX_KARGS];
    CUtensorMap maps[CUDA_MAX_KARGS];
    void *params[CUDA_MAX_KARGS];
    for (int i = 0; i < nargs; i++) {
        switch (args[i].kind) {
        case TEMPER_KARG_BUFFER:
            if (!args[i].v.buf)
                return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: argument %d has no buffer",
                                   kernel->name, i);
            ptrs[i] = args[i].v.buf->ptr;
            params[i] = &ptrs[i];
            break;
        case TEMPER_KARG_I32:
            params[i] = (void *)&args[i].v.i32;
            break;
        case TEMPER_KARG_I64:
            params[i] = (void *)&args[i].v.i64;
            break;
        case TEMPER_KARG_F32:
            params[i] = (void *)&args[i].v.f32;
            break;
        case TEMPER_KARG_TENSORMAP:
            err = cuda_encode_tensormap(c, kernel->name, i, args[i].v.tmap, &maps[i], msg, msg_size);
            if (err)
                return err;
            params[i] = &maps[i];
            break;
        default:
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "launch %s: argument %d has unknown kind %d",
                               kernel->name, i, (int)args[i].kind);
        }
    }
    for (int s = 0; kernel->triton && s < 2; s++)
        params[nargs + s] = &tscratch[s];
    nargs += kernel->triton ? 2 : 0;
    CUresult r = cuda_cu.cuLaunchKernel(kernel->fn, (unsigned)dims->grid[0], (unsigned)dims->grid[1],
                                   (unsigned)dims->grid[2], (unsigned)dims->block[0], (unsigned)dims->block[1],
                                   (unsigned)dims->block[2], (unsigned)dims->smem_bytes, NULL,
                                   nargs ? params : NULL, NULL);
    if (r != CUDA_SUCCESS) {
        char what[400];
        snprintf(what, sizeof what, "launch %s grid (%zu, %zu, %zu) block (%zu, %zu, %zu) smem %zu", kernel->name,
                 dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0], dims->block[1], dims->block[2],
                 dims->smem_bytes);
        return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, what);
    }
    return 0;
}

/* Waits for everything queued. A fault of a kernel (illegal address, __trap(), ...) comes back as
 * TEMPER_ELAUNCH with "CUDA_ERROR_X: text" in msg; the context is then unusable. */
static int cuda_sync(void *ctx, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUresult r = cuda_cu.cuCtxSynchronize();
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, "cuCtxSynchronize");
}

/* Records the start event on the default stream, behind everything queued so far. */
static int cuda_timer_start(void *ctx, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUresult r = cuda_cu.cuEventRecord(c->timer_begin, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuEventRecord");
    c->timer_running = 1;
    return 0;
}

/* Records the end event, waits for it and gives the device time since timer_start in ms. */
static int cuda_timer_stop(void *ctx, double *elapsed_ms, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    *elapsed_ms = 0;
    if (!c->timer_running)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "timer_stop without timer_start");
    c->timer_running = 0;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    CUresult r = cuda_cu.cuEventRecord(c->timer_end, NULL);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuEventRecord");
    r = cuda_cu.cuEventSynchronize(c->timer_end);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, "cuEventSynchronize");
    float ms = 0;
    r = cuda_cu.cuEventElapsedTime(&ms, c->timer_begin, c->timer_end);
    if (r != CUDA_SUCCESS)
        return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "cuEventElapsedTime");
    *elapsed_ms = ms;
    return 0;
}

/* Evicts L2 by writing a scratch buffer of twice its size (allocated on first use, freed at
 * close) with a value that changes every call. Queued, not waited for; call it outside the
 * timed region. */
static int cuda_flush_cache(void *ctx, char *msg, size_t msg_size)
{
    struct cuda_ctx *c = ctx;
    int err = cuda_check_alive(c, msg, msg_size);
    if (err)
        return err;
    if (!c->flush_ptr) {
        size_t bytes = c->info.cache_bytes ? (size_t)c->info.cache_bytes * 2 : CUDA_FLUSH_FALLBACK_BYTES;
        bytes = (bytes + 3) & ~(size_t)3;
        CUresult r = cuda_cu.cuMemAlloc(&c->flush_ptr, bytes);
        if (r != CUDA_SUCCESS) {
            c->flush_ptr = 0;
            return cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "allocating the cache-flush buffer");
        }
        c->flush_bytes = bytes;
    }
    CUresult r = cuda_cu.cuMemsetD32(c->flush_ptr, ++c->flush_value, c->flush_bytes / 4);
    return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, TEMPER_EDEVICE, msg, msg_size, "flushing the cache");
}

const struct temper_device_ops temper_cuda_ops = {
    .version = TEMPER_DEVICE_OPS_VERSION,
    .name = "cuda",
    .count = cuda_count,
    .open = cuda_open,
    .close = cuda_close,
    .info = cuda_info,
    .alloc = cuda_alloc,
    .view = cuda_view,
    .release = cuda_release,
    .write = cuda_write,
    .read = cuda_read,
    .fill = cuda_fill,
    .compile = cuda_compile,
    .build = NULL,
    .binary = NULL,
    .load = cuda_load,
    .module_free = cuda_module_free,
    .kernel = cuda_kernel,
    .launch = cuda_launch,
    .sync = cuda_sync,
    .timer_start = cuda_timer_start,
    .timer_stop = cuda_timer_stop,
    .flush_cache = cuda_flush_cache,
    .expert = cuda_expert,
};
