/* device.h: one interface to compute devices, with an OpenCL and a CUDA implementation.
 * A backend is a table of function pointers plus a context pointer, as ggml's backends are.
 * Every call goes through the thin wrappers below (temper_dev_*), which is also where tests
 * inject faults. Only the device worker process ever opens a device. */
#ifndef TEMPER_DEVICE_H
#define TEMPER_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "temper/util.h"

#define TEMPER_DEVICE_OPS_VERSION 1

/* Capabilities of a device (struct temper_device_info's caps), asked instead of a backend's name. */
#define TEMPER_DEVICE_CAP_OFFLINE_COMPILE (1u << 0) /* compiles without a device context (NVRTC) */
#define TEMPER_DEVICE_CAP_IN_PROCESS (1u << 1)      /* kernels run in the worker's own address space (PoCL on a CPU) */
#define TEMPER_DEVICE_CAP_EXPERT (1u << 2)          /* vendor-library experts (expert()) */

/* What a device is and what it can do; filled by the backend's info(). */
struct temper_device_info {
    char backend[16];               /* "cuda" or "opencl" */
    char language[16];              /* "cuda" or "opencl": the source language its compiler takes */
    unsigned caps;                  /* TEMPER_DEVICE_CAP_* flags */
    int index;                      /* index within its backend */
    char name[256];                 /* the device's own name */
    char vendor[128];               /* vendor string */
    char platform[128];             /* OpenCL platform name, or "CUDA" */
    char driver_version[128];       /* driver version string */
    char compiler_version[128];     /* NVRTC or OpenCL C version; part of the build cache key */
    char arch[32];                  /* target architecture ("sm_90"), or "" where there is none */
    int is_gpu;                     /* 1 for a GPU, 0 for a CPU or other accelerator */
    int compute_units;              /* SMs, or OpenCL compute units */
    int cc_major;                   /* CUDA compute capability major, 0 elsewhere */
    int cc_minor;                   /* CUDA compute capability minor, 0 elsewhere */
    int clock_mhz;                  /* core clock, 0 if unknown */
    int mem_clock_mhz;              /* memory clock, 0 if unknown */
    int mem_bus_bits;               /* memory bus width, 0 if unknown */
    uint64_t global_mem_bytes;      /* device memory */
    uint64_t local_mem_bytes;       /* shared (local) memory per block without opt-in */
    uint64_t local_mem_optin_bytes; /* shared memory per block with opt-in (CUDA); else as above */
    uint64_t cache_bytes;           /* last-level cache (L2 on GPUs), 0 if unknown */
    size_t max_work_group;          /* threads per block at most */
    size_t base_align_bytes;        /* alignment of view offsets (OpenCL sub-buffers) */
};

struct temper_dbuf;    /* a device buffer or a view of one; opaque, owned by the backend */
struct temper_dmodule; /* a built program */
struct temper_dkernel; /* a kernel in a module; freed with its module */

enum temper_karg_kind {
    TEMPER_KARG_BUFFER,
    TEMPER_KARG_I32,
    TEMPER_KARG_I64,
    TEMPER_KARG_F32,
};

/* One kernel argument. */
struct temper_karg {
    enum temper_karg_kind kind; /* which member holds the value */
    union {
        struct temper_dbuf *buf; /* TEMPER_KARG_BUFFER (borrowed) */
        int32_t i32;             /* TEMPER_KARG_I32 */
        int64_t i64;             /* TEMPER_KARG_I64 */
        float f32;               /* TEMPER_KARG_F32 */
    } v;
};

/* One launch's geometry: grid counts blocks (work-groups), block counts threads. */
struct temper_launch_dims {
    size_t grid[3];    /* blocks per dimension */
    size_t block[3];   /* threads per block per dimension */
    size_t smem_bytes; /* dynamic shared memory (CUDA); OpenCL kernels declare their own */
};

/* A backend. Members marked optional may be NULL, which means the default behaviour described.
 * Every function that takes msg writes a sentence for people there on failure. */
struct temper_device_ops {
    int version;      /* TEMPER_DEVICE_OPS_VERSION */
    const char *name; /* "cuda" or "opencl" */

    /* Number of devices; on TEMPER_ENODEVICE, msg says which libraries and platforms were tried. */
    int (*count)(int *n, char *msg, size_t msg_size);
    int (*open)(int index, void **ctx, char *msg, size_t msg_size);
    void (*close)(void *ctx);
    int (*info)(void *ctx, struct temper_device_info *info);

    int (*alloc)(void *ctx, size_t bytes, struct temper_dbuf **buf, char *msg, size_t msg_size);
    /* A view of [offset, offset + bytes) of parent; offset is a multiple of base_align_bytes.
     * Released before its parent. */
    int (*view)(void *ctx, struct temper_dbuf *parent, size_t offset, size_t bytes, struct temper_dbuf **view,
                char *msg, size_t msg_size);
    void (*release)(void *ctx, struct temper_dbuf *buf);
    int (*write)(void *ctx, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes, char *msg,
                 size_t msg_size);
    int (*read)(void *ctx, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes, char *msg,
                size_t msg_size);
    /* Fills bytes with a repeated pattern of pattern_size bytes (1, 2, 4 or 8). */
    int (*fill)(void *ctx, struct temper_dbuf *buf, size_t offset, size_t bytes, const void *pattern,
                size_t pattern_size, char *msg, size_t msg_size);

    /* Optional: compiles source to a loadable binary without a device context (NVRTC), so that
     * the caller can do it in a separate process. The binary is malloc'ed; caller frees. The
     * compiler's log goes to log either way. NULL: the backend compiles in build(). */
    int (*compile)(const struct temper_device_info *info, const char *source, const char *options,
                   struct temper_buf *log, void **binary, size_t *binary_size, char *msg, size_t msg_size);
    /* Builds source in the device's context (OpenCL); NULL where compile() is used. */
    int (*build)(void *ctx, const char *source, const char *options, struct temper_buf *log,
                 struct temper_dmodule **mod, char *msg, size_t msg_size);
    /* Optional: the module's binary, for the build cache; malloc'ed, caller frees. NULL: no cache. */
    int (*binary)(void *ctx, struct temper_dmodule *mod, void **data, size_t *size);
    /* Loads a module from a binary made by compile() or binary(). */
    int (*load)(void *ctx, const void *data, size_t size, struct temper_dmodule **mod, char *msg, size_t msg_size);
    void (*module_free)(void *ctx, struct temper_dmodule *mod);
    int (*kernel)(void *ctx, struct temper_dmodule *mod, const char *name, struct temper_dkernel **kernel,
                  char *msg, size_t msg_size);
    /* Queues one launch; dims->smem_bytes above the default limit is opted into here. */
    int (*launch)(void *ctx, struct temper_dkernel *kernel, const struct temper_launch_dims *dims, int nargs,
                  const struct temper_karg *args, char *msg, size_t msg_size);
    /* Waits for queued work; a fault in a kernel is reported here (TEMPER_ELAUNCH). */
    int (*sync)(void *ctx, char *msg, size_t msg_size);
    /* The timed region: device events around the launches queued between start and stop.
     * timer_stop waits and gives the elapsed device time. */
    int (*timer_start)(void *ctx, char *msg, size_t msg_size);
    int (*timer_stop)(void *ctx, double *elapsed_ms, char *msg, size_t msg_size);
    /* Optional: evicts the last-level cache (a write of twice its size), untimed. NULL: the
     * caller writes a scratch buffer of twice info->cache_bytes with fill(). */
    int (*flush_cache)(void *ctx, char *msg, size_t msg_size);
    /* Optional: queues a vendor-library routine (e.g. "cublas_sgemm") as an expert baseline, on
     * the same queue as launches, so the timer measures it like a kernel. bufs are the task's
     * array arguments in order (outputs, then inputs), scalars its integer scalars in order.
     * TEMPER_EUNSUPPORTED when the routine or its library is not available; NULL: none at all. */
    int (*expert)(void *ctx, const char *routine, int nbufs, struct temper_dbuf *const *bufs, int nscalars,
                  const int64_t *scalars, char *msg, size_t msg_size);
};

/* The backends compiled into this build (NULL-terminated, CUDA first). */
const struct temper_device_ops *const *temper_device_backends(void);
/* The backend named "cuda" or "opencl", or NULL. */
const struct temper_device_ops *temper_device_backend(const char *name);

/* An opened device. */
struct temper_device {
    const struct temper_device_ops *ops; /* its backend */
    void *ctx;                           /* the backend's context */
    struct temper_device_info info;      /* filled at open */
    struct temper_dbuf *flush_buf;       /* scratch written to evict the cache, made on first use */
    /* Where the wrappers record when the device started work that may hang (monotonic ns, 0 when
     * idle), so a watchdog in another process can kill a hung launch; NULL: not recorded. */
    volatile uint64_t *busy_since_ns;
};

/* Parses "cuda", "cuda:1", "opencl:0"; NULL or "" picks the default. Opens it (the first CUDA
 * device that works, else the first OpenCL device, when none is named). */
int temper_device_open(const char *spec, struct temper_device *dev, char *msg, size_t msg_size);
void temper_device_close(struct temper_device *dev);
/* The device's name as used on the command line and in the store: "opencl:0". */
void temper_device_id(const struct temper_device *dev, char *out, size_t out_size);

/* Thin wrappers: every call into a backend goes through these. */
int temper_dev_alloc(struct temper_device *d, size_t bytes, struct temper_dbuf **buf, char *msg, size_t n);
int temper_dev_view(struct temper_device *d, struct temper_dbuf *parent, size_t offset, size_t bytes,
                    struct temper_dbuf **view, char *msg, size_t n);
void temper_dev_release(struct temper_device *d, struct temper_dbuf *buf);
int temper_dev_write(struct temper_device *d, struct temper_dbuf *buf, size_t offset, const void *src, size_t bytes,
                     char *msg, size_t n);
int temper_dev_read(struct temper_device *d, struct temper_dbuf *buf, size_t offset, void *dst, size_t bytes,
                    char *msg, size_t n);
int temper_dev_fill(struct temper_device *d, struct temper_dbuf *buf, size_t offset, size_t bytes,
                    const void *pattern, size_t pattern_size, char *msg, size_t n);
int temper_dev_launch(struct temper_device *d, struct temper_dkernel *k, const struct temper_launch_dims *dims,
                      int nargs, const struct temper_karg *args, char *msg, size_t n);
int temper_dev_sync(struct temper_device *d, char *msg, size_t n);
int temper_dev_timer_start(struct temper_device *d, char *msg, size_t n);
int temper_dev_timer_stop(struct temper_device *d, double *elapsed_ms, char *msg, size_t n);
int temper_dev_flush_cache(struct temper_device *d, char *msg, size_t n);
/* TEMPER_EUNSUPPORTED where the backend has no expert routines. */
int temper_dev_expert(struct temper_device *d, const char *routine, int nbufs, struct temper_dbuf *const *bufs,
                      int nscalars, const int64_t *scalars, char *msg, size_t n);

#endif
