/* opencl.c: the OpenCL device, through any ICD (PoCL on CPUs where no GPU exists). Devices of
 * every platform are numbered in one sequence: opencl:0, opencl:1, ... */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device/device.h"

#define MAX_CL_DEVICES 64

/* Address space left inaccessible on each side of every buffer of a device whose kernels run in
 * this process (a CPU device: PoCL), so that a kernel writing far past a buffer's end (or before
 * its start) faults instead of landing in the process's own memory: 8 GiB is as far as a signed
 * 32-bit index reaches into 4-byte elements (c[i], i an int), the common case. A reservation holds
 * no memory (PROT_NONE, MAP_NORESERVE): only address space, of which a 47-bit process has 128 TiB,
 * room for some 8,000 buffers at once (a worker holds a few hundred). A write further out, or at an
 * address a kernel computed, is not stopped: docs/candidate.md says what an in-process device can
 * and cannot guarantee. */
#define GUARD_SPAN (8ull << 30)

/* cl_khr_device_uuid and cl_khr_pci_bus_info (values as in the Khronos headers), for headers
 * older than those extensions. */
#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR 0x106A
#endif
#ifndef CL_DEVICE_PCI_BUS_INFO_KHR
#define CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#endif

/* A buffer or a sub-buffer view. */
struct temper_dbuf {
    cl_mem mem;   /* the OpenCL memory object */
    size_t bytes; /* its size */
};

/* A built program. */
struct temper_dmodule {
    cl_program program;                /* the program */
    struct temper_dkernel *kernels;    /* kernels made from it, freed with it */
};

/* A kernel of a program. */
struct temper_dkernel {
    cl_kernel kernel;              /* the kernel object */
    char name[128];                /* its name, for messages */
    struct temper_dkernel *next;   /* next kernel of the same module */
};

/* The host memory of a buffer on an in-process device: a reservation, GUARD_SPAN inaccessible,
 * the buffer's pages, GUARD_SPAN inaccessible. Unmapped when the runtime destroys the buffer. */
struct guarded {
    void *base;  /* the reservation */
    size_t size; /* its bytes */
};

/* One opened device. */
struct cl_ctx {
    int in_process;            /* 1: a CPU device, whose kernels run in this process */
    cl_platform_id platform;   /* its platform */
    cl_device_id device;       /* the device */
    cl_context context;        /* a context holding only it */
    cl_command_queue queue;    /* an in-order queue with profiling */
    int timing;                /* 1 between timer_start and timer_stop */
    cl_event first_event;      /* first launch of the timed region (retained) */
    cl_event last_event;       /* last launch of the timed region (retained) */
};

static const char *cl_err_name(cl_int e)
{
    switch (e) {
#define E(x) \
    case x:  \
        return #x;
        E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
        E(CL_BUILD_PROGRAM_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_INVALID_VALUE)
        E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT) E(CL_INVALID_MEM_OBJECT)
        E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM) E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
        E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT)
        E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(CL_INVALID_PROGRAM_EXECUTABLE)
#undef E
    default:
        return "CL error";
    }
}

static int cl_fail(char *msg, size_t n, int err, const char *what, cl_int e)
{
    return temper_fail(msg, n, err, "%s: %s (%d)", what, cl_err_name(e), (int)e);
}

/* Lists every device of every platform; returns the count. */
static int all_devices(cl_device_id *out, cl_platform_id *platforms_of, int max)
{
    cl_platform_id platforms[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, platforms, &np) != CL_SUCCESS)
        return 0;
    int n = 0;
    for (cl_uint p = 0; p < np && n < max; p++) {
        cl_device_id ids[MAX_CL_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_CL_DEVICES, ids, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && n < max; d++) {
            platforms_of[n] = platforms[p];
            out[n++] = ids[d];
        }
    }
    return n;
}

static int ocl_count(int *n, char *msg, size_t msg_size)
{
    cl_device_id ids[MAX_CL_DEVICES];
    cl_platform_id plats[MAX_CL_DEVICES];
    *n = all_devices(ids, plats, MAX_CL_DEVICES);
    if (!*n)
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE,
                           "no OpenCL platform or device found through the ICD loader (libOpenCL.so.1; ICDs listed "
                           "in /etc/OpenCL/vendors; install pocl-opencl-icd for the CPU)");
    return 0;
}

static void ocl_close(void *vctx)
{
    struct cl_ctx *c = vctx;
    if (!c)
        return;
    if (c->first_event)
        clReleaseEvent(c->first_event);
    if (c->last_event)
        clReleaseEvent(c->last_event);
    if (c->queue)
        clReleaseCommandQueue(c->queue);
    if (c->context)
        clReleaseContext(c->context);
    free(c);
}

static int ocl_open(int index, void **vctx, char *msg, size_t msg_size)
{
    cl_device_id ids[MAX_CL_DEVICES];
    cl_platform_id plats[MAX_CL_DEVICES];
    int n = all_devices(ids, plats, MAX_CL_DEVICES);
    if (index < 0 || index >= n)
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE, "opencl:%d: no such device (%d found)", index, n);
    struct cl_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return TEMPER_ENOMEM;
    c->platform = plats[index];
    c->device = ids[index];
    cl_int e;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0};
    c->context = clCreateContext(props, 1, &c->device, NULL, NULL, &e);
    if (!c->context) {
        ocl_close(c);
        return cl_fail(msg, msg_size, TEMPER_EDEVICE, "clCreateContext", e);
    }
    c->queue = clCreateCommandQueue(c->context, c->device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!c->queue) {
        ocl_close(c);
        return cl_fail(msg, msg_size, TEMPER_EDEVICE, "clCreateCommandQueue", e);
    }
    cl_device_type type = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
    c->in_process = (type & CL_DEVICE_TYPE_CPU) != 0;
    *vctx = c;
    return 0;
}

static void dev_string(cl_device_id d, cl_device_info what, char *out, size_t size)
{
    out[0] = 0;
    if (clGetDeviceInfo(d, what, size, out, NULL) != CL_SUCCESS)
        out[0] = 0;
    out[size - 1] = 0;
}

/* 1 when the device lists extension name (borrowed) among its extensions. */
static int has_extension(cl_device_id d, const char *name)
{
    size_t size = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return 0;
    char *list = malloc(size + 1);
    if (!list)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, size, list, NULL) == CL_SUCCESS) {
        list[size] = 0;
        size_t n = strlen(name);
        for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
            if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) {
                found = 1;
                break;
            }
    }
    free(list);
    return found;
}

/* Fills info->uuid and info->pci_bus_id where the device has cl_khr_device_uuid and
 * cl_khr_pci_bus_info; leaves them "" otherwise. */
static void identity(cl_device_id d, struct temper_device_info *info)
{
    unsigned char u[16];
    if (has_extension(d, "cl_khr_device_uuid") &&
        clGetDeviceInfo(d, CL_DEVICE_UUID_KHR, sizeof(u), u, NULL) == CL_SUCCESS)
        temper_device_format_uuid(u, info->uuid, sizeof(info->uuid));
    cl_uint bus[4]; /* cl_device_pci_bus_info_khr: domain, bus, device, function */
    if (has_extension(d, "cl_khr_pci_bus_info") &&
        clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof(bus), bus, NULL) == CL_SUCCESS)
        snprintf(info->pci_bus_id, sizeof(info->pci_bus_id), "%04x:%02x:%02x.%x", (unsigned)bus[0],
                 (unsigned)bus[1] & 0xffu, (unsigned)bus[2] & 0xffu, (unsigned)bus[3] & 0xfu);
}

static int ocl_info(void *vctx, struct temper_device_info *info)
{
    struct cl_ctx *c = vctx;
    memset(info, 0, sizeof(*info));
    dev_string(c->device, CL_DEVICE_NAME, info->name, sizeof(info->name));
    dev_string(c->device, CL_DEVICE_VENDOR, info->vendor, sizeof(info->vendor));
    dev_string(c->device, CL_DRIVER_VERSION, info->driver_version, sizeof(info->driver_version));
    char version[128];
    dev_string(c->device, CL_DEVICE_OPENCL_C_VERSION, version, sizeof(version));
    snprintf(info->compiler_version, sizeof(info->compiler_version), "%.50s; driver %.50s", version, info->driver_version);
    clGetPlatformInfo(c->platform, CL_PLATFORM_NAME, sizeof(info->platform), info->platform, NULL);
    info->platform[sizeof(info->platform) - 1] = 0;
    cl_device_type type = 0;
    cl_uint cu = 0, clock = 0, align_bits = 0;
    cl_ulong global = 0, local = 0, cache = 0;
    size_t wg = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cu), &cu, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof(clock), &clock, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(global), &global, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof(cache), &cache, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(wg), &wg, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits, NULL);
    info->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    snprintf(info->language, sizeof(info->language), "opencl");
    /* A CPU device (PoCL) runs kernels on the calling process's threads, in its address space. */
    info->caps = (type & CL_DEVICE_TYPE_CPU) ? TEMPER_DEVICE_CAP_IN_PROCESS : 0;
    info->compute_units = (int)cu;
    info->clock_mhz = (int)clock;
    info->global_mem_bytes = global;
    info->local_mem_bytes = local;
    info->local_mem_optin_bytes = local;
    info->cache_bytes = cache;
    info->local_mem_per_cu_bytes = local;
    /* No warp in OpenCL C; NVIDIA's and AMD's platforms say theirs (cl_nv_device_attribute_query,
     * cl_amd_device_attribute_query), others run work-items in no fixed lockstep group: 1. */
    cl_uint warp = 0;
    if (clGetDeviceInfo(c->device, CL_DEVICE_WARP_SIZE_NV, sizeof(warp), &warp, NULL) != CL_SUCCESS &&
        clGetDeviceInfo(c->device, CL_DEVICE_WAVEFRONT_WIDTH_AMD, sizeof(warp), &warp, NULL) != CL_SUCCESS)
        warp = 1;
    info->warp_size = warp ? (int)warp : 1;
    info->max_work_group = wg;
    info->base_align_bytes = align_bits >= 8 ? align_bits / 8 : 128;
    snprintf(info->language, sizeof(info->language), "opencl");
    /* a CPU device runs its kernels in the calling process's own threads */
    info->caps = (type & CL_DEVICE_TYPE_CPU) ? TEMPER_DEVICE_CAP_IN_PROCESS : 0;
    identity(c->device, info);
    return 0;
}

/* Unmaps a buffer's reservation once the runtime has destroyed the buffer (its views, and the
 * commands that used it, gone too). */
static void CL_CALLBACK unmap_guarded(cl_mem mem, void *user)
{
    (void)mem;
    struct guarded *g = user;
    munmap(g->base, g->size);
    free(g);
}

static int ocl_alloc(void *vctx, size_t bytes, struct temper_dbuf **out, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    struct temper_dbuf *b = calloc(1, sizeof(*b));
    if (!b)
        return TEMPER_ENOMEM;
    cl_int e;
    if (c->in_process) {
        /* The runtime uses these pages as the buffer itself (CL_MEM_USE_HOST_PTR on a CPU device:
         * page-aligned, so PoCL takes them as they are, with no copy). */
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t data = (bytes + page - 1) / page * page;
        struct guarded *g = calloc(1, sizeof(*g));
        if (!g || data < bytes || data > SIZE_MAX - 2 * GUARD_SPAN) {
            free(g);
            free(b);
            return temper_fail(msg, n, TEMPER_ENOMEM, "cannot allocate %zu bytes on the device", bytes);
        }
        g->size = data + 2 * GUARD_SPAN;
        g->base = mmap(NULL, g->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        char *host = g->base == MAP_FAILED ? NULL : (char *)g->base + GUARD_SPAN;
        if (!host || mprotect(host, data, PROT_READ | PROT_WRITE)) {
            if (host)
                munmap(g->base, g->size);
            free(g);
            free(b);
            return temper_fail(msg, n, TEMPER_ENOMEM,
                               "cannot reserve %zu bytes between guard regions of %llu GiB for a buffer of the device",
                               bytes, GUARD_SPAN >> 30);
        }
        b->mem = clCreateBuffer(c->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, &e);
        if (b->mem && clSetMemObjectDestructorCallback(b->mem, unmap_guarded, g) != CL_SUCCESS) {
            clReleaseMemObject(b->mem); /* the pages stay mapped: the runtime may still use them */
            free(b);
            return temper_fail(msg, n, TEMPER_EDEVICE, "clSetMemObjectDestructorCallback failed");
        }
        if (!b->mem) {
            munmap(g->base, g->size);
            free(g);
        }
    } else {
        b->mem = clCreateBuffer(c->context, CL_MEM_READ_WRITE, bytes, NULL, &e);
    }
    if (!b->mem) {
        free(b);
        return temper_fail(msg, n, TEMPER_ENOMEM, "cannot allocate %zu bytes on the device: %s", bytes,
                           cl_err_name(e));
    }
    b->bytes = bytes;
    *out = b;
    return 0;
}

static int ocl_view(void *vctx, struct temper_dbuf *parent, size_t offset, size_t bytes, struct temper_dbuf **out,
                    char *msg, size_t n)
{
    (void)vctx;
    if (offset + bytes > parent->bytes || !bytes)
        return temper_fail(msg, n, TEMPER_EINVALID, "view [%zu, %zu) outside a buffer of %zu bytes", offset,
                           offset + bytes, parent->bytes);
    struct temper_dbuf *b = calloc(1, sizeof(*b));
    if (!b)
        return TEMPER_ENOMEM;
    cl_buffer_region region = {offset, bytes};
    cl_int e;
    b->mem = clCreateSubBuffer(parent->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
    if (!b->mem) {
        free(b);
        return cl_fail(msg, n, TEMPER_EDEVICE, "clCreateSubBuffer", e);
    }
    b->bytes = bytes;
    *out = b;
    return 0;
}

static void ocl_release(void *vctx, struct temper_dbuf *b)
{
    (void)vctx;
    clReleaseMemObject(b->mem);
    free(b);
}

static int ocl_write(void *vctx, struct temper_dbuf *b, size_t offset, const void *src, size_t bytes, char *msg,
                     size_t n)
{
    struct cl_ctx *c = vctx;
    if (offset + bytes > b->bytes)
        return temper_fail(msg, n, TEMPER_EINVALID, "write past the end of a buffer");
    cl_int e = clEnqueueWriteBuffer(c->queue, b->mem, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
    return e ? cl_fail(msg, n, TEMPER_EDEVICE, "clEnqueueWriteBuffer", e) : 0;
}

static int ocl_read(void *vctx, struct temper_dbuf *b, size_t offset, void *dst, size_t bytes, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    if (offset + bytes > b->bytes)
        return temper_fail(msg, n, TEMPER_EINVALID, "read past the end of a buffer");
    cl_int e = clEnqueueReadBuffer(c->queue, b->mem, CL_TRUE, offset, bytes, dst, 0, NULL, NULL);
    return e ? cl_fail(msg, n, TEMPER_ELAUNCH, "clEnqueueReadBuffer", e) : 0;
}

static int ocl_fill(void *vctx, struct temper_dbuf *b, size_t offset, size_t bytes, const void *pattern,
                    size_t pattern_size, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    if (offset + bytes > b->bytes || offset % pattern_size || bytes % pattern_size)
        return temper_fail(msg, n, TEMPER_EINVALID, "fill of [%zu, %zu) in steps of %zu: out of range or unaligned",
                           offset, offset + bytes, pattern_size);
    if (!bytes)
        return 0;
    cl_int e = clEnqueueFillBuffer(c->queue, b->mem, pattern, pattern_size, offset, bytes, 0, NULL, NULL);
    return e ? cl_fail(msg, n, TEMPER_EDEVICE, "clEnqueueFillBuffer", e) : 0;
}

static void build_log(struct cl_ctx *c, cl_program p, struct temper_buf *log)
{
    size_t size = 0;
    if (!log || clGetProgramBuildInfo(p, c->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) != CL_SUCCESS || !size)
        return;
    char *text = malloc(size + 1);
    if (!text)
        return;
    if (clGetProgramBuildInfo(p, c->device, CL_PROGRAM_BUILD_LOG, size, text, NULL) == CL_SUCCESS) {
        text[size] = 0;
        size_t room = log->max_bytes > log->len ? log->max_bytes - log->len : 0;
        size_t len = strlen(text);
        temper_buf_append(log, text, len < room ? len : room);
    }
    free(text);
}

static int finish_build(struct cl_ctx *c, cl_program p, const char *options, struct temper_buf *log,
                        struct temper_dmodule **out, char *msg, size_t n)
{
    cl_int e = clBuildProgram(p, 1, &c->device, options, NULL, NULL);
    build_log(c, p, log);
    if (e != CL_SUCCESS) {
        clReleaseProgram(p);
        if (e == CL_INVALID_BUILD_OPTIONS)
            return temper_fail(msg, n, TEMPER_ECOMPILE, "the OpenCL compiler rejected the options '%s'", options);
        return cl_fail(msg, n, TEMPER_ECOMPILE, "OpenCL build failed", e);
    }
    struct temper_dmodule *m = calloc(1, sizeof(*m));
    if (!m) {
        clReleaseProgram(p);
        return TEMPER_ENOMEM;
    }
    m->program = p;
    *out = m;
    return 0;
}

static int ocl_build(void *vctx, const char *source, const char *options, struct temper_buf *log,
                     struct temper_dmodule **out, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    cl_int e;
    cl_program p = clCreateProgramWithSource(c->context, 1, &source, NULL, &e);
    if (!p)
        return cl_fail(msg, n, TEMPER_ECOMPILE, "clCreateProgramWithSource", e);
    return finish_build(c, p, options, log, out, msg, n);
}

static int ocl_binary(void *vctx, struct temper_dmodule *m, void **data, size_t *size)
{
    (void)vctx;
    size_t bytes = 0;
    if (clGetProgramInfo(m->program, CL_PROGRAM_BINARY_SIZES, sizeof(bytes), &bytes, NULL) != CL_SUCCESS || !bytes)
        return TEMPER_EUNSUPPORTED;
    unsigned char *bin = malloc(bytes);
    if (!bin)
        return TEMPER_ENOMEM;
    if (clGetProgramInfo(m->program, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL) != CL_SUCCESS) {
        free(bin);
        return TEMPER_EUNSUPPORTED;
    }
    *data = bin;
    *size = bytes;
    return 0;
}

static int ocl_load(void *vctx, const void *data, size_t size, struct temper_dmodule **out, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    cl_int e, status;
    const unsigned char *bin = data;
    cl_program p = clCreateProgramWithBinary(c->context, 1, &c->device, &size, &bin, &status, &e);
    if (!p)
        return cl_fail(msg, n, TEMPER_ECOMPILE, "clCreateProgramWithBinary", e);
    return finish_build(c, p, "", NULL, out, msg, n);
}

static void ocl_module_free(void *vctx, struct temper_dmodule *m)
{
    (void)vctx;
    while (m->kernels) {
        struct temper_dkernel *k = m->kernels;
        m->kernels = k->next;
        clReleaseKernel(k->kernel);
        free(k);
    }
    clReleaseProgram(m->program);
    free(m);
}

static int ocl_kernel(void *vctx, struct temper_dmodule *m, const char *name, struct temper_dkernel **out, char *msg,
                      size_t n)
{
    (void)vctx;
    for (struct temper_dkernel *k = m->kernels; k; k = k->next)
        if (!strcmp(k->name, name)) {
            *out = k;
            return 0;
        }
    cl_int e;
    cl_kernel kernel = clCreateKernel(m->program, name, &e);
    if (!kernel) {
        if (e == CL_INVALID_KERNEL_NAME)
            return temper_fail(msg, n, TEMPER_ENOTFOUND, "no kernel named '%s' in the program", name);
        return cl_fail(msg, n, TEMPER_EDEVICE, "clCreateKernel", e);
    }
    struct temper_dkernel *k = calloc(1, sizeof(*k));
    if (!k) {
        clReleaseKernel(kernel);
        return TEMPER_ENOMEM;
    }
    k->kernel = kernel;
    snprintf(k->name, sizeof(k->name), "%s", name);
    k->next = m->kernels;
    m->kernels = k;
    *out = k;
    return 0;
}

static int ocl_launch(void *vctx, struct temper_dkernel *k, const struct temper_launch_dims *dims, int nargs,
                      const struct temper_karg *args, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    cl_uint expected = 0;
    if (clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS, sizeof(expected), &expected, NULL) == CL_SUCCESS &&
        expected != (cl_uint)nargs)
        return temper_fail(msg, n, TEMPER_EINVALID, "kernel '%s' takes %u arguments but the launch passes %d",
                           k->name, expected, nargs);
    for (int i = 0; i < nargs; i++) {
        cl_int e;
        switch (args[i].kind) {
        case TEMPER_KARG_BUFFER:
            e = clSetKernelArg(k->kernel, (cl_uint)i, sizeof(cl_mem), &args[i].v.buf->mem);
            break;
        case TEMPER_KARG_I32:
            e = clSetKernelArg(k->kernel, (cl_uint)i, sizeof(int32_t), &args[i].v.i32);
            break;
        case TEMPER_KARG_I64:
            e = clSetKernelArg(k->kernel, (cl_uint)i, sizeof(int64_t), &args[i].v.i64);
            break;
        default:
            e = clSetKernelArg(k->kernel, (cl_uint)i, sizeof(float), &args[i].v.f32);
            break;
        }
        if (e != CL_SUCCESS)
            return temper_fail(msg, n, TEMPER_EINVALID, "kernel '%s' argument %d: %s (does its type match?)",
                               k->name, i, cl_err_name(e));
    }
    size_t global[3], local[3];
    for (int d = 0; d < 3; d++) {
        local[d] = dims->block[d];
        global[d] = dims->grid[d] * dims->block[d];
    }
    cl_event ev = NULL;
    cl_int e = clEnqueueNDRangeKernel(c->queue, k->kernel, 3, NULL, global, local, 0, NULL, c->timing ? &ev : NULL);
    if (e != CL_SUCCESS)
        return cl_fail(msg, n, TEMPER_ELAUNCH, "clEnqueueNDRangeKernel", e);
    if (ev) {
        if (!c->first_event) {
            c->first_event = ev;
            clRetainEvent(ev);
        }
        if (c->last_event)
            clReleaseEvent(c->last_event);
        c->last_event = ev;
    }
    return 0;
}

static int ocl_sync(void *vctx, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    cl_int e = clFinish(c->queue);
    return e ? cl_fail(msg, n, TEMPER_ELAUNCH, "clFinish", e) : 0;
}

static int ocl_timer_start(void *vctx, char *msg, size_t n)
{
    (void)msg, (void)n;
    struct cl_ctx *c = vctx;
    if (c->first_event)
        clReleaseEvent(c->first_event);
    if (c->last_event)
        clReleaseEvent(c->last_event);
    c->first_event = c->last_event = NULL;
    c->timing = 1;
    return 0;
}

static int ocl_timer_stop(void *vctx, double *elapsed_ms, char *msg, size_t n)
{
    struct cl_ctx *c = vctx;
    c->timing = 0;
    cl_int e = clFinish(c->queue);
    if (e)
        return cl_fail(msg, n, TEMPER_ELAUNCH, "clFinish", e);
    if (!c->first_event)
        return temper_fail(msg, n, TEMPER_EINVALID, "nothing was launched in the timed region");
    cl_ulong start = 0, end = 0;
    e = clGetEventProfilingInfo(c->first_event, CL_PROFILING_COMMAND_START, sizeof(start), &start, NULL);
    if (!e)
        e = clGetEventProfilingInfo(c->last_event, CL_PROFILING_COMMAND_END, sizeof(end), &end, NULL);
    if (e)
        return cl_fail(msg, n, TEMPER_EDEVICE, "clGetEventProfilingInfo", e);
    *elapsed_ms = (double)(end - start) * 1e-6;
    return 0;
}

const struct temper_device_ops temper_opencl_ops = {
    .version = TEMPER_DEVICE_OPS_VERSION,
    .name = "opencl",
    .count = ocl_count,
    .open = ocl_open,
    .close = ocl_close,
    .info = ocl_info,
    .alloc = ocl_alloc,
    .view = ocl_view,
    .release = ocl_release,
    .write = ocl_write,
    .read = ocl_read,
    .fill = ocl_fill,
    .compile = NULL,
    .build = ocl_build,
    .binary = ocl_binary,
    .load = ocl_load,
    .module_free = ocl_module_free,
    .kernel = ocl_kernel,
    .launch = ocl_launch,
    .sync = ocl_sync,
    .timer_start = ocl_timer_start,
    .timer_stop = ocl_timer_stop,
    .flush_cache = NULL,
};
